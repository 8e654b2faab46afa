#!/usr/bin/env node
// Builds the WebAssembly build, `claw-identity.wasm32-wasi.wasm`: the same
// crate for wasm32-wasip1-threads, linked against emnapi (the `emnapi` dev
// dependency; napi build points the linker at it). The Rust target is added
// with rustup when missing. napi's generated JS loaders are left in
// .cache/wasm-build: wasi.cjs is ours. Cargo makes a rebuild of an
// unchanged crate a no-op.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TARGET = 'wasm32-wasip1-threads';
const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = path.join(root, '.cache', 'wasm-build');
const say = (line) => process.stderr.write(`build-wasm: ${line}\n`);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
  if (r.status !== 0) {
    say(`\`${cmd} ${args.join(' ')}\` failed (exit ${r.status ?? r.signal})`);
    process.exit(1);
  }
  return r;
}

const installed = spawnSync('rustup', ['target', 'list', '--installed'], { cwd: root, encoding: 'utf8' });
if (installed.status !== 0) {
  say('rustup is needed to add the wasm32-wasip1-threads target (or add it to your toolchain by hand)');
  process.exit(1);
}
if (!installed.stdout.split('\n').includes(TARGET)) {
  say(`adding the Rust target ${TARGET} ...`);
  run('rustup', ['target', 'add', TARGET]);
}
fs.mkdirSync(out, { recursive: true });
say('building the WebAssembly build (release) ...');
run('npx', [
  '--no-install',
  'napi',
  'build',
  '--platform',
  '--release',
  '--target',
  TARGET,
  '--no-js',
  '--dts',
  path.join(out, 'native.d.ts'),
  '--output-dir',
  out,
]);
fs.copyFileSync(path.join(out, 'claw-identity.wasm32-wasi.wasm'), path.join(root, 'claw-identity.wasm32-wasi.wasm'));
