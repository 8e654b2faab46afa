// The contract of beforeToolCall, one behaviour per test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { IdentityLayer, buildInfo, configure, beforeToolCall, fingerprint } from './helpers/subject.mjs';
import { captureLogger, randomToken, recordEmitted, tempDir, tick, writeMap, writeMapAtomic, waitFor, assertNoTokenIn } from './helpers/support.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';

function setup(options = {}) {
  const dir = tempDir();
  const file = path.join(dir, 'agent-tokens.json');
  const tokens = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
  writeMap(file, tokens);
  const log = captureLogger();
  const layer = new IdentityLayer({ tokenMapPath: file, logger: log.logger, ...options });
  return { dir, file, tokens, log, layer };
}

const notes = (params = { note: 'hi', auth_token: 'x'.repeat(42) }) => ({ toolName: 'claw-os__claw_notes', params });

test("an owned tool gets the calling agent's token, whatever the model wrote", () => {
  const { layer, tokens } = setup();
  const r = layer.beforeToolCall(notes(), { agentId: FRANCIS });
  assert.equal(r.params.auth_token, tokens[FRANCIS]);
  layer.close();
});

test('the rewrite keeps every own property of params and does not mutate the event', () => {
  const { layer, tokens } = setup();
  const sym = Symbol('s');
  const params = { a: 1, nested: { b: [1, 2] }, auth_token: 'model-wrote-this', [sym]: 'sym' };
  const event = notes(params);
  const r = layer.beforeToolCall(event, { agentId: FRANCIS });
  assert.deepEqual(Object.keys(r.params), ['a', 'nested', 'auth_token']);
  assert.equal(r.params.nested, params.nested);
  assert.equal(r.params[sym], 'sym');
  assert.equal(r.params.auth_token, tokens[FRANCIS]);
  assert.equal(params.auth_token, 'model-wrote-this');
  assert.equal(event.params, params);
  assert.notEqual(r.params, params);
  layer.close();
});

test('a params object with an own __proto__ key is copied as spread would, without changing the prototype', () => {
  const { layer, tokens } = setup();
  const params = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}');
  const r = layer.beforeToolCall(notes(params), { agentId: FRANCIS });
  assert.equal(Object.getPrototypeOf(r.params), Object.prototype);
  assert.ok(Object.hasOwn(r.params, '__proto__'));
  // biome-ignore lint/suspicious/noProto: the test is about an own __proto__ key
  assert.deepEqual(r.params.__proto__, { polluted: true });
  assert.equal(r.params.x, 1);
  assert.equal(r.params.auth_token, tokens[FRANCIS]);
  assert.equal({}.polluted, undefined);
  layer.close();
});

test('an owned call without params gets params holding just the token', () => {
  const { layer, tokens } = setup();
  for (const params of [undefined, null, 5, 'str', [1, 2]]) {
    const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params }, { agentId: FRANCIS });
    assert.deepEqual(r.params, { auth_token: tokens[FRANCIS] }, `params = ${JSON.stringify(params)}`);
  }
  layer.close();
});

test('a tool it does not own returns undefined, not null', () => {
  const { layer } = setup();
  for (const toolName of ['exec', 'claw-os_claw_notes', 'xclaw-os__claw_notes', 'CLAW-OS__claw_notes', '']) {
    assert.equal(layer.beforeToolCall({ toolName, params: {} }, { agentId: FRANCIS }), undefined, toolName);
  }
  layer.close();
});

/**
 * Under onMissingToken "pass" the call runs, and the model's own auth_token
 * never reaches the server: it is an own `undefined`, so OpenClaw's spread of
 * hook params over the original drops it too.
 */
function assertRunsWithoutToken(r, msg) {
  assert.ok(r?.params, msg);
  assert.ok(Object.hasOwn(r.params, 'auth_token'), msg);
  assert.equal(r.params.auth_token, undefined, msg);
  assert.equal(r.params.note, 'hi', msg);
}

test("an agent missing from the map runs without the model's token by default", async () => {
  const { layer, log } = setup();
  assertRunsWithoutToken(layer.beforeToolCall(notes(), { agentId: 'paco--ghost' }));
  assert.equal(layer.beforeToolCall(notes({ note: 'hi' }), { agentId: 'paco--ghost' }), undefined, 'nothing to take out');
  assert.equal(layer.stats().missing, 2);
  await waitFor(() => log.has(/agent=paco--ghost token-status=missing \(UnknownAgent\); passed without a token/), { what: 'the missing line' });
  layer.close();
});

test('a missing, empty or non-string agentId is unknown and untrusted', () => {
  const { layer } = setup();
  for (const ctx of [{}, { agentId: '' }, { agentId: 42 }, { agentId: { toString: () => FRANCIS } }, { agentId: [FRANCIS] }, null, undefined]) {
    assertRunsWithoutToken(layer.beforeToolCall(notes(), ctx), JSON.stringify(ctx));
  }
  layer.close();
});

