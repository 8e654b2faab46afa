#!/usr/bin/env node
// `npm test`: the Rust tests; every suite of __test__/ (the unit suites and
// the real-OpenClaw e2e suite, with its short smoke run on Node 26) on Node
// 24; the unit suites again on Node 26; then the unit suites against the
// WebAssembly build on both (scripts/test-wasm.mjs). The Nodes are the npm
// registry packages cached in .cache/ (the machine's own Node may be outside
// OpenClaw's range).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ensureNode, ensureOpenclaw } from './ensure-openclaw.mjs';
import { pickSuites, suiteFile } from './suites.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const say = (line) => process.stderr.write(`test: ${line}\n`);

// The unit suites that don't run a second time on Node 26, and why.
export const NOT_ON_NODE26 = {
  drift: 'it reads source text (core/src and the pinned dist/) and runs no build; the Node 24 run covers it',
  package: 'it runs the installed tarball on Node 24 and on Node 26 itself',
};

function run(what, cmd, args, env = {}) {
  const t0 = Date.now();
  say(`${what} ...`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  say(`${what}: ${r.status === 0 ? 'passed' : `FAILED (exit ${r.status ?? r.signal})`} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  if (r.status !== 0) process.exit(1);
}

const version = (node) => spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();

run('cargo test', 'cargo', ['test', '--release', '--workspace']);
const { node: node24 } = await ensureOpenclaw({ log: (l) => say(l) });
// Every suite by name: `node --test` takes globs, and a directory is not one.
const e2e = fs
  .readdirSync(path.join(root, '__test__', 'e2e'))
  .filter((f) => f.endsWith('.test.mjs'))
  .sort()
  .map((f) => path.join('__test__', 'e2e', f));
run(`__test__/ on ${version(node24)}`, node24, ['--test', '--test-concurrency=1', ...pickSuites({ excluded: {} }).map(suiteFile), ...e2e]);
const node26 = await ensureNode(26, { log: (l) => say(l) });
const suites = pickSuites({ excluded: NOT_ON_NODE26 }).map(suiteFile);
run(`the unit suites on ${version(node26)}`, node26, ['--test', '--test-concurrency=1', ...suites]);
run('the WebAssembly suites', process.execPath, [path.join(root, 'scripts', 'test-wasm.mjs')]);
