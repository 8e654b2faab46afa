// Harness for the real-OpenClaw end-to-end tests.
//
// - Each run gets its own folder (0700) under the system temp dir, with its own
//   HOME, OPENCLAW_HOME, OPENCLAW_STATE_DIR, OPENCLAW_CONFIG_PATH, TMPDIR and
//   logging.file; a token map (0600 in a 0700 dir); the MCP call log.
// - OpenClaw runs under the Node 24 from scripts/ensure-openclaw.mjs.
// - Every process we start carries CLAW_E2E_RUN=<run id> in its environment.
//   Stopping a run stops, by PID, the descendants of the processes we started
//   plus any process whose environment carries that run id (gateway children
//   get re-parented when the gateway exits). Never by name.
// - Tokens never appear in output: only fingerprints (first 12 hex of sha256).

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import zlib from 'node:zlib';
import { baseEnv, ensureOpenclaw } from '../../scripts/ensure-openclaw.mjs';
import { contained, deepMerge } from '../helpers/posture.mjs';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const FIXTURES = path.join(REPO_ROOT, '__test__', 'e2e', 'fixtures');
export const AUDIT_STAMP_PLUGIN = path.join(FIXTURES, 'audit-stamp-plugin');
export const AGENTS = ['paco--francis', 'paco--dali', 'pepito--atlas'];
export const PROVIDER = 'scripted';

const KEEP = process.env.CLAW_E2E_KEEP === '1';

let logSink = (line) => process.stderr.write(`${line}\n`);

/** Progress lines go to stderr; the demo, which reports progress itself, replaces the sink. */
export function setLog(sink) {
  logSink = sink;
}

export function log(...parts) {
  logSink(`[e2e ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}`);
}

export function fingerprint(token) {
  return crypto.createHash('sha256').update(String(token)).digest('hex').slice(0, 12);
}

/** Hide anything token-shaped (a run of 32+ hex digits) behind its fingerprint. */
export function scrub(text) {
  return String(text).replace(/[0-9a-fA-F]{32,}/g, (m) => `<hex${m.length}:${fingerprint(m)}>`);
}

/** The end of a CLI result's output, scrubbed, for assertion messages. */
export function tail(res, n = 1500) {
  return scrub(`${res.stderr ?? ''}\n${res.stdout ?? ''}`.trim().slice(-n));
}

export function randomToken() {
  return crypto.randomBytes(32).toString('hex');
}

/** A 42-char value a model could hallucinate (not hex-64, not in any map). */
export function wrongToken() {
  return 'hx' + crypto.randomBytes(20).toString('hex');
}

let ensured;
/** Node 24 + OpenClaw (cached per process). */
export function openclawRuntime() {
  ensured ??= ensureOpenclaw({ log: (l) => log(l) });
  return ensured;
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function mkdir0700(p) {
  fs.mkdirSync(p, { recursive: true, mode: 0o700 });
  fs.chmodSync(p, 0o700);
  return p;
}

// ---------------------------------------------------------------------------
// Processes: tracked by PID, stopped by PID.

const started = new Map(); // pid -> {runId, starttime}
const ACTIVE_RUNS = new Set();

function procStat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // rest[0] = state (field 3), rest[1] = ppid (4), rest[19] = starttime (22)
    return { state: rest[0], ppid: Number(rest[1]), starttime: rest[19] };
  } catch {
    return null;
  }
}

function allPids() {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

/** PIDs of all live descendants of `root` (not including root). */
export function descendants(root) {
  const children = new Map();
  for (const pid of allPids()) {
    const st = procStat(pid);
    if (!st) continue;
    if (!children.has(st.ppid)) children.set(st.ppid, []);
    children.get(st.ppid).push(pid);
  }
  const out = [];
  const stack = [root];
  while (stack.length) {
    const p = stack.pop();
    for (const c of children.get(p) || []) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

/** PIDs whose environment carries CLAW_E2E_RUN=<runId>. */
export function pidsWithRunMarker(runId) {
  const needle = Buffer.from(`CLAW_E2E_RUN=${runId}\0`);
  const out = [];
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    try {
      const env = fs.readFileSync(`/proc/${pid}/environ`);
      if (env.indexOf(needle) !== -1) out.push(pid);
    } catch {
      /* gone or not ours */
    }
  }
  return out;
}

function alive(pid, starttime) {
  const st = procStat(pid);
  if (!st || st.state === 'Z') return false;
  return starttime === undefined || st.starttime === starttime;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Stop a process tree by PID: SIGTERM the root and its descendants, wait, then
 * SIGKILL what is left (checking start times so a reused PID is never hit).
 */
export async function stopTree(rootPid, { runId, graceMs = 8000 } = {}) {
  const snapshot = new Map();
  const add = (pid) => {
    const st = procStat(pid);
    if (st && !snapshot.has(pid)) snapshot.set(pid, st.starttime);
  };
  if (rootPid) {
    add(rootPid);
    descendants(rootPid).forEach(add);
  }
  if (runId) pidsWithRunMarker(runId).forEach(add);
  if (!snapshot.size) return [];
  for (const [pid, t] of snapshot)
    if (alive(pid, t))
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* gone */
      }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    // Late children (spawned during shutdown) join the set.
    if (rootPid && alive(rootPid, snapshot.get(rootPid))) descendants(rootPid).forEach(add);
    if (runId) pidsWithRunMarker(runId).forEach(add);
    if ([...snapshot].every(([pid, t]) => !alive(pid, t))) break;
    await sleep(200);
  }
  const killed = [];
  for (const [pid, t] of snapshot) {
    if (alive(pid, t)) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      } catch {
        /* gone */
      }
    }
  }
  for (const pid of snapshot.keys()) started.delete(pid);
  return killed;
}

