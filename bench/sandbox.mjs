// The `claw-identity` sandbox backend: what a sandboxed `exec` of `true`
// costs next to a plain host spawn and a bare bwrap run with the backend's
// own namespace flags, and what each turn costs the gateway's event loop
// (the backend's factory, which OpenClaw calls at every turn). One process,
// one run; the spawn rows interleaved, round r in an order rotated by r.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { buildInfo, configure } from '../index.js';
import { createSandboxBackend } from '../lib/sandbox.js';
import { median, percentile, randomToken } from './harness.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const SDK = path.join(root, '.cache', 'openclaw', 'node_modules', 'openclaw', 'dist', 'plugin-sdk', 'sandbox.js');

/** bwrap's options that mount something. */
const MOUNTS = new Set(['--ro-bind', '--bind', '--proc', '--dev', '--tmpfs']);
/** bwrap's setup options: the backend's argv has its flags before the first. */
const SETUP = new Set([...MOUNTS, '--symlink', '--remount-ro', '--chdir']);

/** Spawns `argv` as OpenClaw's supervisor does (child_process.spawn), resolving on 'close'. */
function run(argv, { env, cwd } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c) => {
      err += c;
    });
    child.stdout.resume();
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${argv[0]} exited ${code}: ${err.trim()}`))));
    child.stdin.end();
  });
}

/**
 * The time the loop's thread has waited for a CPU (runnable, but another
 * thread or process had it) so far, in ms: the scheduler's run-queue wait
 * (`/proc/thread-self/schedstat`, second field, nanoseconds).
 */
const schedstat = { fd: null, buf: Buffer.alloc(96) };
function runQueueWait() {
  if (schedstat.fd === null) schedstat.fd = fs.openSync('/proc/thread-self/schedstat', 'r');
  const { fd, buf } = schedstat;
  return Number(buf.toString('latin1', 0, fs.readSync(fd, buf, 0, buf.length, 0)).split(' ')[1]) / 1e6;
}

/**
 * What `fn` (awaited) costs the event loop. `active`: the time the loop
 * did not spend waiting for events (`eventLoopUtilization`), so work on
 * the addon's threads is not in it, but a blocking call is, and so is the
 * time the machine gave the loop's thread to other processes. `busy`: that
 * time taken out (the scheduler's run-queue wait of the thread meanwhile),
 * so what the loop itself spent: running, or blocked in a call. `wall`:
 * until `fn` settles.
 */
async function onLoop(fn) {
  const elu0 = performance.eventLoopUtilization();
  const wait0 = runQueueWait();
  const t0 = performance.now();
  await fn();
  const wallMs = performance.now() - t0;
  const preemptedMs = runQueueWait() - wait0;
  const activeMs = performance.eventLoopUtilization(performance.eventLoopUtilization(), elu0).active;
  return { busyMs: Math.max(0, activeMs - preemptedMs), activeMs, wallMs };
}

const stats = (xs) => ({ p50: median(xs), p99: percentile(xs, 0.99), n: xs.length });

/**
 * `{ skipped }` without bwrap; otherwise `{ flags, mounts, spawn: {id:
 * stats}, ratio, turn: {id: {busy, active, wall}} }`, times in ms.
 */
export async function sandboxBench({ rounds = 200, turns = 500, coldTurns = 40 } = {}) {
  const bwrap = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout.trim();
  if (!bwrap) return { skipped: 'bwrap is not installed (apt-get install bubblewrap)' };
  if (buildInfo.name === 'wasm32-wasi') return { skipped: 'the WebAssembly build runs no sandbox' };
  const sdk = fs.existsSync(SDK) ? await import(SDK) : null;

  // A gateway's host: the map in its directory, an agent's workspace; under
  // /var/tmp, as /tmp is the sandbox's own.
  const base = fs.mkdtempSync('/var/tmp/claw-identity-bench-sandbox-');
  try {
    const mapDir = path.join(base, 'home', '.config', 'micelclaw');
    const ws = path.join(base, 'workspace');
    for (const d of [mapDir, ws]) fs.mkdirSync(d, { recursive: true, mode: 0o700 });
    const map = path.join(mapDir, 'agent-tokens.json');
    fs.writeFileSync(map, JSON.stringify({ 'paco--francis': randomToken() }), { mode: 0o600 });
    const quiet = { info() {}, warn() {}, error() {}, debug() {} };
    const openclawConfig = { agents: { entries: { 'paco--francis': { workspace: ws, sandbox: { mode: 'all', backend: 'claw-identity' } } } } };
    // `hide` makes a config of its own: each cold turn gets one the probe has not seen.
    let configs = 0;
    const reconfigure = () =>
      configure({ tokenMapPath: map, logger: quiet, openclawConfig, pluginDirs: [], sandbox: { hide: [path.join(base, `hidden-${configs++}`)] } });
    reconfigure();
    const native = globalThis[Symbol.for(`claw-identity.native.${buildInfo.name}`)].native;
    const backend = createSandboxBackend({ native, sdk, logger: quiet });
    const params = {
      workspaceDir: ws,
      agentWorkspaceDir: ws,
      scopeKey: 'agent:paco--francis:main',
      cfg: { workspaceAccess: 'rw', docker: {} },
    };
    const handle = await backend.factory(params);
    const execEnv = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: handle.workdir };
    const buildSpec = () => handle.buildExecSpec({ command: 'true', workdir: handle.workdir, env: execEnv, usePty: false });

    // Per turn, first (before the spawn rows leave their garbage to
    // collect): the factory, with the probe passed already for this config,
    // and buildExecSpec per command. After the spawn rows, which keep this
    // config: the factory with a config the probe has not seen (so it runs),
    // and for comparison the probe run blocking on the loop
    // (sandboxProbeSync), as every turn ran it before.
    const turnRows = {};
    const measure = async (id, n, fn, before) => {
      const m = { busy: [], active: [], wall: [] };
      for (let i = 0; i < n; i++) {
        before?.();
        const x = await onLoop(fn);
        m.busy.push(x.busyMs);
        m.active.push(x.activeMs);
        m.wall.push(x.wallMs);
      }
      turnRows[id] = { busy: stats(m.busy), active: stats(m.active), wall: stats(m.wall) };
    };
    await measure('factory.cached', 200, () => backend.factory(params)); // warm-up
    await measure('factory.cached', turns, () => backend.factory(params));
    await measure('exec.spec', turns, buildSpec);
    await measure('loop.empty', turns, () => new Promise((resolve) => setImmediate(resolve)));

    // The same namespace and process flags as the backend's, and only the root it needs to run `true`.
    const spec = await buildSpec();
    const flags = spec.argv.slice(
      1,
      spec.argv.findIndex((a) => SETUP.has(a)),
    );
    const rows = {
      'host.sh': () => run(['sh', '-c', 'true']),
      'bwrap.bare': () => run([bwrap, ...flags, '--ro-bind', '/', '/', 'true']),
      'bwrap.plan': () => run(spec.argv, { env: spec.env, cwd: spec.cwd }),
      'backend.exec': async () => {
        const s = await buildSpec();
        await run(s.argv, { env: s.env, cwd: s.cwd });
      },
    };
    const ids = Object.keys(rows);
    const times = Object.fromEntries(ids.map((id) => [id, []]));
    for (const id of ids) for (let i = 0; i < 5; i++) await rows[id]();
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < ids.length; k++) {
        const id = ids[(k + r) % ids.length];
        const t0 = performance.now();
        await rows[id]();
        times[id].push(performance.now() - t0);
      }
    }
    const ratio = (a, b) => median(times[a].map((x, i) => x / times[b][i]));

    await measure('factory.cold', coldTurns, () => backend.factory(params), reconfigure);
    await measure('probe.sync.cold', coldTurns, async () => native.sandboxProbeSync(), reconfigure);

    return {
      flags,
      mounts: spec.argv.filter((a) => MOUNTS.has(a)).length,
      spawn: Object.fromEntries(ids.map((id) => [id, stats(times[id])])),
      ratio: {
        planVsBare: ratio('bwrap.plan', 'bwrap.bare'),
        execVsBare: ratio('backend.exec', 'bwrap.bare'),
        bareVsSh: ratio('bwrap.bare', 'host.sh'),
      },
      turn: turnRows,
    };
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}
