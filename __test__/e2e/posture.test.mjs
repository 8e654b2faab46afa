// The posture in a real OpenClaw gateway: claw-identity serves tokens only
// while every agent OpenClaw can run is contained (core/src/posture.rs).
// One gateway for every case, in order:
//
// 1. It starts with agents that have host tools (`exec`, `process`, stream
//    automations): the gateway log says at start that no token is served,
//    `status` says so, and an owned call is refused with the posture's
//    reason, which names the agent and the config that exposes it. A stream
//    automation created then runs its host command: the control that shows
//    what case 5 keeps from running.
// 2. The config is hot-reloaded to the documented host containment with
//    `openclaw config set`, as an operator would: the next owned call gets
//    the agent's token (the posture follows reloads).
// 3. The demo's agents get their tokens: francis's own call, and dali's
//    through francis's delegation (sessions_spawn, redirected to
//    sessions_send by rule spawn-redirect, as in `npm run demo`).
// 4. In the contained posture a stream automation can't run a host command.
// 5. A link flip while another plugin holds the call (the hold-edit fixture,
//    as a plugin awaiting an approval would): francis edits `config.json`, a
//    link in its workspace to a harmless file, which claw-identity lets
//    through; while the call is held the link is pointed at the token map;
//    then it is released. OpenClaw's workspaceOnly (fs-safe, when the file
//    is opened) keeps the map unchanged, where the path guard, which judged
//    the call before the flip, could not.
// 6. No token anywhere but the map and the MCP server's record.
//
// How each would fail: on a layer without the posture (main), case 1's
// call gets a token; with the posture not re-judged on reload (no service
// prefix for `tools`), case 2's call stays refused; without
// `cron.triggers.enabled: false`, case 4's command runs, as case 1's
// control shows it does; without `tools.fs.workspaceOnly`, case 5's edit
// follows the link into the map.

import { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as h from './harness.mjs';
import { startModelServer, marker, fakeToken } from './fixtures/model-server.mjs';
import { HOST_TOOLS } from '../helpers/posture.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const HOLD_PLUGIN = path.join(h.FIXTURES, 'hold-plugin');
/** A short nonce: no long hex runs, which OpenClaw and the plugin redact in echoed text. */
const nonce = () => crypto.randomBytes(3).toString('hex');

describe('the posture in a real gateway', () => {
  const s = {};
  const it = h.gatewayIt(() => s.run);

  before(async () => {
    await h.openclawRuntime();
    s.run = await h.createRun('posture');
    s.tokens = h.makeTokens();
    h.writeTokenMap(s.run, s.tokens);
    s.map = s.run.tokenMapPath;
    // Where the stream commands leave their markers, and where the hold-edit plugin signals.
    s.markers = path.join(s.run.root, 'markers');
    s.hold = path.join(s.run.root, 'hold');
    for (const d of [s.markers, s.hold]) fs.mkdirSync(d, { mode: 0o700 });
    s.model = await startModelServer({ recordFile: s.run.modelLog, scenarios: scripts(s) });
    await h.writeConfig(s.run, {
      gateway: true,
      modelBaseUrl: s.model.baseUrl,
      // The layer's own refusal of jobs that run a host process (rule
      // layer-controls, the second line, which the guards suites test) is off
      // here: the control and case 4 show what OpenClaw's own line does, the
      // one the posture counts on.
      plugin: { path: h.stagePlugin(s.run, h.pluginDir()), config: { tokenMapPath: s.map, rules: { layerControls: { enabled: false } } } },
      extraPlugins: [{ id: 'hold-edit', path: h.stagePlugin(s.run, HOLD_PLUGIN, 'hold-edit'), config: { dir: s.hold } }],
      // The host containment, but for the shell and stream automations:
      // every agent can run host commands.
      extra: { tools: { deny: HOST_TOOLS.filter((t) => t !== 'exec' && t !== 'process') }, cron: { triggers: { enabled: true } } },
    });
    // francis's workspace: a harmless file, and config.json, a link to it.
    s.workspace = path.join(s.run.workspaces, FRANCIS);
    s.harmless = path.join(s.workspace, 'harmless.json');
    fs.writeFileSync(s.harmless, '{ "harmless": true }\n', { mode: 0o600 });
    s.link = path.join(s.workspace, 'config.json');
    fs.symlinkSync(s.harmless, s.link);
    await h.startGateway(s.run);
  });
  after(async () => {
    await s.model?.close();
    if (s.run) await h.finishRun(s.run);
  });

  const turn = async (agent, scenario, params = {}) => {
    const tag = params.tag ?? nonce();
    const res = await h.agentViaGateway(s.run, {
      agent,
      sessionKey: `agent:${agent}:e2e-posture-${tag}`,
      message: `Go. ${marker(scenario, { tag, ...params })}`,
    });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    return { tag, results: s.model.toolResultsFor(scenario, { tag }) };
  };
  const callsFor = (tag) => h.readCalls(s.run).filter((c) => String(c.args?.note ?? c.args?.text ?? '').includes(tag));
  const claw = (args) =>
    h.openclaw(s.run, ['claw-identity', ...args], { env: { OPENCLAW_GATEWAY_TOKEN: s.run.gatewayToken }, label: `claw-identity-${args[0]}` });
  const clawLines = () => h.logMessages(s.run).filter((l) => l.includes('[claw-identity] posture'));

  it('with host exec in the config, no token is served: the log says so at start, status says so, and the owned call is refused with the reason naming the agent and the config', async () => {
    const start = clawLines();
    // Every agent OpenClaw can run is named, with what exposes it and the config key.
    assert.ok(
      start.some((l) =>
        /posture: serving NO token, since 4 agents can reach the token map or OpenClaw's config .*paco--francis: [^|]*exec, process \(agents\.entries\.paco--francis\.tools\.deny\)/.test(
          l,
        ),
      ),
      `no refusal line at start: ${h.scrub(start.join(' | ')).slice(0, 1500)}`,
    );
    const exposed = (await claw(['status', '--json'])).json?.stats?.posture;
    assert.deepEqual([exposed?.mode, exposed?.judged, exposed?.servesTokens], ['enforce', true, false]);
    assert.deepEqual(exposed.agents.map((a) => [a.agentId, a.contained]).sort(), [
      ['*', null],
      [DALI, null],
      [FRANCIS, null],
      ['pepito--atlas', null],
    ]);
    const francis = exposed.agents.find((a) => a.agentId === FRANCIS);
    assert.ok(
      francis.exposures.some((e) => e.what.startsWith('exec ') && e.key === `agents.entries.${FRANCIS}.tools.deny`),
      JSON.stringify(francis.exposures),
    );
    assert.ok(
      francis.exposures.some((e) => e.key === 'cron.triggers.enabled'),
      JSON.stringify(francis.exposures),
    );

    const tag = nonce();
    const { results } = await turn(FRANCIS, 'notes', { wrong: `n-${tag}`, tag });
    assert.deepEqual(callsFor(tag), [], 'the MCP server got the call');
    const reason = results.flatMap((r) => h.strings(r.result)).find((t) => t.startsWith('posture: '));
    assert.ok(reason, `no posture refusal reached the model: ${h.scrub(JSON.stringify(results)).slice(0, 800)}`);
    assert.match(reason, /^posture: claw-identity serves no token while an agent's own tools can reach the token map or OpenClaw's config/);
    // The agent, what exposes it with its config key, and the config that contains it.
    assert.match(
      reason,
      /Not contained: (?:[^|]*\| )*paco--francis: [^|]*exec, process \(agents\.entries\.paco--francis\.tools\.deny\); contain it with: openclaw config set /,
    );
  });

  it('(control) while automations may stream, a stream automation runs its host command', async () => {
    const { tag, results } = await turn(FRANCIS, 'automate');
    const ran = path.join(s.markers, tag);
    await h.waitFor(() => fs.existsSync(ran), {
      timeoutMs: 60_000,
      what: `the stream command's marker (the automations call returned: ${h.scrub(JSON.stringify(results.map((r) => r.result))).slice(0, 600)})`,
    });
  });

  it('after `openclaw config set` contains every agent (hot reload), the next owned call gets the agent token', async () => {
    const gateway = s.run.gateway;
    const before = clawLines().length;
    for (const [key, value] of [
      ['tools.deny', HOST_TOOLS],
      ['cron.triggers.enabled', false],
    ]) {
      const r = await h.openclaw(s.run, ['config', 'set', key, JSON.stringify(value), '--strict-json'], { label: 'config-set' });
      assert.equal(r.code, 0, h.tail(r));
    }
    await h.waitFor(
      () =>
        clawLines()
          .slice(before)
          .some((l) => l.includes('posture: every agent is contained')),
      {
        timeoutMs: 60_000,
        what: 'the posture judged again after the reload',
      },
    );
    assert.ok(gateway.alive(), h.notRestarted(s.run, 'the gateway restarted: the reload was not hot'));
    const tag = nonce();
    await turn(FRANCIS, 'notes', { wrong: `n-${tag}`, tag });
    const calls = callsFor(tag);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(h.readCalls(s.run), s.tokens)}`);
    assert.equal(h.who(calls[0].args.auth_token, s.tokens, { "model's wrong token": fakeToken(`n-${tag}`) }), FRANCIS);
    const contained = (await claw(['status', '--json'])).json?.stats?.posture;
    assert.equal(contained?.servesTokens, true);
    assert.deepEqual(
      contained.agents.map((a) => a.contained),
      ['host', 'host', 'host', 'host'],
    );
  });

  it("the demo's agents get their tokens in the contained posture: dali's through francis's delegation", async () => {
    let tag;
    let results;
    for (let attempt = 1; ; attempt++) {
      tag = nonce();
      ({ results } = await turn(FRANCIS, 'spawn', { agent: DALI, child: 'audio', wrong: `s-${tag}`, tag }));
      // OpenClaw failing the send on its own (harness.transientOpenClawError): send again.
      const failed = h.transientOpenClawError(results[1]?.result);
      if (!failed || attempt === 3) break;
      h.log(`OpenClaw failed the send on its own (${failed}); sending again`);
    }
    assert.ok(/spawn-redirect/.test(String(results[0]?.result ?? '')), `the spawn was not redirected: ${h.scrub(String(results[0]?.result)).slice(0, 500)}`);
    const [audio] = await h.waitFor(() => (callsFor(tag).length ? callsFor(tag) : null), { timeoutMs: 180_000, what: "dali's claw_audio call" });
    assert.equal(audio.tool, 'claw_audio');
    assert.equal(h.who(audio.args.auth_token, s.tokens, { "model's wrong token": fakeToken(`s-${tag}`) }), DALI);
  });

  it('in the contained posture a stream automation runs nothing on the host', async () => {
    const { tag, results } = await turn(FRANCIS, 'automate');
    // The control above ran its command within seconds; give this one as long, and more.
    await new Promise((r) => setTimeout(r, 10_000));
    assert.equal(
      fs.existsSync(path.join(s.markers, tag)),
      false,
      `the stream command ran (the automations call returned: ${h.scrub(JSON.stringify(results.map((r) => r.result))).slice(0, 600)})`,
    );
  });

  it("a link flipped to the map while another plugin holds francis's edit: OpenClaw's workspaceOnly keeps the map unchanged", async () => {
    const mapBefore = fs.readFileSync(s.map);
    const tag = nonce();
    const playing = turn(FRANCIS, 'flip', { tag });
    // claw-identity's policy has passed the call (the link named the
    // harmless file); the hold-edit plugin holds it now.
    const held = path.join(s.hold, 'held');
    await h.waitFor(() => fs.existsSync(held), { timeoutMs: 120_000, intervalMs: 50, what: 'the edit held by the second plugin' });
    assert.equal(fs.readFileSync(held, 'utf8').trim(), 'config.json');
    const next = `${s.link}.next`;
    fs.symlinkSync(s.map, next);
    fs.renameSync(next, s.link);
    fs.writeFileSync(path.join(s.hold, 'release'), '');
    const { results } = await playing;
    assert.equal(results.length, 1, `the model made ${results.length} calls; errors: ${s.model.errors.join('; ')}`);
    const text = h.strings(results[0].result).join('\n');
    assert.ok(!text.includes('map-access: '), `claw-identity refused the call before the flip: ${h.scrub(text).slice(0, 400)}`);
    assert.ok(fs.readFileSync(s.map).equals(mapBefore), `the map changed (the edit returned: ${h.scrub(text).slice(0, 400)})`);
    assert.equal(fs.readlinkSync(s.link), s.map, 'the link was not flipped');
    assert.deepEqual(h.tokenPieces(text, s.tokens), [], 'token material in the edit result');
  });

  it('no token, nor a 16-hex piece of one, in any model request, transcript or log; none anywhere in the run but the map and the MCP record', async () => {
    assert.ok(s.model.requests.length > 6, `only ${s.model.requests.length} model requests`);
    const inRequests = s.model.requests.flatMap((r, i) => h.tokenPieces(r.raw, s.tokens).map((a) => `request ${i}: ${a}`));
    assert.deepEqual(inRequests, []);
    const events = await h.transcriptEvents(s.run);
    assert.ok(events.length > 0, 'no transcript was stored');
    const inTranscripts = events.flatMap((e) => h.tokenPieces(e.text, s.tokens).map((a) => `${e.agent} ${e.table} ${e.seq}: ${a}`));
    assert.deepEqual(inTranscripts, []);
    assert.deepEqual(h.tokenPieces(h.logMessages(s.run).join('\n'), s.tokens), []);
    const hits = h.grepForTokens(s.run.root, s.tokens, { exclude: [s.run.secrets, s.run.mcp] });
    assert.deepEqual(
      hits.map((x) => `${path.relative(s.run.root, x.file)}: ${x.agent}`),
      [],
    );
  });
});

/** The scripted model's calls; paths come from the run state `st`. */
function scripts(st) {
  return {
    // A stream automation whose source is a host command that leaves a marker.
    automate: [
      {
        call: 'automations',
        args: (c) => ({
          action: 'add',
          job: {
            name: `watch-${c.params.tag}`,
            schedule: { kind: 'stream', command: ['/bin/sh', '-c', `touch '${path.join(st.markers, c.params.tag)}'`] },
            payload: { kind: 'systemEvent', text: `line ${c.params.tag}` },
            delivery: { mode: 'none' },
          },
        }),
      },
    ],
    // francis edits the link in its workspace.
    flip: [{ call: 'edit', args: () => ({ path: 'config.json', edits: [{ oldText: '{', newText: '{ ' }] }) }],
  };
}