// Last resort when the test process exits abruptly: SIGKILL what we started, by PID.
function killAllSync() {
  for (const [pid, { starttime, runId }] of started) {
    const victims = new Set([pid, ...descendants(pid)]);
    if (runId) for (const p of pidsWithRunMarker(runId)) victims.add(p);
    for (const p of victims) {
      if (p === pid && !alive(pid, starttime)) continue;
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
  for (const run of ACTIVE_RUNS)
    for (const p of pidsWithRunMarker(run.runId)) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
}
process.on('exit', killAllSync);
// Interrupted (Ctrl-C, a timeout's SIGTERM): stop our processes, drop our lock
// entries and run folders, then die with the signal's status.
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => {
    killAllSync();
    for (const run of ACTIVE_RUNS) {
      try {
        removeOwnLocks(run);
        if (!KEEP) fs.rmSync(run.root, { recursive: true, force: true });
      } catch {
        /* best effort */
      }
    }
    process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
  });
}

function track(child, runId) {
  const st = procStat(child.pid);
  started.set(child.pid, { starttime: st?.starttime, runId });
  child.once('exit', () => started.delete(child.pid));
}

// ---------------------------------------------------------------------------
// Runs

export const DEFAULT_LOG_DIR = '/tmp/openclaw';
const PROCESS_START = Date.now();
const OUR_RUN_ROOTS = new Set();

function lockRoots() {
  const tmp = '/tmp'; // OpenClaw hard-codes /tmp for these, whatever TMPDIR says
  try {
    return fs
      .readdirSync(tmp)
      .filter((n) => n.startsWith('openclaw-state-locks-'))
      .map((n) => path.join(tmp, n));
  } catch {
    return [];
  }
}

function snapshotLocks() {
  const set = new Set();
  for (const root of lockRoots()) {
    set.add(root);
    try {
      for (const e of fs.readdirSync(root)) set.add(path.join(root, e));
    } catch {
      /* not a dir */
    }
  }
  if (fs.existsSync(DEFAULT_LOG_DIR)) set.add(DEFAULT_LOG_DIR);
  return set;
}
const PROCESS_BEFORE = snapshotLocks();

/**
 * Create an isolated run folder.
 * @param {string} name short label for the folder name
 * @param {{base?: string, node?: string}} [o] `base`: where (the system temp
 *   dir by default; the sandbox suite's runs live under /var/tmp, since a
 *   sandbox has a /tmp of its own and would not see a map there at all);
 *   `node`: run OpenClaw (and the MCP server) on this Node instead
 */
export async function createRun(name, { base = os.tmpdir(), node } = {}) {
  // OpenClaw runs on the Node of ensureOpenclaw() (24), or on `node` (another of its range).
  const runtime = await openclawRuntime();
  const rt = node ? { ...runtime, node, env: baseEnv(path.dirname(node)) } : runtime;
  const root = fs.mkdtempSync(path.join(base, `claw-e2e-${name}-`));
  fs.chmodSync(root, 0o700);
  OUR_RUN_ROOTS.add(root);
  const runId = crypto.randomBytes(8).toString('hex');
  const dirs = {
    root,
    home: mkdir0700(path.join(root, 'home')),
    state: mkdir0700(path.join(root, 'state')),
    configDir: mkdir0700(path.join(root, 'config')),
    logs: mkdir0700(path.join(root, 'logs')),
    tmp: mkdir0700(path.join(root, 'tmp')),
    secrets: mkdir0700(path.join(root, 'secrets')),
    mcp: mkdir0700(path.join(root, 'mcp')),
    model: mkdir0700(path.join(root, 'model')),
    workspaces: mkdir0700(path.join(root, 'workspaces')),
    proc: mkdir0700(path.join(root, 'proc')),
  };
  const run = {
    name,
    runId,
    ...dirs,
    configPath: path.join(dirs.configDir, 'openclaw.json'),
    logFile: path.join(dirs.logs, 'openclaw.log'),
    tokenMapPath: path.join(dirs.secrets, 'token-map.json'),
    callLog: path.join(dirs.mcp, 'claw-os-calls.jsonl'),
    modelLog: path.join(dirs.model, 'requests.jsonl'),
    gatewayToken: crypto.randomBytes(24).toString('hex'),
    gatewayPort: null,
    runtime: rt,
    locksBefore: snapshotLocks(),
    startedAt: Date.now(),
    env: {
      ...rt.env,
      HOME: dirs.home,
      OPENCLAW_HOME: dirs.home,
      OPENCLAW_STATE_DIR: dirs.state,
      OPENCLAW_CONFIG_PATH: path.join(dirs.configDir, 'openclaw.json'),
      TMPDIR: dirs.tmp,
      OPENCLAW_DISABLE_BONJOUR: '1',
      OPENCLAW_NO_RESPAWN: '1',
      OPENCLAW_SKIP_CHANNELS: '1',
      OPENCLAW_EXEC_SHELL_SNAPSHOT: '0',
      NO_COLOR: '1',
      // One compile cache for all runs (speeds up every start); it holds compiled code only.
      NODE_COMPILE_CACHE: path.join(REPO_ROOT, '.cache', 'node-compile-cache'),
      CLAW_E2E_RUN: runId,
    },
  };
  delete run.env.OPENCLAW_GATEWAY_TOKEN;
  ACTIVE_RUNS.add(run);
  return run;
}

