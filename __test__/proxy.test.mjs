// The loopback MCP proxy against real MCP servers on real sockets: the
// claw-os fixture (the token as a tool argument), a server that takes it in
// a header, and a stdio server that takes it from its env, one child per
// agent. A call's handle redeems once, for its agent, to that agent's
// credential; the model's tool list has no credential param; a replayed,
// expired, forged or missing handle gets an error result and nothing is
// forwarded; another process gets 403. The same through a real OpenClaw
// is e2e/proxy.test.mjs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { contained } from './helpers/posture.mjs';
import plugin, { beforeToolCall, buildInfo, configure, startMcpProxy, stats } from './helpers/subject.mjs';
import {
  captureLogger,
  fingerprint,
  nodeCommand,
  randomToken,
  recordEmitted,
  spawnNode,
  tempDir,
  waitFor,
  writeMap,
  writeMapAtomic,
} from './helpers/support.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const FIXTURES = path.join(root, '__test__', 'e2e', 'fixtures');
const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const tokens = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
/** Every token of the suite, rotated ones too: none may be logged. */
const everyToken = Object.values(tokens);
const dir = tempDir();
const mapFile = path.join(dir, 'agent-tokens.json');
const children = [];
after(() => {
  for (const c of children) c.kill();
});

/** A fixture server; resolves to the URL it prints first (HTTP ones). */
function serve(file, args, env) {
  const child = spawnNode([path.join(FIXTURES, file), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`${file} exited ${code}`)));
  });
}

/** A free port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** JSON lines of a fixture's log. */
const records = (file) =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

const log = captureLogger();
const clawLog = path.join(dir, 'claw-os.jsonl');
const headerLog = path.join(dir, 'header.jsonl');
const envLog = path.join(dir, 'env.jsonl');
const richLog = path.join(dir, 'rich.jsonl');
let proxy;
const clients = {};
const upstreams = {};

const [envCommand, envArgs] = nodeCommand([path.join(FIXTURES, 'env-server.mjs'), '--log', envLog]);
const envUpstream = { command: envCommand, args: envArgs };

/** Configures the layer with the suite's three servers (and `extra` proxy options). */
function configureSuite(extra = {}) {
  return configure({
    tokenMapPath: mapFile,
    posture: 'warn',
    logger: log.logger,
    proxy: {
      port: upstreams.port,
      ...extra,
      servers: {
        'claw-os': { upstream: { url: upstreams.claw }, credential: { in: 'argument' } },
        notes: { upstream: { url: upstreams.header }, credential: { in: 'header', name: 'X-Api-Key' }, listAs: FRANCIS },
        // The proxy starts it: through the emulator where the suite runs under one (the arm64 run).
        envsrv: { upstream: envUpstream, credential: { in: 'env' } },
        rich: { upstream: { url: upstreams.rich }, credential: { in: 'argument' } },
      },
    },
  });
}

before(async () => {
  writeMap(mapFile, tokens);
  const [clawUrl, headerUrl, richUrl] = await Promise.all([
    serve('claw-os-server.mjs', ['--http'], { CLAW_OS_CALL_LOG: clawLog }),
    serve('header-server.mjs', [], { HEADER_SERVER_AUTH: 'header:x-api-key', HEADER_SERVER_LOG: headerLog }),
    serve('rich-server.mjs', [], { RICH_SERVER_LOG: richLog }),
  ]);
  Object.assign(upstreams, { claw: clawUrl, header: headerUrl, rich: richUrl, port: await freePort() });
  configureSuite();
  proxy = await startMcpProxy({ logger: log.logger });
  for (const [name, url] of Object.entries(proxy.urls)) {
    clients[name] = new Client({ name: 'openclaw-bundle-mcp', version: '0.0.0' });
    await clients[name].connect(new StreamableHTTPClientTransport(new URL(url)));
  }
});

after(async () => {
  for (const c of Object.values(clients)) await c.close().catch(() => {});
  await proxy?.stop();
  recordEmitted('proxy log', log.text());
});

