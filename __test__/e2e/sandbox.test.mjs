// The claw-identity sandbox backend in a real OpenClaw gateway: two agents
// select it (agents.entries.<id>.sandbox: {mode: "all", backend:
// "claw-identity"}), one with workspaceAccess "rw" (its own workspace), one
// with OpenClaw's default "none" (a copy under the state dir). Their exec
// runs under bubblewrap; the model tries every way to the token map, the
// config and the gateway. What must hold: exec works in the workspace (a
// PTY, a background process that `process` writes to, polls and kills);
// no piece of a token, as written, reversed, hex or base64, reaches any
// model request; OpenClaw's config is unchanged; the gateway lives. Then
// bwrap is taken away (sandbox.bwrap names no file): the turn is refused
// with the reason, and the command runs nowhere.
//
// The run lives under /var/tmp: a sandbox has a /tmp of its own, so a map
// under /tmp would be out of sight anyway and prove nothing. The test's own
// records (the model's log, the MCP call log, CLI output, OpenClaw's log)
// are hidden with sandbox.hide, as an operator would hide such files.

import { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as h from './harness.mjs';
import { startModelServer, marker } from './fixtures/model-server.mjs';
import { leaks } from '../helpers/leaks.mjs';
import { sandboxNode } from '../helpers/sandbox-node.mjs';

const FRANCIS = 'paco--francis'; // workspaceAccess "rw"
const DALI = 'paco--dali'; // workspaceAccess "none" (OpenClaw's default)
const ATLAS = 'pepito--atlas'; // the defaults' sandbox: its workspace is another agent's
const nonce = () => crypto.randomBytes(3).toString('hex');
const sha = (p) => crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex');

/** The session id exec reports for a backgrounded command. */
function sessionIdIn(text) {
  for (const t of h.strings(text)) {
    const m = /"sessionId"\s*:\s*"([^"]+)"/.exec(t) ?? /\bsession(?:Id)?[\s:=]+([A-Za-z0-9][A-Za-z0-9_-]{3,})/.exec(t);
    if (m) return m[1];
  }
  return undefined;
}

