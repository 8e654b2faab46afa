#!/usr/bin/env node
// Makes a fresh clone ready for `npm test` and `npm run demo`: installs the
// npm dev dependencies when missing, builds the addon and its WebAssembly
// build in release mode (cargo makes this a no-op when nothing changed), the
// linux-arm64 one too where the cross toolchain is, and fetches the pinned
// OpenClaw and Nodes 24 and 26 into .cache/ (see ensure-openclaw.mjs). Safe
// to run again. (`npm pack` builds all three or refuses: scripts/prepack.mjs.
// npm test checks the system tools it needs before this, with
// scripts/system-deps.mjs.)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const say = (line) => process.stderr.write(`prepare: ${line}\n`);

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    say(`\`${cmd} ${args.join(' ')}\` failed (exit ${r.status ?? r.signal})`);
    process.exit(1);
  }
}

const cli = path.join(root, 'node_modules', '@napi-rs', 'cli', 'package.json');
if (!fs.existsSync(cli)) {
  say('installing npm dev dependencies (npm ci) ...');
  run('npm', ['ci', '--no-audit', '--no-fund']);
}

say('building the addon (release) ...');
run('npx', ['--no-install', 'napi', 'build', '--platform', '--release', '--no-js', '--dts', 'native.d.ts']);
run(process.execPath, [path.join(root, 'scripts', 'build-wasm.mjs')]);

// The linux-arm64 addon is rebuilt with the x64 one wherever the cross
// toolchain is. npm test always has it: its pretest runs
// scripts/system-deps.mjs first, which installs it or stops. The demo does
// without it.
const { haveCrossToolchain } = await import('./arm64.mjs');
if (haveCrossToolchain()) {
  say('building the linux-arm64 addon (release, cross) ...');
  run(process.execPath, [path.join(root, 'scripts', 'arm64.mjs'), 'build']);
} else {
  say('no arm64 cross toolchain here, so the linux-arm64 addon is not built (npm run build:arm64 names what is missing)');
}

if (!process.argv.includes('--no-openclaw')) {
  const { ensureOpenclaw, ensureNode } = await import('./ensure-openclaw.mjs');
  await ensureOpenclaw({ log: (l) => say(l) });
  await ensureNode(26, { log: (l) => say(l) });
}
