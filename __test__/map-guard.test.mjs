// Keeping tokens out of the models' reach, through the public API:
// the agents' file tools are refused the map, tokens in tool results become
// fingerprints, and a token pasted into text for another agent is taken out.
// The real gateway is in e2e/map-guard.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { IdentityLayer, configure, fingerprint, redactToolResult } from './helpers/subject.mjs';
import { assertNoTokenIn, captureLogger, randomToken, recordEmitted, tempDir, writeMap } from './helpers/support.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const MAIN = `agent:${FRANCIS}:main`;

function setup(options = {}) {
  const dir = tempDir();
  const file = path.join(dir, 'agent-tokens.json');
  const tokens = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
  writeMap(file, tokens);
  const workspace = tempDir();
  const log = captureLogger();
  const openclawConfig = { agents: { entries: { [FRANCIS]: { workspace } } } };
  const layer = new IdentityLayer({ tokenMapPath: file, logger: log.logger, openclawConfig, ...options });
  return { dir, file, tokens, workspace, layer, log };
}

const call = (layer, toolName, params) => layer.beforeToolCall({ toolName, params }, { agentId: FRANCIS, sessionKey: MAIN });

test('the file tools are refused the map and its directory, however the path is written', () => {
  const s = setup();
  fs.symlinkSync(s.file, path.join(s.workspace, 'innocent.json'));
  const rel = path.relative(s.workspace, s.file);
  for (const [tool, params] of [
    ['read', { path: s.file }],
    ['read', { file_path: `${s.dir}/../${path.basename(s.dir)}/agent-tokens.json` }],
    ['read', { path: rel }],
    ['read', { path: 'innocent.json' }],
    ['ls', { path: s.dir }],
    ['write', { path: s.file, content: '{}' }],
    ['edit', { path: s.file, oldText: 'a', newText: 'b' }],
    ['apply_patch', { input: `*** Begin Patch\n*** Delete File: ${s.file}\n*** End Patch` }],
    ['apply_patch', { input: `*** Begin Patch\n*** Add File: ${s.dir}/new.json\n+{}\n*** End Patch` }],
  ]) {
    const r = call(s.layer, tool, params);
    recordEmitted('blockReason', r?.blockReason);
    assert.equal(r?.block, true, `${tool} ${JSON.stringify(params).slice(0, 80)}`);
    assert.match(r.blockReason, /^map-access: /);
    assertNoTokenIn(r.blockReason);
  }
  assert.equal(call(s.layer, 'read', { path: path.join(s.workspace, 'notes.md') }), undefined, 'other files are untouched');
  assert.deepEqual(JSON.parse(fs.readFileSync(s.file, 'utf8')), s.tokens);
  s.layer.close();
});

test('event.derivedPaths, the paths OpenClaw derived from the params for the policy tier, are checked too', () => {
  const s = setup();
  const ctx = { agentId: FRANCIS, sessionKey: MAIN };
  const target = path.join(s.workspace, 'ok.md');
  const params = { input: `*** Begin Patch\n*** Add File: ${target}\n+x\n*** End Patch` };
  const patch = (derivedPaths) => s.layer.beforeToolCall({ toolName: 'apply_patch', params, derivedPaths }, ctx);
  assert.equal(patch(undefined), undefined, 'the patch alone writes in the workspace');
  assert.equal(patch([target]), undefined, 'a derived path in the workspace');
  const r = patch([target, s.file]);
  assert.equal(r?.block, true, 'a derived path that is the map');
  assert.match(r.blockReason, /^map-access: /);
  assertNoTokenIn(r.blockReason);
  assert.equal(patch([42, null, { path: s.file }]), undefined, 'entries that are not strings are dropped');
  assert.equal(patch(s.file), undefined, 'a derivedPaths that is not a list is ignored');
  s.layer.close();
});

test('a tool result holding tokens reaches the model with fingerprints, in any letter case and any depth', () => {
  const s = setup();
  configure({ tokenMapPath: s.file, logger: captureLogger().logger });
  const [f, d] = [s.tokens[FRANCIS], s.tokens[DALI]];
  const bytes = new Uint8Array([1, 2, 3]);
  const event = {
    toolName: 'exec',
    result: {
      content: [
        { type: 'text', text: fs.readFileSync(s.file, 'utf8') },
        { type: 'text', text: `x${d.toUpperCase()}y` },
      ],
      details: { aggregated: [f], nested: { [f]: 'as a key' }, bytes, n: 3 },
    },
  };
  const r = redactToolResult(event);
  const text = JSON.stringify(r.result);
  recordEmitted('tool result', text);
  assertNoTokenIn(text);
  assert.ok(text.includes(`sha256:${fingerprint(f)}`) && text.includes(`xsha256:${fingerprint(d)}y`), text);
  assert.equal(r.result.details.bytes, bytes, 'binary data is kept as is');
  assert.equal(r.result.details.n, 3);
  assert.equal(event.result.content[1].text.includes(d.toUpperCase()), true, 'the event is not mutated');
  assert.equal(redactToolResult({ result: { content: [{ type: 'text', text: 'nothing here' }] } }), undefined);
  s.layer.close();
});

