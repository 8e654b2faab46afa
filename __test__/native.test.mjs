// The .node itself, as the design card says: it exports beforeToolCall(event,
// ctx) and decides every call in Rust. Also the bypasses that lived in the
// JS half before it: params the engine read lossily, caches keyed
// by the model's tool call id, prototype setters, closed layers, panics, and
// a silent token oracle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import plugin, { IdentityLayer } from './helpers/subject.mjs';
import { NATIVE_ADDON, assertSameToken, captureLogger, randomToken, recordEmitted, spawnNodeSync, tempDir, writeMap } from './helpers/support.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const nativePath = path.join(root, NATIVE_ADDON);
const native = createRequire(import.meta.url)(nativePath);

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const ATLAS = 'pepito--atlas';
const MAIN = `agent:${FRANCIS}:main`;
const LONE = '\ud83d'; // half an emoji: what a truncated one leaves

function mapWith(tokens) {
  const file = path.join(tempDir(), 'agent-tokens.json');
  writeMap(file, tokens);
  return file;
}

const quiet = () => captureLogger().logger;
const notes = (params = { note: 'hi', auth_token: 'made-up' }) => ({ toolName: 'claw-os__claw_notes', params });

test('the .node exports beforeToolCall(event, ctx): configure it, call it, get the rewrite', () => {
  const token = randomToken();
  native.configure({ tokenMapPath: mapWith({ [FRANCIS]: token }), logger: quiet() });
  const r = native.beforeToolCall(notes(), { agentId: FRANCIS, sessionKey: MAIN });
  assertSameToken(r.params.auth_token, token);
  assert.equal(r.params.note, 'hi');
  assert.equal(r.params._conversation_id, MAIN);
  assert.equal(native.beforeToolCall({ toolName: 'exec', params: {} }, { agentId: FRANCIS }), undefined);
  assert.equal(native.stats().injected, 1);
});

test("without a known conversation, the model's own _conversation_id is taken out, not forwarded", () => {
  const token = randomToken();
  const layer = new IdentityLayer({ tokenMapPath: mapWith({ [FRANCIS]: token }), logger: quiet() });
  const r = layer.beforeToolCall(notes({ note: 'hi', _conversation_id: 'agent:pepito--atlas:main' }), { agentId: FRANCIS });
  assertSameToken(r.params.auth_token, token);
  assert.ok(Object.hasOwn(r.params, '_conversation_id'));
  assert.equal(r.params._conversation_id, undefined);
  // Taken out only where the call holds it: a call without one gets none.
  const without = layer.beforeToolCall(notes({ note: 'hi' }), { agentId: FRANCIS });
  assertSameToken(without.params.auth_token, token);
  assert.ok(!Object.hasOwn(without.params, '_conversation_id'));
  layer.close();
});

test('the native module has no quiet decision path and no guessable handles', () => {
  for (const name of ['decide', 'NativeLayer']) assert.equal(native[name], undefined, name);
  const token = randomToken();
  const layer = new IdentityLayer({ tokenMapPath: mapWith({ [FRANCIS]: token }), logger: quiet() });
  assert.equal(layer.handle, undefined);
  // Every call that returns a token is counted.
  layer.beforeToolCall(notes(), { agentId: FRANCIS });
  layer.beforeToolCall(notes(), { agentId: FRANCIS });
  assert.equal(layer.stats().injected, 2);
  layer.close();
});

test('a lone surrogate elsewhere in the params does not let a cross-user spawn pass as "own worker"', () => {
  const layer = new IdentityLayer({ tokenMapPath: mapWith({}), logger: quiet() });
  for (const params of [
    { agentId: ATLAS, task: `paint${LONE}` },
    { agentId: ATLAS, task: 'paint', label: `x${LONE}` },
    { agentId: ATLAS, task: 'paint', extra: JSON.parse('['.repeat(200) + ']'.repeat(200)) },
  ]) {
    const r = layer.beforeToolCall({ toolName: 'sessions_spawn', params }, { agentId: FRANCIS, sessionKey: MAIN });
    recordEmitted('blockReason', r?.blockReason);
    assert.equal(r?.block, true, JSON.stringify(Object.keys(params)));
    assert.match(r.blockReason, /^cross-user-send: /);
  }
  // The same surrogate does not skip spawn-redirect for a same-user specialist.
  const r = layer.beforeToolCall({ toolName: 'sessions_spawn', params: { agentId: DALI, task: `paint${LONE}` } }, { agentId: FRANCIS, sessionKey: MAIN });
  assert.match(r.blockReason, /^spawn-redirect: /);
  layer.close();
});

