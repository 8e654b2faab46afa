// The identity rules through the JS half: what OpenClaw gets back, the two
// things only the JS side can do (create a delegation session, read a
// sub-agent's spawner), and the plugin's two passes over one call. The rules
// themselves are unit-tested in Rust (src/rules/); the real gateway is in
// e2e/rules.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import plugin, { IdentityLayer } from './helpers/subject.mjs';
import { assertSameToken, captureLogger, randomToken, recordEmitted, tempDir, writeMap } from './helpers/support.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const C = 'agent:paco--francis:main';
const DALI_SESSION = 'agent:paco--dali:delegation:agent.paco--francis.main';

function mapWith(tokens) {
  const file = path.join(tempDir(), 'agent-tokens.json');
  writeMap(file, tokens);
  return file;
}

/** A session store like OpenClaw's, recording what the layer asks of it. */
function fakeSessions({ spawners = {}, failEnsure } = {}) {
  const ensured = [];
  const lookups = [];
  return {
    ensured,
    lookups,
    store: {
      async ensure(agentId, sessionKey) {
        if (failEnsure) throw new Error(failEnsure);
        ensured.push([agentId, sessionKey]);
      },
      spawnerOf(agentId, sessionKey) {
        lookups.push([agentId, sessionKey]);
        return spawners[sessionKey];
      },
    },
  };
}

function layerWith({ tokens = {}, rules, sessions } = {}) {
  const log = captureLogger();
  const layer = new IdentityLayer({ tokenMapPath: mapWith(tokens), rules, sessions, logger: log.logger });
  return { layer, log };
}

const said = (label, r) => recordEmitted(label, { blockReason: r?.blockReason, requireApproval: r?.requireApproval });

test('a claw-os call carries the token and the originating conversation, decided synchronously', () => {
  const token = randomToken();
  const { layer } = layerWith({ tokens: { [FRANCIS]: token } });
  const r = layer.beforeToolCall(
    { toolName: 'claw-os__claw_notes', params: { note: 'n', auth_token: 'model', _conversation_id: 'model-conv' } },
    { agentId: FRANCIS, sessionKey: C },
  );
  assert.ok(!(r instanceof Promise));
  assertSameToken(r.params.auth_token, token);
  assert.equal(r.params._conversation_id, C);
  assert.equal(r.params.note, 'n');
  layer.close();
});

test('a cross-user send is blocked with a reason that names the rule and what to do', () => {
  const { layer } = layerWith();
  const r = layer.beforeToolCall({ toolName: 'sessions_send', params: { agentId: 'pepito--atlas', message: 'hi' } }, { agentId: FRANCIS, sessionKey: C });
  assert.equal(r.block, true);
  assert.match(r.blockReason, /^cross-user-send: /);
  assert.match(r.blockReason, /paco--\*/);
  layer.close();
});

test('a same-user send is routed to its dedicated session, which exists before the result is returned', async () => {
  const s = fakeSessions();
  const { layer } = layerWith({ sessions: s.store });
  const params = { agentId: DALI, message: 'hi', timeoutSeconds: 30 };
  const r = await layer.beforeToolCall({ toolName: 'sessions_send', params }, { agentId: FRANCIS, sessionKey: C });
  assert.deepEqual(r, { params: { ...params, sessionKey: DALI_SESSION } });
  assert.deepEqual(s.ensured, [[DALI, DALI_SESSION]]);
  layer.close();
});

test('a delegation session that cannot be created blocks the send; the log holds the error, scrubbed', async () => {
  const secret = randomToken();
  const s = fakeSessions({ failEnsure: `store refused ${secret}` });
  const { layer, log } = layerWith({ sessions: s.store });
  const r = await layer.beforeToolCall({ toolName: 'sessions_send', params: { agentId: DALI, message: 'hi' } }, { agentId: FRANCIS, sessionKey: C });
  said('ensure failure', r);
  assert.equal(r.block, true);
  assert.match(r.blockReason, /^delegation-session: /);
  assert.ok(log.has(/cannot create delegation session agent=paco--dali: store refused <redacted sha256:[0-9a-f]{12}>/), log.text());
  layer.close();
});

test('a spawn of another agent is redirected to the exact sessions_send call', () => {
  const { layer } = layerWith();
  const r = layer.beforeToolCall({ toolName: 'sessions_spawn', params: { agentId: DALI, task: 'paint a cat' } }, { agentId: FRANCIS, sessionKey: C });
  assert.equal(r.block, true);
  const call = JSON.parse(r.blockReason.slice(r.blockReason.indexOf('{'), r.blockReason.lastIndexOf('}') + 1));
  assert.deepEqual(call, { agentId: DALI, message: 'paint a cat', sessionKey: DALI_SESSION });
  assert.match(r.blockReason, /^spawn-redirect: /);
  layer.close();
});

