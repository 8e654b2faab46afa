// How the per-call log line reaches the logger: during the call, on the
// calling thread (not later through the event loop), and never at the cost
// of the call itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { IdentityLayer } from './helpers/subject.mjs';
import { captureLogger, randomToken, recordEmitted, tempDir, writeMap } from './helpers/support.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const notes = () => ({ toolName: 'claw-os__claw_notes', params: { note: 'hi' } });

function setup(logger) {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const tokens = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
  writeMap(file, tokens);
  return { tokens, layer: new IdentityLayer({ tokenMapPath: file, logger }) };
}

test('the per-call info line is logged before beforeToolCall returns', () => {
  const log = captureLogger();
  const { layer, tokens } = setup(log.logger);
  const before = log.lines.length;
  const r = layer.beforeToolCall(notes(), { agentId: FRANCIS });
  assert.equal(r.params.auth_token, tokens[FRANCIS]);
  assert.deepEqual(log.lines.slice(before), [
    { level: 'info', line: `[claw-identity] before_tool_call tool=claw-os__claw_notes agent=${FRANCIS} token-status=ok` },
  ]);
  layer.close();
});

test("a missing agent's warning is logged during the call too", () => {
  const log = captureLogger();
  const { layer } = setup(log.logger);
  const before = log.lines.length;
  assert.equal(layer.beforeToolCall(notes(), { agentId: 'ghost' }), undefined);
  assert.equal(log.lines.length, before + 1);
  assert.equal(log.lines[before].level, 'warn');
  assert.match(log.lines[before].line, /agent=ghost token-status=missing/);
  layer.close();
});

test('a logger that throws on the per-call line does not affect the call, and is not counted as a drop', () => {
  let thrown = 0;
  const logger = {
    info: (l) => {
      if (recordEmitted('log.info', l).includes('before_tool_call')) thrown++;
      throw new Error('logger down');
    },
    warn: (l) => recordEmitted('log.warn', l),
    error: (l) => recordEmitted('log.error', l),
  };
  const { layer, tokens } = setup(logger);
  for (let i = 0; i < 3; i++) {
    assert.equal(layer.beforeToolCall(notes(), { agentId: FRANCIS }).params.auth_token, tokens[FRANCIS]);
  }
  assert.equal(thrown, 3);
  assert.equal(layer.stats().logDropped, 0);
  layer.close();
});

test('a logger that throws on the per-call warning does not affect the call either', () => {
  let thrown = 0;
  const logger = {
    info: (l) => recordEmitted('log.info', l),
    warn: (l) => {
      if (recordEmitted('log.warn', l).includes('token-status=missing')) thrown++;
      throw new Error('logger down');
    },
    error: (l) => recordEmitted('log.error', l),
  };
  const { layer } = setup(logger);
  // The model's own token is taken out (the result is built in one call
  // with the line), or there is nothing to take out (the line alone).
  const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: { note: 'hi', auth_token: 'made-up' } }, { agentId: 'ghost' });
  assert.ok(Object.hasOwn(r.params, 'auth_token'));
  assert.equal(r.params.auth_token, undefined);
  assert.equal(layer.beforeToolCall(notes(), { agentId: 'ghost' }), undefined);
  assert.equal(thrown, 2);
  assert.equal(layer.stats().logDropped, 0);
  layer.close();
});

test('a logger that calls the layer again from the per-call line gets its own answer', () => {
  let layer;
  const inner = [];
  const lines = [];
  const logger = {
    info: (l) => {
      if (!recordEmitted('log.info', l).includes('before_tool_call')) return;
      lines.push(l);
      if (lines.length === 1) inner.push(layer.beforeToolCall(notes(), { agentId: DALI }));
    },
    warn: (l) => recordEmitted('log.warn', l),
    error: (l) => recordEmitted('log.error', l),
  };
  const s = setup(logger);
  layer = s.layer;
  const outer = layer.beforeToolCall(notes(), { agentId: FRANCIS });
  assert.equal(outer.params.auth_token, s.tokens[FRANCIS]);
  assert.equal(inner.length, 1);
  assert.equal(inner[0].params.auth_token, s.tokens[DALI]);
  // The outer call's line first (it called in), then the inner call's.
  assert.match(lines[0], new RegExp(`agent=${FRANCIS} `));
  assert.match(lines[1], new RegExp(`agent=${DALI} `));
  layer.close();
});

