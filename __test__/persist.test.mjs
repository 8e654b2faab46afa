// The last redaction before disk: the plugin's tool_result_persist and
// before_message_write handlers, called as OpenClaw calls them, on the
// message shapes OpenClaw stores (cli-backend.types-*.d.ts: ToolResultMessage,
// UserMessage, AssistantMessage; jsonResult's content[].text + details).
// They are synchronous and must never throw: OpenClaw would store the
// message unchanged. The real gateway's stored transcripts are scanned in
// e2e/map-guard.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import plugin, { stats } from './helpers/subject.mjs';
import { assertNoTokenIn, captureLogger, fingerprint, randomToken, recordEmitted, tempDir, waitFor, writeMap, writeMapAtomic } from './helpers/support.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';

/** The plugin registered as OpenClaw does, with a map of two agents: its two transcript handlers. */
function setup() {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const tokens = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
  writeMap(file, tokens);
  const log = captureLogger();
  const hooks = new Map();
  plugin.register({
    pluginConfig: { tokenMapPath: file },
    registrationMode: 'discovery',
    logger: log.logger,
    on(name, handler, opts) {
      hooks.set(name, { handler, opts });
    },
    registerTrustedToolPolicy() {},
  });
  const persist = (event) => hooks.get('tool_result_persist').handler(event, { agentId: FRANCIS, sessionKey: `agent:${FRANCIS}:main` });
  const write = (event) => hooks.get('before_message_write').handler(event, { agentId: FRANCIS, sessionKey: `agent:${FRANCIS}:main` });
  return { file, tokens, hooks, persist, write, log };
}

const sha = (t) => `sha256:${fingerprint(t)}`;

/** What a handler returned, shown to the leak guard. */
function checked(label, r) {
  recordEmitted(label, JSON.stringify(r));
  assertNoTokenIn(JSON.stringify(r), label);
  return r;
}

test('both handlers are registered at the lowest priority, so they see the message as it will be stored', () => {
  const s = setup();
  for (const name of ['tool_result_persist', 'before_message_write']) {
    assert.ok(s.hooks.has(name), `${name} is not registered`);
    assert.ok(s.hooks.get(name).opts.priority < 0, `${name} priority ${s.hooks.get(name).opts.priority}`);
  }
});

