// The identity rules (docs/rules.md) in a real OpenClaw gateway, with the
// bundled Workboard plugin enabled. One gateway for every scenario (a gateway
// is ~1.5 GB and 10-20 s to boot). Each assertion is on what OpenClaw and the
// MCP server actually did: the tool results the model saw, the calls the
// `claw-os` server received, the sessions OpenClaw reported.

import { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import * as h from './harness.mjs';
import { startModelServer, marker, fakeToken } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const ATLAS = 'pepito--atlas';
/** A configured agent with no token in the map (onMissingToken "pass"). */
const UNPROVISIONED = 'paco--intern';

/** A short nonce: no long hex runs (OpenClaw and the plugin redact those in echoed text). */
const nonce = () => crypto.randomBytes(3).toString('hex');

/** The delegation session of conversation `c` with `agent` (the escape of docs/rules.md). */
function delegationKey(agent, c) {
  let out = '';
  for (const b of Buffer.from(c, 'utf8')) {
    const ch = String.fromCharCode(b);
    if (/[a-z0-9-]/.test(ch)) out += ch;
    else if (ch === ':') out += '.';
    else out += '_' + b.toString(16).padStart(2, '0');
  }
  return `agent:${agent}:delegation:${out}`;
}

/** The first JSON object in a tool result that has `key`, however deeply wrapped. */
function findObject(text, key) {
  const seen = [];
  const walk = (v) => {
    if (typeof v === 'string') {
      const t = v.trim();
      if (t.startsWith('{') || t.startsWith('[')) {
        try {
          walk(JSON.parse(t));
        } catch {
          /* not JSON */
        }
      }
    } else if (v && typeof v === 'object') {
      if (!Array.isArray(v) && Object.hasOwn(v, key)) seen.push(v);
      for (const x of Object.values(v)) walk(x);
    }
  };
  walk(String(text ?? ''));
  return seen[0];
}

// Read two sessions' transcripts: one of another user's agent, one of the same user's.
const HISTORY = [
  { call: 'sessions_history', args: (ctx) => ({ sessionKey: ctx.params.peek }) },
  { call: 'sessions_history', args: (ctx) => ({ sessionKey: ctx.params.own }) },
];

// Workboard: create a card on the board named by `board`, then list the board named by `peek`.
const WORKBOARD = [
  { call: 'workboard_create', args: (ctx) => ({ title: `card ${ctx.params.tag}`, boardId: ctx.params.board }) },
  { call: 'workboard_list', args: (ctx) => ({ boardId: ctx.params.peek }) },
];

describe('the identity rules in a running gateway', () => {
  const s = {};
  const it = h.gatewayIt(() => s.run);

  before(async () => {
    const plugin = h.pluginDir();
    await h.openclawRuntime();
    s.run = await h.createRun('rules');
    s.model = await startModelServer({ recordFile: s.run.modelLog, scenarios: { workboard: WORKBOARD, history: HISTORY } });
    s.tokens = h.makeTokens();
    h.writeTokenMap(s.run, s.tokens);
    await h.writeConfig(s.run, {
      agents: [...h.AGENTS, UNPROVISIONED],
      gateway: true,
      modelBaseUrl: s.model.baseUrl,
      plugin: { path: h.stagePlugin(s.run, plugin), config: { tokenMapPath: s.run.tokenMapPath } },
      extra: {
        plugins: { entries: { workboard: { enabled: true } } },
        // Workboard's tools are optional: allow them on top of the default profile.
        tools: { alsoAllow: ['workboard_create', 'workboard_list'] },
      },
    });
    await h.startGateway(s.run);
  });
  after(async () => {
    await s.model?.close();
    if (s.run) await h.finishRun(s.run);
  });

  const callsFor = (tag) => h.readCalls(s.run).filter((c) => String(c.args?.note ?? c.args?.text ?? '').includes(tag));
  const waitCalls = (tag, what) => h.waitFor(() => (callsFor(tag).length ? callsFor(tag) : null), { timeoutMs: 180_000, what });
  const turn = async (agent, conversation, message) => {
    const res = await h.agentViaGateway(s.run, { agent, sessionKey: conversation, message });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
  };
  const who = (token, wrong) => h.who(token, s.tokens, { "model's wrong token": fakeToken(wrong) });

  it("conversation-id: francis's own claw_notes call carries his conversation, not the model's value", async () => {
    const tag = nonce();
    const c = `agent:${FRANCIS}:e2e-rules-${tag}`;
    await turn(FRANCIS, c, `Save a note. ${marker('notes', { wrong: `n-${tag}`, tag })}`);
    const calls = callsFor(tag);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(h.readCalls(s.run), s.tokens)}`);
    assert.equal(who(calls[0].args.auth_token, `n-${tag}`), FRANCIS);
    assert.equal(calls[0].args._conversation_id, c);
  });

  it("cross-user-send: francis's sessions_send to pepito--atlas is blocked, and the model is told why", async () => {
    const tag = nonce();
    const c = `agent:${FRANCIS}:e2e-rules-${tag}`;
    await turn(FRANCIS, c, `Ask atlas. ${marker('send', { agent: ATLAS, child: 'audio', wrong: `x-${tag}`, tag, wait: 20 })}`);
    const results = s.model.toolResultsFor('send', { tag });
    assert.equal(results.length, 1, 'francis made no tool call');
    // What the model saw: OpenClaw's "Tool ... was blocked before execution: " and our reason.
    const seen = h.strings(results[0].result).find((t) => t.includes('cross-user-send: '));
    assert.ok(seen, `the model did not see a cross-user-send reason: ${h.scrub(String(results[0].result).slice(0, 600))}`);
    const reason = seen.slice(seen.indexOf('cross-user-send: '));
    assert.match(reason, /pepito--atlas/);
    assert.match(reason, /paco--\*/, 'the reason says what to do instead');
    assert.deepEqual(callsFor(tag), [], 'atlas ran anyway');
    assert.equal(s.model.requestsFor('audio', { tag }).length, 0, "atlas's model was asked");
  });

  it("delegation-session: francis's sessions_send to dali runs in their dedicated session; dali's token and francis's conversation reach the server", async () => {
    const c = `agent:${FRANCIS}:e2e-rules-${nonce()}`;
    let tag, wrong, results;
    for (let attempt = 1; ; attempt++) {
      tag = nonce();
      wrong = `d-${tag}`;
      await turn(FRANCIS, c, `Ask dali to speak. ${marker('send', { agent: DALI, child: 'audio', wrong, tag, wait: 120 })}`);
      results = s.model.toolResultsFor('send', { tag });
      assert.equal(results.length, 1, 'francis made no tool call');
      const failed = h.transientOpenClawError(results[0].result);
      if (failed && attempt < 3) {
        h.log(`OpenClaw failed the send on its own (${failed}); sending again`);
        continue;
      }
      break;
    }
    const sent = findObject(results[0].result, 'status');
    assert.ok(sent, `no sessions_send result: ${h.scrub(String(results[0].result).slice(0, 600))}`);
    assert.equal(sent.status, 'ok', `sessions_send: ${h.scrub(JSON.stringify(sent)).slice(0, 600)}`);
    assert.equal(sent.sessionKey, delegationKey(DALI, c), 'not the dedicated session');
    const calls = callsFor(tag);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, s.tokens)}`);
    assert.equal(calls[0].tool, 'claw_audio');
    assert.equal(who(calls[0].args.auth_token, wrong), DALI);
    assert.equal(calls[0].args._conversation_id, c, "the delegated session carries francis's conversation");
    // The same conversation asking again reuses the session; another conversation gets its own.
    const tag2 = nonce();
    await turn(FRANCIS, c, `Again. ${marker('send', { agent: DALI, child: 'audio', wrong, tag: tag2, wait: 120 })}`);
    assert.equal(findObject(s.model.toolResultsFor('send', { tag: tag2 })[0]?.result, 'status')?.sessionKey, delegationKey(DALI, c));
  });

  it("spawn-redirect: francis's sessions_spawn of dali is refused with the exact sessions_send; the retry reaches dali with dali's token", async () => {
    const tag = nonce();
    const c = `agent:${FRANCIS}:e2e-rules-${tag}`;
    const wrong = `s-${tag}`;
    await turn(FRANCIS, c, `Ask dali to speak. ${marker('spawn', { agent: DALI, child: 'audio', wrong, tag })}`);
    const results = s.model.toolResultsFor('spawn', { tag });
    assert.ok(results.length >= 1, 'francis made no tool call');
    const reason = h.strings(results[0].result).find((t) => t.startsWith('spawn-redirect: '));
    assert.ok(reason, `the spawn was not redirected: ${h.scrub(String(results[0].result).slice(0, 600))}`);
    assert.ok(reason.includes(`"sessionKey":"${delegationKey(DALI, c)}"`), 'the reason names the dedicated session');
    assert.equal(results.length, 2, `the model did not retry: ${results.map((r) => r.name).join(',')}`);
    assert.equal(findObject(results[1].result, 'status')?.status, 'ok', `retry: ${h.scrub(String(results[1].result).slice(0, 600))}`);
    const calls = await waitCalls(tag, "dali's claw_audio call");
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, s.tokens)}`);
    assert.equal(who(calls[0].args.auth_token, wrong), DALI);
    assert.equal(calls[0].args._conversation_id, c);
  });

  it("workboard-scope: each user's cards land on, and are read from, their own board whatever boardId the model gave", async () => {
    const workboard = async (agent, board) => {
      let params, results;
      for (let attempt = 1; ; attempt++) {
        params = { tag: nonce(), ...board };
        await turn(agent, `agent:${agent}:e2e-rules-${params.tag}`, `Track this. ${marker('workboard', params)}`);
        results = s.model.toolResultsFor('workboard', { tag: params.tag });
        // Workboard writes OpenClaw's state database: its state lock busy under load fails the tool on its own.
        const failed = results.map((r) => h.transientOpenClawError(r.result)).find(Boolean);
        if (failed && attempt < 3) {
          h.log(`OpenClaw failed a workboard tool on its own (${failed}); tracking again`);
          continue;
        }
        break;
      }
      assert.equal(results.length, 2, `tool calls: ${results.map((r) => `${r.name}: ${h.scrub(String(r.result).slice(0, 300))}`).join(' | ')}`);
      const card = findObject(results[0].result, 'card')?.card;
      assert.ok(card, `workboard_create: ${h.scrub(String(results[0].result).slice(0, 600))}`);
      const cards = findObject(results[1].result, 'cards')?.cards;
      assert.ok(Array.isArray(cards), `workboard_list: ${h.scrub(String(results[1].result).slice(0, 600))}`);
      return { card, cards };
    };
    // atlas (user pepito) tries to write on paco's board, francis tries to read pepito's.
    const a = await workboard(ATLAS, { board: 'wb_paco', peek: 'wb_paco' });
    assert.equal(a.card.metadata?.automation?.boardId, 'wb_pepito');
    const f = await workboard(FRANCIS, { board: 'wb_pepito', peek: 'wb_pepito' });
    assert.equal(f.card.metadata?.automation?.boardId, 'wb_paco');
    assert.ok(
      f.cards.some((c) => c.id === f.card.id),
      "francis's list lacks his own card",
    );
    assert.deepEqual([...new Set(f.cards.map((c) => c.boardId))], ['wb_paco'], 'francis read another board');
    assert.ok(!f.cards.some((c) => c.id === a.card.id), "francis saw atlas's card");
  });

  it("onMissingToken pass: an agent with no token runs the call without the model's auth_token", async () => {
    const tag = nonce();
    const c = `agent:${UNPROVISIONED}:e2e-rules-${tag}`;
    await turn(UNPROVISIONED, c, `Save a note. ${marker('notes', { wrong: `u-${tag}`, tag })}`);
    const calls = await waitCalls(tag, "the unprovisioned agent's claw_notes call");
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, s.tokens)}`);
    assert.equal(calls[0].args.auth_token, undefined, `the server got ${who(calls[0].args.auth_token, `u-${tag}`)}`);
    assert.equal(calls[0].args._conversation_id, c);
  });

  it("session reads: francis can't read pepito--atlas's transcript, and can read paco--dali's", async () => {
    const tag = nonce();
    const atlasKey = `agent:${ATLAS}:e2e-rules-${tag}`;
    const daliKey = `agent:${DALI}:e2e-rules-${tag}`;
    const [atlasWord, daliWord] = [`atlasword${tag}`, `daliword${tag}`];
    await turn(ATLAS, atlasKey, `Remember ${atlasWord}. ${marker('chat', { tag: `a${tag}` })}`);
    await turn(DALI, daliKey, `Remember ${daliWord}. ${marker('chat', { tag: `d${tag}` })}`);
    await turn(FRANCIS, `agent:${FRANCIS}:e2e-rules-${tag}`, `Read them. ${marker('history', { peek: atlasKey, own: daliKey, tag })}`);
    const results = s.model.toolResultsFor('history', { tag });
    assert.equal(results.length, 2, `tool calls: ${results.map((r) => r.name).join(',')}`);
    const [peek, own] = results.map((r) => String(r.result));
    assert.ok(
      h.strings(peek).some((t) => t.includes('cross-user-send: ')),
      `not blocked: ${h.scrub(peek.slice(0, 600))}`,
    );
    assert.ok(!peek.includes(atlasWord), "atlas's transcript reached francis's model");
    assert.ok(!s.model.requestsFor('history', { tag }).some((r) => String(r.raw).includes(atlasWord)), "atlas's words reached francis's model");
    assert.ok(own.includes(daliWord), `dali's transcript did not come back: ${h.scrub(own.slice(0, 600))}`);
  });

  it("no token from the map appears outside the MCP server's record", () => {
    const hits = h.grepForTokens(s.run.root, s.tokens, { exclude: [s.run.secrets, s.run.mcp] });
    assert.deepEqual(
      hits.map((x) => `${x.agent}@${x.file.slice(s.run.root.length)}`),
      [],
      'a token leaked',
    );
  });
});
