#!/usr/bin/env node
// The system tools the tests and builds need, checked in one place: npm
// test's pretest, `npm run test:arm64` (scripts/arm64.mjs) and CI (.ci/run)
// call it, and `npm pack`'s refusal (scripts/prepack.mjs) names what it
// lacks from the same table.
//
//   node scripts/system-deps.mjs test    what npm test needs
//   node scripts/system-deps.mjs arm64   what npm run test:arm64 needs
//   node scripts/system-deps.mjs ci      both (.ci/run)
//
// A missing Debian package is installed with apt-get where this runs as root
// and apt-get is there (quiet, non-interactive, as CI always did); a missing
// Rust target with rustup. Whatever is still missing then stops the run at
// once, each tool named with what needs it and the command that installs it:
// a suite is never left to fail, or be skipped, for want of one.
//
// Plain Node, no npm dependency: CI runs it before npm ci, on the system's Node.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const LINKER = 'aarch64-linux-gnu-gcc';
export const SYSROOT = '/usr/aarch64-linux-gnu';
export const ARM64_TARGET = 'aarch64-unknown-linux-gnu';
export const WASM_TARGET = 'wasm32-wasip1-threads';

/**
 * Each thing a run can need: a program or file from a Debian package
 * (`pkg`), or a Rust target (`target`). `why` says what needs it.
 */
export const NEEDS = {
  bwrap: { what: 'bwrap', pkg: 'bubblewrap', why: 'the sandbox suites run their commands under it', present: (sys) => sys.program('bwrap') },
  strace: { what: 'strace', pkg: 'strace', why: 'the syscalls suite traces the addon with it', present: (sys) => sys.program('strace') },
  linker: {
    what: LINKER,
    pkg: 'gcc-aarch64-linux-gnu',
    why: 'npm pack, and so the package suite, links the linux-arm64 build with it',
    present: (sys) => sys.program(LINKER),
  },
  // Checked once the linker is there: apt-get installs it with the linker (a
  // recommended package), but not with --no-install-recommends.
  glibc: {
    what: `the arm64 glibc in ${SYSROOT}`,
    pkg: 'libc6-dev-arm64-cross',
    why: 'the linux-arm64 build links against it, and qemu runs that build on it',
    present: (sys) => !sys.program(LINKER) || sys.file(path.join(SYSROOT, 'lib', 'ld-linux-aarch64.so.1')),
  },
  qemu: { what: 'qemu-aarch64', pkg: 'qemu-user', why: 'npm run test:arm64 runs the arm64 build under it', present: (sys) => sys.program('qemu-aarch64') },
  arm64Target: { what: `the Rust target ${ARM64_TARGET}`, target: ARM64_TARGET, why: 'the linux-arm64 build' },
  wasmTarget: { what: `the Rust target ${WASM_TARGET}`, target: WASM_TARGET, why: 'the WebAssembly build' },
};

/**
 * What each run needs. `npm test` builds and packs the linux-arm64 addon
 * (the package suite checks the complete tarball) but runs nothing under
 * qemu: only `npm run test:arm64` does.
 */
const TEST = ['bwrap', 'strace', 'linker', 'glibc', 'arm64Target', 'wasmTarget'];
const ARM64 = ['linker', 'glibc', 'qemu', 'arm64Target'];
export const RUNS = {
  test: { name: 'npm test', needs: TEST },
  arm64: { name: 'npm run test:arm64', needs: ARM64 },
  ci: { name: 'CI (.ci/run)', needs: [...new Set([...TEST, ...ARM64])] },
};

function onPath(cmd) {
  return (process.env.PATH || '').split(path.delimiter).some((d) => {
    if (!d) return false;
    try {
      fs.accessSync(path.join(d, cmd), fs.constants.X_OK);
      return fs.statSync(path.join(d, cmd)).isFile();
    } catch {
      return false;
    }
  });
}

/** The system as the checks see it; tests pass a made-up one. */
export const SYSTEM = {
  program: (name) => onPath(name),
  file: (p) => fs.existsSync(p),
  root: () => process.getuid?.() === 0,
  /** The Rust toolchain's sysroot, or null without rustc. */
  rustSysroot: () => {
    try {
      return execFileSync('rustc', ['--print', 'sysroot'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 30_000 }).trim();
    } catch {
      return null;
    }
  },
  /** null when bwrap starts a sandbox as `user` (null: this one), else the first line it printed. */
  bwrapFails: (user) => {
    // The flags the suites' sandboxes rely on most: a user namespace of its
    // own, and none inside it (--disable-userns is bubblewrap 0.8+).
    const argv = ['bwrap', '--unshare-user', '--disable-userns', '--ro-bind', '/', '/', '--', '/bin/true'];
    const [cmd, args] = user ? ['runuser', ['-u', user, '--', ...argv]] : [argv[0], argv.slice(1)];
    // From /: a clone under /root is no directory an unprivileged user may enter.
    const r = spawnSync(cmd, args, { cwd: '/', encoding: 'utf8', timeout: 10_000 });
    if (r.status === 0) return null;
    return (r.stderr || '').trim().split('\n')[0] || (r.error ? r.error.message : `exit ${r.status ?? r.signal}`);
  },
};

/**
 * How a missing Debian package gets installed here: `itself` when this
 * process can (root, with apt-get); else `sudo` is the prefix of the command
 * shown, and `debian` says whether there is apt-get at all.
 */
