#!/usr/bin/env node
// The unit suites against the WebAssembly build (claw-identity/wasm), on
// every Node of OpenClaw's range (24 and 26, from .cache/; see
// ensure-openclaw.mjs).
//
//   node scripts/test-wasm.mjs              every unit suite but EXCLUDED, on both Nodes
//   node scripts/test-wasm.mjs layer faults only these suites
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { NODE_MAJORS, ensureNode } from './ensure-openclaw.mjs';
import { pickSuites, suiteFile } from './suites.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

// The suites that don't exercise the WebAssembly build, and why.
export const EXCLUDED = {
  cli: 'the bin runs the build index.js picks, never claw-identity/wasm',
  native: 'it loads the .node itself',
  package: 'npm pack and install; it loads the installed package itself, on both Nodes',
  loader: 'it tests the choice of build by index.js, not a build',
  exports: 'it imports both entries whichever build is under test, so the native run covers it',
  layout: 'it reads the source files only; no build runs',
  drift: "it reads core/src and the pinned OpenClaw's dist/ only; no build runs",
  windows: 'it runs the WebAssembly build of the installed tarball itself, as Windows gets it',
  mcp: 'the command runs the build index.js picks, never claw-identity/wasm',
  sandbox: "the WebAssembly build can't start processes; the native run checks that it refuses",
  'system-deps': "it checks npm test's first step, which looks at the host's tools; no build runs",
  'wasm-front': 'it loads both builds itself, the native one and the WebAssembly one, and compares them; the native run covers it',
};

const say = (line) => process.stderr.write(`test-wasm: ${line}\n`);
let suites;
try {
  suites = pickSuites({ excluded: EXCLUDED, asked: process.argv.slice(2) }).map(suiteFile);
} catch (e) {
  say(e.message);
  process.exit(2);
}

let failed = false;
for (const major of Object.keys(NODE_MAJORS).map(Number)) {
  const node = await ensureNode(major, { log: (l) => say(l) });
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
