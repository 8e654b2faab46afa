// The WebAssembly build's front (src/bridge/front.rs, lib/wasm-front.cjs)
// decides a call with no N-API call, and hands anything else to the N-API
// path with what it read. Whichever way a call goes, the answer must be the
// native build's: the same result, the same reads of the event and the ctx
// in the same order, the same log lines, the same counters. Every case here
// runs on both builds, through every entry OpenClaw and users call, and the
// two are compared; then a child counts the N-API calls the front makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { NATIVE_ADDON, captureLogger, randomToken, spawnNodeSync, tempDir, writeMap } from './helpers/support.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const require = createRequire(import.meta.url);
const builds = { native: require(path.join(root, NATIVE_ADDON)), wasm: require(path.join(root, 'lib', 'wasi.cjs')) };

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const MAIN = `agent:${FRANCIS}:main`;
const LONE = '\ud83d';
const tokens = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
const mapFile = path.join(tempDir(), 'agent-tokens.json');
writeMap(mapFile, tokens);

const options = (logger) => ({
  tokenMapPath: mapFile,
  logger,
  // `helper__*` is a proxied server's: its calls get a handle, bound to the call id.
  proxy: { port: 9, servers: { helper: { upstream: { url: 'http://127.0.0.1:1/mcp' } } } },
});

/** `target` behind a Proxy that notes every read in `trace`, and throws on the keys in `throws`. */
function traced(name, target, trace, throws = []) {
  return new Proxy(target, {
    get(t, k, r) {
      trace.push(`${name}.${String(k)}`);
      if (throws.includes(k)) throw new Error(`${name}.${String(k)} is unreadable`);
      return Reflect.get(t, k, r);
    },
    has(t, k) {
      trace.push(`${name} has ${String(k)}`);
      return Reflect.has(t, k);
    },
    getOwnPropertyDescriptor(t, k) {
      trace.push(`${name} own ${String(k)}`);
      if (throws.includes(k)) throw new Error(`${name}.${String(k)} is unreadable`);
      return Reflect.getOwnPropertyDescriptor(t, k);
    },
    ownKeys(t) {
      trace.push(`${name} keys`);
      return Reflect.ownKeys(t);
    },
  });
}

const tokenNames = new Map(Object.entries(tokens).map(([agent, t]) => [t, `<token of ${agent}>`]));
/** A value as the comparison shows it: tokens by their agent, handles as a kind, never a secret. */
function shown(v) {
  if (typeof v === 'string') return tokenNames.get(v) ?? (/^clh1_[A-Za-z0-9_-]{32}$/.test(v) ? '<handle>' : v);
  if (v === undefined) return '<undefined>';
  if (typeof v === 'function') return '<function>';
  if (v === null || typeof v !== 'object') return v;
  if (typeof v.then === 'function') return '<promise>';
  const out = { '<proto>': Object.getPrototypeOf(v) === Object.prototype ? 'Object' : String(Object.getPrototypeOf(v)) };
  for (const k of Reflect.ownKeys(v)) out[String(k)] = shown(v[k]);
  return out;
}

const COUNTERS = ['injected', 'passed', 'missing', 'blocked', 'rewritten', 'internalErrors', 'redactionHits'];

/** One build's entries, each with its own layer and log. */
function entries(native) {
  const layerLog = captureLogger();
  const layer = new native.IdentityLayer(options(layerLog.logger));
  const moduleLog = captureLogger();
  const configured = native.configure(options(moduleLog.logger));
  const pair = native.tiers();
  const dropped = native.tiers();
  return {
    layer: { call: (e, c) => layer.beforeToolCall(e, c), log: layerLog, stats: () => layer.stats() },
    module: { call: (e, c) => native.beforeToolCall(e, c), log: moduleLog, stats: () => configured.stats() },
    // The trusted policy, then the safety net on the same call: the net adds nothing.
    policy: {
      call: (e, c) => [pair.beforeToolCall(e, c), pair.safetyNet(e, c)],
      log: moduleLog,
      stats: () => configured.stats(),
    },
    // A registration whose policy OpenClaw dropped: the net decides in full.
    net: { call: (e, c) => dropped.safetyNet(e, c), log: moduleLog, stats: () => configured.stats() },
    close: () => layer.close(),
  };
}