/** Write the token map atomically (0600 in a 0700 dir). */
export function writeTokenMap(run, map) {
  const tmp = path.join(run.secrets, `.token-map.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`);
  fs.writeFileSync(tmp, JSON.stringify(map, null, 2) + '\n', { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, run.tokenMapPath);
  return run.tokenMapPath;
}

/** A random token for each agent. */
export function makeTokens(agents = AGENTS) {
  return Object.fromEntries(agents.map((a) => [a, randomToken()]));
}

/**
 * Build the OpenClaw config for a run.
 * @param {object} run
 * @param {object} o
 * @param {string} o.modelBaseUrl   scripted model base URL (http://127.0.0.1:PORT/v1)
 * @param {string} [o.modelId]
 * @param {boolean} [o.toolSearch]  false => tools.toolSearch: false; true/undefined => default (on)
 * @param {{path?: string, install?: boolean, config?: object, enabled?: boolean}} [o.plugin]
 * @param {Array<{id: string, path: string, config?: object}>} [o.extraPlugins] more plugins to load (fixtures)
 * @param {string[]} [o.agents]
 * @param {boolean} [o.gateway]     add gateway section (port chosen here)
 * @param {'host'|'sandbox'|false} [o.contain] how the agents are contained
 *   (helpers/posture.mjs), so that under posture "enforce" (the default) the
 *   layer serves tokens: `'host'` (the default) confines their file tools to
 *   their workspaces and denies every host tool; `'sandbox'` runs every
 *   session in the plugin's bubblewrap sandbox; `false` leaves OpenClaw's
 *   defaults (every host tool), for a suite that tests what a host agent's
 *   own tools can do (it then sets posture "warn", or tests the refusal)
 * @param {object} [o.extra]        deep-merged last
 */
export async function writeConfig(run, o) {
  const agents = o.agents ?? AGENTS;
  const modelId = o.modelId ?? 'scripted-1';
  const entries = {};
  for (const a of agents) entries[a] = { workspace: mkdir0700(path.join(run.workspaces, a)) };
  let cfg = {
    logging: { file: run.logFile },
    models: {
      providers: {
        [PROVIDER]: {
          baseUrl: o.modelBaseUrl,
          apiKey: 'e2e-not-a-secret',
          api: 'openai-completions',
          models: [{ id: modelId, name: 'Scripted e2e model', contextWindow: 128000, maxTokens: 4096 }],
        },
      },
    },
    agents: {
      ownership: 'explicit',
      defaults: {
        model: { primary: `${PROVIDER}/${modelId}` },
        systemAgent: { agentId: agents[0] },
        subagents: { allowAgents: ['*'] },
      },
      entries,
    },
    mcp: {
      servers: {
        'claw-os': {
          command: run.runtime.node,
          args: [path.join(FIXTURES, 'claw-os-server.mjs')],
          // OpenClaw gives MCP servers a scrubbed environment: pass the run id on so
          // stopping the run finds them even if their parent is gone.
          env: { CLAW_OS_CALL_LOG: run.callLog, CLAW_E2E_RUN: run.runId },
        },
      },
    },
  };
  if (o.toolSearch === false) cfg.tools = { toolSearch: false };
  const contain = o.contain ?? 'host';
  if (contain) cfg = contained(cfg, contain);
  if (o.gateway) {
    run.gatewayPort ??= await freePort();
    cfg.gateway = { mode: 'local', bind: 'loopback', port: run.gatewayPort, auth: { mode: 'token', token: run.gatewayToken } };
  }
  if (o.plugin) {
    cfg.plugins = { entries: { 'claw-identity': { enabled: o.plugin.enabled ?? true, ...(o.plugin.config ? { config: o.plugin.config } : {}) } } };
    if (o.plugin.path) cfg.plugins.load = { paths: [o.plugin.path] };
  }
  for (const p of o.extraPlugins ?? []) {
    cfg.plugins ??= { entries: {} };
    cfg.plugins.entries[p.id] = { enabled: true, ...(p.config ? { config: p.config } : {}) };
    cfg.plugins.load ??= { paths: [] };
    cfg.plugins.load.paths.push(p.path);
  }
  const merged = o.extra ? deepMerge(cfg, o.extra) : cfg;
  fs.writeFileSync(run.configPath, JSON.stringify(merged, null, 2) + '\n', { mode: 0o600 });
  run.config = merged;
  return merged;
}

/** Read back the config file (OpenClaw may have rewritten it, e.g. after plugins install). */
export function readConfig(run) {
  return JSON.parse(fs.readFileSync(run.configPath, 'utf8'));
}

/** Patch the config file in place (deep merge). */
export function patchConfig(run, patch) {
  const merged = deepMerge(readConfig(run), patch);
  fs.writeFileSync(run.configPath, JSON.stringify(merged, null, 2) + '\n', { mode: 0o600 });
  run.config = merged;
  return merged;
}

export { deepMerge };

/**
 * Run the openclaw CLI once and wait for it. Output goes to files in the run
 * folder (and is returned). `timeoutMs` is a safety net, not an assertion.
 */
export async function openclaw(run, args, { timeoutMs = 180_000, env = {}, label } = {}) {
  const rt = run.runtime;
  const tag =
    label ??
    args
      .slice(0, 2)
      .join('-')
      .replace(/[^a-z0-9-]/gi, '');
  run.procSeq = (run.procSeq ?? 0) + 1;
  const n = run.procSeq;
  const outFile = path.join(run.proc, `${String(n).padStart(3, '0')}-${tag}.out`);
  const errFile = path.join(run.proc, `${String(n).padStart(3, '0')}-${tag}.err`);
  const t0 = Date.now();
  const child = spawn(rt.node, [rt.openclawEntry, ...args], {
    cwd: run.home,
    env: { ...run.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track(child, run.runId);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    log(`openclaw ${args.slice(0, 2).join(' ')}: no exit after ${timeoutMs / 1000} s, stopping pid ${child.pid}`);
    stopTree(child.pid);
  }, timeoutMs);
  const { code, signal } = await new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  clearTimeout(timer);
  // Anything the CLI left behind (e.g. an MCP child) goes too.
  const leftovers = descendants(child.pid);
  if (leftovers.length) await stopTree(child.pid);
  fs.writeFileSync(outFile, stdout, { mode: 0o600 });
  fs.writeFileSync(errFile, stderr, { mode: 0o600 });
  const ms = Date.now() - t0;
  return { code, signal, stdout, stderr, ms, timedOut, json: tryJson(stdout), outFile, errFile };
}

function tryJson(s) {
  const t = s.trim();
  if (!t) return null;
  try {
    return JSON.parse(t);
  } catch {
    // --json output may be preceded by log lines: take the last top-level JSON object.
    const i = t.lastIndexOf('\n{');
    if (i >= 0) {
      try {
        return JSON.parse(t.slice(i + 1));
      } catch {
        /* no */
      }
    }
    const j = t.indexOf('{');
    if (j > 0) {
      try {
        return JSON.parse(t.slice(j));
      } catch {
        /* no */
      }
    }
    return null;
  }
}

/**
 * OpenClaw serializes writers of one state database with a cross-process
 * lock: an exclusive SQLite transaction on
 * /tmp/openclaw-state-locks-<uid>/state-lifecycle.<hash>.lock.sqlite
 * (`acquireStateDatabaseCoordinator`). Worker threads count as other
 * processes (each has its own module state), and a taker that waits more
 * than OpenClaw's 5 s busy timeout gives up with this message: the gateway
 * then answers the `agent` request with it (code UNAVAILABLE), or a local
 * run fails with it. Nothing outside OpenClaw can see who holds the lock or
 * wait for it, so the turn is run again, for exactly these errors only. The
 * same goes for OpenClaw's "Agent database cleanup failed" (a sqlite handle
 * of its own that fails to close while a run ends, seen on busy clean-clone
 * runs), which fails the turn before any assertion can look at it.
 * "Agent database execution admission is closed" is the third: a turn that
 * reaches an agent database while OpenClaw retires its idle execution
 * (`assertCurrent` in dist/openclaw-agent-execution-*.mjs), seen once on a
 * clean-clone run with the machine under load.
 */
// How long a read of OpenClaw's SQLite state waits for a writer's lock: a
// gateway's worker may still hold one for a moment after the gateway is
// stopped ("database is locked", seen once in a clean-clone CI run).
const SQLITE_BUSY_MS = 15_000;

const TRANSIENT = /another OpenClaw process owns state-lifecycle\b|Agent database cleanup failed|Agent database execution admission is closed/;
const STATE_LOCK_ATTEMPTS = 4;

/** Runs an `openclaw agent` turn, again while it fails only because the state lock was busy. */
async function agentTurn(run, args, opts) {
  for (let attempt = 1; ; attempt++) {
    const res = await openclaw(run, args, opts);
    const busy = res.code !== 0 && TRANSIENT.test(`${res.stderr}\n${res.stdout}`);
    if (!busy || attempt === STATE_LOCK_ATTEMPTS) return { ...res, attempts: attempt };
    log(
      `openclaw agent (${opts.label}): OpenClaw failed on its own (${`${res.stderr}\n${res.stdout}`.match(TRANSIENT)?.[0]}); running the turn again (attempt ${attempt + 1} of ${STATE_LOCK_ATTEMPTS})`,
    );
    await new Promise((r) => setTimeout(r, 250 * attempt));
  }
}

/** One embedded turn: `openclaw agent --local --agent A --session-key K --message M --json`. */
export async function agentLocal(run, { agent, sessionKey, message, timeoutMs = 240_000 }) {
  const key = sessionKey ?? `agent:${agent}:e2e-${crypto.randomBytes(4).toString('hex')}`;
  return agentTurn(run, ['agent', '--local', '--agent', agent, '--session-key', key, '--message', message, '--json'], { timeoutMs, label: `local-${agent}` });
}

// A gateway whose agent database failed to close stays so for that agent:
// every later turn of it fails the same way. OpenClaw keeps one idle agent
// execution per process and closes it when another agent's run starts
// (dist/openclaw-agent-execution-*.mjs, `closeIdle`); when that close fails
// (state/openclaw-agent-execution.worker.js, `close()`), it logs "Agent
// database idle cleanup failed", keeps the failure as `cleanupFailure`, and
// throws it at every later run of that agent: a turn fails, or a tool that
// runs another agent (`sessions_send`) or writes its state (Workboard)
// returns it as its result. Seen in clean-clone CI runs and on an idle
// machine, every few runs, with no claw-identity code on the path (the
// session maintenance Worker of the same database was busy for seconds just
// before). Only a new gateway process clears it.
const STUCK_GATEWAY = /Agent database cleanup failed/;
// In the gateway's log: the idle close's own line too, whatever error it
// names (a close with one failure throws that failure, not the aggregate's
// "Agent database cleanup failed", so STUCK_GATEWAY alone would miss it).
const STUCK_LOG = /Agent database (?:idle )?cleanup failed/;

/** How many times OpenClaw's log says an agent database got stuck. */
function stuckFaults(run) {
  return logMessages(run).filter((m) => STUCK_LOG.test(m)).length;
}

/** Stops the run's gateway and starts a new one, noting that the harness did it (see `notRestarted`). */
async function restartStuckGateway(run, label) {
  run.harnessRestarts = [...(run.harnessRestarts ?? []), label];
  await run.gateway.stop();
  await startGateway(run);
}

/**
 * node:test's `it`, for a suite whose scenarios share one gateway
 * (`getRun()` is the suite's run). A scenario that fails after OpenClaw's
 * agent database got stuck in that gateway (its log says so: STUCK_LOG)
 * is run once more, from its start, in a new gateway, and must pass every
 * assertion there: nothing is relaxed, and a failure with no such fault in
 * the gateway's log fails at once. The first failure is logged.
 */
export function gatewayIt(getRun) {
  return (name, fn) =>
    it(name, async (t) => {
      const run = getRun();
      try {
        return await fn(t);
      } catch (err) {
        if (!run.gateway?.stuck() || !run.gateway.alive()) throw err;
        log(
          `${name}: failed after OpenClaw's agent database got stuck in the gateway (its log: "Agent database idle cleanup failed"); restarting the gateway and running the scenario again. The failure: ${scrub(String(err?.message ?? err).split('\n')[0]).slice(0, 300)}`,
        );
        await restartStuckGateway(run, name);
        return fn(t);
      }
    });
}

/** One turn through the running gateway; once, through a restarted one, if OpenClaw's agent database got stuck. */
export async function agentViaGateway(run, { agent, sessionKey, message, timeoutMs = 240_000, extraArgs = [] }) {
  const key = sessionKey ?? `agent:${agent}:e2e-${crypto.randomBytes(4).toString('hex')}`;
  const args = ['agent', '--agent', agent, '--session-key', key, '--message', message, '--json', ...extraArgs];
  const opts = { timeoutMs, env: { OPENCLAW_GATEWAY_TOKEN: run.gatewayToken }, label: `gw-${agent}` };
  const res = await agentTurn(run, args, opts);
  if (res.code === 0 || !STUCK_GATEWAY.test(`${res.stderr}\n${res.stdout}`) || !run.gateway?.alive()) return res;
  log(
    `openclaw agent (${opts.label}): OpenClaw's agent database stayed stuck through ${res.attempts} attempts; restarting the gateway and running the turn once more`,
  );
  await restartStuckGateway(run, opts.label);
  return agentTurn(run, args, opts);
}

/**
 * The message of a check that the gateway was not restarted (a hot
 * reload): `what`, and whether the harness itself restarted it, after
 * OpenClaw's agent database got stuck (`agentViaGateway`), in which case
 * the run can't show the reload was hot either way.
 */
export function notRestarted(run, what) {
  const by = run.harnessRestarts ?? [];
  if (by.length === 0) return what;
  return `${what}; but the harness restarted the gateway itself, after OpenClaw's agent database got stuck (turn ${by.join(', ')}), so this run can't tell whether the reload was hot: run it again`;
}

/**
 * Start `openclaw gateway run` and wait for /readyz, printing progress.
 * Returns { pid, stop(), ms }.
 */
export async function startGateway(run, { timeoutMs = 180_000 } = {}) {
  if (!run.gatewayPort) throw new Error('writeConfig(run, {gateway: true}) first');
  const rt = run.runtime;
  const out = fs.openSync(path.join(run.proc, 'gateway.out'), 'a', 0o600);
  const err = fs.openSync(path.join(run.proc, 'gateway.err'), 'a', 0o600);
  const t0 = Date.now();
  const child = spawn(rt.node, [rt.openclawEntry, 'gateway', 'run'], {
    cwd: run.home,
    env: { ...run.env },
    stdio: ['ignore', out, err],
  });
  fs.closeSync(out);
  fs.closeSync(err);
  track(child, run.runId);
  let exited = null;
  child.once('exit', (code, signal) => (exited = { code, signal }));
  log(`gateway: starting (pid ${child.pid}, port ${run.gatewayPort}) ...`);
  let lastNote = Date.now();
  let lastStatus = 'no answer';
  for (;;) {
    if (exited) {
      let why = '';
      if (exited.code === 78) {
        // EX_CONFIG: ask OpenClaw which key is wrong.
        const v = await openclaw(run, ['config', 'validate'], { timeoutMs: 120_000, label: 'config-validate' });
        why = `\nopenclaw config validate: ${tail(v, 2000)}`;
      }
      const text = readTail(path.join(run.proc, 'gateway.err'), 3000) + '\n' + readTail(path.join(run.proc, 'gateway.out'), 3000);
      throw new Error(`gateway exited before ready (${exited.code ?? exited.signal}):\n${scrub(text)}${why}`);
    }
    const r = await httpGet(`http://127.0.0.1:${run.gatewayPort}/readyz`);
    if (r && r.status === 200) break;
    if (r) lastStatus = `${r.status} ${r.body.slice(0, 200)}`;
    if (Date.now() - t0 > timeoutMs) {
      await stopTree(child.pid, { runId: run.runId });
      throw new Error(`gateway not ready after ${timeoutMs / 1000} s (last /readyz: ${lastStatus})`);
    }
    if (Date.now() - lastNote > 5000) {
      log(`gateway: waiting for /readyz (${Math.round((Date.now() - t0) / 1000)} s, ${lastStatus})`);
      lastNote = Date.now();
    }
    await sleep(300);
  }
  const ms = Date.now() - t0;
  log(`gateway: ready in ${(ms / 1000).toFixed(1)} s`);
  const starttime = procStat(child.pid)?.starttime;
  const faultsBefore = stuckFaults(run);
  const gw = {
    pid: child.pid,
    ms,
    /** Whether OpenClaw's agent database got stuck in this gateway (its log says so since it started). */
    stuck() {
      return stuckFaults(run) > faultsBefore;
    },
    get exited() {
      return exited;
    },
    /** Same process as at start (PID and start time), still running. */
    alive() {
      return !exited && alive(child.pid, starttime);
    },
    /** The gateway's own uptime from /readyz (resets on an in-process restart). */
    async uptimeMs() {
      const r = await httpGet(`http://127.0.0.1:${run.gatewayPort}/readyz`);
      try {
        return JSON.parse(r.body).uptimeMs;
      } catch {
        return undefined;
      }
    },
    async stop() {
      log(`gateway: stopping pid ${child.pid} and its children`);
      await stopTree(child.pid, { runId: run.runId });
    },
  };
  run.gateway = gw;
  return gw;
}

function readTail(file, n) {
  try {
    const s = fs.readFileSync(file, 'utf8');
    return s.slice(-n);
  } catch {
    return '';
  }
}

function httpGet(url) {
  return new Promise((resolve) => {
    const req = (url.startsWith('https') ? null : import('node:http')).then((http) => {
      const r = http.get(url, { timeout: 3000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      });
      r.on('timeout', () => r.destroy());
      r.on('error', () => resolve(null));
    });
    void req;
  });
}

/**
 * Text appended to OpenClaw's default log folder (/tmp/openclaw) since `since`
 * (a snapshot from `defaultLogSnapshot()`). `openclaw agent exec` ignores
 * `logging.file` and always logs there.
 */
export function defaultLogSnapshot() {
  const sizes = new Map();
  try {
    for (const n of fs.readdirSync(DEFAULT_LOG_DIR)) sizes.set(n, fs.statSync(path.join(DEFAULT_LOG_DIR, n)).size);
  } catch {
    /* absent */
  }
  return sizes;
}

export function defaultLogSince(snapshot) {
  let out = '';
  try {
    for (const n of fs.readdirSync(DEFAULT_LOG_DIR)) {
      const buf = fs.readFileSync(path.join(DEFAULT_LOG_DIR, n));
      out += buf.subarray(snapshot.get(n) ?? 0).toString('utf8');
    }
  } catch {
    /* absent */
  }
  return out;
}

/** Stop everything the run started and remove the lock entries it created. */
export async function finishRun(run, { keep = KEEP } = {}) {
  ACTIVE_RUNS.delete(run);
  if (run.gateway) await run.gateway.stop();
  await stopTree(null, { runId: run.runId });
  removeOwnLocks(run);
  if (!keep) fs.rmSync(run.root, { recursive: true, force: true });
  else log(`kept run folder ${run.root}`);
}

/**
 * Remove the /tmp/openclaw-state-locks-<uid>/ entries this run created.
 * OpenClaw names them `<family>.<sha256(realpath of a state database)[:8]>.lock.sqlite`,
 * so an entry is ours exactly when its hash is that of a database in our state dir.
 * The lock folder itself (and an empty /tmp/openclaw) goes only if the run created it and it is empty.
 */
export function removeOwnLocks(run) {
  const ours = new Set();
  const addHash = (p) => ours.add(crypto.createHash('sha256').update(p).digest('hex').slice(0, 8));
  const stateReal = fs.existsSync(run.state) ? fs.realpathSync(run.state) : run.state;
  addHash(path.join(stateReal, 'state', 'openclaw.sqlite'));
  const walk = (d) => {
    let entries = [];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.sqlite/.test(e.name)) addHash(p.replace(/(\.sqlite)(-wal|-shm|-journal)$/, '$1'));
    }
  };
  walk(stateReal);
  const removed = [];
  // A folder that existed neither when this run nor when this test process began was
  // created by us: it goes when empty (rmdir refuses a non-empty folder).
  const createdByUs = (p) => !run.locksBefore.has(p) || !PROCESS_BEFORE.has(p);
  for (const root of lockRoots()) {
    let names = [];
    try {
      names = fs.readdirSync(root);
    } catch {
      continue;
    }
    for (const n of names) {
      const m = /^[a-z-]+\.([0-9a-f]{8})\.lock\.sqlite(?:-wal|-shm|-journal)?$/.exec(n);
      if (m && ours.has(m[1])) {
        fs.rmSync(path.join(root, n), { force: true });
        removed.push(path.join(root, n));
      }
    }
    if (createdByUs(root)) {
      try {
        fs.rmdirSync(root);
      } catch {
        /* not empty: someone else's entries remain */
      }
    }
  }
  if (createdByUs(DEFAULT_LOG_DIR)) {
    // OpenClaw creates /tmp/openclaw on every start, and `agent exec` logs there whatever
    // logging.file says. Drop the log files only our runs wrote (every run folder named in
    // them is one of this process's), then the folder if empty.
    try {
      for (const n of fs.readdirSync(DEFAULT_LOG_DIR)) {
        const f = path.join(DEFAULT_LOG_DIR, n);
        if (fs.statSync(f).mtimeMs < PROCESS_START) continue;
        const text = fs.readFileSync(f, 'utf8');
        const named = new Set(text.match(/\/tmp\/claw-e2e-[A-Za-z0-9-]+/g) || []);
        if (named.size && [...named].every((r) => OUR_RUN_ROOTS.has(r))) {
          fs.rmSync(f, { force: true });
          removed.push(f);
        }
      }
      fs.rmdirSync(DEFAULT_LOG_DIR);
    } catch {
      /* absent or not empty */
    }
  }
  return removed;
}