test('a tool result: tokens become fingerprints in content[].text and in details, in any case; a longer hex run holding one goes whole', () => {
  const s = setup();
  const [f, d] = [s.tokens[FRANCIS], s.tokens[DALI]];
  // jsonResult(payload): the payload twice, as text and as details.
  const payload = { stdout: `${f}\n`, env: { CLAW_TOKEN: d.toUpperCase() }, list: [`0x${f}ff`] };
  const message = {
    role: 'toolResult',
    toolCallId: 'call_1',
    toolName: 'exec',
    content: [
      { type: 'text', text: JSON.stringify(payload, null, 2) },
      { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
    ],
    details: payload,
    isError: false,
    timestamp: 1796160432675,
  };
  const before = JSON.stringify(message);
  const r = checked('tool_result_persist', s.persist({ toolName: 'exec', toolCallId: 'call_1', message, isSynthetic: false }));
  const m = r.message;
  assert.equal(JSON.parse(m.content[0].text).stdout, `${sha(f)}\n`);
  assert.deepEqual(m.details, { stdout: `${sha(f)}\n`, env: { CLAW_TOKEN: sha(d) }, list: [`0x${sha(f)}`] });
  assert.deepEqual(m.content[1], message.content[1], 'an image block is kept');
  assert.deepEqual(
    [m.role, m.toolCallId, m.toolName, m.isError, m.timestamp],
    ['toolResult', 'call_1', 'exec', false, 1796160432675],
    'the rest of the message is kept',
  );
  assert.equal(JSON.stringify(message), before, "OpenClaw's message is not changed in place");
  // before_message_write gets the same message after tool_result_persist: nothing left to do.
  assert.equal(s.write({ message: m }), undefined);
});

test('a user message with string content (an exec completion notice) and with a content array', () => {
  const s = setup();
  const f = s.tokens[FRANCIS];
  const notice = {
    role: 'user',
    content: `An async command you ran earlier has completed. The command completion details are:\n\nExec completed (a1b2c3d4, code 0) :: { "paco--francis": "${f}" }`,
    timestamp: 1,
    provenance: { kind: 'internal_system', sourceTool: 'exec' },
  };
  const r = checked('before_message_write', s.write({ message: notice }));
  assert.equal(r.message.content, notice.content.replace(f, sha(f)));
  assert.deepEqual(r.message.provenance, notice.provenance);

  const pasted = { role: 'user', content: [{ type: 'text', text: `here is my token: ${f.toUpperCase()}` }], timestamp: 2 };
  const p = checked('before_message_write', s.write({ message: pasted }));
  assert.deepEqual(p.message.content, [{ type: 'text', text: `here is my token: ${sha(f)}` }]);
});

test("an assistant message: the model's own tool-call arguments (and its text) are redacted too", () => {
  const s = setup();
  const [f, d] = [s.tokens[FRANCIS], s.tokens[DALI]];
  const message = {
    role: 'assistant',
    content: [
      { type: 'text', text: `I will pass ${d} on.` },
      { type: 'toolCall', id: 'call_2', name: 'sessions_send', arguments: { agentId: DALI, message: `Keep ${f}`, nested: { [d]: true } } },
    ],
    api: 'openai-completions',
    provider: 'scripted',
    model: 'scripted-1',
    usage: { input: 10, output: 5 },
    stopReason: 'toolUse',
    timestamp: 3,
  };
  const r = checked('before_message_write', s.write({ message }));
  assert.equal(r.message.content[0].text, `I will pass ${sha(d)} on.`);
  assert.deepEqual(r.message.content[1], {
    type: 'toolCall',
    id: 'call_2',
    name: 'sessions_send',
    arguments: { agentId: DALI, message: `Keep ${sha(f)}`, nested: { [sha(d)]: true } },
  });
  assert.deepEqual(r.message.usage, message.usage);
});

test('a token found in what is stored is a hit: counted, and logged with the agent, the tool and its fingerprint', () => {
  const s = setup();
  const f = s.tokens[FRANCIS];
  const before = stats().redactionHits;
  const message = { role: 'toolResult', toolCallId: 'c', toolName: 'exec', content: [{ type: 'text', text: `${f} ${f.slice(5, 30)}` }], timestamp: 1 };
  checked('tool_result_persist', s.persist({ toolName: 'exec', toolCallId: 'c', message, isSynthetic: false }));
  assert.equal(stats().redactionHits, before + 2);
  const line = s.log.lines.at(-1);
  assert.match(line.line, new RegExp(`^\\[claw-identity\\] token redacted from a transcript: tool=exec agent=${FRANCIS} token ${sha(f)} \\(2 runs`));
  assert.equal(line.level, 'warn');
  // The model's own words, in before_message_write (no tool there): the agent still named.
  checked('before_message_write', s.write({ message: { role: 'assistant', content: [{ type: 'text', text: `echo ${f.slice(0, 16)}` }], timestamp: 2 } }));
  assert.equal(stats().redactionHits, before + 3);
  assert.match(s.log.lines.at(-1).line, new RegExp(`tool=<none> agent=${FRANCIS} token ${sha(f)} \\(1 run `));
});

test('a message without a token is left alone: the handler returns nothing', () => {
  const s = setup();
  const message = {
    role: 'toolResult',
    toolCallId: 'c',
    toolName: 'read',
    content: [{ type: 'text', text: `the hash is ${'ab'.repeat(16)} and sha256:${fingerprint(s.tokens[FRANCIS])}` }],
    details: {},
    isError: false,
    timestamp: 4,
  };
  assert.equal(s.persist({ message }), undefined);
  assert.equal(s.write({ message: { role: 'user', content: 'hello', timestamp: 5 } }), undefined);
});

test("after a rotation the previous map's tokens are still redacted from what is stored", async () => {
  const s = setup();
  const old = s.tokens[FRANCIS];
  const fresh = { [FRANCIS]: randomToken() };
  writeMapAtomic(s.file, fresh);
  // The plugin's layer reloads the map; a handler call then holds both maps' tokens.
  await waitFor(() => s.write({ message: { role: 'user', content: fresh[FRANCIS] } }) !== undefined, { what: 'the rotated map' });
  const r = checked('before_message_write', s.write({ message: { role: 'user', content: `${old} ${fresh[FRANCIS]}` } }));
  assert.equal(r.message.content, `${sha(old)} ${sha(fresh[FRANCIS])}`);
});

test('a part nested too deeply to check is withheld from the transcript; the rest is redacted and kept', () => {
  const s = setup();
  const f = s.tokens[FRANCIS];
  let deep = { token: f };
  for (let i = 0; i < 100; i++) deep = { inner: deep };
  const message = {
    role: 'toolResult',
    toolCallId: 'c',
    toolName: 'exec',
    content: [{ type: 'text', text: `out ${f}` }],
    details: deep,
    isError: false,
    timestamp: 6,
  };
  const r = checked('tool_result_persist', s.persist({ message }));
  assert.match(r.message.details, /^\[claw-identity: withheld from the transcript: nested too deeply to check for tokens\]$/);
  assert.deepEqual(r.message.content, [{ type: 'text', text: `out ${sha(f)}` }]);
  assert.equal(r.message.toolCallId, 'c');
  // Deep content is withheld as one text block, so the message keeps its shape.
  const w = checked('before_message_write', s.write({ message: { role: 'user', content: [deep], timestamp: 7 } }));
  assert.deepEqual(w.message.content, [{ type: 'text', text: '[claw-identity: withheld from the transcript: nested too deeply to check for tokens]' }]);
});

test('the handlers never throw, whatever OpenClaw hands them, and never return a promise', () => {
  const s = setup();
  const hostile = new Proxy(
    {},
    {
      ownKeys() {
        throw new Error('no keys for you');
      },
    },
  );
  const throwing = {
    role: 'user',
    get content() {
      throw new Error('getter');
    },
  };
  for (const event of [
    undefined,
    null,
    {},
    { message: null },
    { message: 'text' },
    { message: 42 },
    { message: hostile },
    { message: throwing },
    { message: { role: 'user', content: [hostile] } },
  ]) {
    for (const h of [s.persist, s.write]) {
      let r;
      assert.doesNotThrow(() => {
        r = h(event);
      });
      assert.ok(r === undefined || (typeof r === 'object' && typeof r.then !== 'function'), `returned ${typeof r}`);
    }
  }
});
