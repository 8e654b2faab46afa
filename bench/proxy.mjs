// The MCP proxy: what a tool call costs through the gateway's
// loopback proxy next to a direct call to the same upstream, on loopback,
// in one run: one call at a time (p50, p99), 8 agents at once (throughput),
// and what the proxy's calls cost the gateway's event loop.
//
// The upstream is an MCP server on the official SDK (streamable HTTP,
// stateful sessions, one `echo` tool) in a child process: in a gateway the
// upstream is another process, and in this one it would run on the same
// thread and event loop as the proxy and the client, so its own request
// handling would be counted in the loop's tasks and queue behind the
// proxy's. The child shares the machine's cores, as it would on a gateway's
// host. It maps each request's bearer token to its agent through the bench's
// token map, refuses any other (401), and echoes the agent and the names of
// the arguments it received (never a token): the bench checks both before it
// times anything.
//
// The measuring process is the gateway: the layer configured with the proxy
// (`configure({ tokenMapPath, proxy })`, `startMcpProxy()`), and SDK clients
// as OpenClaw's (one per agent and server). The proxy serves only its own
// process's sockets, so the clients must live here. Each path runs on
// kept-alive connections and on a new connection per call, which is how
// OpenClaw's MCP client connects. For scale, a bare HTTP hop in this process
// (bytes piped, the bearer added) shows what any hop costs.
//
// The samples are round trips (promises), so the rounds are interleaved
// here, as harness.mjs's `interleave` does for synchronous calls: round r
// runs each path once, in an order rotated by r.
//
//   node bench/proxy.mjs --upstream <map>   serve the upstream (the bench starts it)
//   node bench/proxy.mjs --hold <n>         hold n loopback connections (the bench starts it)
import { spawn } from 'node:child_process';
import { createHook, executionAsyncResource } from 'node:async_hooks';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { PerformanceObserver, constants as perfConstants, performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { median, percentile, randomToken, tempDir, writeMapAtomic } from './harness.mjs';

const AGENTS = 8;
const SERVER = 'up';
const TOOL = 'echo';
const GC_KIND = {
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [perfConstants.NODE_PERFORMANCE_GC_MINOR_MARK_SWEEP]: 'minor mark-sweep',
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};
const gcEntry = (e) => ({ start: e.startTime, duration: e.duration, kind: GC_KIND[e.detail?.kind] ?? String(e.detail?.kind) });
const quietStats = (xs) => ({ p50: median(xs), p99: percentile(xs, 0.99), max: Math.max(...xs), n: xs.length });

// ---------------------------------------------------------------- upstream

/** The upstream MCP server (in the child): streamable HTTP on 127.0.0.1, a session per client. */
async function serveUpstream(mapFile) {
  const { Server } = await import('@modelcontextprotocol/sdk/server/index.js');
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { CallToolRequestSchema, ListToolsRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const agentOf = new Map(Object.entries(JSON.parse(fs.readFileSync(mapFile, 'utf8'))).map(([agent, token]) => [token, agent]));
  // The low-level Server: it keeps every argument, so the echo shows what the proxy forwarded.
  const makeServer = () => {
    const server = new Server({ name: 'bench-upstream', version: '0.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: TOOL, description: 'Echoes its text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const args = req.params.arguments ?? {};
      return { content: [{ type: 'text', text: JSON.stringify({ agent: extra.authInfo?.clientId ?? null, keys: Object.keys(args), text: args.text }) }] };
    });
    return server;
  };
  const sessions = new Map();
  const web = http.createServer(async (req, res) => {
    const auth = req.headers.authorization ?? '';
    const agent = auth.startsWith('Bearer ') ? agentOf.get(auth.slice(7)) : undefined;
    if (agent === undefined) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('unauthorized');
      return;
    }
    req.auth = { token: '', clientId: agent, scopes: [] };
    try {
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (transport === undefined) {
        if (sid !== undefined) {
          res.writeHead(404, { 'content-type': 'text/plain' }).end('no such session');
          return;
        }
        // No session id: an initialize (the transport answers 400 to anything else).
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => crypto.randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => sessions.delete(transport.sessionId);
        await makeServer().connect(transport);
      }
      await transport.handleRequest(req, res);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e?.message ?? e));
    }
  });
  web.keepAliveTimeout = 60_000;
  web.listen(0, '127.0.0.1', () => process.stdout.write(`http://127.0.0.1:${web.address().port}/mcp\n`));
  // The bench holds our stdin: when it ends (the bench exited), so do we.
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
}

