// The guards decide on what OpenClaw itself opens, in a real gateway, where
// only OpenClaw's own behaviour can show it:
// - the only agent uses agents.defaults.workspace itself (not <it>/<id>), so
//   its relative path to the map must be refused there;
// - a child spawned with a cwd runs its tools there (OpenClaw keeps it as the
//   session's spawnedCwd), so its relative path to the map must be refused,
//   and a spawn whose cwd is the map's directory too;
// - an edit of openclaw.json through the agent's own tools is refused, and
//   the config OpenClaw would hot-apply is unchanged;
// - a host write of a managed hook (<stateDir>/hooks/<name>/handler.js and
//   HOOK.md, which OpenClaw imports into the gateway at start and on
//   reload) fails and nothing appears there: refused by layer-controls for
//   an agent whose file tools reach the whole host, and, in a gateway of
//   its own, for an agent under tools.fs.workspaceOnly (OpenClaw's own line).
// Every assertion is on what really happened: the tool results the model
// saw, the files on disk.

import { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as h from './harness.mjs';
import { startModelServer, marker } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';
const nonce = () => crypto.randomBytes(3).toString('hex');

describe('the guards see what OpenClaw opens', () => {
  const s = {};
  const it = h.gatewayIt(() => s.run);

  before(async () => {
    const plugin = h.pluginDir();
    await h.openclawRuntime();
    s.run = await h.createRun('guards');
    // The map under HOME: <root>/home/secrets/token-map.json.
    s.mapDir = path.join(s.run.home, 'secrets');
    fs.mkdirSync(s.mapDir, { mode: 0o700 });
    s.run.tokenMapPath = path.join(s.mapDir, 'token-map.json');
    s.map = s.run.tokenMapPath;
    // A directory beside the map's, for a spawned child's cwd.
    s.beside = path.join(s.run.home, 'projects');
    fs.mkdirSync(s.beside, { mode: 0o700 });
    s.tokens = h.makeTokens([FRANCIS]);
    h.writeTokenMap(s.run, s.tokens);
    // The only agent, with no workspace of its own: OpenClaw gives it
    // agents.defaults.workspace itself.
    s.workspace = path.join(s.run.root, 'ws');
    fs.mkdirSync(s.workspace, { mode: 0o700 });
    s.relMap = path.relative(s.workspace, s.map);
    assert.ok(s.relMap.startsWith('../'), s.relMap);
    s.model = await startModelServer({ recordFile: s.run.modelLog, maxToolCallsPerTurn: 8, scenarios: scripts(s) });
    // Uncontained, under posture "warn": this gateway tests the path guard
    // alone, where OpenClaw's own resolution decides what a path names.
    // Under tools.fs.workspaceOnly OpenClaw refuses most of these itself, and
    // a child it ran in its workspace instead of its spawned cwd could not be
    // told apart (its refusal names no resolved path); the second gateway
    // below runs contained.
    await h.writeConfig(s.run, {
      gateway: true,
      agents: [FRANCIS],
      contain: false,
      modelBaseUrl: s.model.baseUrl,
      plugin: { path: h.stagePlugin(s.run, plugin), config: { tokenMapPath: s.map, posture: 'warn' } },
      extra: { agents: { defaults: { workspace: s.workspace }, entries: { [FRANCIS]: { workspace: undefined } } } },
    });
    s.configBefore = fs.readFileSync(s.run.configPath);
    await h.startGateway(s.run);
  });
  after(async () => {
    await s.model?.close();
    if (s.run) await h.finishRun(s.run);
  });

  const turn = async (scenario, params = {}) => {
    const tag = nonce();
    const res = await h.agentViaGateway(s.run, {
      agent: FRANCIS,
      sessionKey: `agent:${FRANCIS}:e2e-guards-${tag}`,
      message: `Go. ${marker(scenario, { tag, ...params })}`,
    });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    return tag;
  };
  /** The results the model saw for `scenario`'s calls, with whether each was refused by `rule`. */
  const results = (scenario, tag, rule) =>
    s.model
      .toolResultsFor(scenario, { tag })
      .map((r) => ({ refused: h.strings(r.result).some((t) => t.includes(`${rule}: `)), text: h.scrub(String(r.result)).slice(0, 300) }));

  it("the only agent's relative path to the map, from agents.defaults.workspace itself, is refused", async () => {
    const tag = await turn('relmap');
    const seen = results('relmap', tag, 'map-access');
    assert.equal(seen.length, scripts(s).relmap.length, `the model made ${seen.length} calls; errors: ${s.model.errors.join('; ')}`);
    assert.deepEqual(
      seen.filter((r) => !r.refused),
      [],
      'calls not refused',
    );
    assert.deepEqual(JSON.parse(fs.readFileSync(s.map, 'utf8')), s.tokens, 'the map changed');
  });

  it("an edit of openclaw.json through the agent's own tools is refused, and the config is unchanged", async () => {
    const tag = await turn('config');
    const seen = results('config', tag, 'layer-controls');
    assert.equal(seen.length, scripts(s).config.length, `the model made ${seen.length} calls; errors: ${s.model.errors.join('; ')}`);
    assert.deepEqual(
      seen.filter((r) => !r.refused),
      [],
      'calls not refused',
    );
    assert.ok(fs.readFileSync(s.run.configPath).equals(s.configBefore), 'openclaw.json changed');
  });

  it('a host write of a managed hook is refused by the path guard alone, and no hook file appears', async () => {
    const tag = await turn('hook');
    const seen = results('hook', tag, 'layer-controls');
    assert.equal(seen.length, hookSteps(s).length, `the model made ${seen.length} calls; errors: ${s.model.errors.join('; ')}`);
    assert.deepEqual(
      seen.filter((r) => !r.refused),
      [],
      'calls not refused',
    );
    assert.equal(fs.existsSync(hookDir(s, tag)), false, `${hookDir(s, tag)} appeared`);
  });

  it("a spawn with a cwd in or above the map's directory is refused; a child spawned beside it can't reach the map by a relative path", async () => {
    for (let attempt = 1; ; attempt++) {
      const tag = await turn('spawncwd');
      const spawns = s.model.toolResultsFor('spawncwd', { tag }).map((r) => String(r.result));
      assert.equal(spawns.length, 3, `spawns: ${spawns.map((x) => h.scrub(x).slice(0, 200)).join(' | ')}`);
      assert.ok(spawns[0].includes('map-access: '), `the spawn into the map's directory ran: ${h.scrub(spawns[0]).slice(0, 300)}`);
      assert.ok(spawns[1].includes('map-access: '), `the spawn above the map's directory ran: ${h.scrub(spawns[1]).slice(0, 300)}`);
      assert.ok(/accepted/.test(spawns[2]), `the spawn beside the map's directory was not accepted: ${h.scrub(spawns[2]).slice(0, 300)}`);
      // The parent's turn returns before the child runs: wait for the child's read.
      await h.waitFor(() => s.model.toolResultsFor('childread', { tag }).length > 0, { timeoutMs: 120_000, what: "the child's read" });
      const child = results('childread', tag, 'map-access');
      assert.equal(child.length, 1);
      const raw = String(s.model.toolResultsFor('childread', { tag })[0].result);
      assert.ok(!Object.values(s.tokens).some((t) => raw.toLowerCase().includes(t.slice(0, 16))), "the child's read returned the map");
      // OpenClaw sometimes runs the child in its workspace, not in the cwd
      // it was spawned with (its run read the session entry before the cwd
      // was in it): the path then names nothing, for OpenClaw and the guard
      // alike. Spawn again, so that the case the guard is for is proved.
      const inWorkspace = child[0].text.includes(`File not found: ${path.resolve(s.workspace, path.relative(s.beside, s.map))}`);
      if (!child[0].refused && inWorkspace && attempt < 6) {
        h.log(`OpenClaw ran the spawned child in its workspace, not its cwd; spawning again (attempt ${attempt + 1} of 6)`);
        continue;
      }
      assert.ok(child[0].refused, `the child's read was not refused: ${child[0].text}`);
      break;
    }
  });
});

describe("with tools.fs.workspaceOnly (OpenClaw's own line), a managed hook still can't be written", () => {
  const s = {};
  const it = h.gatewayIt(() => s.run);

  before(async () => {
    const plugin = h.pluginDir();
    await h.openclawRuntime();
    s.run = await h.createRun('guards-wso');
    s.run.tokenMapPath = path.join(s.run.secrets, 'token-map.json');
    s.tokens = h.makeTokens([FRANCIS]);
    h.writeTokenMap(s.run, s.tokens);
    s.model = await startModelServer({ recordFile: s.run.modelLog, maxToolCallsPerTurn: 8, scenarios: { hook: hookSteps(s) } });
    await h.writeConfig(s.run, {
      gateway: true,
      agents: [FRANCIS],
      modelBaseUrl: s.model.baseUrl,
      plugin: { path: h.stagePlugin(s.run, plugin), config: { tokenMapPath: s.run.tokenMapPath } },
      extra: { tools: { fs: { workspaceOnly: true } } },
    });
    await h.startGateway(s.run);
  });
  after(async () => {
    await s.model?.close();
    if (s.run) await h.finishRun(s.run);
  });

  it('the write fails (refused by layer-controls or by OpenClaw), and no hook file appears', async () => {
    const tag = nonce();
    const res = await h.agentViaGateway(s.run, {
      agent: FRANCIS,
      sessionKey: `agent:${FRANCIS}:e2e-guards-wso-${tag}`,
      message: `Go. ${marker('hook', { tag })}`,
    });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    const seen = s.model.toolResultsFor('hook', { tag }).map((r) => h.scrub(String(r.result)));
    assert.equal(seen.length, hookSteps(s).length, `the model made ${seen.length} calls; errors: ${s.model.errors.join('; ')}`);
    for (const text of seen) {
      // Whichever line refused it, the tool said it did not write.
      assert.ok(/layer-controls: |outside|escapes|not allowed|denied|workspace/i.test(text), `a write was not refused: ${text.slice(0, 300)}`);
      h.log(`workspaceOnly run: ${text.includes('layer-controls: ') ? 'layer-controls' : 'OpenClaw'} refused it: ${text.slice(0, 160)}`);
    }
    assert.equal(fs.existsSync(hookDir(s, tag)), false, `${hookDir(s, tag)} appeared`);
  });
});

/** Where the scripted model tries to plant a managed hook: OpenClaw's <configDir>/hooks (the run's state dir). */
function hookDir(st, tag) {
  return path.join(st.run.state, 'hooks', `e2e-planted-${tag}`);
}

/** A managed hook a model would plant: its HOOK.md and its handler, which OpenClaw would import. */
function hookSteps(st) {
  return [
    {
      call: 'write',
      args: (c) => ({
        path: path.join(hookDir(st, c.params.tag), 'HOOK.md'),
        content: '---\nname: e2e-planted\nmetadata: { "openclaw": { "events": ["gateway:startup"] } }\n---\n',
      }),
    },
    { call: 'write', args: (c) => ({ path: path.join(hookDir(st, c.params.tag), 'handler.js'), content: 'export default async () => {};\n' }) },
  ];
}

/** The scripted model's attempts; paths come from the run state `st` when each call is made. */
function scripts(st) {
  return {
    hook: hookSteps(st),
    relmap: [
      { call: 'read', args: () => ({ path: st.relMap }) },
      { call: 'edit', args: () => ({ path: st.relMap, edits: [{ oldText: '{', newText: '{ ' }] }) },
      { call: 'write', args: () => ({ path: st.relMap, content: '{}' }) },
    ],
    config: [
      { call: 'edit', args: () => ({ path: st.run.configPath, edits: [{ oldText: '"claw-identity": {', newText: '"claw-identity": { "enabled": false,' }] }) },
      { call: 'write', args: () => ({ path: st.run.configPath, content: '{}' }) },
      { call: 'read', args: () => ({ path: st.run.configPath }) },
    ],
    spawncwd: [
      { call: 'sessions_spawn', args: (c) => ({ task: `Read it. ${marker('childread', { tag: c.params.tag })}`, cwd: st.mapDir }) },
      { call: 'sessions_spawn', args: (c) => ({ task: `Read it. ${marker('childread', { tag: c.params.tag })}`, cwd: st.run.root }) },
      { call: 'sessions_spawn', args: (c) => ({ task: `Read it. ${marker('childread', { tag: c.params.tag })}`, cwd: st.beside }) },
    ],
    // From the directory beside the map's: up, and into it.
    childread: [{ call: 'read', args: () => ({ path: path.relative(st.beside, st.map) }) }],
  };
}