/** A JSON-lines file, parsed ([] when absent; a torn last line is skipped). */
export function readJsonl(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out = [];
  for (const l of text.split('\n').filter(Boolean)) {
    try {
      out.push(JSON.parse(l));
    } catch {
      /* a line being written */
    }
  }
  return out;
}

/**
 * Start a fixture server (`script` under FIXTURES, or a path) on OpenClaw's
 * Node, with the run's environment plus `env`, and wait for the URL it prints
 * as its first stdout line. Its output goes to `proc/<label>.out|.err`; it is
 * stopped with the run (it carries the run id). Returns {url, pid, stop()}.
 */
export async function startFixtureServer(run, script, { args = [], env = {}, label = path.basename(script, '.mjs'), timeoutMs = 30_000 } = {}) {
  const file = path.isAbsolute(script) ? script : path.join(FIXTURES, script);
  const errFile = path.join(run.proc, `${label}.err`);
  const err = fs.openSync(errFile, 'a', 0o600);
  const child = spawn(run.runtime.node, [file, ...args], { cwd: run.home, env: { ...run.env, ...env }, stdio: ['ignore', 'pipe', err] });
  fs.closeSync(err);
  track(child, run.runId);
  const outFile = path.join(run.proc, `${label}.out`);
  let out = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label}: no URL on stdout after ${timeoutMs / 1000} s: ${scrub(readTail(errFile, 1500))}`)), timeoutMs);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (c) => {
      out += c;
      fs.appendFileSync(outFile, c, { mode: 0o600 });
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(out.slice(0, nl).trim());
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${code ?? signal}) before printing its URL: ${scrub(readTail(errFile, 1500))}`));
    });
  });
  return { url, pid: child.pid, stop: () => stopTree(child.pid) };
}

