#!/usr/bin/env node
// `npm test`: the Rust tests, then every suite of __test__/ (the unit suites
// and the real-OpenClaw e2e suite) on the Node OpenClaw runs on, from the
// npm registry package cached in .cache/ (the machine's own Node may be
// older than OpenClaw's range), then the unit suites against the
// WebAssembly build (scripts/test-wasm.mjs).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ensureOpenclaw } from './ensure-openclaw.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const say = (line) => process.stderr.write(`test: ${line}\n`);

function run(what, cmd, args, env = {}) {
  const t0 = Date.now();
  say(`${what} ...`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  say(`${what}: ${r.status === 0 ? 'passed' : `FAILED (exit ${r.status ?? r.signal})`} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  if (r.status !== 0) process.exit(1);
}

run('cargo test', 'cargo', ['test', '--release', '--workspace']);
const { node } = await ensureOpenclaw({ log: (l) => say(l) });
run(`__test__/ on ${spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()}`, node, ['--test', '--test-concurrency=1', '__test__/']);
run('the WebAssembly suites', process.execPath, [path.join(root, 'scripts', 'test-wasm.mjs')]);
