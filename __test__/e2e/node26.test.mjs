// The short smoke run on Node 26, the other major of OpenClaw's range (the
// rest of the e2e suite runs on Node 24): the tarball installed into a real
// OpenClaw running on Node 26, the way OpenClaw's docs install a local
// package (`plugins install npm-pack:<tgz>`), and one owned call that gets
// the calling agent's token.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as h from './harness.mjs';
import { ensureNode } from '../../scripts/ensure-openclaw.mjs';
import { startModelServer, marker, fakeToken } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';

describe('on Node 26: the installed tarball in a real OpenClaw', () => {
  let model;
  let run;
  let tokens;
  let tgz;

  before(async () => {
    const node = await ensureNode(26, { log: (l) => h.log(l) });
    run = await h.createRun('node26', { node });
    model = await startModelServer({ recordFile: run.modelLog });
    tokens = h.makeTokens();
    h.writeTokenMap(run, tokens);
    await h.writeConfig(run, { modelBaseUrl: model.baseUrl });
    const dest = path.join(run.root, 'pack');
    fs.mkdirSync(dest, { mode: 0o700 });
    tgz = await h.npmPack(dest);
  });

  after(async () => {
    await model?.close();
    if (run) await h.finishRun(run);
  });

  it("installs with npm-pack:, loads, and puts francis's token on a real call", async () => {
    assert.match(execFileSync(run.runtime.node, ['--version'], { encoding: 'utf8' }), /^v26\./);
    let r = await h.openclaw(run, ['plugins', 'install', `npm-pack:${tgz}`, '--force', '--accept-capabilities'], { label: 'plugins-install' });
    assert.equal(r.code, 0, `plugins install exited ${r.code}: ${h.tail(r)}`);
    const config = { tokenMapPath: run.tokenMapPath, onMissingToken: 'pass' };
    r = await h.openclaw(run, ['config', 'set', 'plugins.entries.claw-identity.config', JSON.stringify(config), '--strict-json'], { label: 'config-set' });
    assert.equal(r.code, 0, `config set exited ${r.code}: ${h.tail(r)}`);

    const seed = `node26-${run.runId.slice(0, 6)}`;
    const res = await h.agentLocal(run, { agent: FRANCIS, message: `Please save a note. ${marker('notes', { wrong: seed })}` });
    assert.equal(res.code, 0, `openclaw agent --local exited ${res.code}: ${h.tail(res)}`);
    const calls = h.readCalls(run);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, tokens)}`);
    assert.equal(h.who(calls[0].args.auth_token, tokens, { "model's wrong token": fakeToken(seed) }), FRANCIS);
    const lines = h.logMessages(run);
    assert.ok(
      lines.some((l) => /running the native linux-x64-gnu build; identity is enforced by the trusted tool-policy tier/.test(l)),
      'the load line does not say the native build runs in the trusted tier',
    );
    const hits = h.grepForTokens(run.root, tokens, { exclude: [run.secrets, run.mcp] });
    assert.deepEqual(
      hits.map((x) => `${x.agent}@${x.file.slice(run.root.length)}`),
      [],
      'a token leaked',
    );
  });
});