/** The MCP server's call log: [{tool, args, pid, time}]. */
export function readCalls(run) {
  try {
    return fs
      .readFileSync(run.callLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

/** OpenClaw's JSON-lines log, parsed leniently: [{raw, obj}] */
export function readLog(run) {
  let s = '';
  for (const f of logFiles(run)) s += fs.readFileSync(f, 'utf8');
  return s
    .split('\n')
    .filter(Boolean)
    .map((raw) => {
      let obj = null;
      try {
        obj = JSON.parse(raw);
      } catch {
        /* not json */
      }
      return { raw, obj };
    });
}

function logFiles(run) {
  const dir = path.dirname(run.logFile);
  const base = path.basename(run.logFile, '.log');
  try {
    return fs
      .readdirSync(dir)
      .filter((n) => n.startsWith(base))
      .map((n) => path.join(dir, n));
  } catch {
    return [];
  }
}

/** The message strings of log lines (OpenClaw's JSON log has `message`; fall back to "1"/"0"). */
export function logMessages(run) {
  return readLog(run).map(({ raw, obj }) => {
    if (!obj) return raw;
    if (typeof obj.message === 'string') return obj.message;
    for (const k of ['1', '0', 'msg']) if (typeof obj[k] === 'string') return obj[k];
    return raw;
  });
}

/** Wait for `fn()` to return a truthy value; `timeoutMs` is a safety net. */
export async function waitFor(fn, { timeoutMs = 120_000, intervalMs = 500, what = 'condition', progressMs = 10_000 } = {}) {
  const t0 = Date.now();
  let lastNote = t0;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    if (Date.now() - lastNote > progressMs) {
      log(`waiting for ${what} (${Math.round((Date.now() - t0) / 1000)} s)`);
      lastNote = Date.now();
    }
    await sleep(intervalMs);
  }
}

/**
 * Scan every file under `dir` (binary too: sqlite, WAL) for any of the tokens.
 * Returns hits as {file, agent, fp} (never the token). `exclude` paths are skipped.
 */
export function grepForTokens(dir, tokens, { exclude = [] } = {}) {
  const list = Array.isArray(tokens) ? tokens.map((t, i) => [String(i), t]) : Object.entries(tokens);
  const needles = list.filter(([, t]) => t).map(([agent, t]) => ({ agent, fp: fingerprint(t), buf: Buffer.from(t) }));
  const ex = exclude.map((p) => path.resolve(p));
  const hits = [];
  const walk = (p) => {
    if (ex.some((e) => p === e || p.startsWith(e + path.sep))) return;
    let st;
    try {
      st = fs.lstatSync(p);
    } catch {
      return;
    }
    if (st.isSymbolicLink()) return;
    if (st.isDirectory()) {
      for (const e of fs.readdirSync(p)) walk(path.join(p, e));
      return;
    }
    if (!st.isFile()) return;
    let buf;
    try {
      buf = fs.readFileSync(p);
    } catch {
      return;
    }
    for (const n of needles) if (buf.indexOf(n.buf) !== -1) hits.push({ file: p, agent: n.agent, fp: n.fp });
  };
  walk(path.resolve(dir));
  return hits;
}

/** Describe calls for assertion messages without printing tokens. */
export function describeCalls(calls, tokens = {}) {
  const byToken = new Map(Object.entries(tokens).map(([a, t]) => [t, a]));
  return calls.map((c) => {
    const t = c.args?.auth_token;
    const who = t === undefined ? 'absent' : byToken.has(t) ? `token-of:${byToken.get(t)}` : `other(len=${String(t).length},fp=${fingerprint(t)})`;
    return `${c.tool} auth_token=${who} conv=${c.args?._conversation_id ?? '-'}`;
  });
}

/** Which agent's token a received value is (or null). */
export function tokenOwner(value, tokens) {
  for (const [a, t] of Object.entries(tokens)) if (t === value) return a;
  return null;
}

/**
 * `npm pack` a package folder (default: the repo) into `destDir`; returns the
 * tgz path. The repo is packed as its package suite packs it
 * (__test__/helpers/pack.mjs): the real pack, whose prepack builds every build.
 */
export async function npmPack(destDir, srcDir = REPO_ROOT) {
  if (path.resolve(srcDir) === REPO_ROOT) {
    const { pack } = await import('../helpers/pack.mjs');
    return pack(destDir).tarball;
  }
  const { execFile } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    execFile('npm', ['pack', '--json', '--pack-destination', destDir], { cwd: srcDir, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`npm pack failed: ${scrub(err.message)}\n${scrub(stderr)}`));
      const info = JSON.parse(stdout.slice(stdout.indexOf('[')));
      resolve(path.join(destDir, info[0].filename));
    });
  });
}

