// npm test's first step (scripts/system-deps.mjs): what each run needs from
// the system, and, where something is missing and can't be installed here,
// a stop within seconds that names each tool and the command installing it.
// The checks run on a made-up system, so no expectation here depends on what
// this machine has installed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { LINKER, NEEDS, RUNS, SYSROOT, bwrapProblem, installer, missing, stopLines } from '../scripts/system-deps.mjs';
import { tempDir } from './helpers/support.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = path.join(root, 'scripts', 'system-deps.mjs');
const SYSROOT_RUST = '/home/u/.rustup/toolchains/stable';

/** A system that has `programs` and `files`, and rustc when `rust` (with `targets`). */
function system({ programs = [], files = [], root = false, rust = true, targets = [], bwrapFails = () => null } = {}) {
  const all = new Set([...files, ...targets.map((t) => path.join(SYSROOT_RUST, 'lib', 'rustlib', t, 'lib'))]);
  return {
    program: (name) => programs.includes(name),
    file: (p) => all.has(p),
    root: () => root,
    rustSysroot: () => (rust ? SYSROOT_RUST : null),
    bwrapFails,
  };
}

const GLIBC = path.join(SYSROOT, 'lib', 'ld-linux-aarch64.so.1');
const EVERYTHING = {
  programs: ['bwrap', 'strace', LINKER, 'qemu-aarch64', 'apt-get', 'rustup'],
  files: [GLIBC],
  targets: ['aarch64-unknown-linux-gnu', 'wasm32-wasip1-threads'],
};

test('npm test needs bubblewrap, strace, the arm64 cross toolchain and both Rust targets, and not qemu; npm run test:arm64 needs qemu; CI needs both', () => {
  const none = system();
  assert.deepEqual(
    missing(RUNS.test.needs, none).map((m) => m.what),
    ['bwrap', 'strace', LINKER, 'the Rust target aarch64-unknown-linux-gnu', 'the Rust target wasm32-wasip1-threads'],
  );
  assert.deepEqual(
    missing(RUNS.arm64.needs, none).map((m) => m.what),
    [LINKER, 'qemu-aarch64', 'the Rust target aarch64-unknown-linux-gnu'],
  );
  assert.deepEqual(
    missing(RUNS.ci.needs, none).map((m) => m.what),
    ['bwrap', 'strace', LINKER, 'the Rust target aarch64-unknown-linux-gnu', 'the Rust target wasm32-wasip1-threads', 'qemu-aarch64'],
  );
});

test('with everything installed nothing is missing, for any run', () => {
  for (const run of Object.keys(RUNS)) assert.deepEqual(missing(RUNS[run].needs, system(EVERYTHING)), [], run);
});

test('the arm64 glibc is named on its own once the linker is there (an install without recommends leaves it out)', () => {
  const sys = system({ ...EVERYTHING, files: [] });
  assert.deepEqual(missing(['linker', 'glibc'], sys), [
    {
      key: 'glibc',
      what: `the arm64 glibc in ${SYSROOT}`,
      why: NEEDS.glibc.why,
      install: 'apt-get install libc6-dev-arm64-cross',
    },
  ]);
});

test('without rustc, one line stands for every Rust target', () => {
  const lacking = missing(RUNS.test.needs, system({ ...EVERYTHING, rust: false }));
  assert.deepEqual(lacking, [
    { key: 'rustc', what: 'rustc', why: 'every build is Rust', install: 'install the Rust toolchain with rustup (https://rustup.rs)' },
  ]);
});

test('a user with sudo on Debian is told each command, with sudo, then all at once, and that npm test installs them as root', () => {
  const sys = system({ programs: ['apt-get', 'sudo', 'rustup'], targets: ['wasm32-wasip1-threads'] });
  assert.deepEqual(installer(sys), { itself: false, sudo: 'sudo ', debian: true });
  assert.deepEqual(stopLines('test', missing(RUNS.test.needs, sys), sys), [
    'npm test needs what is not installed here:',
    `  bwrap (${NEEDS.bwrap.why}): sudo apt-get install bubblewrap`,
    `  strace (${NEEDS.strace.why}): sudo apt-get install strace`,
    `  ${LINKER} (${NEEDS.linker.why}): sudo apt-get install gcc-aarch64-linux-gnu`,
    `  the Rust target aarch64-unknown-linux-gnu (${NEEDS.arm64Target.why}): rustup target add aarch64-unknown-linux-gnu`,
    'all at once: sudo apt-get install -y bubblewrap strace gcc-aarch64-linux-gnu && rustup target add aarch64-unknown-linux-gnu',
    '(run as root, npm test installs the Debian packages itself)',
  ]);
});