/** Starts the upstream child; resolves with `{ url, stop }`. */
function startUpstream(mapFile) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--upstream', mapFile], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const fail = (why) => {
      child.kill();
      reject(new Error(`bench: the upstream MCP server did not start: ${why}`));
    };
    const timer = setTimeout(() => fail('no URL within 20 s'), 20_000);
    child.once('error', (e) => fail(e.message));
    child.once('exit', (code) => fail(`exited ${code}`));
    child.stdout.on('data', (c) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stdout.resume();
      const stop = () =>
        new Promise((done) => {
          if (child.exitCode !== null) return done();
          child.once('exit', done);
          child.stdin.end();
          setTimeout(() => child.kill(), 2000).unref();
        });
      resolve({ url: out.slice(0, nl).trim(), stop, pid: child.pid });
    });
  });
}

/** A free TCP port on 127.0.0.1 (the proxy's option wants one). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// ------------------------------------------------------------- the clients

/**
 * A fetch over node:http with a new TCP connection per request (`agent:
 * false`, `Connection: close`): the case of a session whose calls are more
 * than Node's keep-alive timeout (4 s) apart, which for an agent between
 * model turns is the common one. The proxy then checks the connecting
 * socket's owner for every call.
 */
function freshConnectionFetch(url, init = {}) {
  return new Promise((resolve, reject) => {
    const headers = Object.fromEntries(new Headers(init.headers ?? {}));
    const req = http.request(new URL(url), { method: init.method ?? 'GET', headers, agent: false, signal: init.signal ?? undefined }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
      const empty = [101, 204, 205, 304].includes(res.statusCode) || init.method === 'HEAD';
      if (empty) res.resume();
      resolve(new Response(empty ? null : Readable.toWeb(res), { status: res.statusCode, statusText: res.statusMessage, headers: h }));
    });
    req.once('error', reject);
    req.end(init.body ?? undefined);
  });
}

async function connectClient(sdk, url, { bearer, headers = {}, fresh }) {
  const client = new sdk.Client({ name: 'claw-identity-bench', version: '0.0.0' });
  const opts = { requestInit: { headers: { ...headers } } };
  if (bearer !== undefined) opts.requestInit.headers.Authorization = `Bearer ${bearer}`;
  if (fresh) opts.fetch = freshConnectionFetch;
  await client.connect(new sdk.StreamableHTTPClientTransport(new URL(url), opts));
  return client;
}

/** The agent and the argument names the upstream saw, from the echo. */
function echoed(result) {
  if (result?.isError) throw new Error(`bench: the call failed: ${String(result.content?.[0]?.text).slice(0, 200)}`);
  return JSON.parse(result.content[0].text);
}

/**
 * For scale: the least a hop in the gateway can cost. A bare HTTP
 * pass-through in this process (node:http in, node:http out on a kept-alive
 * agent, the bytes piped), which only swaps a header naming the agent
 * (`x-bench-agent`) for its bearer token: no MCP parsing, no handle, no
 * peer check. Resolves with `{ url, stop }`.
 */