const owned = (params = { note: 'hi' }) => ({ toolName: 'claw-os__claw_notes', params });
const ctx = (fields = {}) => ({ agentId: FRANCIS, sessionKey: MAIN, toolCallId: 'call_1', ...fields });

// [name, event, ctx, keys whose reads throw]: each a call the front takes, or
// one it hands over, or one that fails.
const CASES = [
  ['owned', owned(), ctx()],
  ['owned, the model wrote both params', owned({ note: 'hi', auth_token: 'made-up', _conversation_id: 'x' }), ctx()],
  ['owned, a sub-agent session (needs the session store)', owned(), ctx({ sessionKey: `agent:${FRANCIS}:subagent:1` })],
  ['owned, another conversation', owned(), ctx({ agentId: DALI })],
  ['an agent the map lacks', owned({ auth_token: 'made-up' }), ctx({ agentId: 'ghost' })],
  ['an agent the map lacks, nothing to take out', owned(), ctx({ agentId: 'ghost' })],
  ['no agent id', owned(), ctx({ agentId: undefined })],
  ['an agent id that is a number', owned(), ctx({ agentId: 7 })],
  ['an agent id with a lone surrogate', owned(), ctx({ agentId: `paco--${LONE}` })],
  ['an agent id that is not ASCII', owned(), ctx({ agentId: 'paco--françois' })],
  ['a session key longer than the front takes', owned(), ctx({ sessionKey: `${MAIN}:${'x'.repeat(300)}` })],
  ['a session key that is not ASCII', owned(), ctx({ sessionKey: `agent:${FRANCIS}:telegram:direct:josé` })],
  ['a tool name longer than the front takes', { toolName: `claw-os__${'n'.repeat(300)}`, params: {} }, ctx()],
  ['a tool name with a lone surrogate', { toolName: `claw-os__${LONE}`, params: {} }, ctx()],
  ['a tool no rule concerns', { toolName: 'web_search', params: { q: 'x' } }, ctx()],
  ['a tool name that is not a string', { toolName: 7, params: {} }, ctx()],
  ['an event that is not an object', 'claw-os__claw_notes', ctx()],
  ['a ctx that is not an object', owned(), null],
  ['params that are an array', { toolName: 'claw-os__claw_notes', params: [1] }, ctx({ agentId: 'ghost' })],
  ['params that are null', { toolName: 'claw-os__claw_notes', params: null }, ctx()],
  ['a proxied tool', { toolName: 'helper__lookup', params: { q: 1 } }, ctx()],
  ['a proxied tool without a call id', { toolName: 'helper__lookup', params: {} }, ctx({ toolCallId: undefined })],
  ['a proxied tool, a ctx that is not an object', { toolName: 'helper__lookup', params: {} }, 'ctx'],
  ['a rule that reads params (sessions_send)', { toolName: 'sessions_send', params: { agentId: DALI, message: 'hi' } }, ctx()],
  ['toolName throws', owned(), ctx(), ['toolName']],
  ['agentId throws', owned(), ctx(), ['agentId']],
  ['sessionKey throws', owned(), ctx(), ['sessionKey']],
  ['toolCallId throws', { toolName: 'helper__lookup', params: {} }, ctx(), ['toolCallId']],
  ['params throws', owned(), ctx(), ['params']],
  ['params throws, an agent the map lacks', owned(), ctx({ agentId: 'ghost' }), ['params']],
];

/** A case's event and ctx, traced, for one call. */
function subject([, event, context, throws = []], trace) {
  const wrap = (name, v) => (v !== null && typeof v === 'object' ? traced(name, v, trace, throws) : v);
  if (event === null || typeof event !== 'object') return [event, wrap('ctx', context)];
  // The params too: how the result copies them is read as well.
  const params = Array.isArray(event.params) ? event.params : wrap('params', event.params);
  return [wrap('event', { ...event, params }), wrap('ctx', context)];
}

