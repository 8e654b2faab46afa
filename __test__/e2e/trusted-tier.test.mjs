// The trusted tier: a second, harmless plugin (the audit-stamp fixture: an ordinary
// before_tool_call hook that stamps `audited: true`) must not undo the token,
// whatever its priority and whether it returns full params or a patch, because
// claw-identity enforces identity in OpenClaw's trusted tool-policy tier.
// Asserted on what the MCP server received. (`agent exec` is in local.test.mjs.)

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import * as h from './harness.mjs';
import { startModelServer, marker, fakeToken } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';
const nonce = () => crypto.randomBytes(3).toString('hex');

describe("claw-identity's trusted tier against a second plugin's ordinary hook", () => {
  let model;
  let plugin;
  const runs = [];

  before(async () => {
    plugin = h.pluginDir();
    await h.openclawRuntime();
    model = await startModelServer();
  });

  after(async () => {
    await model?.close();
    for (const r of runs) await h.finishRun(r);
  });

  const cases = [
    { priority: 10, mode: 'full', toolSearch: true, what: 'lower priority, full params, Tool Search on' },
    { priority: 10, mode: 'patch', toolSearch: false, what: 'lower priority, patch only, Tool Search off' },
    { priority: 1000, mode: 'full', toolSearch: false, what: 'higher priority, full params, Tool Search off' },
  ];

  for (const c of cases) {
    it(`audit-stamp at ${c.what}: the MCP server gets francis's token and audited: true`, async () => {
      const tokens = h.makeTokens();
      const run = await h.createRun(`stamp-${c.priority}-${c.mode}`);
      runs.push(run);
      h.writeTokenMap(run, tokens);
      await h.writeConfig(run, {
        modelBaseUrl: model.baseUrl,
        toolSearch: c.toolSearch ? undefined : false,
        plugin: { path: h.stagePlugin(run, plugin), config: { tokenMapPath: run.tokenMapPath } },
        extraPlugins: [{ id: 'audit-stamp', path: h.stagePlugin(run, h.AUDIT_STAMP_PLUGIN, 'audit-stamp'), config: { priority: c.priority, mode: c.mode } }],
      });
      const tag = nonce();
      const wrong = `stamp-${tag}`;
      const res = await h.agentLocal(run, { agent: FRANCIS, message: `Please save a note. ${marker('notes', { wrong, tag })}` });
      assert.equal(res.code, 0, `openclaw agent --local exited ${res.code}: ${h.tail(res)}`);
      const lines = h.logMessages(run);
      assert.ok(
        lines.some((l) => l.includes(`[audit-stamp] stamping claw-os calls at priority ${c.priority}, mode ${c.mode}`)),
        'the audit-stamp plugin did not load',
      );
      assert.ok(
        lines.some((l) => /trusted tool-policy tier/.test(l)),
        'claw-identity does not say the trusted tier enforces identity',
      );
      const calls = h.readCalls(run);
      assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, tokens)}`);
      assert.equal(h.who(calls[0].args.auth_token, tokens, { "model's wrong token": fakeToken(wrong) }), FRANCIS);
      assert.equal(calls[0].args.audited, true, "the other plugin's stamp was lost");
      const hits = h.grepForTokens(run.root, tokens, { exclude: [run.secrets, run.mcp] });
      assert.deepEqual(
        hits.map((x) => `${x.agent}@${x.file.slice(run.root.length)}`),
        [],
        'a token leaked',
      );
    });
  }
});