/** How to name a received token in test output: the agent it belongs to, never the value. */
export function who(value, tokens, extra = {}) {
  if (value === undefined) return 'absent';
  const owner = tokenOwner(value, { ...tokens, ...extra });
  if (owner) return owner;
  return `other(len=${String(value).length},fp=${fingerprint(value)})`;
}

/**
 * Copy the plugin as it ships (package.json plus its `files`; everything top-level
 * for a stand-in without `files`) into `<run>/plugin/claw-identity`, and return
 * that folder for `plugins.load.paths`. Loading the repo root itself fails while
 * anything under it changes (OpenClaw: "Plugin source changed while preparing its
 * reload"), e.g. during a cargo build, and makes OpenClaw hash target/ and node_modules/.
 */
export function stagePlugin(run, src = pluginDir(), name = 'claw-identity') {
  const dest = path.join(run.root, 'plugin', name);
  fs.mkdirSync(dest, { recursive: true, mode: 0o700 });
  const pkg = JSON.parse(fs.readFileSync(path.join(src, 'package.json'), 'utf8'));
  const entries = Array.isArray(pkg.files) ? ['package.json', ...pkg.files] : fs.readdirSync(src).filter((n) => !n.startsWith('.') && n !== 'node_modules');
  // npm pack ships the bundled dependencies (the WebAssembly runtime) too,
  // and OpenClaw checks that a plugin's dependencies are present.
  const seen = new Set();
  const bundle = (name) => {
    if (seen.has(name)) return;
    seen.add(name);
    entries.push(`node_modules/${name}`);
    const deps = JSON.parse(fs.readFileSync(path.join(src, 'node_modules', name, 'package.json'), 'utf8')).dependencies ?? {};
    Object.keys(deps).forEach(bundle);
  };
  (pkg.bundleDependencies ?? []).forEach(bundle);
  for (const e of entries) {
    const from = path.join(src, e);
    if (!fs.existsSync(from)) continue; // e.g. README.md not written yet
    fs.cpSync(from, path.join(dest, e), { recursive: true });
  }
  return dest;
}