/** What one call says, on one entry: its result, its reads, its lines, its counters. */
function run(entry, c) {
  const trace = [];
  const [event, context] = subject(c, trace);
  const before = entry.log.lines.length;
  const stats = entry.stats();
  let result;
  try {
    result = shown(entry.call(event, context));
  } catch (e) {
    result = `throws ${e.message}`;
  }
  const after = entry.stats();
  return {
    result,
    // emnapi lists an object's own keys as its names, then its symbols
    // (napi_get_all_property_names): two ownKeys traps where V8 makes one,
    // on the N-API path of the WebAssembly build. Counted as one.
    trace: trace.filter((t, i) => !(t.endsWith(' keys') && trace[i - 1] === t)),
    lines: entry.log.lines.slice(before).map(({ level, line }) => `${level} ${line.replace(/clh1_[A-Za-z0-9_-]{32}/g, '<handle>')}`),
    counters: Object.fromEntries(COUNTERS.map((k) => [k, after[k] - stats[k]])),
  };
}

test('every call is answered by the WebAssembly build as by the native build: result, reads, lines and counters', () => {
  const sides = { native: entries(builds.native), wasm: entries(builds.wasm) };
  for (const via of ['layer', 'module', 'policy', 'net']) {
    for (const c of CASES) {
      const native = run(sides.native[via], c);
      const wasm = run(sides.wasm[via], c);
      assert.deepEqual(wasm, native, `${c[0]}, through ${via}`);
    }
  }
  for (const s of Object.values(sides)) s.close();
});

test('a field read by a getter that makes a call of its own is still answered for the right call', () => {
  for (const [name, native] of Object.entries(builds)) {
    const log = captureLogger();
    const layer = new native.IdentityLayer(options(log.logger));
    const inner = [];
    // Reading the outer call's agent id decides other calls, for another
    // agent and tools, which write the front's memory in between (the last
    // one a tool name as long as the outer call's).
    const context = {
      get agentId() {
        inner.push(layer.beforeToolCall({ toolName: 'helper__lookup', params: {} }, ctx({ agentId: DALI, toolCallId: 'inner' })));
        inner.push(layer.beforeToolCall({ toolName: 'claw-os__other_tool', params: {} }, ctx({ agentId: DALI })));
        return FRANCIS;
      },
      sessionKey: MAIN,
    };
    const outer = layer.beforeToolCall(owned(), context);
    assert.equal(shown(outer.params.auth_token), `<token of ${FRANCIS}>`, name);
    assert.equal(outer.params._conversation_id, MAIN, name);
    assert.equal(shown(inner[0].params.auth_token), '<handle>', name);
    assert.equal(shown(inner[1].params.auth_token), `<token of ${DALI}>`, name);
    assert.deepEqual(
      log.lines
        .filter((l) => l.line.includes('before_tool_call'))
        .map((l) =>
          l.line
            .match(/tool=(\S+) agent=(\S+)/)
            .slice(1)
            .join(' '),
        ),
      [`helper__lookup ${DALI}`, `claw-os__other_tool ${DALI}`, `claw-os__claw_notes ${FRANCIS}`],
      name,
    );
    layer.close();
  }
});

