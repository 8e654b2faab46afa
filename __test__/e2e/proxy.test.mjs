// The proxy mode in one real OpenClaw gateway, host-contained:
// claw-identity serves three MCP servers on its loopback proxy, and
// OpenClaw's `mcp.servers.<name>` each point at `http://127.0.0.1:<port>/<name>`:
//
// - `claw-os`: the claw-os fixture over streamable HTTP, the token as the
//   tool argument `auth_token` (credential `{in: "argument"}`);
// - `notes-http`: fixtures/header-server.mjs, which answers 401 to any
//   request without `Authorization: Bearer <token>` (`{in: "bearer"}`);
// - `envsrv`: fixtures/env-server.mjs over stdio, one child per agent with
//   the agent's token in its env `CLAW_TOKEN` (`{in: "env"}`).
//
// In order:
// 1. francis's own turn calls a tool of each server; dali's, as francis's
//    sub-agent (sessions_spawn; rule spawn-redirect off, so a real
//    cross-agent child runs); atlas's, as an automation (an isolated
//    agent-turn job, run by the gateway's scheduler). Each server gets the
//    calling agent's own token where it takes it: the argument, the header,
//    the env of that agent's own child (one child per agent).
// 2. The tool list the model got has no `auth_token` or `_conversation_id`
//    in any of these servers' tools (claw_legacy's required one included).
// 3. The tool-recorder fixture plugin (ordinary hooks at priority -1000, so
//    after claw-identity) sees `clh1_` handles in `auth_token`, before and
//    after, never a token.
// 4. Only the gateway can use the proxy: this test process, `curl`, and a
//    command the gateway itself starts (what a host `exec` would be; the
//    host containment denies `exec` to every agent, so no agent can run
//    one) get HTTP 403 on every method, a replayed handle too.
// 5. Inside the gateway (the recorder's probe service, the only way to
//    reach the handle checks), a spent (replayed), forged, missing,
//    mismatched (another tool, another server) and expired handle is
//    refused with an `isError` result, and nothing reaches an upstream; an
//    unspent handle in time is the control that the probe gets through.
// 6. No token, nor a 16-hex piece of one, in any params a hook saw, any
//    model request, transcript or log, nor anywhere in the run but the map
//    and the claw-os record.
//
// How it would fail: without the proxy (argument mode as before), the
// recorder sees the token in `auth_token`, and the model's tool list has
// `auth_token`; a proxy that forwarded without redeeming would let the
// probes' calls reach the upstreams; one that served any local process
// would answer curl.

import { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import * as h from './harness.mjs';
import { startModelServer, marker } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const ATLAS = 'pepito--atlas';
const RECORDER_PLUGIN = path.join(h.FIXTURES, 'recorder-plugin');
const SERVERS = ['claw-os', 'notes-http', 'envsrv'];
const PROXIED = new RegExp(`^(${SERVERS.join('|')})__`);
const HANDLE = /^clh1_[A-Za-z0-9_-]{32}$/;
/** A proxy refusal as the model would see it (rule id `proxy`). */
const REFUSAL = /^(claw-identity )?proxy: /;
/** Handles live this long here: long past a call's mint-to-redeem, short enough to wait out once. */
const TTL_MS = 30_000;
/** A short nonce: no long hex runs, which OpenClaw and the plugin redact in echoed text. */
const nonce = () => crypto.randomBytes(3).toString('hex');

describe('the MCP proxy in a real gateway', () => {
  const s = {};
  const it = h.gatewayIt(() => s.run);

  before(async () => {
    await h.openclawRuntime();
    s.run = await h.createRun('proxy');
    const { run } = s;
    s.tokens = h.makeTokens();
    h.writeTokenMap(run, s.tokens);
    s.byFp = new Map(Object.entries(s.tokens).map(([a, t]) => [h.fingerprint(t), a]));
    s.headerLog = path.join(run.mcp, 'notes-http.jsonl');
    s.envLog = path.join(run.mcp, 'envsrv.jsonl');
    // The recorder's file and probes are outside mcp/ (which the leak scan skips): they must hold no token.
    s.recorderDir = path.join(run.root, 'recorder');
    s.probeDir = path.join(s.recorderDir, 'probes');
    fs.mkdirSync(s.probeDir, { recursive: true, mode: 0o700 });
    s.recorderFile = path.join(s.recorderDir, 'hooks.jsonl');

    const clawOs = await h.startFixtureServer(run, 'claw-os-server.mjs', { args: ['--http'], env: { CLAW_OS_CALL_LOG: run.callLog }, label: 'claw-os-http' });
    const notes = await h.startFixtureServer(run, 'header-server.mjs', {
      env: { HEADER_SERVER_AUTH: 'bearer', HEADER_SERVER_LOG: s.headerLog },
      label: 'notes-http',
    });
    s.proxyPort = await h.freePort();
    s.proxyUrl = (name) => `http://127.0.0.1:${s.proxyPort}/${name}`;
    s.model = await startModelServer({ recordFile: run.modelLog, scenarios: scripts(), maxToolCallsPerTurn: 6 });
    await h.writeConfig(run, {
      gateway: true,
      modelBaseUrl: s.model.baseUrl,
      // The model gets the MCP tools themselves, schemas and all (Tool Search would offer tool_call instead).
      toolSearch: false,
      plugin: {
        path: h.stagePlugin(run, h.pluginDir()),
        config: {
          tokenMapPath: run.tokenMapPath,
          // A real cross-agent sub-agent (francis spawns dali), as gateway.test.mjs's second suite.
          rules: { spawnRedirect: { enabled: false } },
          proxy: {
            port: s.proxyPort,
            handleTtlMs: TTL_MS,
            servers: {
              'claw-os': { upstream: { url: clawOs.url }, credential: { in: 'argument' } },
              // The header server answers 401 without a credential: its tools are listed as francis.
              'notes-http': { upstream: { url: notes.url }, credential: { in: 'bearer' }, listAs: FRANCIS },
              envsrv: {
                upstream: { command: run.runtime.node, args: [path.join(h.FIXTURES, 'env-server.mjs'), '--log', s.envLog], env: { CLAW_E2E_RUN: run.runId } },
                credential: { in: 'env', name: 'CLAW_TOKEN' },
              },
            },
          },
        },
      },
      extraPlugins: [
        { id: 'tool-recorder', path: h.stagePlugin(run, RECORDER_PLUGIN, 'tool-recorder'), config: { file: s.recorderFile, probeDir: s.probeDir } },
      ],
      extra: {
        mcp: {
          servers: {
            // Replaces the harness's stdio claw-os (undefined keys are dropped).
            'claw-os': {
              command: undefined,
              args: undefined,
              env: undefined,
              url: s.proxyUrl('claw-os'),
              transport: 'streamable-http',
              requestTimeoutMs: 20_000,
            },
            'notes-http': { url: s.proxyUrl('notes-http'), transport: 'streamable-http', requestTimeoutMs: 20_000 },
            envsrv: { url: s.proxyUrl('envsrv'), transport: 'streamable-http', requestTimeoutMs: 20_000 },
          },
        },
      },
    });
    await h.startGateway(run);
  });
  after(async () => {
    await s.model?.close();
    if (s.run) await h.finishRun(s.run);
  });

  const owner = (fp) => s.byFp.get(fp) ?? `other(fp=${fp})`;
  const turn = async (agent, scenario, params = {}) => {
    const tag = params.tag ?? nonce();
    const res = await h.agentViaGateway(s.run, {
      agent,
      sessionKey: `agent:${agent}:e2e-proxy-${tag}`,
      message: `Go. ${marker(scenario, { tag, ...params })}`,
    });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    return { tag, results: s.model.toolResultsFor(scenario, { tag }) };
  };
  const noteHas = (c, text) => String(c.args?.note ?? c.args?.text ?? '').includes(text);
  /** What each upstream received for calls whose note carries `text`. */
  const upstream = (text) => ({
    clawOs: h.readCalls(s.run).filter((c) => noteHas(c, text)),
    notes: h.readJsonl(s.headerLog).filter((c) => c.event === 'call' && noteHas(c, text)),
    env: h.readJsonl(s.envLog).filter((c) => c.event === 'call' && noteHas(c, text)),
  });
  const describeUpstream = (u) =>
    JSON.stringify({
      clawOs: u.clawOs.map((c) => `${c.tool}:${h.who(c.args?.auth_token, s.tokens)}`),
      notes: u.notes.map((c) => `${c.tool}:${owner(c.fp)}`),
      env: u.env.map((c) => `${c.tool}:${owner(c.fp)}:pid${c.pid}`),
    });
  /** Every value of an object (deep) that is a string. */
  const deepStrings = (v, out = []) => {
    if (typeof v === 'string') out.push(v);
    else if (v && typeof v === 'object') for (const x of Object.values(v)) deepStrings(x, out);
    return out;
  };
  /** The three calls of a `trio` turn reached their upstreams, each with `agent`'s own credential. */
  const assertTrio = (u, agent) => {
    assert.deepEqual(
      [u.clawOs.length, u.notes.length, u.env.length],
      [1, 1, 1],
      `one call per server expected; got ${describeUpstream(u)}; proxy log: ${proxyLog().slice(-8).map(h.scrub).join(' | ')}`,
    );
    // claw-os: the token as the argument, the handle gone.
    assert.equal(u.clawOs[0].tool, 'claw_notes');
    assert.equal(h.who(u.clawOs[0].args.auth_token, s.tokens), agent);
    // notes-http: the token in the Authorization header; no credential, no handle in the arguments.
    assert.equal(owner(u.notes[0].fp), agent);
    assert.ok(u.notes[0].headerNames.includes('authorization'), u.notes[0].headerNames.join(','));
    // Nor `_conversation_id`: a server that takes its credential out of band gets no OpenClaw session key.
    assert.deepEqual(
      Object.keys(u.notes[0].args).filter((k) => k !== 'note'),
      [],
      `notes-http got arguments ${Object.keys(u.notes[0].args).join(',')}`,
    );
    // envsrv: the token in the env of the agent's own child; no handle in the arguments.
    assert.equal(owner(u.env[0].fp), agent);
    assert.deepEqual(
      Object.keys(u.env[0].args).filter((k) => k !== 'note'),
      [],
      `envsrv got arguments ${Object.keys(u.env[0].args).join(',')}`,
    );
    for (const c of [...u.clawOs, ...u.notes, ...u.env]) assert.ok(!deepStrings(c.args).some((v) => v.startsWith('clh1_')), 'a handle reached an upstream');
  };
  const proxyLog = () => h.logMessages(s.run).filter((l) => l.includes('[claw-identity]') && /proxy/i.test(l));
  s.trioTags = {};

  it("francis's own turn: each server gets francis's token where it takes it (argument, header, the env of francis's child)", async () => {
    const { tag, results } = await turn(FRANCIS, 'trio');
    assert.equal(results.length, 3, `the model made ${results.length} calls; errors: ${s.model.errors.join('; ')}`);
    for (const r of results)
      assert.ok(
        !/proxy: .*was not called|claw-identity proxy:|blocked|posture:/.test(String(r.result)),
        `${r.name}: ${h.scrub(String(r.result)).slice(0, 400)}`,
      );
    assertTrio(upstream(`trio ${tag}`), FRANCIS);
    s.trioTags[FRANCIS] = tag;
  });

  it("dali, as francis's sub-agent (sessions_spawn): each server gets dali's token, and dali's stdio child is not francis's", async () => {
    const { tag, results } = await turn(FRANCIS, 'spawn', { agent: DALI, child: 'trio' });
    const spawned = String(results[0]?.result ?? '');
    assert.ok(/accepted/.test(spawned) && /agent:paco--dali:subagent:/.test(spawned), `sessions_spawn result: ${h.scrub(spawned.slice(0, 500))}`);
    // The parent's turn returns before the child runs.
    const u = await h.waitFor(
      () => {
        const x = upstream(`trio ${tag}`);
        return x.clawOs.length && x.notes.length && x.env.length ? x : null;
      },
      { timeoutMs: 180_000, what: "the sub-agent's three calls" },
    );
    assertTrio(u, DALI);
    s.trioTags[DALI] = tag;
  });

  it("atlas, as an automation (an isolated agent-turn job the gateway's scheduler runs): each server gets atlas's token", async () => {
    const tag = nonce();
    const gw = { env: { OPENCLAW_GATEWAY_TOKEN: s.run.gatewayToken } };
    const add = await h.openclaw(
      s.run,
      [
        'automations',
        'add',
        '--name',
        `proxy-${tag}`,
        '--at',
        '1h',
        '--agent',
        ATLAS,
        '--session',
        'isolated',
        '--no-deliver',
        '--message',
        `Go. ${marker('trio', { tag })}`,
        '--json',
      ],
      { ...gw, label: 'automations-add' },
    );
    assert.equal(add.code, 0, h.tail(add));
    const id = add.json?.id ?? add.json?.job?.id ?? add.json?.jobId;
    assert.ok(id, `no job id in: ${h.scrub(add.stdout).slice(0, 600)}`);
    const run = await h.openclaw(s.run, ['automations', 'run', String(id), '--json'], { ...gw, label: 'automations-run' });
    assert.equal(run.code, 0, h.tail(run));
    const u = await h.waitFor(
      () => {
        const x = upstream(`trio ${tag}`);
        return x.clawOs.length && x.notes.length && x.env.length ? x : null;
      },
      { timeoutMs: 180_000, what: "the automation's three calls" },
    );
    assertTrio(u, ATLAS);
    s.trioTags[ATLAS] = tag;
  });

  it('one stdio child per agent, each started with its own token; the header server saw no request without a credential nor a session switching agents', () => {
    const calls = h.readJsonl(s.envLog).filter((c) => c.event === 'call');
    const pids = new Map();
    for (const c of calls) {
      const a = owner(c.fp);
      assert.ok(s.tokens[a], `an envsrv call ran in a child without an agent's token (${a})`);
      if (!pids.has(a)) pids.set(a, new Set());
      pids.get(a).add(c.pid);
    }
    assert.deepEqual([...pids.keys()].sort(), [FRANCIS, DALI, ATLAS].sort());
    const all = [...pids.values()].flatMap((p) => [...p]);
    assert.equal(new Set(all).size, all.length, `agents shared a child: ${JSON.stringify([...pids].map(([a, p]) => [a, [...p]]))}`);
    const notes = h.readJsonl(s.headerLog);
    assert.deepEqual(
      notes.filter((r) => r.status === 401).map((r) => `${r.method} ${r.rpc.join(',')}`),
      [],
      'the proxy sent the header server a request without a credential',
    );
    assert.deepEqual(
      notes.filter((r) => r.event === 'token-switch'),
      [],
      'one upstream session carried two agents',
    );
    // Every credential the header server ever saw is an agent's.
    assert.deepEqual(
      [...new Set(notes.filter((r) => r.fp).map((r) => owner(r.fp)))].filter((a) => !s.tokens[a]),
      [],
    );
  });

  it("the model's tool list has no auth_token or _conversation_id in any proxied server's tool (claw_legacy's required one included)", () => {
    const seen = new Set();
    const bad = [];
    for (const r of s.model.requests) {
      if (!r.raw?.startsWith('{')) continue;
      const body = JSON.parse(r.raw);
      for (const t of body.tools ?? []) {
        const name = t?.function?.name ?? t?.name;
        if (!PROXIED.test(String(name))) continue;
        seen.add(name);
        const p = t?.function?.parameters ?? t?.parameters ?? {};
        for (const k of ['auth_token', '_conversation_id']) {
          if (Object.hasOwn(p.properties ?? {}, k)) bad.push(`${name}: properties.${k}`);
          if ((p.required ?? []).includes(k)) bad.push(`${name}: required ${k}`);
        }
      }
    }
    for (const t of ['claw-os__claw_notes', 'claw-os__claw_audio', 'claw-os__claw_legacy', 'notes-http__whoami', 'envsrv__whoami'])
      assert.ok(seen.has(t), `the model was never offered ${t} (offered: ${[...seen].join(', ')})`);
    assert.deepEqual([...new Set(bad)], []);
  });

  it("the recorder's hooks (after claw-identity) see a single-use clh1_ handle in auth_token, before and after, never a token", () => {
    const recs = h.readJsonl(s.recorderFile).filter((r) => PROXIED.test(String(r.toolName)));
    const mine = recs.filter((r) => Object.values(s.trioTags).some((tag) => String(r.params?.note ?? '').includes(tag)));
    assert.equal(mine.filter((r) => r.hook === 'before').length, 9, `before records: ${mine.filter((r) => r.hook === 'before').length}`);
    assert.equal(mine.filter((r) => r.hook === 'after').length, 9, `after records: ${mine.filter((r) => r.hook === 'after').length}`);
    const shapes = recs.map((r) => `${r.hook} ${r.toolName}: ${HANDLE.test(String(r.params?.auth_token)) ? 'handle' : h.who(r.params?.auth_token, s.tokens)}`);
    assert.deepEqual(
      shapes.filter((x) => !x.endsWith(': handle')),
      [],
    );
    // A new handle for every call; the after hook sees the same one the call carried.
    const befores = recs.filter((r) => r.hook === 'before');
    assert.equal(new Set(befores.map((r) => r.params.auth_token)).size, befores.length, 'a handle was used for two calls');
    for (const a of recs.filter((r) => r.hook === 'after' && r.toolCallId)) {
      const b = befores.find((x) => x.toolCallId === a.toolCallId);
      if (b) assert.equal(a.params.auth_token, b.params.auth_token, `${a.toolName}: the after hook saw another handle`);
    }
    const text = fs.readFileSync(s.recorderFile, 'utf8');
    assert.deepEqual(h.tokenPieces(text, s.tokens), [], 'token material in what the hooks saw');
    // francis's spent handles, one per server, for the replays below.
    const francis = mine.filter((r) => r.hook === 'after' && String(r.params?.note ?? '').includes(s.trioTags[FRANCIS]));
    s.spent = Object.fromEntries(SERVERS.map((srv) => [srv, francis.find((r) => r.toolName.startsWith(`${srv}__`))?.params?.auth_token]));
    for (const srv of SERVERS) assert.ok(HANDLE.test(String(s.spent[srv])), `no spent ${srv} handle of francis's was recorded`);
  });

  it('only the gateway can use the proxy: this process, curl, and a command the gateway starts get 403 on every method, a replayed handle too', async () => {
    // No agent can run a command at all here: the host containment denies exec.
    assert.ok(h.readConfig(s.run).tools.deny.includes('exec'), 'exec is not denied: this case would have to run it');
    const tag = nonce();
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'outsider', version: '0' } },
    };
    const replay = (srv, tool) => ({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: tool, arguments: { note: `outside ${tag}`, auth_token: s.spent[srv] } },
    });
    for (const [srv, tool] of [
      ['claw-os', 'claw_notes'],
      ['notes-http', 'whoami'],
      ['envsrv', 'whoami'],
    ]) {
      for (const [method, body] of [
        ['POST', initialize],
        ['POST', replay(srv, tool)],
        ['GET', undefined],
        ['DELETE', undefined],
      ]) {
        const r = await request(s.proxyUrl(srv), method, body);
        assert.equal(r.status, 403, `${method} ${srv} ${body?.method ?? ''} from this process: ${r.status} ${h.scrub(r.text).slice(0, 300)}`);
        const err = JSON.parse(r.text);
        assert.equal(err.jsonrpc, '2.0');
        assert.ok(err.error && typeof err.error.message === 'string', `not a JSON-RPC error: ${h.scrub(r.text).slice(0, 300)}`);
      }
    }
    const curlArgv = (srv, body) => [
      'curl',
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-X',
      'POST',
      '-H',
      'content-type: application/json',
      '-H',
      'accept: application/json, text/event-stream',
      '--data',
      JSON.stringify(body),
      s.proxyUrl(srv),
    ];
    // Another process of the same user, as a shell would be.
    const curl = await runChild(curlArgv('claw-os', replay('claw-os', 'claw_notes')));
    assert.equal(curl.stdout.trim(), '403', `curl: ${curl.code} ${h.scrub(curl.stderr).slice(0, 300)}`);
    // A command the gateway process itself starts: what a host exec would be.
    for (const srv of SERVERS) {
      const child = await probe({ kind: 'child', argv: curlArgv(srv, initialize) });
      assert.equal(
        child.stdout.trim(),
        '403',
        `the gateway's child (pid ${child.pid} of ${child.gatewayPid}) to ${srv}: ${child.code} ${h.scrub(child.stderr).slice(0, 300)}`,
      );
      // `openclaw gateway run` runs the gateway in a child process of its own.
      assert.ok(
        h.descendants(s.run.gateway.pid).includes(child.gatewayPid),
        `the probe ran in pid ${child.gatewayPid}, not in the gateway (under ${s.run.gateway.pid})`,
      );
    }
    const u = upstream(`outside ${tag}`);
    assert.deepEqual([u.clawOs.length, u.notes.length, u.env.length], [0, 0, 0], `a refused request reached an upstream: ${describeUpstream(u)}`);
  });

  it('inside the gateway, a replayed, forged, missing, mismatched or expired handle is refused with an isError result and reaches no upstream; an unspent one in time gets through', async () => {
    // Four calls of francis's blocked by the recorder after claw-identity minted their handles.
    const { tag } = await turn(FRANCIS, 'held');
    const held = h.readJsonl(s.recorderFile).filter((r) => r.hook === 'before' && r.blocked && String(r.params?.note ?? '').includes(tag));
    assert.equal(held.length, 4, `blocked calls recorded: ${held.length}`);
    const handle = Object.fromEntries(held.map((r) => [r.params.note.split(' ').pop(), r.params.auth_token]));
    for (const k of ['a', 'b', 'c', 'd']) assert.ok(HANDLE.test(String(handle[k])), `no handle for held call ${k}`);
    const mintedD = Date.parse(held.find((r) => r.params.note.endsWith(' d')).time);
    const forged = `clh1_${crypto.randomBytes(24).toString('base64url')}`;
    const call = (name, note, auth_token) => ({ params: { name, arguments: { note: `${note} ${tag}`, ...(auth_token === undefined ? {} : { auth_token }) } } });

    const clawOs = await probe({
      kind: 'mcp',
      url: s.proxyUrl('claw-os'),
      calls: [
        call('claw_notes', 'replayed', s.spent['claw-os']),
        call('claw_notes', 'forged', forged),
        call('claw_notes', 'missing', undefined),
        call('claw_notes', 'not-a-handle', 'hx-not-a-handle'),
        call('claw_audio', 'wrong-tool', handle.a),
        call('claw_notes', 'control', handle.b),
        call('claw_notes', 'replayed-control', handle.b),
      ],
    });
    const notes = await probe({
      kind: 'mcp',
      url: s.proxyUrl('notes-http'),
      calls: [call('whoami', 'replayed', s.spent['notes-http']), call('whoami', 'wrong-server', handle.c)],
    });
    const env = await probe({ kind: 'mcp', url: s.proxyUrl('envsrv'), calls: [call('whoami', 'replayed', s.spent.envsrv)] });
    // The probes ran inside the gateway: the proxy let them in.
    for (const [srv, p] of [
      ['claw-os', clawOs],
      ['notes-http', notes],
      ['envsrv', env],
    ])
      assert.equal(p.steps?.[0]?.status, 200, `${srv}: the in-gateway probe was not let in: ${h.scrub(JSON.stringify(p)).slice(0, 600)}`);
    const outcome = (p, i) => {
      const step = p.steps[2 + i];
      const msg = step?.messages?.find((m) => m && m.id !== undefined);
      if (step?.status !== 200 || !msg) return `http ${step?.status} ${h.scrub(JSON.stringify(step)).slice(0, 300)}`;
      if (msg.error) return `json-rpc error ${msg.error.code}: ${msg.error.message}`;
      const text = (msg.result?.content ?? []).map((c) => c.text ?? '').join(' ');
      if (!msg.result?.isError) return `ok: ${h.scrub(text).slice(0, 200)}`;
      if (!REFUSAL.test(text)) return `isError: ${h.scrub(text).slice(0, 200)}`;
      // Why, in a word: the reason the proxy gives (the model and the log get the same text).
      const why = [
        ['expired', /expired/],
        ['mismatch', /made for another|another (tool|server)/],
        ['no handle', /no claw-identity handle/],
        ['unknown or spent', /unknown or already spent/],
      ].find(([, re]) => re.test(text));
      return `refused: ${why?.[0] ?? h.scrub(text).slice(0, 200)}`;
    };
    const got = {
      'claw-os replayed': outcome(clawOs, 0),
      'claw-os forged': outcome(clawOs, 1),
      'claw-os missing': outcome(clawOs, 2),
      'claw-os not-a-handle': outcome(clawOs, 3),
      'claw-os wrong-tool': outcome(clawOs, 4),
      'claw-os control': outcome(clawOs, 5).split(':')[0],
      'claw-os replayed-control': outcome(clawOs, 6),
      'notes-http replayed': outcome(notes, 0),
      'notes-http wrong-server': outcome(notes, 1),
      'envsrv replayed': outcome(env, 0),
    };
    // Expired: handle d, never redeemed, once its time is up.
    const wait = mintedD + TTL_MS + 1500 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const late = await probe({ kind: 'mcp', url: s.proxyUrl('claw-os'), calls: [call('claw_notes', 'expired', handle.d)] });
    got['claw-os expired'] = outcome(late, 0);
    assert.deepEqual(got, {
      'claw-os replayed': 'refused: unknown or spent',
      'claw-os forged': 'refused: unknown or spent',
      'claw-os missing': 'refused: no handle',
      'claw-os not-a-handle': 'refused: unknown or spent',
      'claw-os wrong-tool': 'refused: mismatch',
      'claw-os control': 'ok',
      'claw-os replayed-control': 'refused: unknown or spent',
      'notes-http replayed': 'refused: unknown or spent',
      'notes-http wrong-server': 'refused: mismatch',
      'envsrv replayed': 'refused: unknown or spent',
      'claw-os expired': 'refused: expired',
    });
    // Nothing refused reached an upstream; the control reached claw-os with francis's token.
    const u = upstream(tag);
    assert.deepEqual(
      [...u.clawOs, ...u.notes, ...u.env].map((c) => String(c.args.note).split(' ')[0]),
      ['control'],
      `upstream calls: ${describeUpstream(u)}`,
    );
    assert.equal(h.who(u.clawOs[0].args.auth_token, s.tokens), FRANCIS);
    // Each refusal is logged.
    await h.waitFor(() => proxyLog().filter((l) => / was not called: /.test(l)).length >= 10, {
      timeoutMs: 30_000,
      what: `ten proxy refusals in the log (have: ${proxyLog()
        .slice(-12)
        .map((l) => h.scrub(l).slice(0, 160))
        .join(' | ')})`,
    });
  });

  it("`openclaw claw-identity doctor --mcp` sees each server go through the proxy, its upstream answer, and what the model sees through the gateway's proxy", async () => {
    const r = await h.openclaw(s.run, ['claw-identity', 'doctor', '--mcp', '--json'], {
      env: { OPENCLAW_GATEWAY_TOKEN: s.run.gatewayToken },
      label: 'ci-doctor-mcp',
    });
    const report = JSON.parse(r.stdout.slice(r.stdout.indexOf('{')));
    const lines = report.checks.map((c) => `${c.status} ${c.check}: ${c.message}`);
    const has = (status, re) =>
      assert.ok(
        lines.some((l) => l.startsWith(status) && re.test(l)),
        `${status} ${re}:\n${lines.join('\n')}`,
      );
    for (const name of ['claw-os', 'notes-http', 'envsrv']) {
      has('ok', new RegExp(`mcp\\.servers\\.${name} goes through claw-identity's proxy`));
      has('ok', new RegExp(`through the gateway's proxy the model sees \\d+ tools of "${name}", none with auth_token`));
    }
    has('ok', /the upstream of "claw-os" answers/);
    // notes-http refuses a list without a credential, and doctor sends none.
    has('info', /the upstream of "notes-http" .*401/);
    assert.ok(!lines.some((l) => /^fail .*proxy/.test(l)), lines.join('\n'));
  });

  it('no token, nor a 16-hex piece of one, in any model request, transcript, log or hook record; none anywhere in the run but the map and the claw-os record', async () => {
    assert.ok(s.model.requests.length > 6, `only ${s.model.requests.length} model requests`);
    assert.deepEqual(
      s.model.requests.flatMap((r, i) => h.tokenPieces(r.raw, s.tokens).map((a) => `request ${i}: ${a}`)),
      [],
    );
    // The model never sees a handle either: it is written after the model, and its results carry none.
    assert.deepEqual(s.model.requests.map((r, i) => (r.raw.includes('clh1_') ? `request ${i}` : null)).filter(Boolean), []);
    const events = await h.transcriptEvents(s.run);
    assert.ok(events.length > 0, 'no transcript was stored');
    assert.deepEqual(
      events.flatMap((e) => h.tokenPieces(e.text, s.tokens).map((a) => `${e.agent} ${e.table} ${e.seq}: ${a}`)),
      [],
    );
    assert.deepEqual(h.tokenPieces(h.logMessages(s.run).join('\n'), s.tokens), []);
    assert.deepEqual(h.tokenPieces(fs.readFileSync(s.recorderFile, 'utf8'), s.tokens), []);
    // The header and env servers record fingerprints only: their logs (in mcp/) hold no token either.
    for (const f of [s.headerLog, s.envLog]) assert.deepEqual(h.tokenPieces(fs.readFileSync(f, 'utf8'), s.tokens), [], path.basename(f));
    const hits = h.grepForTokens(s.run.root, s.tokens, { exclude: [s.run.secrets, s.run.callLog] });
    assert.deepEqual(
      hits.map((x) => `${path.relative(s.run.root, x.file)}: ${x.agent}`),
      [],
    );
  });

  /** Ask the recorder's probe service, in the gateway, to run `req`; its answer. */
  async function probe(req) {
    const id = `${Date.now()}-${nonce()}`;
    const tmp = path.join(s.probeDir, `${id}.tmp`);
    fs.writeFileSync(tmp, JSON.stringify(req), { mode: 0o600 });
    fs.renameSync(tmp, path.join(s.probeDir, `${id}.req.json`));
    const res = path.join(s.probeDir, `${id}.res.json`);
    await h.waitFor(() => fs.existsSync(res), { timeoutMs: 60_000, intervalMs: 100, what: `the recorder's answer to probe ${req.kind}` });
    return JSON.parse(fs.readFileSync(res, 'utf8'));
  }
});