function startHop(upstreamUrl, map) {
  const target = new URL(upstreamUrl);
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const { 'x-bench-agent': who, connection, 'keep-alive': _, ...headers } = req.headers;
    headers.host = target.host;
    headers.authorization = `Bearer ${map[who]}`;
    const up = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: req.method, headers, agent }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.once('error', () => res.destroy());
    res.once('close', () => up.destroy());
    req.pipe(up);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}/mcp`,
        stop: () =>
          new Promise((done) => {
            server.closeAllConnections();
            agent.destroy();
            server.close(() => done());
          }),
      }),
    );
  });
}

/** Lines of /proc/net/tcp: every IPv4 TCP socket of the network namespace (TIME_WAIT included). */
const tcpLines = () => fs.readFileSync('/proc/net/tcp', 'latin1').split('\n').length - 2;

/**
 * Another process holding `pairs` loopback connections to itself (two lines
 * of /proc/net/tcp each, none of them this process's descriptors): the
 * other services of a gateway's host. Resolves with `stop()`.
 */
function holdConnections(pairs) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--hold', String(pairs)], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`bench: the connection holder exited ${code}`)));
    child.stdout.once('data', () => {
      child.removeAllListeners('exit');
      resolve({
        stop: () =>
          new Promise((done) => {
            child.once('exit', done);
            child.stdin.end();
          }),
      });
    });
  });
}

/** In the holder child: `pairs` connections to itself, held until stdin ends. */
async function holdInChild(pairs) {
  const held = [];
  const server = net.createServer((s) => held.push(s));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  for (let i = 0; i < pairs; i += 100) {
    await Promise.all(
      Array.from(
        { length: Math.min(100, pairs - i) },
        () => new Promise((resolve, reject) => held.push(net.connect(server.address().port, '127.0.0.1', resolve).once('error', reject))),
      ),
    );
  }
  process.stdout.write('ready\n');
  process.stdin.resume();
  // Reset, not closed: a closed connection would stay in the table (TIME_WAIT) for 60 s, under the rows after.
  process.stdin.on('end', () => {
    for (const c of held) c.resetAndDestroy();
    setTimeout(() => process.exit(0), 100);
  });
}

/**
 * The proxy's check of a new connection alone (`native.proxyPeer`: is the
 * client end one of this process's sockets, from /proc/net/tcp and
 * /proc/self/fd, on the thread pool), timed `n` times one after the other
 * on a connection this process holds, with `extra` more connections held
 * by another process. With this process's descriptors and /proc/net/tcp's
 * lines, which it reads through.
 */
async function peerCheck(native, n, extra) {
  const holder = extra > 0 ? await holdConnections(extra) : null;
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise((resolve) => server.once('connection', resolve));
  const client = net.connect(server.address().port, '127.0.0.1');
  await new Promise((resolve) => client.once('connect', resolve));
  const peer = await accepted;
  try {
    const lines = tcpLines();
    const ms = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const own = await native.proxyPeer(peer.remotePort, server.address().port);
      ms.push(performance.now() - t0);
      if (own !== true) return { error: `proxyPeer said ${own} of this process's own connection` };
    }
    return { ...quietStats(ms), fds: fs.readdirSync('/proc/self/fd').length, tcpLines: lines };
  } finally {
    client.destroy();
    peer.destroy();
    server.close();
    await holder?.stop();
  }
}

// ------------------------------------------------------------- the loop

/**
 * The time the loop's thread has waited for a CPU so far, in ms: the
 * scheduler's run-queue wait (`/proc/thread-self/schedstat`, second field).
 * As in bench/sandbox.mjs.
 */
const schedstat = { fd: null, buf: Buffer.alloc(96) };
function runQueueWait() {
  if (schedstat.fd === null) schedstat.fd = fs.openSync('/proc/thread-self/schedstat', 'r');
  const { fd, buf } = schedstat;
  return Number(buf.toString('latin1', 0, fs.readSync(fd, buf, 0, buf.length, 0)).split(' ')[1]) / 1e6;
}

/**
 * Records every task the event loop runs, through async_hooks: a task is a
 * callback the loop dispatches (I/O, a timer, an immediate, a threadsafe
 * function's call into JS) together with the microtasks and next-ticks
 * that run after it, before the loop moves on: JS that nothing can
 * interrupt. (Not the stretches of tasks run back to back: with 8 agents
 * calling in a closed loop the loop never waits for events, by design.)
 * V8's own tasks (a GC the platform schedules) run outside any callback, so
 * no task holds them: PerformanceObserver reports GC pauses apart.
 * Promise hooks are on while it records, which slows promise-heavy code:
 * the latency and throughput rows run without it.
 *
 * Each task is labelled by what began it, so the bench client's own work
 * (which runs in this process too) can be told from the proxy's: `client`,
 * a read on a socket of the bench's clients (to `clientPort`); `front`, the
 * proxy's HTTP server (a socket to `proxyPort`, or its request resource);
 * `upstream`, a socket to the upstream that is not the client's (the
 * proxy's upstream connections); else the resource's class (`Immediate`,
 * `Timeout`, a native task's...), which either side may have queued.
 */