/**
 * The plugin directory the tests load: the repo itself (its package.json,
 * openclaw.plugin.json, index.js and the built addon), or CLAW_E2E_PLUGIN_DIR
 * (used to validate the harness with a stand-in plugin).
 */
export function pluginDir() {
  const dir = process.env.CLAW_E2E_PLUGIN_DIR ? path.resolve(process.env.CLAW_E2E_PLUGIN_DIR) : REPO_ROOT;
  const need = ['package.json', 'openclaw.plugin.json', 'index.js'];
  if (dir === REPO_ROOT) need.push('claw-identity.linux-x64-gnu.node');
  const missing = need.filter((f) => !fs.existsSync(path.join(dir, f)));
  if (missing.length) {
    throw new Error(`plugin dir ${dir} lacks ${missing.join(', ')}${missing.includes('claw-identity.linux-x64-gnu.node') ? ' (run `npm run build`)' : ''}`);
  }
  return dir;
}

/**
 * Which tokens `text` shows, whole or as any 16-hex-digit piece, in any
 * letter case: the owners' names (never the values).
 */
export function tokenPieces(text, tokens) {
  const pieces = new Map();
  for (const [agent, t] of Object.entries(tokens)) for (let i = 0; i + 16 <= t.length; i++) pieces.set(t.slice(i, i + 16).toLowerCase(), agent);
  const found = new Set();
  for (const run of String(text)
    .toLowerCase()
    .match(/[0-9a-f]{16,}/g) ?? []) {
    for (let i = 0; i + 16 <= run.length; i++) {
      const owner = pieces.get(run.slice(i, i + 16));
      if (owner) found.add(owner);
    }
  }
  return [...found].sort();
}

