// Real OpenClaw, embedded turns (`openclaw agent --local`): the token injected
// for the calling agent, a sub-agent's calls, and the log lines.
// Each test is one fresh OpenClaw process on its own state dir; the scripted
// model and the claw-os MCP server are the only other parties.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import path from 'node:path';
import * as h from './harness.mjs';
import { startModelServer, marker, fakeToken } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';
const ATLAS = 'pepito--atlas';
const nonce = () => crypto.randomBytes(3).toString('hex');

describe('claw-identity in `openclaw agent --local`', () => {
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

  /** One --local turn as `agent` playing `scenario`; returns what everyone saw. */
  async function turn({ name, agent, scenario = 'notes', toolSearch, tokens, config = {} }) {
    const run = await h.createRun(name);
    runs.push(run);
    h.writeTokenMap(run, tokens);
    await h.writeConfig(run, {
      modelBaseUrl: model.baseUrl,
      toolSearch,
      plugin: { path: h.stagePlugin(run, plugin), config: { tokenMapPath: run.tokenMapPath, ...config } },
    });
    const tag = nonce(); // short: long hex runs get redacted when OpenClaw echoes text
    const seed = `${name}-${tag}`;
    const res = await h.agentLocal(run, { agent, message: `Please save a note. ${marker(scenario, { wrong: seed, tag })}` });
    const wrong = fakeToken(seed);
    const reqs = model.requestsFor(scenario, { tag });
    return { run, res, wrong, seed, tag, reqs, calls: h.readCalls(run) };
  }

  function assertNoLeak(run, tokens) {
    // Everything but the token map itself and the MCP server's own record of what it received.
    const hits = h.grepForTokens(run.root, tokens, { exclude: [run.secrets, run.mcp] });
    assert.deepEqual(
      hits.map((x) => `${x.agent}@${x.file.slice(run.root.length)}`),
      [],
      'a token from the map leaked',
    );
  }

  for (const toolSearch of [true, false]) {
    it(`scenario 1: the MCP server receives francis's token, not the model's (Tool Search ${toolSearch ? 'on' : 'off'})`, async () => {
      const tokens = h.makeTokens();
      const { run, res, wrong, tag, reqs, calls } = await turn({
        name: `s1-ts-${toolSearch ? 'on' : 'off'}`,
        agent: FRANCIS,
        toolSearch: toolSearch ? undefined : false,
        tokens,
      });
      assert.equal(res.code, 0, `openclaw agent --local exited ${res.code}: ${h.tail(res)}`);

      // The model really sent a wrong 42-char token, through the expected surface.
      const toolReq = reqs.find((r) => r.decision.kind === 'tool');
      assert.ok(toolReq, `the model was never asked to call a tool (requests: ${reqs.length}; errors: ${model.errors.join('; ')})`);
      if (toolSearch) {
        assert.equal(toolReq.decision.name, 'tool_call');
        assert.equal(toolReq.decision.args.id, 'claw-os__claw_notes');
        assert.equal(toolReq.decision.args.args.auth_token.length, 42);
      } else {
        assert.equal(toolReq.decision.name, 'claw-os__claw_notes');
        assert.ok(!toolReq.offered.includes('tool_call'), 'Tool Search should be off');
        assert.equal(toolReq.decision.args.auth_token.length, 42);
      }

      // What the server received.
      assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, tokens)}`);
      assert.equal(calls[0].tool, 'claw_notes');
      assert.equal(h.who(calls[0].args.auth_token, tokens, { "model's wrong token": wrong }), FRANCIS);
      assert.equal(calls[0].args.note, `note ${tag}`, "the model's other params pass through");

      // The model saw the tool's result (a fingerprint of francis's token), not a block.
      const results = model.toolResultsFor('notes', { tag });
      const seen = results.at(-1)?.result ?? '';
      assert.ok(seen.includes(`token-fp=${h.fingerprint(tokens[FRANCIS])}`), `model saw: ${h.scrub(seen.slice(0, 600))}`);

      // Scenario 6, per run: log lines, and no token anywhere but the server's record.
      const lines = h.logMessages(run);
      assert.ok(
        lines.some((l) => /plugin loaded; token map = /.test(l)),
        'log lacks `plugin loaded; token map = ...`',
      );
      assert.ok(
        lines.some((l) => l.includes(`before_tool_call tool=claw-os__claw_notes agent=${FRANCIS} token-status=ok`)),
        'log lacks the before_tool_call token-status=ok line',
      );
      assertNoLeak(run, tokens);
    });
  }

  it("scenario 4: an agent missing from the map runs by default, without the model's auth_token", async () => {
    const tokens = h.makeTokens([FRANCIS, 'paco--dali']);
    const { run, res, wrong, calls } = await turn({ name: 's4-pass', agent: ATLAS, tokens });
    assert.equal(res.code, 0, `openclaw agent --local exited ${res.code}: ${h.tail(res)}`);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, tokens)}`);
    assert.equal(calls[0].tool, 'claw_notes');
    // The call runs, but the model's own auth_token never reaches the server: it answers 401.
    assert.equal(calls[0].args.auth_token, undefined, `the server got ${h.who(calls[0].args.auth_token, tokens, { "model's wrong token": wrong })}`);
    assert.ok(
      h.logMessages(run).some((l) => l.includes(`before_tool_call tool=claw-os__claw_notes agent=${ATLAS} token-status=missing`)),
      'log lacks the token-status=missing line',
    );
    assertNoLeak(run, tokens);
  });

  it('scenario 4: with onMissingToken "block" the call is blocked and the model is told so', async () => {
    const tokens = h.makeTokens([FRANCIS, 'paco--dali']);
    const { run, res, tag, calls } = await turn({ name: 's4-block', agent: ATLAS, tokens, config: { onMissingToken: 'block' } });
    assert.equal(res.code, 0, `the turn goes on after a block; exited ${res.code}: ${h.tail(res)}`);
    assert.deepEqual(h.describeCalls(calls, tokens), [], 'the MCP server must not be called');
    // What the model received as the tool result (Tool Search on: a JSON envelope).
    const results = model.toolResultsFor('notes', { tag });
    assert.equal(results.length, 1, 'one tool call in the turn');
    const seen = results[0].result ?? '';
    assert.ok(/"status":\s*"blocked"/.test(seen), `model saw: ${h.scrub(seen.slice(0, 600))}`);
    assert.ok(/auth.?token|claw-identity|identity/i.test(seen), `the block reason names the cause; model saw: ${h.scrub(seen.slice(0, 600))}`);
    assertNoLeak(run, tokens);
  });

  it("`openclaw agent exec` (no ordinary hooks there): the trusted tier still puts francis's token in", async () => {
    const tokens = h.makeTokens();
    const run = await h.createRun('exec');
    runs.push(run);
    h.writeTokenMap(run, tokens);
    await h.writeConfig(run, { modelBaseUrl: model.baseUrl, plugin: { path: h.stagePlugin(run, plugin), config: { tokenMapPath: run.tokenMapPath } } });
    const seed = `exec-${nonce()}`;
    const logBefore = h.defaultLogSnapshot();
    // --config/--state-dir pin the run to this folder (else exec uses a temp state dir,
    // whose lock entries in /tmp/openclaw-state-locks-* could not be traced to this run).
    // --cwd is the run's workspace (exec's default is the process's cwd, here
    // HOME, which holds OpenClaw's gateway.env: the posture refuses that).
    const res = await h.openclaw(
      run,
      [
        'agent',
        'exec',
        `Please save a note. ${marker('notes', { wrong: seed })}`,
        '--json',
        '--config',
        run.configPath,
        '--state-dir',
        run.state,
        '--cwd',
        path.join(run.workspaces, FRANCIS),
      ],
      { timeoutMs: 240_000, label: 'exec' },
    );
    assert.equal(res.code, 0, `openclaw agent exec exited ${res.code}: ${h.tail(res)}`);
    const calls = h.readCalls(run);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, tokens)}`);
    // exec runs as the system agent (agents.defaults.systemAgent = paco--francis).
    assert.equal(h.who(calls[0].args.auth_token, tokens, { "model's wrong token": fakeToken(seed) }), FRANCIS);
    assertNoLeak(run, tokens);
    // exec ignores logging.file: its log lines go to /tmp/openclaw/openclaw-<date>.log.
    const logText = h.defaultLogSince(logBefore);
    assert.ok(logText.includes(`before_tool_call tool=claw-os__claw_notes agent=${FRANCIS} token-status=ok`), 'the default log lacks the token-status=ok line');
    const leaked = Object.entries(tokens)
      .filter(([, t]) => logText.includes(t))
      .map(([a]) => a);
    assert.deepEqual(leaked, [], 'a token leaked into the default log');
  });
});