test('an "ask" grant gives OpenClaw exactly its requireApproval shape, with the routed params', async () => {
  const s = fakeSessions();
  const { layer } = layerWith({ sessions: s.store, rules: { crossUserSend: { grants: { 'paco--*': { 'pepito--atlas': 'ask' } } } } });
  const r = await layer.beforeToolCall(
    { toolName: 'sessions_send', params: { agentId: 'pepito--atlas', message: 'hi' }, toolCallId: 'call-1' },
    { agentId: FRANCIS, sessionKey: C },
  );
  said('ask', r);
  assert.deepEqual(Object.keys(r.requireApproval).sort(), ['allowedDecisions', 'description', 'severity', 'title']);
  assert.equal(r.requireApproval.severity, 'warning');
  assert.deepEqual(r.requireApproval.allowedDecisions, ['allow-once', 'deny']);
  assert.ok(r.requireApproval.title.length <= 80 && r.requireApproval.description.length <= 512);
  assert.match(r.requireApproval.title, /pepito--atlas/);
  assert.equal(r.params.sessionKey, 'agent:pepito--atlas:delegation:agent.paco--francis.main');
  assert.deepEqual(s.ensured, [['pepito--atlas', 'agent:pepito--atlas:delegation:agent.paco--francis.main']]);
  layer.close();
});

test("a delegation key an agent named itself carries another user's conversation only once the layer made that session", async () => {
  const pepito = 'pepito--atlas';
  const pepitoChat = 'agent:pepito--atlas:telegram:direct:777';
  // What delegation-session makes of pepito's send to paco--dali from that chat.
  const key = 'agent:paco--dali:delegation:agent.pepito--atlas.telegram.direct.777';
  const s = fakeSessions();
  const { layer } = layerWith({
    tokens: { [DALI]: randomToken() },
    sessions: s.store,
    rules: { crossUserSend: { grants: { [pepito]: { [DALI]: 'allow' } } } },
  });
  const owned = () => layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: { _conversation_id: 'model' } }, { agentId: DALI, sessionKey: key });
  // paco--dali runs there on its own (an automation's sessionTarget): pepito's chat is not its to name.
  const forged = owned();
  assert.ok(Object.hasOwn(forged.params, '_conversation_id'), "the model's value is left in");
  assert.equal(forged.params._conversation_id, undefined);
  // pepito's send, routed by the layer into that very session, makes it the layer's.
  const sent = await layer.beforeToolCall({ toolName: 'sessions_send', params: { agentId: DALI, message: 'hi' } }, { agentId: pepito, sessionKey: pepitoChat });
  assert.equal(sent.params.sessionKey, key);
  assert.deepEqual(s.ensured, [[DALI, key]]);
  assert.equal(owned().params._conversation_id, pepitoChat);
  // Within one user, a delegation carries its conversation as before.
  assert.equal(layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: DALI, sessionKey: DALI_SESSION }).params._conversation_id, C);
  layer.close();
});

test("a sub-agent call asks the session store for its spawner once, and carries the spawner's conversation", () => {
  const child = 'agent:paco--dali:subagent:7f1c';
  const s = fakeSessions({ spawners: { [child]: DALI_SESSION } });
  const { layer } = layerWith({ tokens: { [DALI]: randomToken() }, sessions: s.store });
  for (let i = 0; i < 3; i++) {
    const r = layer.beforeToolCall({ toolName: 'claw-os__claw_audio', params: {} }, { agentId: DALI, sessionKey: child });
    assert.equal(r.params._conversation_id, C);
  }
  assert.deepEqual(s.lookups, [[DALI, child]]);
  assert.equal(layer.stats().injected, 3, 'the look-up round is not counted');
  layer.close();
});

test("without a session store a sub-agent is its own conversation, never the model's value", () => {
  const child = 'agent:paco--dali:subagent:7f1c';
  const { layer } = layerWith();
  const r = layer.beforeToolCall({ toolName: 'claw-os__claw_audio', params: { _conversation_id: 'model' } }, { agentId: DALI, sessionKey: child });
  assert.equal(r.params._conversation_id, child);
  layer.close();
});

test("workboard calls are scoped to the caller's user board", () => {
  const { layer } = layerWith();
  const ctx = { agentId: FRANCIS, sessionKey: C };
  const r = layer.beforeToolCall({ toolName: 'workboard_list', params: { boardId: 'wb_pepito', status: 'open' } }, ctx);
  assert.deepEqual(r, { params: { boardId: 'wb_paco', status: 'open' } });
  const d = layer.beforeToolCall({ toolName: 'workboard_decompose', params: { id: 'c1', children: [{ title: 'a' }] } }, ctx);
  assert.deepEqual(d.params.children, [{ title: 'a', boardId: 'wb_paco' }]);
  assert.equal(layer.beforeToolCall({ toolName: 'workboard_read', params: { id: 'c1' } }, ctx), undefined);
  layer.close();
});

