// Real OpenClaw gateway (`openclaw gateway run` on loopback): cross-agent
// delegation, rotation without a restart, and the log lines (no token
// anywhere but at the MCP server). A gateway takes ~1.5 GB
// and 10-20 s to boot, so each describe block shares one, and they run one
// after the other.

import { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as h from './harness.mjs';
import { startModelServer, marker, fakeToken } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';

/** A short nonce: no long hex runs, which OpenClaw and the plugin redact in echoed text. */
const nonce = () => crypto.randomBytes(3).toString('hex');

/** One gateway with the plugin; `pluginConfig` is merged over {tokenMapPath}. */
function gatewaySuite(name, pluginConfig = {}) {
  const s = { allTokens: {} };
  before(async () => {
    const plugin = h.pluginDir();
    await h.openclawRuntime();
    s.run = await h.createRun(name);
    s.model = await startModelServer({ recordFile: s.run.modelLog });
    s.tokens = h.makeTokens();
    Object.assign(s.allTokens, s.tokens);
    h.writeTokenMap(s.run, s.tokens);
    await h.writeConfig(s.run, {
      gateway: true,
      modelBaseUrl: s.model.baseUrl,
      plugin: { path: h.stagePlugin(s.run, plugin), config: { tokenMapPath: s.run.tokenMapPath, ...pluginConfig } },
    });
    await h.startGateway(s.run);
  });
  after(async () => {
    await s.model?.close();
    if (s.run) await h.finishRun(s.run);
  });
  /** Calls at the MCP server whose note/text carries `tag`. */
  s.callsFor = (tag) => h.readCalls(s.run).filter((c) => String(c.args?.note ?? c.args?.text ?? '').includes(tag));
  s.waitCalls = (tag, what) => h.waitFor(() => (s.callsFor(tag).length ? s.callsFor(tag) : null), { timeoutMs: 180_000, what });
  return s;
}

describe('claw-identity in a running gateway (default rules)', () => {
  const s = gatewaySuite('gateway');
  const it = h.gatewayIt(() => s.run);

  it("francis's own claw_notes call carries francis's token", async () => {
    const tag = nonce();
    const wrong = `notes-${tag}`;
    const res = await h.agentViaGateway(s.run, { agent: FRANCIS, message: `Save a note. ${marker('notes', { wrong, tag })}` });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    const calls = s.callsFor(tag);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(h.readCalls(s.run), s.tokens)}`);
    assert.equal(calls[0].tool, 'claw_notes');
    assert.equal(h.who(calls[0].args.auth_token, s.tokens, { "model's wrong token": fakeToken(wrong) }), FRANCIS);
  });

  it("scenario 2 (with the spawn-redirect rule): francis's sessions_spawn to dali is redirected; the retried sessions_send reaches dali, whose claw_audio carries dali's token", async () => {
    let tag, wrong, results;
    for (let attempt = 1; ; attempt++) {
      tag = nonce();
      wrong = `spawn-${tag}`;
      const res = await h.agentViaGateway(s.run, {
        agent: FRANCIS,
        message: `Ask dali to speak. ${marker('spawn', { agent: DALI, child: 'audio', wrong, tag })}`,
      });
      assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
      results = s.model.toolResultsFor('spawn', { tag });
      // OpenClaw failing the send on its own (see harness.transientOpenClawError): send again.
      const failed = h.transientOpenClawError(results[1]?.result);
      if (!failed || attempt === 3) break;
      h.log(`OpenClaw failed the send on its own (${failed}); sending again`);
    }
    assert.ok(results.length >= 1, 'francis made no tool call');
    assert.ok(/spawn-redirect/.test(results[0].result ?? ''), `the spawn was not redirected: ${h.scrub(String(results[0].result).slice(0, 500))}`);
    assert.equal(results.length, 2, `the model did not retry with sessions_send: ${results.map((r) => r.name).join(',')}`);
    assert.ok(
      !/"status":\s*"(error|blocked|forbidden)"/.test(results[1].result ?? ''),
      `sessions_send failed: ${h.scrub(String(results[1].result).replace(/\s+/g, ' ')).slice(0, 1200)}`,
    );
    const calls = await s.waitCalls(tag, "dali's claw_audio call");
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, s.tokens)}`);
    assert.equal(calls[0].tool, 'claw_audio');
    assert.equal(h.who(calls[0].args.auth_token, s.tokens, { "model's wrong token": fakeToken(wrong) }), DALI);
  });

  it('scenario 3: the map is rotated atomically while the gateway runs; the next call carries the new token', async () => {
    const { run } = s;
    const gateway = run.gateway;
    const uptimeBefore = await gateway.uptimeMs();
    const reloads = () => h.logMessages(run).filter((l) => /token map reloaded/.test(l)).length;
    const reloadsBefore = reloads();
    const old = s.tokens;
    const fresh = h.makeTokens();
    for (const [a, t] of Object.entries(fresh)) s.allTokens[`${a} (rotated)`] = t;
    h.writeTokenMap(run, fresh); // a temp file in the same folder, then rename(2)
    s.tokens = fresh;
    // Wait for the plugin's own word that it has the new map, so the turn below
    // does not race the watcher.
    await h.waitFor(() => reloads() > reloadsBefore, { timeoutMs: 60_000, what: "the plugin's `token map reloaded` log line" });

    const tag = nonce();
    const wrong = `rot-${tag}`;
    const res = await h.agentViaGateway(run, { agent: FRANCIS, message: `Save a note. ${marker('notes', { wrong, tag })}` });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    const calls = s.callsFor(tag);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(h.readCalls(run), fresh)}`);
    const got = h.who(
      calls[0].args.auth_token,
      { [`${FRANCIS} (new)`]: fresh[FRANCIS] },
      { [`${FRANCIS} (old)`]: old[FRANCIS], "model's wrong token": fakeToken(wrong) },
    );
    assert.equal(got, `${FRANCIS} (new)`);
    // No restart: the same gateway process, and its uptime kept growing.
    assert.ok(gateway.alive(), h.notRestarted(run, 'the gateway process is not the one we started'));
    const uptimeAfter = await gateway.uptimeMs();
    assert.ok(typeof uptimeBefore === 'number' && typeof uptimeAfter === 'number', `uptime not reported (${uptimeBefore}, ${uptimeAfter})`);
    assert.ok(uptimeAfter > uptimeBefore, h.notRestarted(run, `the gateway restarted in process (uptime ${uptimeBefore} -> ${uptimeAfter} ms)`));
  });

  it("a new tokenMapPath in the running gateway's config is applied hot: the next call carries the token from the new map", async () => {
    const { run } = s;
    const gateway = run.gateway;
    const uptimeBefore = await gateway.uptimeMs();
    // The new map, in a folder of its own (inside secrets/, which the leak scan skips).
    const dir = path.join(run.secrets, 'moved');
    fs.mkdirSync(dir, { mode: 0o700 });
    const moved = path.join(dir, 'agent-tokens.json');
    const fresh = h.makeTokens();
    for (const [a, t] of Object.entries(fresh)) s.allTokens[`${a} (moved map)`] = t;
    fs.writeFileSync(moved, JSON.stringify(fresh), { mode: 0o600 });
    const old = s.tokens;
    const registrations = () => h.logMessages(run).filter((l) => l.includes('identity is enforced by')).length;
    const registeredBefore = registrations();
    h.patchConfig(run, { plugins: { entries: { 'claw-identity': { config: { tokenMapPath: moved } } } } });
    // The service restarts with the committed config and loads the new map.
    await h.waitFor(() => h.logMessages(run).some((l) => l.includes(`plugin loaded; token map = ${moved} (3 agents)`)), {
      timeoutMs: 60_000,
      what: 'the plugin loading the map named by the new config',
    });

    const tag = nonce();
    const wrong = `moved-${tag}`;
    const res = await h.agentViaGateway(run, { agent: FRANCIS, message: `Save a note. ${marker('notes', { wrong, tag })}` });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    const calls = s.callsFor(tag);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(h.readCalls(run), fresh)}`);
    const got = h.who(
      calls[0].args.auth_token,
      { [`${FRANCIS} (new map)`]: fresh[FRANCIS] },
      { [`${FRANCIS} (old map)`]: old[FRANCIS], "model's wrong token": fakeToken(wrong) },
    );
    assert.equal(got, `${FRANCIS} (new map)`);
    s.tokens = fresh;
    // Hot: the same gateway process, never restarted, and no plugin reload.
    assert.ok(gateway.alive(), h.notRestarted(run, 'the gateway process is not the one we started'));
    const uptimeAfter = await gateway.uptimeMs();
    assert.ok(uptimeAfter > uptimeBefore, h.notRestarted(run, `the gateway restarted in process (uptime ${uptimeBefore} -> ${uptimeAfter} ms)`));
    assert.equal(registrations(), registeredBefore, 'the plugin was registered again: the config change reloaded every plugin');
    // `status` reads the layer the calls went through: the new map, and every call counted.
    const st = await h.openclaw(run, ['claw-identity', 'status', '--json'], { env: { OPENCLAW_GATEWAY_TOKEN: run.gatewayToken }, label: 'status' });
    assert.equal(st.code, 0, h.tail(st));
    assert.equal(st.json.stats.tokenMapPath, moved);
    assert.ok(st.json.stats.injected >= 1, `status counted ${st.json.stats.injected} injected calls`);
  });

  it("scenario 6: the log has the load and decision lines; no token from the map appears outside the MCP server's record", async () => {
    const { run } = s;
    // The gateway writes its log file asynchronously: wait for the lines.
    const has = (test) => h.logMessages(run).some(test);
    await h.waitFor(() => has((l) => /plugin loaded; token map = /.test(l)), { timeoutMs: 30_000, what: '`plugin loaded; token map = ...` in the log' });
    await h.waitFor(() => has((l) => l.includes(`before_tool_call tool=claw-os__claw_notes agent=${FRANCIS} token-status=ok`)), {
      timeoutMs: 30_000,
      what: '`before_tool_call tool=claw-os__claw_notes agent=paco--francis token-status=ok` in the log',
    });
    // The MCP server did receive tokens from the map (so the scan below means something)...
    const received = h.readCalls(run).map((c) => h.who(c.args.auth_token, s.allTokens));
    assert.ok(received.includes(FRANCIS), `received: ${received.join(', ')}`);
    // ...and nothing else holds any: state folder (sessions, transcripts, sqlite), logs,
    // CLI output, OpenClaw's temp dir, and every request the model got.
    const modelDump = s.model.requests.map((r) => r.raw).join('\n');
    const inModel = Object.entries(s.allTokens)
      .filter(([, t]) => modelDump.includes(t))
      .map(([a]) => a);
    assert.deepEqual(inModel, [], 'a token reached the model');
    const hits = h.grepForTokens(run.root, s.allTokens, { exclude: [run.secrets, run.mcp] });
    assert.deepEqual(
      hits.map((x) => `${x.agent}@${x.file.slice(run.root.length)}`),
      [],
      'a token leaked',
    );
  });
});