/** What the trusted policy hands OpenClaw for `agent`'s call of `tool`. */
function policy(agent, tool, params = {}) {
  const r = beforeToolCall(
    { toolName: tool, params, toolCallId: 'call_1' },
    { agentId: agent, sessionKey: `agent:${agent}:main`, toolName: tool, toolCallId: 'call_1' },
  );
  assert.ok(r?.params, `the policy rewrote ${tool}`);
  return r.params;
}

const text = (result) => result.content.map((c) => c.text).join('\n');

test('the tool lists the model gets through the proxy have no credential param and no param the layer fills', async () => {
  for (const [name, c] of Object.entries(clients)) {
    const { tools } = await c.listTools();
    assert.ok(tools.length > 0, `${name} lists tools`);
    for (const t of tools) {
      const props = Object.keys(t.inputSchema.properties ?? {});
      assert.ok(!props.includes('auth_token') && !props.includes('_conversation_id'), `${name}/${t.name}: ${props}`);
      assert.ok(!(t.inputSchema.required ?? []).includes('auth_token'), `${name}/${t.name} requires auth_token`);
    }
  }
  // Straight from the upstream, claw-os declares both.
  const direct = new Client({ name: 't', version: '1' });
  await direct.connect(new StreamableHTTPClientTransport(new URL(upstreams.claw)));
  const { tools } = await direct.listTools();
  await direct.close();
  assert.ok(Object.keys(tools.find((t) => t.name === 'claw_notes').inputSchema.properties).includes('auth_token'));
});

test("each agent's call reaches each upstream with its own credential, where that upstream takes it; the policy wrote only a handle", async () => {
  for (const agent of [FRANCIS, DALI]) {
    const p = policy(agent, 'claw-os__claw_notes', { note: `from ${agent}` });
    assert.match(p.auth_token, /^clh1_[A-Za-z0-9_-]{32}$/);
    const r = await clients['claw-os'].callTool({ name: 'claw_notes', arguments: p });
    assert.ok(!r.isError, text(r));
    const h = policy(agent, 'notes__whoami', { note: 'hi' });
    assert.match(h.auth_token, /^clh1_/);
    const rh = await clients.notes.callTool({ name: 'whoami', arguments: h });
    assert.ok(!rh.isError, text(rh));
    const e = policy(agent, 'envsrv__whoami', { note: 'hi' });
    const re = await clients.envsrv.callTool({ name: 'whoami', arguments: e });
    assert.ok(!re.isError, text(re));
  }
  const claw = records(clawLog).filter((r) => r.tool === 'claw_notes');
  assert.deepEqual(
    claw.map((r) => fingerprint(r.args.auth_token)),
    [FRANCIS, DALI].map((a) => fingerprint(tokens[a])),
  );
  const header = records(headerLog).filter((r) => r.event === 'call');
  assert.deepEqual(
    header.map((r) => r.fp),
    [FRANCIS, DALI].map((a) => fingerprint(tokens[a])),
  );
  for (const r of header) assert.ok(!('auth_token' in r.args), 'the handle went upstream');
  const env = records(envLog).filter((r) => r.event === 'call');
  assert.deepEqual(
    env.map((r) => r.fp),
    [FRANCIS, DALI].map((a) => fingerprint(tokens[a])),
  );
  assert.notEqual(env[0].pid, env[1].pid, 'one stdio child per agent');
});

test('a replayed, forged, missing or model-written handle, or one made for another tool, gets an error result and reaches no upstream', async () => {
  const before = records(clawLog).length;
  const p = policy(FRANCIS, 'claw-os__claw_notes', { note: 'once' });
  assert.ok(!(await clients['claw-os'].callTool({ name: 'claw_notes', arguments: p })).isError);
  const tries = [
    ['replayed', 'claw_notes', p, /unknown or already spent/],
    ['forged', 'claw_notes', { ...p, auth_token: `clh1_${'A'.repeat(32)}` }, /unknown or already spent/],
    ['missing', 'claw_notes', { note: 'x' }, /carries no claw-identity handle/],
    ['a token the model wrote', 'claw_notes', { auth_token: tokens[FRANCIS] }, /unknown or already spent/],
    ['another tool', 'claw_audio', policy(FRANCIS, 'claw-os__claw_notes'), /made for another tool/],
  ];
  for (const [what, name, args, why] of tries) {
    const r = await clients['claw-os'].callTool({ name, arguments: args });
    assert.equal(r.isError, true, what);
    assert.match(text(r), why, what);
  }
  assert.equal(records(clawLog).length, before + 1, 'only the first call reached the server');
});

