#!/usr/bin/env node
// The unit suites against the WebAssembly build (claw-identity/wasm), on
// the Node 24 in .cache/ that OpenClaw runs on (see ensure-openclaw.mjs).
//
//   node scripts/test-wasm.mjs              every suite in SUITES, on both Nodes
//   node scripts/test-wasm.mjs layer faults only these suites
//
// Left out, because they don't exercise the WebAssembly build: cli (the bin
// runs the build index.js picks), native (loads the .node itself) and
// package (npm pack and install; it loads the WebAssembly build of the
// installed package itself, on both Nodes).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ensureOpenclaw } from './ensure-openclaw.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const SUITES = ['layer', 'watcher', 'watcher-links', 'faults', 'rules', 'plugin', 'map-guard', 'persist', 'writer', 'leak-guard', 'hotpath', 'syscalls', 'exit', 'workers', 'concurrency', 'torture'];

const say = (line) => process.stderr.write(`test-wasm: ${line}\n`);
const asked = process.argv.slice(2);
const unknown = asked.filter((s) => !SUITES.includes(s));
if (unknown.length) {
  say(`no such suite: ${unknown.join(', ')} (suites: ${SUITES.join(', ')})`);
  process.exit(2);
}
const suites = (asked.length ? asked : SUITES).map((s) => path.join('__test__', `${s}.test.mjs`));

const { node: node24 } = await ensureOpenclaw({ log: (l) => say(l) });
const nodes = [node24];
let failed = false;
for (const node of nodes) {
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  say(`${suites.length} suites against claw-identity/wasm on Node ${version} ...`);
  const t0 = Date.now();
  const r = spawnSync(node, ['--test', '--test-concurrency=1', ...suites], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, CLAW_IDENTITY_TEST_BUILD: 'wasm', NODE_NO_WARNINGS: '1' },
  });
  say(`Node ${version}: ${r.status === 0 ? 'passed' : `FAILED (exit ${r.status ?? r.signal})`} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  failed ||= r.status !== 0;
}
process.exit(failed ? 1 : 0);