test('onMissingToken "block" blocks with a reason naming the rule, the agent and the map', () => {
  const { layer, file, tokens } = setup({ onMissingToken: 'block' });
  const r = layer.beforeToolCall(notes(), { agentId: 'paco--ghost' });
  recordEmitted('blockReason', r.blockReason);
  assert.equal(r.block, true);
  assert.match(r.blockReason, /^auth-token: /);
  assert.ok(r.blockReason.includes('"paco--ghost"'));
  assert.ok(r.blockReason.includes(file));
  assertNoTokenIn(r.blockReason);
  for (const t of Object.values(tokens)) assert.ok(!r.blockReason.includes(t));
  const noAgent = layer.beforeToolCall(notes(), {});
  recordEmitted('blockReason', noAgent.blockReason);
  assert.equal(noAgent.block, true);
  assert.match(noAgent.blockReason, /^auth-token: .*no calling agent id/);
  assert.equal(layer.stats().blocked, 2);
  layer.close();
});

test('it never throws, whatever it is given', () => {
  const { layer } = setup({ onMissingToken: 'block' });
  const hostile = new Proxy(
    {},
    {
      get() {
        throw new Error('boom');
      },
    },
  );
  const getterThrows = {
    toolName: 'claw-os__claw_notes',
    get params() {
      throw new Error('params getter');
    },
  };
  const throwingParams = {
    toolName: 'claw-os__claw_notes',
    params: {
      get x() {
        throw new Error('x getter');
      },
    },
  };
  const cases = [
    [undefined, undefined],
    [null, null],
    [{}, {}],
    [5, 'x'],
    ['str', []],
    [{ toolName: 42 }, { agentId: FRANCIS }],
    [{ toolName: null }, { agentId: FRANCIS }],
    [{ toolName: 'claw-os__claw_notes', params: 5 }, 7],
    [hostile, { agentId: FRANCIS }],
    [notes(), hostile],
    [getterThrows, { agentId: FRANCIS }],
    [throwingParams, { agentId: FRANCIS }],
    [{ toolName: 'claw-os__' + 'x'.repeat(100_000), params: {} }, { agentId: FRANCIS }],
    [notes(), { agentId: 'x'.repeat(100_000) }],
    [notes(), { agentId: 'paco--francis\u0000evil' }],
    [notes(), { agentId: '\ud800' }],
  ];
  for (const [event, ctx] of cases) {
    assert.doesNotThrow(() => layer.beforeToolCall(event, ctx));
  }
  layer.close();
});

test('an internal failure on an owned call fails closed under onMissingToken "block"', () => {
  const { layer, log } = setup({ onMissingToken: 'block' });
  const r = layer.beforeToolCall(
    {
      toolName: 'claw-os__claw_notes',
      get params() {
        throw new Error('params getter');
      },
    },
    { agentId: FRANCIS },
  );
  assert.equal(r.block, true);
  assert.match(r.blockReason, /^auth-token: /);
  assert.equal(layer.stats().internalErrors, 1);
  assert.ok(log.has(/internal error deciding tool=claw-os__claw_notes: params getter/));
  layer.close();
});

test('an internal failure fails closed even under onMissingToken "pass"', () => {
  const { layer } = setup();
  const params = {
    message: 'hi',
    get agentId() {
      throw new Error('agentId getter');
    },
  };
  const r = layer.beforeToolCall({ toolName: 'sessions_send', params }, { agentId: FRANCIS });
  recordEmitted('blockReason', r?.blockReason);
  assert.equal(r?.block, true);
  assert.match(r.blockReason, /^claw-identity: claw-identity could not decide this call/);
  // An owned MCP tool fails closed too: passing it could send the model's own auth_token.
  const p = layer.beforeToolCall(
    {
      toolName: 'claw-os__claw_notes',
      get params() {
        throw new Error('x');
      },
    },
    { agentId: FRANCIS },
  );
  assert.equal(p?.block, true);
  assert.match(p.blockReason, /^auth-token: claw-identity could not decide this call/);
  layer.close();
});

test('lookups are exact and prototype-safe', () => {
  const { layer } = setup();
  for (const agentId of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '', 'PACO--FRANCIS', 'paco--francis ']) {
    assertRunsWithoutToken(layer.beforeToolCall(notes(), { agentId }), agentId);
  }
  layer.close();
});

test('toolPrefix may be a list, and tokenParam renames the parameter', () => {
  const { layer, tokens } = setup({ toolPrefix: ['a__', 'b__'], tokenParam: 'tok' });
  assert.deepEqual(layer.beforeToolCall({ toolName: 'b__x', params: { y: 1 } }, { agentId: DALI }).params, { y: 1, tok: tokens[DALI] });
  assert.equal(layer.beforeToolCall(notes(), { agentId: DALI }), undefined);
  layer.close();
});

test('unknown options are an error that names every one of them', () => {
  assert.throws(
    () => new IdentityLayer({ tokenMap: 'x', prefix: 'y' }),
    (e) => {
      assert.match(e.message, /unknown options/);
      assert.ok(e.message.includes('"tokenMap"') && e.message.includes('"prefix"'), e.message);
      return true;
    },
  );
  assert.throws(() => new IdentityLayer({ onMissingToken: 'deny' }), /onMissingToken|unknown variant/);
  assert.throws(() => new IdentityLayer({ toolPrefix: '' }), /toolPrefix/);
  assert.throws(() => new IdentityLayer({ logger: {} }), /logger must have info, warn and error/);
  assert.throws(() => new IdentityLayer('nope'), /options must be an object/);
});

