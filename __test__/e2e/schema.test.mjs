// The claw-os tool schema in a real OpenClaw (`openclaw agent --local`):
// with auth_token declared optional and internal (claw_notes), a model that
// leaves it out still reaches the server with its agent's token; a tool that
// keeps auth_token required (claw_legacy) pins the trap: OpenClaw's argument
// validation refuses the omission before the hook runs, and
// `openclaw claw-identity doctor --mcp` flags that tool.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import * as h from './harness.mjs';
import { startModelServer, marker } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';
const nonce = () => crypto.randomBytes(3).toString('hex');

/** A model that has learned not to handle the secret: it never sends auth_token (nor _conversation_id). */
const SCENARIOS = {
  omit: [{ call: 'claw-os__claw_notes', args: (ctx) => ({ note: `omit ${ctx.params.tag}` }) }],
  legacy: [{ call: 'claw-os__claw_legacy', args: (ctx) => ({ note: `legacy ${ctx.params.tag}` }) }],
};

/** doctor's lines about the MCP servers and the other plugins. */
const liveLines = (stdout) => stdout.split('\n').filter((l) => /^\S+ +(mcp (tool|server|servers)|token readers): /.test(l));

describe('the claw-os tool schema in a real OpenClaw', () => {
  let model;
  let plugin;
  const runs = [];

  before(async () => {
    plugin = h.pluginDir();
    await h.openclawRuntime();
    model = await startModelServer({ scenarios: SCENARIOS });
  });
  after(async () => {
    await model?.close();
    for (const r of runs) await h.finishRun(r);
  });

  async function setup(name, { toolSearch, extraPlugins } = {}) {
    const run = await h.createRun(name);
    runs.push(run);
    const tokens = h.makeTokens();
    h.writeTokenMap(run, tokens);
    await h.writeConfig(run, {
      modelBaseUrl: model.baseUrl,
      toolSearch,
      extraPlugins,
      plugin: { path: h.stagePlugin(run, plugin), config: { tokenMapPath: run.tokenMapPath } },
    });
    return { run, tokens };
  }

  async function turn(run, scenario) {
    const tag = nonce();
    const sessionKey = `agent:${FRANCIS}:e2e-schema-${tag}`;
    const res = await h.agentLocal(run, { agent: FRANCIS, sessionKey, message: `Save a note. ${marker(scenario, { tag })}` });
    assert.equal(res.code, 0, `openclaw agent --local exited ${res.code}: ${h.tail(res)}`);
    const results = model.toolResultsFor(scenario, { tag });
    assert.equal(results.length, 1, `the model made ${results.length} calls; errors: ${model.errors.join('; ')}`);
    return { tag, sessionKey, seen: String(results[0].result ?? ''), calls: h.readCalls(run), lines: h.logMessages(run) };
  }

  for (const toolSearch of [true, false]) {
    const mode = `Tool Search ${toolSearch ? 'on' : 'off'}`;

    it(`a model that leaves auth_token out still reaches the server with its agent's token (${mode})`, async () => {
      const { run, tokens } = await setup(`schema-omit-${toolSearch ? 'ts' : 'direct'}`, { toolSearch: toolSearch ? undefined : false });
      const { tag, sessionKey, seen, calls } = await turn(run, 'omit');
      assert.deepEqual(h.describeCalls(calls, tokens), [`claw_notes auth_token=token-of:${FRANCIS} conv=${sessionKey}`]);
      assert.equal(calls[0].args.note, `omit ${tag}`);
      assert.ok(seen.includes(`token-fp=${h.fingerprint(tokens[FRANCIS])}`), `model saw: ${h.scrub(seen.slice(0, 400))}`);
    });
  }

  it('a schema that keeps auth_token required: with the tool offered directly, the omission is refused before the hook', async () => {
    const { run, tokens } = await setup('schema-legacy-direct', { toolSearch: false });
    const { seen, calls, lines } = await turn(run, 'legacy');
    assert.deepEqual(h.describeCalls(calls, tokens), [], 'the call must not reach the server');
    // agent-core's validateToolArguments: "Validation failed for tool ...", errorKind argument-validation.
    assert.match(seen, /Validation failed for tool "claw-os__claw_legacy"/, `model saw: ${h.scrub(seen.slice(0, 400))}`);
    assert.match(seen, /auth_token/);
    // The hook never ran: no decision was logged for the call.
    assert.deepEqual(
      lines.filter((l) => l.includes('tool=claw-os__claw_legacy')),
      [],
    );
  });

  it('the same required schema through Tool Search: tool_call dispatches MCP tools without checking their schema, so the hook injects the token', async () => {
    const { run, tokens } = await setup('schema-legacy-ts');
    const { calls, lines } = await turn(run, 'legacy');
    assert.deepEqual(
      h.describeCalls(calls, tokens).map((c) => c.split(' conv=')[0]),
      [`claw_legacy auth_token=token-of:${FRANCIS}`],
    );
    assert.ok(
      lines.some((l) => l.includes(`tool=claw-os__claw_legacy agent=${FRANCIS} token-status=ok`)),
      'the hook did not log the call',
    );
  });

  it('`openclaw claw-identity doctor --mcp` flags the required schema and names the other plugin that gets the token; audit --mcp reports the same', async () => {
    const { run, tokens } = await setup('schema-doctor', { extraPlugins: [{ id: 'audit-stamp', path: h.AUDIT_STAMP_PLUGIN }] });
    const native = await h.openclaw(run, ['claw-identity', 'doctor', '--mcp'], { label: 'ci-doctor-mcp' });
    const standalone = await h.claw(run, ['doctor', '--mcp', '--config', run.configPath]);
    for (const r of [native, standalone]) {
      for (const [agent, t] of Object.entries(tokens)) assert.deepEqual(h.tokenPieces(r.stdout + r.stderr, { [agent]: t }), [], `${agent}'s token was printed`);
    }
    // Warnings only (the legacy tool, the shells on the host): exit 0.
    assert.equal(native.code, 0, h.tail(native));
    assert.equal(standalone.code, 0, standalone.stdout + standalone.stderr);
    const lines = liveLines(native.stdout);
    const tools = lines.filter((l) => l.includes(' mcp tool: ')).map((l) => l.split(' (server')[0]);
    assert.deepEqual(tools, ['ok    mcp tool: claw-os__claw_notes', 'ok    mcp tool: claw-os__claw_audio', 'warn  mcp tool: claw-os__claw_legacy']);
    assert.ok(
      lines.some((l) => /^warn {2}mcp tool: claw-os__claw_legacy \(server "claw-os"\) lists auth_token in required: /.test(l)),
      lines.join('\n'),
    );
    // OpenClaw's own plugin list: audit-stamp's before_tool_call gets the rewritten params.
    const readers = lines.filter((l) => l.includes('token readers: '));
    assert.equal(readers.length, 1, lines.join('\n'));
    assert.match(
      readers[0],
      /^info {2}token readers: OpenClaw hands these plugins the params with the real auth_token in them: ordinary before_tool_call hooks, which all run after the trusted tier, on the rewritten params: "audit-stamp"\./,
    );
    // The standalone command checks the same schemas, and says it could not ask OpenClaw about plugins.
    const alone = liveLines(standalone.stdout);
    assert.deepEqual(
      alone.filter((l) => l.includes(' mcp tool: ')),
      lines.filter((l) => l.includes(' mcp tool: ')),
    );
    assert.match(
      alone.find((l) => l.includes('token readers')),
      /^info {2}token readers: this command runs without OpenClaw/,
    );

    const audit = await h.openclaw(run, ['claw-identity', 'audit', '--mcp', '--json'], { label: 'ci-audit-mcp' });
    // OpenClaw may log before the findings: the JSON array starts a line.
    const findings = JSON.parse(audit.stdout.slice(audit.stdout.search(/^\[/m)));
    const ids = findings.map((f) => f.checkId);
    assert.ok(ids.includes('claw-identity.mcp_injected_param_required'), ids.join(', '));
    assert.ok(
      findings.some((f) => f.checkId === 'claw-identity.token_readers' && f.detail.includes('"audit-stamp"')),
      ids.join(', '),
    );
    assert.equal(h.readCalls(run).length, 0, 'doctor and audit called no tool');
  });
});