test('as root with apt-get the step installs the packages itself; without apt-get it names the Debian packages', () => {
  assert.equal(installer(system({ programs: ['apt-get'], root: true })).itself, true);
  assert.equal(installer(system({ programs: ['apt-get'] })).itself, false, 'not root');
  const sys = system({ root: true, targets: EVERYTHING.targets });
  assert.equal(installer(sys).itself, false, 'no apt-get');
  assert.deepEqual(stopLines('arm64', missing(['qemu'], sys), sys), [
    'npm run test:arm64 needs what is not installed here:',
    `  qemu-aarch64 (${NEEDS.qemu.why}): apt-get install qemu-user`,
    '(Debian and Ubuntu package names: elsewhere, install the same tools with your package manager)',
  ]);
});

test('a bwrap that cannot start a sandbox stops the run, as this user and, when root, as an unprivileged one', () => {
  const asked = [];
  const refusing = (who) => (user) => {
    asked.push(user);
    return user === who ? 'bwrap: No permissions to create new namespace' : null;
  };
  assert.equal(bwrapProblem(system({ root: true, bwrapFails: () => null })), null);
  const problem = bwrapProblem(system({ root: true, bwrapFails: refusing('nobody') }));
  assert.match(problem, /^bwrap is installed but can't start a sandbox here as the unprivileged user nobody \(bwrap: No permissions to create new namespace\)/);
  assert.deepEqual(asked, [null, 'nobody']);
  asked.length = 0;
  assert.match(bwrapProblem(system({ bwrapFails: refusing(null) })), /^bwrap is installed but can't start a sandbox here \(bwrap: No permissions/);
  assert.deepEqual(asked, [null], 'a user who is not root is not asked to run as another');
});

test('with nothing installed, the step stops within seconds, naming each tool and the command that installs it', () => {
  // Nothing on its PATH: no tool, no apt-get, no sudo, no rustc, whoever runs it.
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [SCRIPT, 'test'], { encoding: 'utf8', env: { PATH: tempDir('claw-identity-bare-path-') }, timeout: 30_000 });
  const seconds = (Date.now() - t0) / 1000;
  assert.equal(r.status, 1, r.stderr);
  assert.ok(seconds < 10, `it took ${seconds} s`);
  assert.equal(
    r.stderr,
    [
      'npm test needs what is not installed here:',
      `  bwrap (${NEEDS.bwrap.why}): apt-get install bubblewrap`,
      `  strace (${NEEDS.strace.why}): apt-get install strace`,
      `  ${LINKER} (${NEEDS.linker.why}): apt-get install gcc-aarch64-linux-gnu`,
      '  rustc (every build is Rust): install the Rust toolchain with rustup (https://rustup.rs)',
      'all at once: apt-get install -y bubblewrap strace gcc-aarch64-linux-gnu',
      '(Debian and Ubuntu package names: elsewhere, install the same tools with your package manager)',
    ]
      .map((l) => `system-deps: ${l}\n`)
      .join(''),
  );
});

test('npm test, npm run test:arm64 and CI check the system with this one script, before anything else', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  assert.match(pkg.scripts.pretest, /^node scripts\/system-deps\.mjs test && /);
  const ci = fs.readFileSync(path.join(root, '.ci', 'run'), 'utf8');
  const deps = ci.indexOf('\nnode scripts/system-deps.mjs ci\n');
  assert.ok(deps > 0 && deps < ci.indexOf('\nnpm ci '), 'CI runs `node scripts/system-deps.mjs ci` before npm ci');
  const commands = ci.split('\n').filter((l) => !l.startsWith('#'));
  assert.deepEqual(
    commands.filter((l) => /apt-get|rustup/.test(l)),
    [],
    'CI installs nothing itself',
  );
  const arm64 = fs.readFileSync(path.join(root, 'scripts', 'arm64.mjs'), 'utf8');
  assert.match(arm64, /export async function test\(only\) \{\n(?: {2}\/\/.*\n)* {2}ensure\('arm64'\);/);
  const usage = spawnSync(process.execPath, [SCRIPT, 'everything'], { encoding: 'utf8' });
  assert.equal(usage.status, 2);
  assert.equal(usage.stderr, 'system-deps: usage: node scripts/system-deps.mjs test | arm64 | ci\n');
});