test('~ in tokenMapPath is the home directory', () => {
  const layer = new IdentityLayer({ tokenMapPath: '~/claw-identity-test-nonexistent/m.json', logger: captureLogger().logger });
  assert.equal(layer.stats().tokenMapPath, path.join(process.env.HOME, 'claw-identity-test-nonexistent/m.json'));
  layer.close();
});

test('stats report the map and per-outcome counters, and never a token', () => {
  const { layer, tokens } = setup();
  layer.beforeToolCall(notes(), { agentId: FRANCIS });
  layer.beforeToolCall(notes(), { agentId: 'paco--ghost' });
  layer.beforeToolCall({ toolName: 'exec', params: {} }, { agentId: FRANCIS });
  const s = recordEmitted('stats', layer.stats());
  assert.equal(s.agents, 2);
  assert.equal(s.loaded, true);
  assert.equal(s.reloads, 1);
  assert.equal(s.reloadErrors, 0);
  assert.equal(s.lastError, null);
  assert.equal(s.injected, 1);
  assert.equal(s.missing, 1);
  assert.equal(s.passed, 2);
  assert.equal(s.watcher, buildInfo.native ? 'inotify' : 'fs.watch');
  for (const t of Object.values(tokens)) assert.ok(!JSON.stringify(s).includes(t.slice(0, 16)));
  layer.close();
});

test('log lines: plugin loaded, and one per owned call with token-status, never a token', async () => {
  const { layer, log, file, tokens } = setup();
  layer.beforeToolCall(notes(), { agentId: FRANCIS });
  layer.beforeToolCall(notes(), { agentId: 'paco--ghost' });
  layer.beforeToolCall({ toolName: 'exec', params: {} }, { agentId: FRANCIS });
  await waitFor(() => log.lines.length >= 3, { what: 'three log lines' });
  const lines = log.lines.map((l) => l.line);
  assert.equal(lines[0], `[claw-identity] plugin loaded; token map = ${file} (2 agents)`);
  assert.ok(lines.includes('[claw-identity] before_tool_call tool=claw-os__claw_notes agent=paco--francis token-status=ok'), lines.join('\n'));
  assert.ok(lines.some((l) => l.startsWith('[claw-identity] before_tool_call tool=claw-os__claw_notes agent=paco--ghost token-status=missing')));
  assert.ok(!lines.some((l) => l.includes('tool=exec')));
  for (const t of Object.values(tokens)) assert.ok(!log.text().includes(t.slice(0, 16)));
  layer.close();
});

test('a token used as an agent id is never echoed in a log line', async () => {
  const { layer, log } = setup();
  const secret = randomToken();
  layer.beforeToolCall(notes(), { agentId: secret });
  await waitFor(() => log.lines.length >= 2, { what: 'the per-call line' });
  assert.ok(log.has(/agent=<redacted sha256:[0-9a-f]{12}>/), log.text());
  assertNoTokenIn(log.text());
  layer.close();
});

test('configure is idempotent and the process-wide beforeToolCall uses it', () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  const token = randomToken();
  writeMap(file, { [FRANCIS]: token });
  const log = captureLogger();
  const a = configure({ tokenMapPath: file, logger: log.logger });
  const b = configure({ tokenMapPath: file, logger: log.logger });
  assert.equal(a, b);
  assert.equal(beforeToolCall(notes(), { agentId: FRANCIS }).params.auth_token, token);
  const c = configure({ tokenMapPath: file, logger: log.logger, onMissingToken: 'block' });
  assert.notEqual(c, a);
  assert.equal(beforeToolCall(notes(), { agentId: 'paco--ghost' }).block, true);
  c.close();
});

test('fingerprint is the first 12 hex digits of sha256', () => {
  assert.equal(fingerprint('abc'), 'ba7816bf8f01');
});

test('close() stops the watcher and watch() starts it again, reading the map first', async () => {
  const { layer, file, tokens } = setup();
  const token = () => layer.beforeToolCall(notes(), { agentId: FRANCIS }).params.auth_token;
  assert.notEqual(layer.stats().watcher, 'closed');
  layer.close();
  layer.close(); // idempotent
  assert.equal(layer.stats().watcher, 'closed');
  const t2 = randomToken();
  writeMapAtomic(file, { [FRANCIS]: t2 });
  await tick(300);
  assert.equal(token(), tokens[FRANCIS], 'a closed layer picked up a change');
  layer.watch();
  assert.notEqual(layer.stats().watcher, 'closed');
  await waitFor(() => token() === t2, { what: 'the map read when the watcher starts again' });
  layer.watch(); // idempotent
  const t3 = randomToken();
  writeMapAtomic(file, { [FRANCIS]: t3 });
  await waitFor(() => token() === t3, { what: 'a rotation after the restart' });
  layer.close();
});