test('a token pasted into a message for another agent is taken out before it is sent', () => {
  const s = setup();
  const pasted = s.tokens[DALI];
  const r = call(s.layer, 'sessions_send', { agentId: DALI, message: `use ${pasted} please` });
  assert.equal(r.params.message, `use sha256:${fingerprint(pasted)} please`);
  assert.match(r.params.sessionKey, /^agent:paco--dali:delegation:/, 'the send is still routed');
  const own = call(s.layer, 'sessions_spawn', { task: `check ${pasted.toUpperCase()}` });
  assert.equal(own.params.task, `check sha256:${fingerprint(pasted)}`);
  assert.equal(call(s.layer, 'sessions_spawn', { task: 'no token' }), undefined);
  s.layer.close();
});

test('a redaction in a tool result is a hit: counted in stats() and logged with the agent, the tool and the fingerprint, never a digit', () => {
  const s = setup();
  const log = captureLogger();
  const layer = configure({ tokenMapPath: s.file, logger: log.logger });
  const t = s.tokens[DALI];
  const before = layer.stats().redactionHits;
  const r = redactToolResult(
    { toolName: 'exec', result: { content: [{ type: 'text', text: `${t}\n${t.slice(3, 40)}` }] } },
    { agentId: FRANCIS, sessionKey: MAIN },
  );
  assertNoTokenIn(JSON.stringify(r));
  assert.equal(layer.stats().redactionHits, before + 2);
  const hit = log.lines.filter((l) => l.line.includes('token redacted'));
  assert.equal(hit.length, 1, log.text());
  assert.equal(hit[0].level, 'warn');
  assert.match(hit[0].line, new RegExp(`from a tool result: tool=exec agent=${FRANCIS} token sha256:${fingerprint(t)} \\(2 runs replaced`));
  assertNoTokenIn(hit[0].line);
  // Nothing found: no hit, no line.
  assert.equal(redactToolResult({ toolName: 'exec', result: { content: [{ type: 'text', text: t.slice(0, 15) }] } }, { agentId: FRANCIS }), undefined);
  assert.equal(layer.stats().redactionHits, before + 2);
  s.layer.close();
});

test('every text a spawn or a Workboard card hands another run loses its tokens, and each is a hit', () => {
  const s = setup();
  const t = s.tokens[DALI];
  const sha = `sha256:${fingerprint(t)}`;
  const before = s.layer.stats().redactionHits;
  const spawn = call(s.layer, 'sessions_spawn', {
    task: 'summarize',
    label: `job ${t}`,
    attachments: [
      { name: 'notes.txt', content: `key=${t}` },
      { name: 'env', content: Buffer.from(`TOKEN=${t}\n`).toString('base64'), encoding: 'base64' },
    ],
  });
  recordEmitted('spawn params', JSON.stringify(spawn.params));
  assertNoTokenIn(JSON.stringify(spawn.params));
  assert.equal(spawn.params.label, `job ${sha}`);
  assert.equal(spawn.params.attachments[0].content, `key=${sha}`);
  assert.equal(Buffer.from(spawn.params.attachments[1].content, 'base64').toString(), `TOKEN=${sha}\n`);
  for (const [tool, params] of [
    ['workboard_create', { title: `rotate ${t}`, notes: t.slice(0, 32) }],
    ['workboard_comment', { id: 'card-1', body: `the token: ${t.toUpperCase()}` }],
    ['workboard_decompose', { id: 'card-1', children: [{ title: 'a', notes: `use ${t}` }] }],
    ['workboard_complete', { id: 'card-1', summary: 'done', proof: { note: t } }],
  ]) {
    const r = call(s.layer, tool, params);
    recordEmitted(`${tool} params`, JSON.stringify(r?.params));
    assert.ok(r?.params, `${tool} was not rewritten`);
    assertNoTokenIn(JSON.stringify(r.params));
    assert.ok(JSON.stringify(r.params).includes(sha), tool);
  }
  assert.equal(s.layer.stats().redactionHits, before + 3 + 5);
  assert.ok(s.log.has(new RegExp(`token redacted from a message for another agent: tool=workboard_comment agent=${FRANCIS} token ${sha}`)), s.log.text());
  s.layer.close();
});