function taskRecorder() {
  let ports = {};
  let ownerSymbol;
  const origin = (r) => {
    const name = r?.constructor?.name ?? typeof r;
    if (name === 'HTTPServerAsyncResource' || name === 'HTTPINCOMINGMESSAGE') return 'front';
    if (name !== 'TCP' && name !== 'TCPWrap') return name;
    ownerSymbol ??= Object.getOwnPropertySymbols(r).find((sym) => sym.description === 'owner_symbol');
    const socket = ownerSymbol === undefined ? undefined : r[ownerSymbol];
    if (socket?.remotePort === ports.clientPort) return 'client';
    if (socket?.localPort === ports.proxyPort) return 'front';
    if (socket?.remotePort === ports.upstreamPort) return 'upstream';
    return name;
  };
  // Flat, per task: start, run-queue wait at start, what began it, end.
  let rows = [];
  let depth = 0;
  let open = false;
  let end = 0;
  const hook = createHook({
    before() {
      if (depth++ !== 0) return;
      const r = executionAsyncResource();
      const now = performance.now();
      // A promise reaction, a next-tick or a queueMicrotask job continues the
      // task before it: they run right after it (a gap of microseconds). After
      // a longer gap, some JS ran that the hooks did not see, or the loop
      // waited: then it starts a task of its own, not stretching the last.
      const continues = open && now - end < 0.1 && (r instanceof Promise || typeof r?.callback === 'function');
      if (continues) return;
      if (open) rows.push(end);
      rows.push(now, runQueueWait(), origin(r));
      open = true;
    },
    // Enabled from inside a task, the hook sees that task's after with no before: ignored.
    after() {
      if (depth > 0 && --depth === 0) end = performance.now();
    },
  });
  const gcs = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push(gcEntry(e));
  });
  return {
    /** `{ clientPort, proxyPort, upstreamPort }`: see `origin`. */
    start(which) {
      ports = which;
      rows = [];
      depth = 0;
      open = false;
      gcObserver.observe({ entryTypes: ['gc'] });
      hook.enable();
    },
    /** Stops, and returns the tasks `{ start, wall, busy, gc }` and the GC pauses (ms). */
    async stop() {
      hook.disable();
      // The task that stops the recorder is still running: it ends now.
      if (open) rows.push(depth > 0 ? performance.now() : end);
      const waitEnd = runQueueWait();
      // Node makes a GC's entry in a task after the collection: let those run.
      await new Promise((resolve) => setTimeout(resolve, 10));
      for (const e of gcObserver.takeRecords()) gcs.push(gcEntry(e));
      gcObserver.disconnect();
      const tasks = [];
      for (let i = 0; i + 3 < rows.length; i += 4) {
        const [start, wait, by, stop] = [rows[i], rows[i + 1], rows[i + 2], rows[i + 3]];
        // The run-queue wait until the next task starts: during this one (the
        // thread preempted), plus the wake-up wait before the next, so `busy`
        // errs low where `wall` errs high.
        const nextWait = i + 5 < rows.length ? rows[i + 5] : waitEnd;
        const wall = stop - start;
        const gc = gcs.some((g) => g.start < stop && g.start + g.duration > start);
        tasks.push({ start, wall, busy: Math.max(0, wall - (nextWait - wait)), gc, by });
      }
      // The collections while it recorded, each with whether a task held it.
      const from = tasks[0]?.start ?? Number.POSITIVE_INFINITY;
      const to = tasks.length ? tasks[tasks.length - 1].start + tasks[tasks.length - 1].wall : 0;
      const gcPauses = gcs
        .splice(0)
        .filter((g) => g.start >= from && g.start <= to)
        .map((g) => ({ ...g, inTask: tasks.some((t) => g.start < t.start + t.wall && g.start + g.duration > t.start) }));
      return { tasks, gcPauses };
    },
  };
}