test('a handle expires', async () => {
  configureSuite({ handleTtlMs: 1 });
  try {
    const p = policy(FRANCIS, 'claw-os__claw_notes');
    await new Promise((r) => setTimeout(r, 20));
    const r = await clients['claw-os'].callTool({ name: 'claw_notes', arguments: p });
    assert.equal(r.isError, true);
    assert.match(text(r), /expired/);
  } finally {
    configureSuite();
  }
});

test('a token rotated after the call got its handle is the one the upstream gets, on a connection of its own', async () => {
  const layer = configureSuite();
  layer.watch();
  try {
    const h = policy(DALI, 'notes__whoami', { note: 'after the rotation' });
    const next = randomToken();
    everyToken.push(next);
    const reloads = stats().reloads;
    writeMapAtomic(mapFile, { ...tokens, [DALI]: next });
    await waitFor(() => stats().reloads > reloads, { what: 'the reload' });
    const r = await clients.notes.callTool({ name: 'whoami', arguments: h });
    assert.ok(!r.isError, text(r));
    const last = records(headerLog)
      .filter((x) => x.event === 'call')
      .at(-1);
    assert.equal(last.fp, fingerprint(next));
    assert.ok(!records(headerLog).some((x) => x.event === 'token-switch'), 'an upstream session was shared by two tokens');
  } finally {
    writeMapAtomic(mapFile, tokens);
    layer.close();
  }
});

