// In a real OpenClaw gateway: the token map stays out of every model's
// reach, and no token reaches the stored transcripts. One gateway for every
// case, OpenClaw's default tools and exec policy, the plugin's defaults
// (protectMap "paths") but posture "warn": this suite tests the path guard
// and the redaction as the second line they are, behind containment, for
// agents that have host tools (`exec cat` of the map); under "enforce"
// such agents get no token at all (e2e/posture.test.mjs). Each assertion
// is on what really happened: the tool results the model saw, the requests
// OpenClaw sent to the model server, the map file on disk, the transcripts
// in OpenClaw's state.
//
// The map lives under the run's HOME (the gateway's `~`), so `~/…` reaches it.
//
// Not tested, and the documented limit (docs/threat-model.md): a shell
// reaches the file in forms no string match can see, e.g.
// `exec { command: "base64 <map>" }`; only OpenClaw's sandbox (or
// protectMap "strict") closes that.

import { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as h from './harness.mjs';
import { startModelServer, marker } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const ATLAS = 'pepito--atlas';

/** A short nonce: no long hex runs (OpenClaw and the plugin redact those in echoed text). */
const nonce = () => crypto.randomBytes(3).toString('hex');

/** JSON with sorted keys, to compare argument objects however they were serialized. */
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

const { tokenPieces } = h;

describe("the token map out of the models' reach", () => {
  const s = {};
  const it = h.gatewayIt(() => s.run);

  before(async () => {
    const plugin = h.pluginDir();
    await h.openclawRuntime();
    s.run = await h.createRun('map-guard');
    // The map under HOME (0600 in a 0700 dir), so `~/secrets/…` names it.
    s.run.secrets = path.join(s.run.home, 'secrets');
    fs.mkdirSync(s.run.secrets, { mode: 0o700 });
    s.run.tokenMapPath = path.join(s.run.secrets, 'token-map.json');
    s.map = s.run.tokenMapPath;
    s.mapDir = s.run.secrets;
    s.tokens = h.makeTokens();
    h.writeTokenMap(s.run, s.tokens);
    s.scripts = scripts(s);
    s.model = await startModelServer({ recordFile: s.run.modelLog, maxToolCallsPerTurn: 12, scenarios: s.scripts });
    await h.writeConfig(s.run, {
      gateway: true,
      modelBaseUrl: s.model.baseUrl,
      // Not contained, on purpose (see the top of this file).
      contain: false,
      plugin: { path: h.stagePlugin(s.run, plugin), config: { tokenMapPath: s.map, posture: 'warn' } },
    });
    s.workspace = path.join(s.run.workspaces, FRANCIS);
    // Links in francis's workspace: to the map, and to its directory.
    fs.symlinkSync(s.map, path.join(s.workspace, 'map-link'));
    fs.symlinkSync(s.mapDir, path.join(s.workspace, 'secrets-link'));
    // A workspace file a patch tries to rename over the map.
    fs.writeFileSync(path.join(s.workspace, 'notes.txt'), 'x\n');
    // From the workspace (<root>/workspaces/<agent>) up to <root>/home/secrets.
    s.relMap = path.relative(s.workspace, s.map);
    assert.ok(s.relMap.startsWith('../'), s.relMap);
    await h.startGateway(s.run);
  });
  after(async () => {
    await s.model?.close();
    if (s.run) await h.finishRun(s.run);
  });

  const turn = async (agent, message) => {
    const res = await h.agentViaGateway(s.run, { agent, sessionKey: `agent:${agent}:e2e-map-${nonce()}`, message });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
  };
  const mapState = () => ({ bytes: fs.readFileSync(s.map), ino: fs.statSync(s.map).ino, dir: fs.readdirSync(s.mapDir).sort() });

  /**
   * Plays a script of path-tool calls in one turn. Returns the calls whose
   * result the model saw is not a map-access refusal (scrubbed), and throws
   * if the model did not make every call.
   */
  async function notRefused(scenario) {
    const tag = nonce();
    await turn(FRANCIS, `Look at the secrets. ${marker(scenario, { tag })}`);
    const calls = s.model
      .requestsFor(scenario, { tag })
      .filter((r) => r.decision.kind === 'tool')
      .map((r) => r.decision);
    const results = s.model.toolResultsFor(scenario, { tag });
    const expected = s.scripts[scenario].length;
    assert.equal(calls.length, expected, `the model made ${calls.length} of ${expected} calls; errors: ${s.model.errors.join('; ')}`);
    assert.equal(results.length, expected, `${results.length} of ${expected} calls have a result`);
    const out = [];
    results.forEach((r, i) => {
      const call = calls[i];
      const what = `${call.inner ?? call.name} ${h.scrub(JSON.stringify(call.inner ? call.args.args : call.args)).slice(0, 160)}`;
      if (!h.strings(r.result).some((t) => t.includes('map-access: '))) out.push(`${what} -> ${h.scrub(String(r.result)).slice(0, 300)}`);
    });
    return out;
  }

  it('map-access: read, ls, write, edit and apply_patch on the map are refused, through an absolute path, ~, .. and symlinks; the map is unchanged', async () => {
    const before = mapState();
    let missed;
    let now;
    try {
      // Both turns run before asserting, so a failure lists every call that got through.
      missed = [...(await notRefused('mapreads')), ...(await notRefused('mapwrites'))];
    } finally {
      now = mapState();
      // A failed guard must not cascade into the other cases: put the map back.
      if (!now.bytes.equals(before.bytes) || now.ino !== before.ino) h.writeTokenMap(s.run, s.tokens);
    }
    assert.deepEqual(
      { missed, sameContent: now.bytes.equals(before.bytes), sameInode: now.ino === before.ino, mapDir: now.dir },
      { missed: [], sameContent: true, sameInode: true, mapDir: before.dir },
      'calls not refused by map-access, or the map or its directory changed',
    );
  });

  it('redaction: exec cat of the map reaches the model with fingerprints, in any letter case, and no token', async () => {
    const tag = nonce();
    await turn(FRANCIS, `Show me the file. ${marker('mapcat', { tag })}`);
    const results = s.model.toolResultsFor('mapcat', { tag });
    assert.equal(results.length, 1, 'francis made no exec call');
    const text = String(results[0].result);
    // The command ran: the map's agent ids came back.
    for (const agent of h.AGENTS) assert.ok(text.includes(agent), `exec output lacks ${agent}: ${h.scrub(text.slice(0, 600))}`);
    assert.deepEqual(tokenPieces(text, s.tokens), [], 'token material in the exec result');
    for (const [agent, t] of Object.entries(s.tokens)) {
      const shown = text.split(`sha256:${h.fingerprint(t)}`).length - 1;
      // Once as written, once upper-cased (`tr a-f A-F`).
      assert.ok(shown >= 2, `${agent}'s fingerprint shown ${shown} times, want 2: ${h.scrub(text.slice(0, 600))}`);
    }
  });

  it("redaction: a sessions_send message carrying tokens reaches dali's model with fingerprints only", async () => {
    let tag, results, dali;
    for (let attempt = 1; ; attempt++) {
      tag = nonce();
      await turn(FRANCIS, `Pass this on. ${marker('leaksend', { tag })}`);
      results = s.model.toolResultsFor('leaksend', { tag });
      assert.equal(results.length, 1, 'francis made no sessions_send call');
      dali = s.model.requestsFor('chat', { tag });
      if (dali.length === 0 && attempt < 3 && h.transientOpenClawError(results[0].result)) {
        h.log(`OpenClaw failed the send on its own (${h.transientOpenClawError(results[0].result)}); sending again`);
        continue;
      }
      break;
    }
    assert.ok(dali.length >= 1, `dali's model was not asked; francis saw: ${h.scrub(String(results[0].result)).slice(0, 600)}`);
    for (const r of dali) {
      assert.deepEqual(tokenPieces(r.raw, s.tokens), [], "token material in a request of dali's turn");
      assert.ok(r.raw.includes(`sha256:${h.fingerprint(s.tokens[ATLAS])}`), "dali's model does not see atlas's token's fingerprint");
      assert.ok(r.raw.includes(`sha256:${h.fingerprint(s.tokens[FRANCIS])}`), "dali's model does not see francis's (upper-cased) token's fingerprint");
    }
  });

  it("a backgrounded exec of the map: its completion turn reaches the model without the map's tokens", async () => {
    const tag = nonce();
    const sessionKey = `agent:${FRANCIS}:e2e-map-bg-${tag}`;
    const before = s.model.requests.length;
    const res = await h.agentViaGateway(s.run, { agent: FRANCIS, sessionKey, message: `Show me the file, in the background. ${marker('mapbg', { tag })}` });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    const started = s.model.toolResultsFor('mapbg', { tag });
    assert.equal(started.length, 1, 'francis made no exec call');
    assert.match(String(started[0].result), /Command still running/, 'the exec was not backgrounded');
    // tools.exec.notifyOnExit (on by default): the end of the command wakes the session for one more turn.
    const notice = await h.waitFor(
      () => s.model.requests.slice(before).find((r) => /An async command (completion event was triggered|you ran earlier has completed)/.test(r.raw)),
      { timeoutMs: 120_000, what: 'the exec completion turn' },
    );
    assert.deepEqual(tokenPieces(notice.raw, s.tokens), [], "token material in the completion turn's request");
  });

  it('no token, nor any 16-hex piece of one, in any request OpenClaw sent to the model', () => {
    // The scripted model's own tool-call arguments come back in its history
    // (the leaksend call carries tokens because the test wrote them there):
    // those are the model's words, not something OpenClaw gave it, so the
    // scan leaves out exactly the arguments the model server emitted.
    const emitted = new Set(s.model.requests.filter((r) => r.decision?.kind === 'tool').map((r) => canonical(r.decision.args)));
    const hits = [];
    s.model.requests.forEach((r, i) => {
      let text = r.raw;
      try {
        const body = JSON.parse(r.raw);
        for (const m of body.messages ?? []) {
          for (const tc of m.role === 'assistant' && Array.isArray(m.tool_calls) ? m.tool_calls : []) {
            let args;
            try {
              args = JSON.parse(tc.function?.arguments ?? '');
            } catch {
              continue;
            }
            if (emitted.has(canonical(args))) tc.function.arguments = "<the model's own arguments>";
          }
        }
        text = JSON.stringify(body);
      } catch {
        /* not JSON: scan it whole */
      }
      const owners = tokenPieces(text, s.tokens);
      if (owners.length) hits.push(`request ${i} (${r.scenario ?? '-'} ${r.params?.tag ?? ''}): ${owners.join(',')}`);
    });
    assert.ok(s.model.requests.length > 10, `only ${s.model.requests.length} requests recorded`);
    assert.deepEqual(hits, [], 'token material reached the model');
  });

  // After the check above on purpose: this prompt carries a token to the model itself.
  it('a token the user pastes into a prompt is stored as its fingerprint (before_message_write)', async () => {
    const tag = nonce();
    s.pastedSession = `agent:${FRANCIS}:e2e-map-paste-${tag}`;
    const res = await h.agentViaGateway(s.run, {
      agent: FRANCIS,
      sessionKey: s.pastedSession,
      message: `Keep this safe: ${s.tokens[DALI]}. ${marker('chat', { tag })}`,
    });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    const stored = (await h.transcriptEvents(s.run)).filter((e) => e.text.includes(`[[e2e:chat tag=${tag}]]`) && e.text.includes('"role":"user"'));
    assert.equal(stored.length, 1, `the prompt was stored ${stored.length} times`);
    assert.ok(stored[0].text.includes(`Keep this safe: sha256:${h.fingerprint(s.tokens[DALI])}.`), `stored as: ${h.scrub(stored[0].text.slice(0, 400))}`);
  });

  it('no token, nor any 16-hex piece of one, in any transcript OpenClaw stored', async () => {
    const events = await h.transcriptEvents(s.run);
    // The cases above all left their mark: exec cat, the sessions_send with tokens, the backgrounded exec and its completion turn.
    const has = (re) => events.some((e) => re.test(e.text));
    assert.ok(has(/"toolName":"exec"/) && has(/"name":"sessions_send"/), 'the exec and sessions_send calls are not in the transcripts');
    assert.ok(has(/"background":true/), 'the backgrounded exec is not in the transcripts');
    assert.ok(has(/"sourceTool":"exec"/), 'the exec completion turn is not in the transcripts');
    const hits = events
      .filter((e) => tokenPieces(e.text, s.tokens).length)
      .map((e) => `${e.agent} ${e.table} ${e.session}#${e.seq}: ${tokenPieces(e.text, s.tokens).join(',')}`);
    assert.deepEqual(hits, [], 'token material in a stored transcript');
  });

  it("nor anywhere else in OpenClaw's state, but its own trace of the text a user or the model wrote (no hook reaches it)", async () => {
    // OpenClaw's trajectory capture (on by default, OPENCLAW_TRAJECTORY=0 turns
    // it off) and its task records keep the prompt and the model's own
    // tool-call arguments as written: here the pasted token and the tokens the
    // test put in the model's sessions_send. No tool output, no injected token.
    const written = /Keep this safe: |Keep these: /;
    const hits = (await h.stateRecords(s.run))
      .filter((r) => tokenPieces(r.text, s.tokens).length)
      .filter((r) => !(['trajectory_runtime_events', 'task_runs'].includes(r.table) && written.test(r.text)))
      .map((r) => `${r.file.slice(s.run.root.length)}${r.table ? ` ${r.table}` : ''}: ${tokenPieces(r.text, s.tokens).join(',')}`);
    assert.deepEqual(hits, [], "token material in OpenClaw's state");
  });
});

/** The scripted model's attempts; paths are read from the run state `st` when each call is made. */
function scripts(st) {
  const reads = [
    { call: 'read', args: () => ({ path: st.map }) },
    { call: 'ls', args: () => ({ path: st.mapDir }) },
    { call: 'read', args: () => ({ path: '~/secrets/token-map.json' }) },
    { call: 'ls', args: () => ({ path: '~/secrets' }) },
    { call: 'read', args: () => ({ path: st.relMap }) },
    { call: 'read', args: () => ({ path: 'map-link' }) },
    { call: 'read', args: () => ({ path: 'secrets-link/token-map.json' }) },
  ];
  const patch = (body) => ({ input: `*** Begin Patch\n${body}\n*** End Patch` });
  const writes = [
    { call: 'write', args: () => ({ path: st.map, content: '{}' }) },
    { call: 'edit', args: () => ({ path: st.map, edits: [{ oldText: `"${DALI}"`, newText: `"${DALI}x"` }] }) },
    { call: 'apply_patch', args: () => patch(`*** Update File: ${st.map}\n@@\n-{\n+{ `) },
    { call: 'apply_patch', args: () => patch(`*** Delete File: ${st.map}`) },
    { call: 'apply_patch', args: () => patch(`*** Add File: ${path.join(st.mapDir, 'planted.json')}\n+{}`) },
    { call: 'apply_patch', args: () => patch(`*** Update File: notes.txt\n*** Move to: ${st.map}\n@@\n-x\n+{}`) },
    { call: 'write', args: () => ({ path: st.relMap, content: '{}' }) },
    { call: 'write', args: () => ({ path: 'map-link', content: '{}' }) },
    { call: 'write', args: () => ({ path: '~/secrets/planted.json', content: '{}' }) },
  ];
  return {
    mapreads: reads,
    mapwrites: writes,
    // Case-insensitive matching: the map as written, then upper-cased.
    mapcat: [{ call: 'exec', args: () => ({ command: `cat '${st.map}' && tr a-f A-F < '${st.map}'` }) }],
    // The same, backgrounded: its output comes back as a completion notice, not a tool result.
    mapbg: [{ call: 'exec', args: () => ({ command: `sleep 1; cat '${st.map}'`, background: true }) }],
    // A model that holds tokens (here: the test put them in its mouth) passes
    // atlas's, and francis's upper-cased, on to dali.
    leaksend: [
      {
        call: 'sessions_send',
        args: (ctx) => ({
          agentId: DALI,
          message: `Keep these: ${st.tokens[ATLAS]} and ${st.tokens[FRANCIS].toUpperCase()}. ${marker('chat', { tag: ctx.params.tag })}`,
          timeoutSeconds: 120,
        }),
      },
    ],
  };
}