/** One HTTP request from this process to the proxy. */
function request(url, method, body) {
  return new Promise((resolve) => {
    const u = new URL(url);
    const data = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const headers = { accept: 'application/json, text/event-stream', ...(data ? { 'content-type': 'application/json', 'content-length': data.length } : {}) };
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method, headers, timeout: 15_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: null, text: String(e?.message ?? e) }));
    req.end(data ?? undefined);
  });
}

/** A command run from this test process (another process of the gateway's user). */
function runChild(argv) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.once('error', (e) => resolve({ code: null, stdout, stderr: String(e?.message ?? e) }));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The scripted model's turns. */
function scripts() {
  const tagOf = (c) => c.params.tag ?? 'untagged';
  return {
    // One tool of each proxied server, the model passing no credential (its schema has none).
    trio: [
      { call: 'claw-os__claw_notes', args: (c) => ({ note: `trio ${tagOf(c)}` }) },
      { call: 'notes-http__whoami', args: (c) => ({ note: `trio ${tagOf(c)}` }) },
      { call: 'envsrv__whoami', args: (c) => ({ note: `trio ${tagOf(c)}` }) },
    ],
    // Four claw_notes calls that the recorder blocks after claw-identity minted their handles.
    held: ['a', 'b', 'c', 'd'].map((k) => ({ call: 'claw-os__claw_notes', args: (c) => ({ note: `recorder-block ${tagOf(c)} ${k}` }) })),
  };
}