/**
 * Every transcript event OpenClaw stored for the run: OpenClaw 2026.9.6
 * keeps sessions in each agent's SQLite database,
 * `<state>/agents/<agentId>/agent/openclaw-agent.sqlite`, one row per event
 * in `transcript_events` (`event_json`, or zstd in `event_zstd` for large
 * ones), and archived generations in `session_transcript_archives` and
 * `session_transcript_cold_archives`. Returns [{agent, table, session, seq, text}].
 */
export async function transcriptEvents(run) {
  const { DatabaseSync } = await import('node:sqlite');
  const agentsDir = path.join(run.state, 'agents');
  const out = [];
  const text = (v) => (v instanceof Uint8Array ? zlib.zstdDecompressSync(v).toString('utf8') : v == null ? '' : String(v));
  for (const agent of fs.existsSync(agentsDir) ? fs.readdirSync(agentsDir) : []) {
    const file = path.join(agentsDir, agent, 'agent', 'openclaw-agent.sqlite');
    if (!fs.existsSync(file)) continue;
    const db = new DatabaseSync(file, { readOnly: true, timeout: SQLITE_BUSY_MS });
    try {
      const tables = new Set(
        db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
          .all()
          .map((r) => r.name),
      );
      for (const r of db.prepare('SELECT session_id, seq, event_json, event_zstd FROM transcript_events').all()) {
        out.push({ agent, table: 'transcript_events', session: r.session_id, seq: r.seq, text: r.event_json ?? text(r.event_zstd) });
      }
      for (const table of ['session_transcript_archives', 'session_transcript_cold_archives'].filter((t) => tables.has(t))) {
        for (const r of db.prepare(`SELECT * FROM ${table}`).all()) {
          out.push({
            agent,
            table,
            session: r.session_id ?? '-',
            seq: -1,
            text: Object.values(r)
              .map((v) => {
                try {
                  return text(v);
                } catch {
                  return Buffer.from(v).toString('latin1');
                }
              })
              .join('\n'),
          });
        }
      }
    } finally {
      db.close();
    }
  }
  return out;
}

/**
 * Everything OpenClaw keeps in the run's state dir, as text: one record per
 * row of every table of every SQLite database (their WAL read through
 * SQLite; zstd blobs decompressed), and one per other file (its bytes).
 * Returns [{file, table, text}] (`table` null for a plain file).
 */
export async function stateRecords(run) {
  const { DatabaseSync } = await import('node:sqlite');
  const out = [];
  const text = (v) => {
    if (!(v instanceof Uint8Array)) return v;
    try {
      return zlib.zstdDecompressSync(v).toString('utf8');
    } catch {
      return Buffer.from(v).toString('latin1');
    }
  };
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (!e.isFile() || /\.sqlite-(wal|shm|journal)$/.test(e.name)) continue;
      else if (e.name.endsWith('.sqlite') && fs.statSync(p).size > 0) {
        const db = new DatabaseSync(p, { readOnly: true, timeout: SQLITE_BUSY_MS });
        try {
          for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()) {
            let rows;
            try {
              rows = db.prepare(`SELECT * FROM "${name}"`).all();
            } catch {
              continue; // a virtual table whose module this SQLite lacks
            }
            for (const r of rows) out.push({ file: p, table: name, text: JSON.stringify(r, (_, v) => text(v)) });
          }
        } finally {
          db.close();
        }
      } else out.push({ file: p, table: null, text: fs.readFileSync(p).toString('latin1') });
    }
  };
  walk(run.state);
  return out;
}

/** Every string inside a tool result (Tool Search wraps results in JSON, sometimes twice). */
export function strings(text) {
  const out = [];
  const walk = (v) => {
    if (typeof v === 'string') {
      out.push(v);
      const t = v.trim();
      if (t.startsWith('{') || t.startsWith('[')) {
        try {
          walk(JSON.parse(t));
        } catch {
          /* not JSON */
        }
      }
    } else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x);
  };
  walk(String(text ?? ''));
  return out;
}

/**
 * OpenClaw's own transient failures under load, which say nothing about
 * claw-identity, and which running the turn again in the same gateway can
 * clear: its state lock held by another of its threads, or an agent
 * execution retired under a run. Returns the message, or undefined. A test
 * may run a turn again on exactly these, and never relaxes an assertion.
 * A stuck agent database (STUCK_GATEWAY) is not one: every retry in that
 * gateway fails the same way, so the scenario fails at once and `gatewayIt`
 * runs it again in a new gateway.
 */
export function transientOpenClawError(text) {
  const t = String(text ?? '');
  return STUCK_GATEWAY.test(t) ? undefined : t.match(TRANSIENT)?.[0];
}

/** The package's standalone command (`bin/claw-identity.js`), as the run's user (its HOME and config), under OpenClaw's Node. */
export function claw(run, args) {
  return new Promise((resolve) => {
    const bin = path.join(REPO_ROOT, 'bin', 'claw-identity.js');
    const child = spawn(run.runtime.node, [bin, ...args], { cwd: run.home, env: { ...run.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