export function installer(sys = SYSTEM) {
  const debian = sys.program('apt-get');
  const root = sys.root();
  return { itself: debian && root, sudo: !root && sys.program('sudo') ? 'sudo ' : '', debian };
}

/**
 * What of `needs` (keys of NEEDS) is missing here: `{ key, what, why,
 * install }` each. Without rustc, one line for it stands for every Rust
 * target.
 */
export function missing(needs, sys = SYSTEM) {
  const { sudo } = installer(sys);
  const out = [];
  let sysroot;
  for (const key of needs) {
    const n = NEEDS[key];
    if (n.pkg) {
      if (!n.present(sys)) out.push({ key, what: n.what, why: n.why, install: `${sudo}apt-get install ${n.pkg}` });
      continue;
    }
    sysroot ??= sys.rustSysroot() ?? '';
    if (!sysroot) {
      if (!out.some((m) => m.key === 'rustc'))
        out.push({ key: 'rustc', what: 'rustc', why: 'every build is Rust', install: 'install the Rust toolchain with rustup (https://rustup.rs)' });
    } else if (!sys.file(path.join(sysroot, 'lib', 'rustlib', n.target, 'lib'))) {
      out.push({ key, what: n.what, why: n.why, install: `rustup target add ${n.target}` });
    }
  }
  return out;
}

/** The lines that stop a run: each missing thing, then one command for all of them. */
export function stopLines(runName, lacking, sys = SYSTEM) {
  const run = RUNS[runName];
  const { sudo, debian } = installer(sys);
  const lines = [`${run.name} needs what is not installed here:`];
  for (const m of lacking) lines.push(`  ${m.what} (${m.why}): ${m.install}`);
  const pkgs = [...new Set(lacking.filter((m) => NEEDS[m.key]?.pkg).map((m) => NEEDS[m.key].pkg))];
  const targets = lacking.filter((m) => NEEDS[m.key]?.target).map((m) => NEEDS[m.key].target);
  const all = [];
  if (pkgs.length) all.push(`${sudo}apt-get install -y ${pkgs.join(' ')}`);
  if (targets.length) all.push(`rustup target add ${targets.join(' ')}`);
  if (all.length > 1 || pkgs.length > 1 || targets.length > 1) lines.push(`all at once: ${all.join(' && ')}`);
  if (pkgs.length && !debian) lines.push('(Debian and Ubuntu package names: elsewhere, install the same tools with your package manager)');
  if (pkgs.length && debian && !sys.root()) lines.push(`(run as root, ${run.name} installs the Debian packages itself)`);
  return lines;
}

/** Why bwrap can't start the suites' sandboxes here (as this user, and as an unprivileged one when root), or null. */
export function bwrapProblem(sys = SYSTEM) {
  const users = sys.root() ? [null, 'nobody'] : [null];
  for (const user of users) {
    const line = sys.bwrapFails(user);
    if (line)
      return `bwrap is installed but can't start a sandbox here${user ? ` as the unprivileged user ${user}` : ''} (${line}): the sandbox suites need bubblewrap 0.8 or newer and user namespaces for ${user ? 'every user' : 'this user'}; docs/operating.md ("The sandbox") lists each reason with its fix`;
  }
  return null;
}

const say = (line) => process.stderr.write(`system-deps: ${line}\n`);

function apt(args) {
  const r = spawnSync('apt-get', ['-qq', '-o', 'DPkg::Lock::Timeout=300', ...args], {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (r.status !== 0) {
    for (const l of `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-15)) say(`  ${l}`);
    say(`apt-get ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
  }
  return r.status === 0;
}

/** Installs what this user can: the Debian packages as root with apt-get, the Rust targets with rustup. */
function installWhatWeCan(lacking, sys = SYSTEM) {
  const pkgs = [...new Set(lacking.filter((m) => NEEDS[m.key]?.pkg).map((m) => NEEDS[m.key].pkg))];
  if (pkgs.length && installer(sys).itself) {
    const t0 = Date.now();
    say(`installing ${pkgs.join(' ')} with apt-get ...`);
    if (apt(['update']) && apt(['install', '-y', ...pkgs])) say(`installed in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  }
  const targets = lacking.filter((m) => NEEDS[m.key]?.target).map((m) => NEEDS[m.key].target);
  if (targets.length && sys.program('rustup')) {
    say(`adding the Rust target${targets.length > 1 ? 's' : ''} ${targets.join(' ')} ...`);
    spawnSync('rustup', ['target', 'add', ...targets], { stdio: ['ignore', 2, 2] });
  }
}

/** Makes sure everything `runName` needs is here, installing what it can; else stops the process, naming what is missing. */
export function ensure(runName) {
  const run = RUNS[runName];
  let lacking = missing(run.needs);
  if (lacking.length) {
    installWhatWeCan(lacking);
    lacking = missing(run.needs);
  }
  if (lacking.length) {
    for (const l of stopLines(runName, lacking)) say(l);
    process.exit(1);
  }
  if (run.needs.includes('bwrap')) {
    const problem = bwrapProblem();
    if (problem) {
      say(`${run.name} stops here: ${problem}`);
      process.exit(1);
    }
  }
  say(`${run.name}: the system tools it needs are here (${run.needs.map((k) => NEEDS[k].what).join(', ')})`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [runName, ...rest] = process.argv.slice(2);
  if (!Object.hasOwn(RUNS, runName ?? '') || rest.length) {
    say(`usage: node scripts/system-deps.mjs ${Object.keys(RUNS).join(' | ')}`);
    process.exit(2);
  }
  ensure(runName);
}
