// Keeping tokens out of the models' reach, through the public API:
// the agents' file tools are refused the map, tokens in tool results become
// fingerprints, and a token pasted into text for another agent is taken out.
// The real gateway is in e2e/map-guard.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { IdentityLayer, configure, fingerprint, redactToolResult } from './helpers/subject.mjs';
import { assertNoTokenIn, captureLogger, randomToken, recordEmitted, tempDir, writeMap, writeMapAtomic, waitFor } from './helpers/support.mjs';

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

test('protectMap "off" leaves the file tools alone', () => {
  const s = setup({ protectMap: 'off' });
  assert.equal(call(s.layer, 'read', { path: s.file }), undefined);
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

test("after a rotation the previous map's tokens are still redacted", async () => {
  const s = setup();
  configure({ tokenMapPath: s.file, logger: captureLogger().logger });
  const old = s.tokens[FRANCIS];
  const fresh = { [FRANCIS]: randomToken() };
  writeMapAtomic(s.file, fresh);
  await waitFor(() => configure({ tokenMapPath: s.file, logger: captureLogger().logger }).stats().agents === 1, { what: 'the new map' });
  const r = redactToolResult({ result: { content: [{ type: 'text', text: `${old} ${fresh[FRANCIS]}` }] } });
  assertNoTokenIn(JSON.stringify(r.result));
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
