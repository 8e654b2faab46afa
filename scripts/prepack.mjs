#!/usr/bin/env node
// npm's prepack: `npm pack` (and `npm publish`) make the whole package or
// nothing. Every build index.js can pick is built here from the current
// sources (cargo makes an unchanged build a no-op): the linux-x64 addon, the
// linux-arm64 addon (cross-compiled) and the WebAssembly build. Without
// this, npm silently leaves out a build that `files` names but that was
// never built, and the tarball fails at load on the platforms that pick it.
//
// What can't be built here is named, with how to get it, before anything is
// built; then the pack fails, so there is never a partial tarball.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ADDON as ARM64_ADDON, missingCrossToolchain } from './arm64.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const say = (line) => process.stderr.write(`prepack: ${line}\n`);
const script = (name) => path.join(root, 'scripts', name);

function onPath(cmd) {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// index.js loads each of these by its literal path (see its load table).
export const BUILDS = [
  {
    file: 'claw-identity.linux-x64-gnu.node',
    build: 'the linux-x64 addon',
    missing: () =>
      process.platform === 'linux' && process.arch === 'x64' ? [] : [`it is built on Linux x64, and this is ${process.platform}-${process.arch}`],
    make: ['npx', ['--no-install', 'napi', 'build', '--platform', '--release', '--no-js', '--dts', 'native.d.ts']],
  },
  {
    file: ARM64_ADDON,
    build: 'the linux-arm64 addon (cross-compiled)',
    missing: missingCrossToolchain,
    make: [process.execPath, [script('arm64.mjs'), 'build']],
  },
  {
    file: 'claw-identity.wasm32-wasi.wasm',
    build: 'the WebAssembly build',
    // build-wasm.mjs adds its Rust target with rustup.
    missing: () => (onPath('rustup') ? [] : ['rustup not found: install the Rust toolchain with rustup (it adds the wasm32-wasip1-threads target)']),
    make: [process.execPath, [script('build-wasm.mjs')]],
  },
];

function refuse(lines) {
  say('npm pack refused: the package holds every build index.js can pick, and these cannot be made here:');
  for (const line of lines) say(`  ${line}`);
  say('nothing was packed.');
  process.exit(1);
}

const blockers = [];
if (!fs.existsSync(path.join(root, 'node_modules', '@napi-rs', 'cli', 'package.json')))
  blockers.push('the npm dev dependencies are not installed: run npm ci first');
if (!onPath('cargo')) blockers.push('cargo not found: install the Rust toolchain (rustup)');
for (const b of BUILDS) for (const why of b.missing()) blockers.push(`${b.build} (${b.file}): ${why}`);
if (blockers.length) refuse(blockers);

for (const b of BUILDS) {
  const t0 = Date.now();
  say(`building ${b.build} ...`);
  const [cmd, args] = b.make;
  // Build output goes to stderr: `npm pack --json` prints its JSON on stdout.
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 2, 2] });
  if (r.status !== 0) refuse([`${b.build} (${b.file}): its build failed (exit ${r.status ?? r.signal}), see above`]);
  if (!fs.existsSync(path.join(root, b.file))) refuse([`${b.build}: the build finished but ${b.file} is not there`]);
  say(`${b.file} ready (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}