describe('claw-identity in a running gateway (spawn-redirect off: a real cross-agent sub-agent)', () => {
  const s = gatewaySuite('gateway-spawn', { rules: { spawnRedirect: { enabled: false } } });
  const it = h.gatewayIt(() => s.run);

  it("scenario 2: francis spawns a paco--dali sub-agent; the child's claw_audio carries dali's token", async () => {
    const tag = nonce();
    const wrong = `child-${tag}`;
    const res = await h.agentViaGateway(s.run, {
      agent: FRANCIS,
      message: `Ask dali to speak. ${marker('spawn', { agent: DALI, child: 'audio', wrong, tag })}`,
    });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    const spawned = s.model.toolResultsFor('spawn', { tag })[0]?.result ?? '';
    assert.ok(/accepted/.test(spawned) && /agent:paco--dali:subagent:/.test(spawned), `sessions_spawn result: ${h.scrub(spawned.slice(0, 500))}`);

    // The parent's turn returns before the child runs: wait for the child's call.
    const calls = await s.waitCalls(tag, "the child's claw_audio call");
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, s.tokens)}`);
    assert.equal(calls[0].tool, 'claw_audio');
    // The child's model really sent the wrong token...
    const childReq = s.model.requestsFor('audio', { tag }).find((r) => r.decision.kind === 'tool');
    assert.ok(childReq, "the child's model request was not seen");
    const sent = (childReq.decision.inner ? childReq.decision.args.args : childReq.decision.args).auth_token;
    assert.equal(h.who(sent, s.tokens, { "model's wrong token": fakeToken(wrong) }), "model's wrong token");
    // ...and the server got dali's, not francis's (the parent) nor the model's.
    assert.equal(h.who(calls[0].args.auth_token, s.tokens, { "model's wrong token": fakeToken(wrong) }), DALI);
    // OpenClaw writes its log file asynchronously: the MCP server can see the
    // call before the decision line reaches the file.
    await h.waitFor(() => h.logMessages(s.run).some((l) => l.includes(`before_tool_call tool=claw-os__claw_audio agent=${DALI} token-status=ok`)), {
      timeoutMs: 30_000,
      what: "dali's claw_audio decision line in the log",
    });
    const hits = h.grepForTokens(s.run.root, s.allTokens, { exclude: [s.run.secrets, s.run.mcp] });
    assert.deepEqual(
      hits.map((x) => `${x.agent}@${x.file.slice(s.run.root.length)}`),
      [],
      'a token leaked',
    );
  });
});