// The count is taken in a child, which wraps the instance's N-API imports
// before lib/wasi.cjs instantiates the module.
const COUNTER = `
const counts = { n: 0 };
const Instance = WebAssembly.Instance;
WebAssembly.Instance = function (module, imports) {
  for (const ns of ['napi', 'emnapi', 'env']) {
    for (const [k, f] of Object.entries(imports[ns] ?? {})) {
      if (typeof f === 'function' && /^(napi|node_api|_emnapi)_/.test(k)) imports[ns][k] = function (...a) { counts.n++; return f.apply(this, a); };
    }
  }
  return new Instance(module, imports);
};
const native = require(${JSON.stringify(path.join(root, 'lib', 'wasi.cjs'))});
const logger = { info() {}, warn() {}, error() {} };
const options = { tokenMapPath: process.argv[1], logger };
const layer = new native.IdentityLayer(options);
native.configure(options);
const pair = native.tiers();
const ctx = { agentId: '${FRANCIS}', sessionKey: '${MAIN}', toolCallId: 'c' };
const notes = () => ({ toolName: 'claw-os__claw_notes', params: { note: 'hi' } });
const calls = {
  owned: () => layer.beforeToolCall(notes(), ctx),
  unowned: () => layer.beforeToolCall({ toolName: 'web_search', params: {} }, ctx),
  module: () => native.beforeToolCall(notes(), ctx),
  deployed: () => { const e = notes(); const r = pair.beforeToolCall(e, ctx); pair.safetyNet({ ...e, params: r.params }, ctx); },
  missing: () => layer.beforeToolCall(notes(), { agentId: 'ghost' }),
  send: () => layer.beforeToolCall({ toolName: 'sessions_send', params: { agentId: 'x', message: 'hi' } }, ctx),
};
const out = {};
for (const [name, call] of Object.entries(calls)) {
  for (let i = 0; i < 5; i++) call();
  const before = counts.n;
  for (let i = 0; i < 100; i++) call();
  out[name] = (counts.n - before) / 100;
}
console.log(JSON.stringify(out));
layer.close();
`;

test('the WebAssembly build decides owned, unowned and deployed calls with no N-API call', () => {
  const p = spawnNodeSync(['-e', COUNTER, mapFile], { encoding: 'utf8', env: { ...process.env, NODE_NO_WARNINGS: '1' } });
  assert.equal(p.status, 0, p.stderr);
  const n = JSON.parse(p.stdout.trim().split('\n').at(-1));
  assert.deepEqual(
    { owned: n.owned, unowned: n.unowned, module: n.module, deployed: n.deployed, missing: n.missing },
    {
      owned: 0,
      unowned: 0,
      module: 0,
      deployed: 0,
      missing: 0,
    },
  );
  // The count counts: a rule that reads params goes the N-API way.
  assert.ok(n.send > 5, `sessions_send made ${n.send} N-API calls`);
});

// A line logged while a call is decided (here: no handle can be minted, the
// store is full) goes out before the call's own line, on both builds; on
// the WebAssembly build the front delivers it (`flush`) before writing the
// call's line. In children: the handle store is per process.
const FULL_STORE = `
const native = require(process.argv[1]);
const lines = [];
const push = (level) => (l) => lines.push(level + ' ' + l.replace(/clh1_[A-Za-z0-9_-]{32}/g, '<handle>'));
const layer = new native.IdentityLayer({
  tokenMapPath: process.argv[2],
  logger: { info: push('info'), warn: push('warn'), error: push('error') },
  proxy: { port: 9, servers: { helper: { upstream: { url: 'http://127.0.0.1:1/mcp' } } } },
});
const call = () => layer.beforeToolCall({ toolName: 'helper__lookup', params: {} }, { agentId: '${FRANCIS}', toolCallId: 'c' });
let minted = 0;
while (call()?.params?.auth_token?.startsWith('clh1_')) minted++;
const last = lines.slice(-2);
const again = call();
console.log(JSON.stringify({ minted, last, again: again?.block === true }));
layer.close();
`;

test('a line logged while a call is decided goes out before the call line, on both builds', () => {
  const out = {};
  for (const [name, file] of [
    ['native', path.join(root, NATIVE_ADDON)],
    ['wasm', path.join(root, 'lib', 'wasi.cjs')],
  ]) {
    const p = spawnNodeSync(['-e', FULL_STORE, file, mapFile], { encoding: 'utf8', env: { ...process.env, NODE_NO_WARNINGS: '1' } });
    assert.equal(p.status, 0, p.stderr);
    out[name] = JSON.parse(p.stdout.trim().split('\n').at(-1));
  }
  assert.equal(out.native.minted, 65536);
  assert.match(out.native.last[0], /^error \[claw-identity\] cannot mint a proxy handle/);
  assert.match(out.native.last[1], /^warn \[claw-identity\] blocked tool=helper__lookup/);
  assert.deepEqual(out.wasm, out.native);
});