/** What a workload cost the loop: active (eventLoopUtilization), less run-queue wait (busy), and process CPU. */
async function loopCost(fn) {
  const elu0 = performance.eventLoopUtilization();
  const wait0 = runQueueWait();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const preemptedMs = runQueueWait() - wait0;
  const activeMs = performance.eventLoopUtilization(performance.eventLoopUtilization(), elu0).active;
  return { wallMs, activeMs, busyMs: Math.max(0, activeMs - preemptedMs), cpuMs: (cpu.user + cpu.system) / 1000 };
}

// ------------------------------------------------------------- the bench

/**
 * `{ skipped }` when the proxy or the MCP SDK is not there; otherwise
 * `{ seq, conc, loop, ... }`, times in ms. `quick` for a smoke run.
 * The clock is always the wall clock: a round trip's time is what the caller
 * waits, and it spans two processes.
 */
export async function proxyBench({ quick = false, api } = {}) {
  // `api`: the package's exports (a test can hand in its own).
  api ??= await import('../index.js');
  if (typeof api.startMcpProxy !== 'function') return { skipped: 'this build has no `startMcpProxy` (the proxy is not built)' };
  const sdk = {};
  try {
    ({ Client: sdk.Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
    ({ StreamableHTTPClientTransport: sdk.StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js'));
  } catch {
    return { skipped: 'the MCP SDK is not installed (optional dependency @modelcontextprotocol/sdk)' };
  }
  const { configure, beforeToolCall, startMcpProxy } = api;

  const tmp = tempDir();
  const cleanup = [];
  try {
    const mapFile = path.join(tmp.dir, 'agent-tokens.json');
    const agents = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
    const map = Object.fromEntries(agents.map((a) => [a, randomToken()]));
    writeMapAtomic(mapFile, map);

    const upstream = await startUpstream(mapFile);
    cleanup.push(() => upstream.stop());

    // The layer, as the plugin configures it: a logger taking info lines (OpenClaw always passes one).
    const logs = { info: 0, warn: [], error: [] };
    const logger = { info: () => logs.info++, warn: (l) => logs.warn.push(String(l)), error: (l) => logs.error.push(String(l)), debug() {} };
    const port = await freePort();
    try {
      configure({
        tokenMapPath: mapFile,
        logger,
        // The upstream takes a bearer on every request, as the MCP spec says an
        // HTTP server should: requests with no handle (initialize, tools/list) go as agent 0.
        proxy: { port, servers: { [SERVER]: { upstream: { url: upstream.url }, credential: { in: 'bearer' }, listAs: agents[0] } } },
      });
    } catch (e) {
      return { skipped: `configure() refused the proxy option: ${e.message}` };
    }
    const proxy = await startMcpProxy({ logger });
    if (!proxy) return { skipped: 'startMcpProxy() started no proxy (the layer in force plans none)' };
    cleanup.push(() => proxy.stop());
    const proxyUrl = proxy.urls?.[SERVER] ?? `http://127.0.0.1:${proxy.port}/${SERVER}`;

    // Clients as OpenClaw's: one per agent and server; the direct ones carry the agent's bearer token.
    const hop = await startHop(upstream.url, map);
    cleanup.push(() => hop.stop());
    const clients = { direct: [], proxy: [], hop: [], 'direct.cold': [], 'proxy.cold': [], 'hop.cold': [] };
    for (const a of agents) {
      clients.hop.push(await connectClient(sdk, hop.url, { headers: { 'x-bench-agent': a } }));
      clients['hop.cold'].push(await connectClient(sdk, hop.url, { headers: { 'x-bench-agent': a }, fresh: true }));
      clients.direct.push(await connectClient(sdk, upstream.url, { bearer: map[a] }));
      clients.proxy.push(await connectClient(sdk, proxyUrl, {}));
      clients['direct.cold'].push(await connectClient(sdk, upstream.url, { bearer: map[a], fresh: true }));
      clients['proxy.cold'].push(await connectClient(sdk, proxyUrl, { fresh: true }));
    }
    cleanup.push(() =>
      Promise.allSettled(
        Object.values(clients)
          .flat()
          .map((c) => c.close()),
      ),
    );

    // The tool list through the proxy, as the model would see it.
    const listed = await clients.proxy[0].listTools();
    const echoTool = listed.tools.find((t) => t.name === TOOL);
    if (!echoTool) throw new Error(`bench: the proxy does not list the upstream's ${TOOL} tool`);

    let seq = 0;
    const text = 'hello from the bench';
    /** OpenClaw's event and ctx for one MCP call of agent `i`. */
    const call = (i) => {
      const id = `call_${seq++}`;
      const runId = `run-${i}`;
      return [
        { toolName: `${SERVER}__${TOOL}`, params: { text }, runId, toolCallId: id },
        { agentId: agents[i], sessionKey: `agent:${agents[i]}:main`, sessionId: `session-${i}`, runId, toolName: `${SERVER}__${TOOL}`, toolCallId: id },
      ];
    };
    const policy = async (i) => {
      let r = beforeToolCall(...call(i));
      if (typeof r?.then === 'function') r = await r;
      if (typeof r?.params?.auth_token !== 'string' || !r.params.auth_token.startsWith('clh1_')) {
        throw new Error(
          `bench: the trusted policy gave no handle for ${SERVER}__${TOOL} (${r?.block ? `blocked: ${r.blockReason}` : JSON.stringify(Object.keys(r?.params ?? {}))})`,
        );
      }
      return r.params;
    };
    // One call of agent i by each path; the proxy paths time the policy apart.
    let failures = 0;
    const tally = (r) => {
      if (r?.isError) failures++;
    };
    const direct = (kind) => async (i) => {
      const t0 = performance.now();
      tally(await clients[kind][i].callTool({ name: TOOL, arguments: { text } }));
      return { ms: performance.now() - t0 };
    };
    const proxied = (kind) => async (i) => {
      const t0 = performance.now();
      const params = await policy(i);
      const t1 = performance.now();
      tally(await clients[kind][i].callTool({ name: TOOL, arguments: params }));
      const t2 = performance.now();
      return { ms: t2 - t0, policyMs: t1 - t0, aloneMs: t2 - t1 };
    };
    const paths = {
      direct: direct('direct'),
      proxy: proxied('proxy'),
      hop: direct('hop'),
      'direct.cold': direct('direct.cold'),
      'proxy.cold': proxied('proxy.cold'),
      'hop.cold': direct('hop.cold'),
    };

    // Every measured path must do the real work: each agent's call arrives
    // with its own credential, and no handle reaches the upstream.
    const forwarded = new Set();
    for (let i = 0; i < AGENTS; i++) {
      for (const kind of ['direct', 'direct.cold', 'hop', 'hop.cold']) {
        const e = echoed(await clients[kind][i].callTool({ name: TOOL, arguments: { text } }));
        if (e.agent !== agents[i]) throw new Error(`bench: the upstream took ${kind}'s call for ${e.agent}, not ${agents[i]}`);
      }
      for (const kind of ['proxy', 'proxy.cold']) {
        const params = await policy(i);
        const e = echoed(await clients[kind][i].callTool({ name: TOOL, arguments: params }));
        if (e.agent !== agents[i]) throw new Error(`bench: through the proxy (${kind}), the upstream took ${agents[i]}'s call for ${e.agent}`);
        if (e.keys.includes('auth_token') || e.text !== text) throw new Error(`bench: the proxy forwarded arguments ${JSON.stringify(e.keys)}`);
        for (const k of e.keys) forwarded.add(k);
        // A spent handle gets nothing.
        const replay = await clients[kind][i].callTool({ name: TOOL, arguments: params });
        // (The spec says its text starts `claw-identity proxy:`; the refusals say `proxy:`, the rule id.)
        if (!replay.isError || !/^(claw-identity )?proxy:/.test(String(replay.content?.[0]?.text))) {
          const said = String(replay.content?.[0]?.text)
            .replace(/clh1_[\w-]+/g, 'clh1_…')
            .slice(0, 300);
          throw new Error(`bench: the proxy did not refuse a replayed handle (${kind}): isError ${replay.isError}, ${said}`);
        }
      }
    }

    // The peer check of a new connection alone, before the rows below fill
    // /proc/net/tcp with TIME_WAIT sockets: as the table is, and with another
    // process holding 1,000 and 4,000 loopback connections (2 lines each).
    const native = api.buildInfo ? globalThis[Symbol.for(`claw-identity.native.${api.buildInfo.name}`)]?.native : undefined;
    const peer = [];
    if (typeof native?.proxyPeer === 'function') {
      for (const extra of [0, 1000, 4000]) peer.push({ extra, ...(await peerCheck(native, quick ? 50 : 300, extra)) });
    }
    const tcp = { start: tcpLines() };

    // Warm-up: the JIT, every connection and every upstream session the proxy opens per agent.
    for (let w = 0; w < (quick ? 20 : 100); w++) for (const run of Object.values(paths)) await run(w % AGENTS);
    failures = 0;

    // 1. One call at a time, interleaved: round r runs each path once, in
    // an order rotated by r, for agent r mod 8.
    const rounds = quick ? 300 : 3000;
    const ids = Object.keys(paths);
    const times = Object.fromEntries([...ids, 'policy', 'proxy.alone', 'proxy.cold.alone'].map((id) => [id, []]));
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < ids.length; k++) {
        const id = ids[(k + r) % ids.length];
        const x = await paths[id](r % AGENTS);
        times[id].push(x.ms);
        if (x.aloneMs !== undefined) {
          times[`${id}.alone`].push(x.aloneMs);
          if (id === 'proxy') times.policy.push(x.policyMs);
        }
      }
    }
    const paired = (a, b, f) => median(times[a].map((x, i) => f(x, times[b][i])));
    const seqRows = {};
    for (const [id, vs] of [
      ['direct', null],
      ['proxy', 'direct'],
      ['proxy.alone', 'direct'],
      ['policy', null],
      ['direct.cold', null],
      ['proxy.cold', 'direct.cold'],
      ['proxy.cold.alone', 'direct.cold'],
      ['hop', 'direct'],
      ['hop.cold', 'direct.cold'],
    ]) {
      const s = quietStats(times[id]);
      seqRows[id] = {
        ...s,
        vs,
        overP50: vs ? s.p50 - median(times[vs]) : null,
        overP99: vs ? s.p99 - percentile(times[vs], 0.99) : null,
        pairedOver: vs ? paired(id, vs, (x, y) => x - y) : null,
        pairedRatio: vs ? paired(id, vs, (x, y) => x / y) : null,
      };
    }

    tcp.afterOneByOne = tcpLines();

    // 2. Eight agents at once, each its own client, `calls` calls each one
    // after the other; the paths in rounds, order rotated.
    const calls = quick ? 25 : 150;
    const concRounds = quick ? 2 : 8;
    const concIds = ['direct', 'proxy', 'direct.cold', 'proxy.cold'];
    const conc = Object.fromEntries(concIds.map((id) => [id, { lat: [], cost: [] }]));
    const burst = (id, lat) => () =>
      Promise.all(
        agents.map(async (_, i) => {
          for (let c = 0; c < calls; c++) lat.push((await paths[id](i)).ms);
        }),
      );
    for (let r = 0; r < concRounds; r++) {
      for (let k = 0; k < concIds.length; k++) {
        const id = concIds[(k + r) % concIds.length];
        conc[id].cost.push(await loopCost(burst(id, conc[id].lat)));
      }
    }
    const concRows = {};
    for (const id of concIds) {
      const { lat, cost } = conc[id];
      const n = AGENTS * calls;
      const sum = (k) => cost.reduce((t, c) => t + c[k], 0);
      concRows[id] = {
        callsPerSec: (n * cost.length) / (sum('wallMs') / 1000),
        perRound: cost.map((c) => n / (c.wallMs / 1000)),
        lat: quietStats(lat),
        activeMsPerCall: sum('activeMs') / (n * cost.length),
        busyMsPerCall: sum('busyMs') / (n * cost.length),
        cpuMsPerCall: sum('cpuMs') / (n * cost.length),
      };
    }
    for (const [id, vs] of [
      ['proxy', 'direct'],
      ['proxy.cold', 'direct.cold'],
    ]) {
      concRows[id].vsDirect = median(conc[id].cost.map((c, r) => conc[vs].cost[r].wallMs / c.wallMs));
    }

    tcp.afterConcurrent = tcpLines();

    // 3. The event loop: every task of each path's runs, 8 agents at once,
    // on kept-alive connections and on a new connection per call.
    const recorder = taskRecorder();
    const loopCalls = quick ? 20 : 100;
    const loopRounds = quick ? 1 : 3;
    const loopRuns = {};
    for (let r = 0; r < loopRounds; r++) {
      for (const id of r % 2 ? ['proxy.cold', 'direct.cold', 'proxy', 'direct'] : ['direct', 'proxy', 'direct.cold', 'proxy.cold']) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const sink = [];
        const clientPort = Number(new URL(id.startsWith('proxy') ? proxyUrl : upstream.url).port);
        recorder.start({ clientPort, proxyPort: proxy.port, upstreamPort: Number(new URL(upstream.url).port) });
        const elu0 = performance.eventLoopUtilization();
        await burst(id, sink)();
        const activeMs = performance.eventLoopUtilization(performance.eventLoopUtilization(), elu0).active;
        const rec = await recorder.stop();
        if (!loopRuns[id]) loopRuns[id] = { tasks: [], gcPauses: [], activeMs: 0, calls: 0 };
        const run = loopRuns[id];
        run.tasks.push(...rec.tasks);
        run.gcPauses.push(...rec.gcPauses);
        run.activeMs += activeMs;
        run.calls += sink.length;
      }
    }
    const loopRows = {};
    for (const [id, run] of Object.entries(loopRuns)) {
      const wall = run.tasks.map((t) => t.wall);
      const busy = run.tasks.map((t) => t.busy);
      const noGc = run.tasks.filter((t) => !t.gc);
      const top = [...run.tasks].sort((a, b) => b.busy - a.busy).slice(0, 8);
      // The tasks the bench client's socket reads began are the client's
      // (with the policy's call for the next request, on the proxy's rows).
      const notClient = run.tasks.filter((t) => t.by !== 'client');
      const byOrigin = {};
      for (const t of run.tasks) {
        if (!byOrigin[t.by]) byOrigin[t.by] = { n: 0, max: 0, maxNoGc: 0 };
        const o = byOrigin[t.by];
        o.n++;
        o.max = Math.max(o.max, t.busy);
        if (!t.gc) o.maxNoGc = Math.max(o.maxNoGc, t.busy);
      }
      loopRows[id] = {
        tasks: run.tasks.length,
        calls: run.calls,
        wall: quietStats(wall),
        busy: quietStats(busy),
        busyNoGcMax: noGc.length ? Math.max(...noGc.map((t) => t.busy)) : 0,
        tasksWithGc: run.tasks.length - noGc.length,
        notClientMax: Math.max(0, ...notClient.map((t) => t.busy)),
        notClientNoGcMax: Math.max(0, ...notClient.filter((t) => !t.gc).map((t) => t.busy)),
        byOrigin,
        top: top.map((t) => ({ busy: t.busy, wall: t.wall, gc: t.gc, by: t.by })),
        gcMax: run.gcPauses.reduce((m, g) => (g.duration > m.duration ? g : m), { duration: 0, kind: null }),
        // How much of the loop's active time the tasks account for: JS run
        // outside any callback the hooks see would be missing from them.
        coverage: wall.reduce((t, x) => t + x, 0) / run.activeMs,
        tasksPerCall: run.tasks.length / run.calls,
        taskMsPerCall: wall.reduce((t, x) => t + x, 0) / run.calls,
      };
    }

    tcp.afterLoop = tcpLines();

    return {
      upstream: upstream.url,
      tcp,
      peer,
      proxyUrl,
      agents: AGENTS,
      rounds,
      calls,
      concRounds,
      loopCalls,
      loopRounds,
      failures,
      forwarded: [...forwarded].sort(),
      listedProperties: Object.keys(echoTool.inputSchema?.properties ?? {}),
      logs: { info: logs.info, warn: logs.warn.length, error: logs.error.length, firstWarn: logs.warn[0], firstError: logs.error[0] },
      seq: seqRows,
      conc: concRows,
      loop: loopRows,
    };
  } finally {
    for (const f of cleanup.reverse())
      await Promise.resolve()
        .then(f)
        .catch(() => {});
    tmp.cleanup();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === '--upstream') await serveUpstream(process.argv[3]);
  if (process.argv[2] === '--hold') await holdInChild(Number(process.argv[3]));
}