test('another process gets 403 from the proxy on every method (the WebAssembly build, which cannot tell, leaves it to the handles)', async () => {
  const url = proxy.urls['claw-os'];
  const script = `
    const url = ${JSON.stringify(url)};
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const out = [];
    for (const [method, body] of [['POST', JSON.stringify(init)], ['GET'], ['DELETE']]) {
      const r = await fetch(url, { method, headers, body });
      out.push({ method, status: r.status, body: await r.text() });
    }
    console.log(JSON.stringify(out));`;
  const child = spawnNode(['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  await new Promise((r) => child.once('close', r));
  const answers = JSON.parse(out);
  if (buildInfo.native) {
    for (const a of answers) {
      assert.equal(a.status, 403, a.method);
      assert.match(a.body, /only the OpenClaw gateway/, a.method);
    }
    assert.equal(proxy.peerUnknown, false);
  } else {
    assert.equal(answers[0].status, 200, 'the WebAssembly build answers any local process');
    assert.equal(proxy.peerUnknown, true);
  }
});

test('progress, cancellation, a changed tool list, resources, prompts and sessions pass through', async () => {
  const { types } = { types: await import('@modelcontextprotocol/sdk/types.js') };
  const c = clients.rich;
  // Progress streams back while the call runs.
  const progress = [];
  const r = await c.callTool({ name: 'count', arguments: policy(FRANCIS, 'rich__count', { to: 3 }) }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  assert.equal(text(r), 'counted to 3');
  assert.deepEqual(progress, [1, 2, 3]);
  // A cancelled call is cancelled upstream.
  const abort = new AbortController();
  const waiting = c.callTool({ name: 'wait', arguments: policy(FRANCIS, 'rich__wait') }, undefined, { signal: abort.signal }).catch((e) => e);
  await waitFor(() => records(richLog).some((x) => x.event === 'wait-started'), { what: 'the upstream call' });
  abort.abort('the user pressed Stop');
  assert.ok((await waiting) instanceof Error);
  await waitFor(() => records(richLog).some((x) => x.event === 'cancelled'), { what: 'the cancellation upstream' });
  // The upstream's list_changed reaches the OpenClaw session, and the new tool is listed.
  let changed = 0;
  c.setNotificationHandler(types.ToolListChangedNotificationSchema, () => {
    changed += 1;
  });
  assert.ok(!(await c.callTool({ name: 'grow', arguments: policy(FRANCIS, 'rich__grow') })).isError);
  await waitFor(() => changed > 0, { what: 'list_changed through the proxy' });
  assert.ok((await c.listTools()).tools.some((t) => t.name === 'grown'));
  // Resources and prompts.
  assert.deepEqual(
    (await c.listResources()).resources.map((x) => x.uri),
    ['note://one'],
  );
  assert.equal((await c.readResource({ uri: 'note://one' })).contents[0].text, 'the first note');
  assert.deepEqual(
    (await c.listPrompts()).prompts.map((x) => x.name),
    ['greet'],
  );
  assert.match((await c.getPrompt({ name: 'greet', arguments: { name: 'Dali' } })).messages[0].content.text, /Dali/);
  // Each OpenClaw session is a session of its own; ending one leaves the other.
  const other = new Client({ name: 'openclaw-bundle-mcp', version: '0.0.0' });
  const t = new StreamableHTTPClientTransport(new URL(proxy.urls.rich));
  await other.connect(t);
  assert.ok(t.sessionId && t.sessionId !== c.transport.sessionId);
  await t.terminateSession();
  await other.close();
  assert.ok((await c.listTools()).tools.length > 0);
});

test('no token or piece of one in any line the proxy logged; each redemption is logged with agent, fingerprint and call id', () => {
  const all = log.text();
  for (const t of everyToken) {
    for (let i = 0; i + 16 <= t.length; i += 8) assert.ok(!all.includes(t.slice(i, i + 16)), 'a piece of a token in the log');
  }
  assert.match(
    all,
    new RegExp(
      `proxy: claw-os/claw_notes for agent=${DALI} with its token sha256:${fingerprint(tokens[DALI])} in the tool argument auth_token \\(call call_1\\)`,
    ),
  );
  assert.match(all, /proxy: claw-os\/claw_notes was not called: its handle is unknown or already spent/);
});

test("in a gateway the proxy is the plugin service's: a port taken is an error in the log and each server's error in doctor's check, and the next start serves", async () => {
  // Runs last: registering the plugin puts its own layer in force.
  const port = await freePort();
  const squatter = net.createServer().listen(port, '127.0.0.1');
  await new Promise((r) => squatter.once('listening', r));
  const gw = captureLogger();
  const methods = {};
  const services = [];
  const api = {
    pluginConfig: undefined,
    registrationMode: 'full',
    logger: gw.logger,
    on() {},
    registerTrustedToolPolicy() {},
    registerService: (svc) => services.push(svc),
    registerGatewayMethod: (name, handler) => {
      methods[name] = handler;
    },
  };
  const pluginConfig = {
    tokenMapPath: mapFile,
    proxy: { port, servers: { 'claw-os': { upstream: { url: upstreams.claw }, credential: { in: 'argument' } } } },
  };
  const ctx = { config: contained({ plugins: { entries: { 'claw-identity': { config: pluginConfig } } } }) };
  plugin.register({ ...api, pluginConfig });
  const ask = () => new Promise((resolve) => methods['claw-identity.proxy']({ respond: (ok, payload) => resolve({ ok, payload }) }));
  const [service] = services;
  try {
    service.start(ctx);
    await waitFor(() => gw.has(/MCP proxy did not start: .*EADDRINUSE/), { what: 'the start error' });
    const down = await ask();
    assert.equal(down.ok, true);
    assert.equal(down.payload[0].server, 'claw-os');
    assert.match(down.payload[0].error, /the MCP proxy is not running in this gateway \(.*EADDRINUSE/);
    service.stop(ctx);
    await new Promise((r) => squatter.close(r));
    service.start(ctx);
    await waitFor(() => gw.has(new RegExp(`MCP proxy on 127\\.0\\.0\\.1:${port}`)), { what: 'the proxy up' });
    const up = await ask();
    assert.deepEqual(
      up.payload.map((p) => [p.server, p.error]),
      [['claw-os', undefined]],
    );
    assert.ok(up.payload[0].tools.some((t) => t.name === 'claw_notes'));
    assert.ok(up.payload[0].tools.every((t) => !Object.hasOwn(t.inputSchema.properties ?? {}, 'auth_token')));
  } finally {
    service.stop(ctx);
  }
  // Stopped with the service: the port is free again.
  await waitFor(
    () =>
      new Promise((resolve) => {
        const probe = net.createServer().once('error', () => resolve(false));
        probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
      }),
    { what: 'the port freed' },
  );
});