describe('the claw-identity sandbox in a real gateway', () => {
  const s = {};
  const it = h.gatewayIt(() => s.run);

  before(async () => {
    await h.openclawRuntime();
    s.run = await h.createRun('sandbox', { base: '/var/tmp' });
    // The map where the plugin looks by default: ~/.config/micelclaw (0600 in 0700).
    s.mapDir = path.join(s.run.home, '.config', 'micelclaw');
    fs.mkdirSync(s.mapDir, { recursive: true, mode: 0o700 });
    s.run.secrets = s.mapDir;
    s.run.tokenMapPath = path.join(s.mapDir, 'agent-tokens.json');
    s.map = s.run.tokenMapPath;
    s.tokens = h.makeTokens();
    h.writeTokenMap(s.run, s.tokens);
    s.scripts = scripts(s);
    s.model = await startModelServer({ recordFile: s.run.modelLog, maxToolCallsPerTurn: 12, scenarios: s.scripts });
    const sandbox = (access) => ({ mode: 'all', backend: 'claw-identity', workspaceAccess: access });
    await h.writeConfig(s.run, {
      gateway: true,
      modelBaseUrl: s.model.baseUrl,
      // Every agent in the plugin's sandbox (agents.defaults), Code Mode off,
      // and the owned MCP tools allowed in sandboxed sessions: contained, so
      // posture "enforce" serves tokens (helpers/posture.mjs).
      contain: 'sandbox',
      plugin: {
        path: h.stagePlugin(s.run, h.pluginDir()),
        // The run's tmp is OpenClaw's TMPDIR: it plays the part of /tmp, which no sandbox sees.
        config: { tokenMapPath: s.map, sandbox: { hide: [s.run.mcp, s.run.model, s.run.proc, s.run.logs, s.run.tmp] } },
      },
      // dali's "none" is written out: the defaults' "rw" would fill it in.
      extra: { agents: { entries: { [FRANCIS]: { sandbox: sandbox('rw') }, [DALI]: { sandbox: sandbox('none') } } } },
    });
    s.workspace = path.join(s.run.workspaces, FRANCIS);
    s.atlasNotes = h.randomToken();
    fs.writeFileSync(path.join(s.run.workspaces, ATLAS, 'notes.md'), s.atlasNotes, { mode: 0o600 });
    await h.startGateway(s.run);
    // OpenClaw may settle its own config at start; from here on nobody may change it.
    s.configHash = sha(s.run.configPath);
    s.secrets = { ...s.tokens, gateway: s.run.gatewayToken, atlasNotes: s.atlasNotes };
  });
  after(async () => {
    await s.model?.close();
    if (s.run) await h.finishRun(s.run);
  });

  /** One turn of `agent` playing `scenario`; its tool results, in order. */
  async function play(agent, scenario, { expectFail = false } = {}) {
    const tag = nonce();
    const res = await h.agentViaGateway(s.run, {
      agent,
      sessionKey: `agent:${agent}:e2e-sbx-${tag}`,
      message: `Work in the shell. ${marker(scenario, { tag })}`,
    });
    if (!expectFail) assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    const results = s.model.toolResultsFor(scenario, { tag }).map((r) => h.strings(r.result).join('\n'));
    return { res, results, tag };
  }

  it("exec runs in francis's own workspace, in the sandbox, and writes there; write, edit and read work through the bridge", async () => {
    const { results } = await play(FRANCIS, 'work');
    assert.equal(results.length, 4, `francis made ${results.length} calls; model errors: ${s.model.errors.join('; ')}`);
    assert.match(results[3], /edited-through-the-bridge/, results.map((r) => h.scrub(r).slice(0, 200)).join(' | '));
    assert.equal(fs.readFileSync(path.join(s.workspace, 'written.md'), 'utf8'), 'edited-through-the-bridge\n');
    assert.match(results[0], /made-in-the-sandbox/);
    assert.ok(results[0].includes(fs.realpathSync(s.workspace)), h.scrub(results[0]).slice(0, 600));
    // Its own PID namespace: the shell's parent is PID 1, bwrap's.
    assert.match(results[0], /^ppid=1$/m, h.scrub(results[0]).slice(0, 600));
    assert.equal(fs.readFileSync(path.join(s.workspace, 'made.txt'), 'utf8'), 'made-in-the-sandbox\n');
  });

  it("in the sandbox posture, francis's own claw_notes call (an MCP tool the sandbox's tool policy allows) carries his token", async () => {
    const tag = nonce();
    const res = await h.agentViaGateway(s.run, {
      agent: FRANCIS,
      sessionKey: `agent:${FRANCIS}:e2e-sbx-${tag}`,
      message: `Save a note. ${marker('notes', { wrong: `n-${tag}`, tag })}`,
    });
    assert.equal(res.code, 0, `openclaw agent exited ${res.code}: ${h.tail(res)}`);
    const calls = h.readCalls(s.run).filter((c) => String(c.args?.note ?? '').includes(tag));
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(h.readCalls(s.run), s.tokens)}; model errors: ${s.model.errors.join('; ')}`);
    assert.equal(h.who(calls[0].args.auth_token, s.tokens), FRANCIS);
    const line = h.logMessages(s.run).find((l) => l.includes('[claw-identity] posture: every agent is contained'));
    assert.ok(line?.includes(`${FRANCIS}: sandbox, `) && line.includes(`${ATLAS}: sandbox`), `no contained line: ${h.scrub(String(line))}`);
  });

  it('dali (workspaceAccess "none") runs in its sandbox copy, not in its workspace', async () => {
    const { results } = await play(DALI, 'work');
    assert.equal(results.length, 4);
    assert.match(results[0], /made-in-the-sandbox/);
    assert.ok(results[0].includes(path.join(fs.realpathSync(s.run.state), 'sandboxes')), h.scrub(results[0]).slice(0, 600));
    assert.equal(fs.existsSync(path.join(s.run.workspaces, DALI, 'made.txt')), false);
  });

  it("the map, the config, another agent's workspace: nothing shows, however the command reads it", async () => {
    const { results } = await play(FRANCIS, 'escape');
    assert.equal(results.length, s.scripts.escape.length, `${results.length} of ${s.scripts.escape.length} calls have a result`);
    const found = results
      .map((r, i) => [i, leaks(r, s.secrets)])
      .filter(([, o]) => o.length)
      .map(([i, o]) => `call ${i}: ${o.join(', ')}`);
    assert.deepEqual(found, []);
    // The commands ran, in the sandbox: the map's directory is there, and
    // empty; the search over the whole run found francis's own file.
    assert.match(results[0], /^\.\.?$/m, h.scrub(results[0]).slice(0, 300));
    assert.doesNotMatch(results[0], /agent-tokens\.json/);
    assert.ok(results[5].includes(path.join(fs.realpathSync(s.workspace), 'made.txt')), h.scrub(results[5]).slice(0, 300));
  });

  it("writing the config, start-up files and the plugin fails, and OpenClaw's config is unchanged", async () => {
    const before = { map: sha(s.map), bashrc: fs.existsSync(path.join(s.run.home, '.bashrc')) };
    const { results } = await play(FRANCIS, 'write');
    assert.equal(results.length, 1);
    assert.match(results[0], /Read-only file system/);
    assert.equal(sha(s.run.configPath), s.configHash, "OpenClaw's config changed");
    assert.deepEqual({ map: sha(s.map), bashrc: fs.existsSync(path.join(s.run.home, '.bashrc')) }, before);
    assert.equal(fs.existsSync(path.join(s.workspace, '.openclaw', 'extensions', 'evil')), false, 'a plugin was planted in the workspace');
  });

  it('the gateway is out of reach: no connection with its token, no signal', async () => {
    const { results } = await play(FRANCIS, 'gateway');
    assert.equal(results.length, 1);
    assert.match(results[0], /refused ECONNREFUSED/);
    assert.match(results[0], /No such process/);
    assert.equal(s.run.gateway.alive(), true);
  });

  it('a PTY, and a background process that process writes to, polls and kills', async () => {
    const { results, tag } = await play(FRANCIS, 'processes');
    assert.equal(
      results.length,
      s.scripts.processes({ previous: [], params: {} }).length,
      `results: ${results.map((r) => h.scrub(r).slice(0, 200)).join(' | ')}`,
    );
    assert.match(results[0], /pty=\/dev\/pts\/\d+/, h.scrub(results[0]).slice(0, 400));
    assert.ok(sessionIdIn(results[1]), `no session id in ${h.scrub(results[1]).slice(0, 400)}`);
    assert.match(
      results.slice(2).join('\n'),
      /got-hello/,
      results
        .slice(2)
        .map((r) => h.scrub(r).slice(0, 300))
        .join(' | '),
    );
    // Killed: no process of it is left on the host (OpenClaw's kill is
    // asynchronous: it signals, then escalates; the wait is a safety net).
    const left = () => {
      const out = [];
      for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
        try {
          if (fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(`sleep-${tag}`)) out.push(pid);
        } catch {
          /* gone */
        }
      }
      return out;
    };
    await h.waitFor(() => left().length === 0, { timeoutMs: 60_000, intervalMs: 200, what: 'the killed background command to end' });
  });

  it('no token, nor any piece of one (reversed, hex, base64), in any request OpenClaw sent to the model', () => {
    const hits = [];
    s.model.requests.forEach((r, i) => {
      const owners = leaks(r.raw, s.tokens);
      if (owners.length) hits.push(`request ${i} (${r.scenario ?? '-'}): ${owners.join(',')}`);
    });
    assert.ok(s.model.requests.length > 6, `only ${s.model.requests.length} requests recorded`);
    assert.deepEqual(hits, []);
  });

  it('without bwrap, the turn is refused with the reason and the command runs nowhere', async () => {
    const marker_ = path.join(s.workspace, 'ran-without-a-sandbox');
    h.patchConfig(s.run, { plugins: { entries: { 'claw-identity': { config: { sandbox: { bwrap: '/nonexistent/bwrap' } } } } } });
    // The gateway applies plugin config changes hot; wait until the plugin runs with it.
    let res;
    await h.waitFor(
      async () => {
        ({ res } = await play(FRANCIS, 'noop', { expectFail: true }));
        return /sandbox\.bwrap is \/nonexistent\/bwrap/.test(`${res.stdout}\n${res.stderr}`);
      },
      { timeoutMs: 120_000, intervalMs: 2000, what: 'the refusal after the config change' },
    );
    const { res: refused, results } = await play(FRANCIS, 'host-marker', { expectFail: true });
    const text = `${refused.stdout}\n${refused.stderr}`;
    assert.match(text, /claw-identity sandbox: sandbox\.bwrap is \/nonexistent\/bwrap/, h.tail(refused));
    assert.match(text, /did not run, in the sandbox or on the host/, h.tail(refused));
    assert.deepEqual(results, [], 'exec ran');
    assert.equal(fs.existsSync(marker_), false, 'the command ran on the host');
    assert.equal(s.run.gateway.alive(), true);
  });
});

/** The scripted model's calls; paths come from the run state `st`. */
function scripts(st) {
  // Commands are made when the model calls (the gateway's PID is known by then).
  const exec = (command, extra = {}) => ({ call: 'exec', args: () => ({ command: typeof command === 'function' ? command() : command, ...extra }) });
  const node = (js, ...args) => `'${sandboxNode()}' -e '${js}' ${args.join(' ')}`;
  return {
    work: [
      exec(`echo made-in-the-sandbox > made.txt && cat made.txt && pwd -P && echo "ppid=$PPID"`),
      // The file tools go through OpenClaw's sandbox file bridge: writes run in the sandbox.
      { call: 'write', args: () => ({ path: 'written.md', content: 'written-through-the-bridge\n' }) },
      { call: 'edit', args: () => ({ path: 'written.md', edits: [{ oldText: 'written', newText: 'edited' }] }) },
      { call: 'read', args: () => ({ path: 'written.md' }) },
    ],
    escape: [
      exec(`ls -a '${st.mapDir}'`),
      exec(`cat '${st.map}'`),
      exec(`base64 '${st.map}'; rev '${st.map}'; od -An -tx1 '${st.map}'; xxd -p '${st.map}'`),
      exec(`cat /proc/1/root'${st.map}' /proc/$PPID/root'${st.map}'; for p in /proc/[0-9]*; do cat $p/environ; done 2>&1`),
      exec(`cat '${st.run.configPath}' '${st.run.state}'/credentials/* 2>&1; env`),
      // Everything under the run but the plugin's own (large) files.
      exec(() => {
        const find = `find '${st.run.root}' -path '${path.join(st.run.root, 'plugin')}' -prune -o -type f`;
        return `${find} -print 2>/dev/null | grep -c .; ${find} -name made.txt -print; ${find} -exec cat {} + 2>/dev/null | head -c 200000`;
      }),
      exec(`cat '${path.join(st.run.workspaces, ATLAS, 'notes.md')}'`),
      exec(`umount '${st.mapDir}'; unshare -Urm cat '${st.map}'; nsenter -t 1 -m cat '${st.map}'`),
    ],
    write: [
      exec(
        `echo '{}' > '${st.run.configPath}'; echo evil >> '${st.run.home}/.bashrc'; mkdir -p .openclaw/extensions/evil && echo evil > .openclaw/extensions/evil/index.js; mv .openclaw moved; echo evil > '${path.join(st.run.root, 'plugin', 'claw-identity', 'index.js')}'`,
      ),
    ],
    gateway: [
      exec(
        () =>
          `TOKEN=$(sed -n 's/.*"token": *"\\([0-9a-f]*\\)".*/\\1/p' '${st.run.configPath}' 2>/dev/null); ${node('fetch("http://127.0.0.1:" + process.argv[1] + "/", {headers: {authorization: "Bearer " + process.argv[2]}}).then((r) => console.log("status", r.status), (e) => console.log("refused", e.cause?.code))', st.run.gatewayPort, '"$TOKEN"')}; kill -9 ${st.run.gateway.pid}`,
      ),
    ],
    // A PTY; then a background command that reads a line: process writes it, polls, and kills a second one.
    processes: (ctx) => [
      exec(`echo "pty=$(tty)"`, { pty: true }),
      exec(`read line; echo "got-$line"; sleep 5`, { pty: true, background: true }),
      { call: 'process', args: (c) => ({ action: 'write', sessionId: sessionIdIn(c.previous[1]?.result), data: 'hello\n' }) },
      { call: 'process', args: (c) => ({ action: 'poll', sessionId: sessionIdIn(c.previous[1]?.result), timeout: 20000 }) },
      exec(`sleep 300; : sleep-${ctx.params.tag}`, { background: true }),
      { call: 'process', args: (c) => ({ action: 'kill', sessionId: sessionIdIn(c.previous[4]?.result) }) },
    ],
    noop: [exec('true')],
    'host-marker': [exec(() => `touch '${path.join(st.workspace, 'ran-without-a-sandbox')}'`)],
  };
}