/** The plugin as OpenClaw wires it: the trusted policy, then the safety-net hook on its params. */
function registered(config, session) {
  const log = captureLogger();
  const api = {
    pluginConfig: config,
    registrationMode: 'full',
    logger: log.logger,
    hooks: [],
    policies: [],
    runtime: { agent: { session } },
    on(name, handler, opts) {
      this.hooks.push({ name, handler, opts });
    },
    registerTrustedToolPolicy(policy) {
      this.policies.push(policy);
    },
  };
  plugin.register(api);
  const policy = api.policies[0].evaluate;
  const hook = api.hooks[0].handler;
  return {
    log,
    /** Both tiers, as OpenClaw runs them: the hook sees the policy's params. */
    async run(event, ctx) {
      const first = await policy(event, ctx);
      if (first?.block) return { first };
      const params = first?.params ?? event.params;
      const second = await hook({ ...event, params }, ctx);
      return { first, second };
    },
  };
}

/** OpenClaw's api.runtime.agent.session, in memory: the calls the plugin makes, with their semantics. */
function memorySessionStore(entries = {}) {
  const rows = new Map(Object.entries(entries));
  const writes = [];
  return {
    rows,
    writes,
    getSessionEntry: ({ sessionKey }) => rows.get(sessionKey),
    async patchSessionEntry({ agentId, sessionKey, fallbackEntry, update }) {
      const existing = rows.get(sessionKey);
      const base = existing ?? fallbackEntry;
      const patch = await update(structuredClone(base), { existingEntry: existing });
      if (!patch) return existing;
      const next = { ...base, ...patch };
      rows.set(sessionKey, next);
      writes.push({ agentId, sessionKey });
      return next;
    },
  };
}

test('plugin: the policy creates the delegation session once; the safety net finds nothing left to do', async () => {
  const store = memorySessionStore();
  const p = registered({ tokenMapPath: mapWith({}) }, store);
  const event = { toolName: 'sessions_send', params: { agentId: DALI, message: 'hi' }, toolCallId: 't1' };
  const ctx = { agentId: FRANCIS, sessionKey: C, toolCallId: 't1' };
  const { first, second } = await p.run(event, ctx);
  assert.equal(first.params.sessionKey, DALI_SESSION);
  assert.equal(second, undefined);
  assert.deepEqual(store.writes, [{ agentId: DALI, sessionKey: DALI_SESSION }]);
  const row = store.rows.get(DALI_SESSION);
  assert.match(row.sessionId, /^[0-9a-f-]{36}$/);
  // A second send to the same specialist reuses the session as it is.
  await p.run(event, ctx);
  assert.equal(store.writes.length, 1);
  assert.equal(store.rows.get(DALI_SESSION).sessionId, row.sessionId);
});

test('plugin: an approval asked by the policy is not asked again by the safety net', async () => {
  const store = memorySessionStore();
  const grants = { 'paco--francis': { 'pepito--atlas': 'ask' } };
  const p = registered({ tokenMapPath: mapWith({}), rules: { crossUserSend: { grants } } }, store);
  // An explicit session: no routing patch, so only the approval itself could tell.
  const event = { toolName: 'sessions_send', params: { sessionKey: 'agent:pepito--atlas:subagent:1', message: 'hi' }, toolCallId: 't2' };
  const { first, second } = await p.run(event, { agentId: FRANCIS, sessionKey: C, toolCallId: 't2' });
  said('plugin ask', first);
  assert.ok(first.requireApproval);
  assert.equal(second, undefined);
});

test("plugin: a sub-agent's spawner is read from its session entry (spawnedBy)", async () => {
  const child = 'agent:paco--dali:subagent:99';
  const store = memorySessionStore({ [child]: { sessionId: 'x', spawnedBy: C } });
  const p = registered({ tokenMapPath: mapWith({ [DALI]: randomToken() }) }, store);
  const { first, second } = await p.run({ toolName: 'claw-os__claw_audio', params: {} }, { agentId: DALI, sessionKey: child });
  assert.equal(first.params._conversation_id, C);
  assert.equal(second, undefined);
});

test('plugin: without a session store the plugin says what will not work', () => {
  const p = registered({ tokenMapPath: mapWith({}) }, undefined);
  assert.ok(p.log.has(/no session store/), p.log.text());
});
