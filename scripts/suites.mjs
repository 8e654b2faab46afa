// The unit suites, found rather than listed: every __test__/*.test.mjs. A
// runner that can't run some of them (under qemu, on the WebAssembly build)
// excludes them by name with the reason, so a new suite runs everywhere
// unless someone writes down why it can't.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** The name of every unit suite (`layer` for `__test__/layer.test.mjs`), sorted. */
export function unitSuites() {
  return fs
    .readdirSync(path.join(root, '__test__'))
    .filter((f) => f.endsWith('.test.mjs'))
    .map((f) => f.slice(0, -'.test.mjs'.length))
    .sort();
}

/** The file of a suite, relative to the repo root. */
export function suiteFile(name) {
  return path.join('__test__', `${name}.test.mjs`);
}

/**
 * The suites a runner runs: `asked` when given (each must exist and not be
 * excluded), else every unit suite but the `excluded` ones (`{ name: reason }`),
 * with `first` in front. Throws on an excluded or `first` name that names no
 * suite, so an exclusion can't outlive its suite unnoticed.
 */
export function pickSuites({ excluded, first = [], asked = [] }) {
  const all = unitSuites();
  const stale = [...Object.keys(excluded), ...first].filter((s) => !all.includes(s));
  if (stale.length) throw new Error(`no such suite: ${stale.join(', ')} (excluded or ordered, but not in __test__/)`);
  if (asked.length) {
    const unknown = asked.filter((s) => !all.includes(s));
    if (unknown.length) throw new Error(`no such suite: ${unknown.join(', ')} (suites: ${all.join(', ')})`);
    const out = asked.filter((s) => Object.hasOwn(excluded, s));
    if (out.length) throw new Error(out.map((s) => `${s} is excluded here: ${excluded[s]}`).join('; '));
    return asked;
  }
  const run = all.filter((s) => !Object.hasOwn(excluded, s));
  return [...first, ...run.filter((s) => !first.includes(s))];
}