test('a field a rule reads that cannot be read exactly blocks the call, saying so', () => {
  const layer = new IdentityLayer({ tokenMapPath: mapWith({}), logger: quiet() });
  const deep = JSON.parse('['.repeat(40) + ']'.repeat(40));
  for (const [tool, params] of [
    ['sessions_spawn', { agentId: `${ATLAS}${LONE}`, task: 't' }],
    ['sessions_send', { sessionKey: `agent:${ATLAS}:main${LONE}`, message: 'm' }],
    ['sessions_send', { agentId: () => ATLAS, message: 'm' }],
    ['workboard_decompose', { id: 'c', children: [{ title: `a${LONE}` }] }],
    ['workboard_decompose', { id: 'c', children: [{ title: 'a', nested: deep }] }],
    ['sessions_send', 'not an object'],
  ]) {
    const r = layer.beforeToolCall({ toolName: tool, params }, { agentId: FRANCIS, sessionKey: MAIN });
    recordEmitted('blockReason', r?.blockReason);
    assert.equal(r?.block, true, tool);
    assert.match(r.blockReason, /^claw-identity: params\.\S+ of \S+ can't be read \(.+\), so the call was not run/, tool);
  }
  layer.close();
});

test('a same-user send whose message holds a lone surrogate is routed, not refused', () => {
  const layer = new IdentityLayer({ tokenMapPath: mapWith({}), logger: quiet() });
  const params = { agentId: DALI, message: `look ${LONE}` };
  const r = layer.beforeToolCall({ toolName: 'sessions_send', params }, { agentId: FRANCIS, sessionKey: MAIN });
  assert.equal(r.block, undefined, r.blockReason);
  assert.equal(r.params.sessionKey, `agent:${DALI}:delegation:agent.${FRANCIS}.main`);
  assert.equal(r.params.message, params.message, 'the message runs exactly as written');
  layer.close();
});

test("workboard_decompose children land on the caller's board whatever else they hold", () => {
  const layer = new IdentityLayer({ tokenMapPath: mapWith({}), logger: quiet() });
  const r = layer.beforeToolCall(
    { toolName: 'workboard_decompose', params: { id: 'c', children: [{ title: 'a', boardId: 'wb_pepito', n: 3, ok: true }] } },
    { agentId: FRANCIS, sessionKey: MAIN },
  );
  assert.deepEqual(r.params.children, [{ title: 'a', boardId: 'wb_paco', n: 3, ok: true }]);
  layer.close();
});

test('a setter or read-only auth_token on Object.prototype never sees the token and never keeps it out', () => {
  const token = randomToken();
  const layer = new IdentityLayer({ tokenMapPath: mapWith({ [FRANCIS]: token }), logger: quiet() });
  let seen;
  try {
    Object.defineProperty(Object.prototype, 'auth_token', {
      set(v) {
        seen = v;
      },
      get() {
        return undefined;
      },
      configurable: true,
    });
    const r = layer.beforeToolCall(notes({ note: 'hi' }), { agentId: FRANCIS });
    assert.equal(seen, undefined, 'a prototype setter received the token');
    assert.ok(Object.hasOwn(r.params, 'auth_token'));
    assertSameToken(r.params.auth_token, token);
    delete Object.prototype.auth_token;
    Object.defineProperty(Object.prototype, 'auth_token', { value: 'read-only', writable: false, configurable: true });
    const r2 = layer.beforeToolCall(notes({ note: 'hi' }), { agentId: FRANCIS });
    assertSameToken(Object.getOwnPropertyDescriptor(r2.params, 'auth_token')?.value, token);
  } finally {
    delete Object.prototype.auth_token;
    layer.close();
  }
  // An own __proto__ key (JSON.parse makes one) stays an own key of the copy.
  const r = new IdentityLayer({ tokenMapPath: mapWith({ [FRANCIS]: token }), logger: quiet() });
  const out = r.beforeToolCall(notes(JSON.parse('{"__proto__": {"x": 1}, "note": "hi"}')), { agentId: FRANCIS });
  assert.ok(Object.hasOwn(out.params, '__proto__'));
  assert.equal(Object.getPrototypeOf(out.params), Object.prototype);
  r.close();
});

/** The plugin as OpenClaw registers it, once per call of register(). */
function register(config, mode = 'full') {
  const log = captureLogger();
  const api = { pluginConfig: config, registrationMode: mode, logger: log.logger, hooks: [], policies: [] };
  api.on = (name, handler, opts) => api.hooks.push({ name, handler, opts });
  api.registerTrustedToolPolicy = (p) => api.policies.push(p);
  plugin.register(api);
  return { policy: api.policies[0], hook: api.hooks[0].handler, log };
}

test('every registration reaches the layer in force after a config change', () => {
  const [t1, t2] = [randomToken(), randomToken()];
  const first = register({ tokenMapPath: mapWith({ [FRANCIS]: t1 }) });
  const second = register({ tokenMapPath: mapWith({ [FRANCIS]: t2 }) }, 'discovery');
  for (const { policy } of [first, second]) {
    assertSameToken(policy.evaluate(notes(), { agentId: FRANCIS }).params.auth_token, t2);
  }
  // A hook whose policy never ran (OpenClaw dropped it) decides on the same layer.
  const third = register({ tokenMapPath: mapWith({ [FRANCIS]: t2 }) }, 'discovery');
  assertSameToken(third.hook(notes(), { agentId: FRANCIS }).params.auth_token, t2);
});

test("a registration's hook passes at once once its own policy ran, and decides where that policy never ran", () => {
  const [tf, ta] = [randomToken(), randomToken()];
  const config = { tokenMapPath: mapWith({ [FRANCIS]: tf, [ATLAS]: ta }) };
  const enabled = register(config);
  const dropped = register(config, 'discovery');
  const ctx = { agentId: FRANCIS, sessionKey: `agent:${FRANCIS}:main` };
  const decided = enabled.policy.evaluate(notes(), ctx);
  assertSameToken(decided.params.auth_token, tf);
  // The trusted tier decided this registration's calls: its hook does nothing, whatever it is handed.
  assert.equal(enabled.hook({ ...notes(), params: decided.params }, ctx), undefined);
  assert.equal(enabled.hook(notes({ auth_token: 'made-up' }), { agentId: ATLAS }), undefined);
  // Another registration's policy never ran (OpenClaw dropped it): its hook decides in full.
  assertSameToken(dropped.hook(notes({ auth_token: 'made-up' }), { agentId: ATLAS }).params.auth_token, ta);
  const send = { toolName: 'sessions_send', params: { agentId: ATLAS, message: 'hi' } };
  assert.equal(dropped.hook(send, ctx)?.block, true);
});

test('a panic while deciding fails closed and the process lives on', () => {
  const map = mapWith({ [FRANCIS]: randomToken() });
  const script = `
    const native = require(${JSON.stringify(nativePath)});
    const layer = new native.IdentityLayer({ tokenMapPath: ${JSON.stringify(map)}, logger: { info() {}, warn() {}, error(l) { console.log('ERROR ' + l); } } });
    const r = layer.beforeToolCall({ toolName: 'claw-os____panic__', params: {} }, { agentId: 'paco--francis' });
    const after = layer.beforeToolCall({ toolName: 'claw-os__x', params: {} }, { agentId: 'paco--francis' });
    console.log(JSON.stringify({ r, after: typeof after?.params?.auth_token, errors: layer.stats().internalErrors }));
    layer.close();`;
  for (const armed of [true, false]) {
    const env = { ...process.env, CLAW_IDENTITY_PANIC_TEST: armed ? '1' : '' };
    const p = spawnNodeSync(['-e', script], { env, encoding: 'utf8' });
    assert.equal(p.status, 0, p.stderr);
    const out = JSON.parse(p.stdout.trim().split('\n').at(-1));
    assert.equal(out.after, 'string', 'the next call is decided as usual');
    if (armed) {
      assert.equal(out.r.block, true);
      assert.match(out.r.blockReason, /^auth-token: claw-identity could not decide this call/);
      assert.equal(out.errors, 1);
      assert.match(p.stdout, /ERROR \[claw-identity\] internal error deciding tool=claw-os____panic__: a panic/);
    } else {
      assert.equal(out.r?.block, undefined, 'without the test switch, no panic');
    }
  }
});