// The copy of params that gets the token (src/bridge/rewrite.js) must equal
// a spread copy.
test('the rewritten params equal a spread copy: key order, getters read once, only own enumerable keys', () => {
  const { layer, tokens } = setup(undefined);
  let reads = 0;
  const params = Object.create({ inherited: 1 });
  params.b = 1;
  params[2] = 'two';
  params.a = { nested: true };
  Object.defineProperty(params, 'hidden', { value: 1, enumerable: false });
  Object.defineProperty(params, 'g', { get: () => ++reads, enumerable: true });
  const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params }, { agentId: FRANCIS });
  assert.equal(reads, 1);
  assert.deepEqual(Object.keys(r.params).slice(0, 5), ['2', 'b', 'a', 'g', 'auth_token']);
  assert.equal(r.params.auth_token, tokens[FRANCIS]);
  assert.equal(r.params.a, params.a);
  assert.equal(r.params.g, 1);
  assert.equal(Object.getPrototypeOf(r.params), Object.prototype);
  assert.ok(!('hidden' in r.params) && !Object.hasOwn(r.params, 'inherited'));
  layer.close();
});

test('a params key that Object.prototype has as a setter is copied as an own value, as spread does', (t) => {
  const { layer, tokens } = setup(undefined);
  let setterCalls = 0;
  Object.defineProperty(Object.prototype, 'claw_probe', { set: () => setterCalls++, configurable: true });
  t.after(() => delete Object.prototype.claw_probe);
  const sym = Symbol('s');
  const params = { claw_probe: 'mine', [sym]: 'symbol value' };
  const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params }, { agentId: FRANCIS });
  assert.equal(setterCalls, 0);
  assert.ok(Object.hasOwn(r.params, 'claw_probe'));
  assert.equal(r.params.claw_probe, 'mine');
  assert.equal(r.params[sym], 'symbol value');
  assert.equal(r.params.auth_token, tokens[FRANCIS]);
  layer.close();
});

/** An object whose listed fields are getters that count their reads. */
function counted(fields, reads) {
  const o = {};
  for (const [k, v] of Object.entries(fields)) {
    reads[k] = 0;
    Object.defineProperty(o, k, {
      get: () => {
        reads[k]++;
        return v;
      },
      enumerable: true,
    });
  }
  return o;
}

test('each field of the event and the ctx is read once per call, or not at all', () => {
  const { layer, tokens } = setup(undefined);
  const cases = [
    // An owned tool: no rule reads its params, so they are read once, by the rewrite.
    ['claw-os__claw_notes', { note: 'hi' }, { toolName: 1, params: 1, agentId: 1, sessionKey: 1 }],
    // A guarded tool: the rule reads the params, and the result does not read them again.
    ['sessions_send', { sessionKey: `agent:${FRANCIS}:main`, message: 'hi' }, { toolName: 1, params: 1, agentId: 1, sessionKey: 1 }],
    // An agent the map does not have: its params are read once, to take out a token the call holds.
    ['claw-os__claw_notes', { note: 'hi', auth_token: 'made-up' }, { toolName: 1, params: 1, agentId: 1, sessionKey: 1 }, 'ghost'],
    // A tool no rule concerns: only its name is read.
    ['web_search', { query: 'weather' }, { toolName: 1, params: 0, agentId: 0, sessionKey: 0 }],
  ];
  for (const [tool, params, expected, agent = FRANCIS] of cases) {
    const reads = {};
    const event = counted({ toolName: tool, params }, reads);
    const ctx = counted({ agentId: agent, sessionKey: `agent:${FRANCIS}:main` }, reads);
    const r = layer.beforeToolCall(event, ctx);
    assert.deepEqual(reads, expected, `${tool} ${agent}`);
    if (tool === 'claw-os__claw_notes') assert.equal(r.params.auth_token, tokens[agent]);
  }
  layer.close();
});

test("a layer's beforeToolCall is its own, read-only and not enumerable", () => {
  const { layer } = setup(undefined);
  const d = Object.getOwnPropertyDescriptor(layer, 'beforeToolCall');
  assert.equal(typeof d?.value, 'function');
  assert.deepEqual([d.writable, d.enumerable, d.configurable], [false, false, false]);
  assert.throws(() => {
    layer.beforeToolCall = () => undefined;
  }, TypeError);
  assert.deepEqual(Object.keys(layer), []);
  layer.close();
});
