// The claw-identity command: doctor's exact output on a healthy map and on
// broken ones, explain (the same decision as the hook), write-map, help and
// exit codes. The findings themselves (gate refusals, parser verdicts, option
// and config errors) are pinned by the Rust tests in core/src/ops and
// core/src/token_map; here, what the command adds: arguments, the layout it
// prints, stdout/stderr and exit codes. Every byte the command prints goes to
// the leak guard.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { IdentityLayer } from './helpers/subject.mjs';
import { CONTAINED_HOST } from './helpers/posture.mjs';
import { assertNoTokenIn, assertSameToken, fingerprint, randomToken, recordEmitted, spawnNodeSync, tempDir, writeMap } from './helpers/support.mjs';

const BIN = fileURLToPath(new URL('../bin/claw-identity.js', import.meta.url));
const UID = process.getuid();
const HOME = tempDir('claw-identity-cli-home-');
// The command's PATH: one empty directory. What doctor finds there (bwrap,
// for its sandbox probe) is then the same on every machine, whatever is
// installed; the real probe is the sandbox suite's.
const BARE_PATH = tempDir('claw-identity-cli-path-');
const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const ENTRY_FIX =
  'correct or remove the entry: agent ids match ^[a-z0-9][a-z0-9_-]{0,63}$ and tokens are 64 hex characters; claw-identity write-map checks both before it writes';

/** The listing of what the agents' tools can't reach, which doctor prints with --config (its own test below). */
const GUARDED = /guarded from the agents' own tools:\n(?: {2}.*\n)*\n/;

/** Runs the command with HOME set to a private directory and PATH to BARE_PATH; shows all output to the leak guard. */
function cli(args, { input } = {}) {
  const r = spawnNodeSync([BIN, ...args], {
    encoding: 'utf8',
    input,
    env: { ...process.env, HOME, PATH: BARE_PATH },
  });
  recordEmitted(`claw-identity ${args.join(' ')} (stdout)`, r.stdout);
  recordEmitted(`claw-identity ${args.join(' ')} (stderr)`, r.stderr);
  return { code: r.status, stdout: r.stdout.replace(GUARDED, ''), stderr: r.stderr, guarded: GUARDED.exec(r.stdout)?.[0] };
}

/** A private directory holding a map with two agents. */
function healthy() {
  const dir = tempDir();
  const map = path.join(dir, 'agent-tokens.json');
  const tokens = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
  writeMap(map, tokens);
  return { dir, map, tokens };
}

function config(dir, body) {
  const file = path.join(dir, 'openclaw.json');
  fs.writeFileSync(file, body);
  return file;
}

const header = (map, cfg) => `claw-identity doctor (as uid ${UID})\n  map     ${map}\n${cfg ? `  config  ${cfg}\n` : ''}\n`;
const gateOk = (fileMode = '0600', dirMode = '0700') =>
  `ok    map file: passes the permission gate (mode ${fileMode}, owner uid ${UID}; directory mode ${dirMode})\n`;
const ONE_PROBLEM = '1 problem stops token injection; fix it and run doctor again\n';
/**
 * The config that contains every agent on the host (helpers/posture.mjs), as
 * keys to put in a JSON5 config: tests of something else than the posture
 * run under it, since under posture "enforce" (the default) doctor fails and
 * explain refuses every owned call while an agent is exposed.
 */
const CONTAIN = JSON.stringify(CONTAINED_HOST).slice(1, -1);
/** Doctor's line for a contained config, with each agent's containment. */
const containedLine = (...agents) => `ok    posture: every agent is contained: ${agents.map((a) => `${a} (host, confined to its workspace)`).join(', ')}\n`;

/** Doctor's finding for agents with a shell on the host and exec completion notices on (the default). */
const notices = (...agents) =>
  `warn  exec notices: ${agents.length === 1 ? `agent "${agents[0]}" has` : `agents ${agents.map((a) => `"${a}"`).join(', ')} have`} a shell on the host and tools.exec.notifyOnExit is on (the default): when a backgrounded exec ends, OpenClaw hands up to 180 characters of its output to the agent's next turn as a system event, not as a tool result, so the tool-result redaction never sees it, and a token the command printed (cat of the map, an env dump) can reach the model. claw-identity still redacts what is stored in the transcript\n` +
  "      fix: openclaw config set tools.exec.notifyOnExit false --strict-json; a backgrounded command's output then reaches the agent only through process poll or log, as a tool result claw-identity redacts\n";

test('doctor on a healthy map: the agents by fingerprint, exit 0', () => {
  const { map, tokens } = healthy();
  const r = cli(['doctor', '--map', map]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    header(map) +
      gateOk() +
      'ok    map content: valid JSON; 2 agents with a well-formed token\n' +
      '\n' +
      'AGENT          TOKEN SHA256\n' +
      `${DALI}     ${fingerprint(tokens[DALI])}\n` +
      `${FRANCIS}  ${fingerprint(tokens[FRANCIS])}\n` +
      '\n' +
      'healthy: nothing found stops token injection\n',
  );
  assertNoTokenIn(r.stdout);
});

test("doctor with a config says what the agents' own tools cannot reach, and by which rule", () => {
  const { dir, map } = healthy();
  const cfg = config(dir, `{ plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMapPath: ${JSON.stringify(map)} } } } } }`);
  const r = cli(['doctor', '--config', cfg]);
  assert.ok(r.guarded, r.stdout);
  assert.match(r.guarded, new RegExp(`  map-access     read, write the token map \\(${map.replaceAll('/', '\\/').replaceAll('.', '\\.')}\\)\n`));
  assert.match(r.guarded, / {2}map-access {5}read, write the token map's directory /);
  assert.match(r.guarded, new RegExp(`  layer-controls read, write OpenClaw's config file \\(${HOME}/\\.openclaw/openclaw\\.json\\)\n`));
  assert.match(r.guarded, / {2}layer-controls write {7}OpenClaw's plugin installs /);
  const json = JSON.parse(cli(['doctor', '--config', cfg, '--json']).stdout);
  assert.ok(
    json.guarded.some((g) => g.rule === 'layer-controls' && g.refused === 'read, write' && g.path === `${HOME}/.openclaw/openclaw.json`),
    JSON.stringify(json.guarded),
  );
});

test('doctor with a healthy config: enablement, plugin config and configured agents, exit 0', () => {
  const { dir, map, tokens } = healthy();
  const cfg = config(
    dir,
    `{
      // JSON5, as OpenClaw reads it
      plugins: { entries: { "claw-identity": { enabled: true, config: { tokenMapPath: "${map}" } } } },
      agents: { entries: { "${FRANCIS}": {}, "${DALI}": {} } },
      ${CONTAIN},
    }`,
  );
  const r = cli(['doctor', '--config', cfg]);
  assert.equal(r.code, 0, r.stdout);
  assert.equal(
    r.stdout,
    header(map, cfg) +
      'ok    plugin enabled: plugins.entries.claw-identity.enabled is true\n' +
      `ok    plugin config: valid; the plugin reads ${map}\n` +
      gateOk() +
      'ok    map content: valid JSON; 2 agents with a well-formed token\n' +
      'ok    configured agents: all 2 have a token\n' +
      containedLine(DALI, FRANCIS, "the agents the roster doesn't list") +
      '\n' +
      'AGENT          TOKEN SHA256  IN CONFIG\n' +
      `${DALI}     ${fingerprint(tokens[DALI])}  yes\n` +
      `${FRANCIS}  ${fingerprint(tokens[FRANCIS])}  yes\n` +
      '\n' +
      'healthy: nothing found stops token injection\n',
  );
});

test('doctor on agents that are not contained: one FAIL per agent with the config that contains it (enforce, exit 1), a warning under "warn" (exit 0)', () => {
  const { dir, map } = healthy();
  const body = (posture) =>
    `{ plugins: { entries: { "claw-identity": { enabled: true, config: { tokenMapPath: "${map}"${posture ? `, posture: "${posture}"` : ''} } } } },
       agents: { entries: { "${FRANCIS}": {}, "${DALI}": {} } } }`;
  const posture = (stdout) => stdout.split('\n').flatMap((l, i, all) => (/^\S+ +posture: /.test(l) ? [[l, all[i + 1]]] : []));
  const who = [`agent ${DALI} is`, `agent ${FRANCIS} is`, "the agents the roster doesn't list (they run with agents.defaults and the global tools) are"];

  const enforce = cli(['doctor', '--config', config(dir, body())]);
  assert.equal(enforce.code, 1, enforce.stdout);
  const found = posture(enforce.stdout);
  assert.equal(found.length, 3, enforce.stdout);
  for (const [i, [line, fix]] of found.entries()) {
    assert.ok(line.startsWith(`FAIL  posture: ${who[i]} not contained: `), line);
    // What exposes it, each with its config key, and what enforce does.
    assert.ok(line.includes('its file tools are not confined to its workspace (tools.fs.workspaceOnly)'), line);
    assert.match(line, /tools that reach the host outside its confinement: exec, process, /);
    assert.ok(line.endsWith('posture is "enforce", so every owned call is refused until every agent is contained'), line);
    assert.match(fix, /^ {6}fix: openclaw config set \S+ '.+' --strict-json/);
  }
  // A shell on the host: the exec notices finding stays.
  assert.ok(enforce.stdout.includes(notices(DALI, FRANCIS)), enforce.stdout);
  assert.ok(enforce.stdout.endsWith('3 problems stop token injection (1 warning); fix them and run doctor again\n'), enforce.stdout);

  const warn = cli(['doctor', '--config', config(dir, body('warn'))]);
  assert.equal(warn.code, 0, warn.stdout);
  const warned = posture(warn.stdout);
  assert.deepEqual(
    warned.map(([l]) => l.slice(0, l.indexOf(' not contained: '))),
    who.map((w) => `warn  posture: ${w}`),
  );
  for (const [line] of warned) assert.ok(!line.includes('posture is "enforce"'), line);
  assert.ok(warn.stdout.endsWith('healthy (4 warnings): nothing found stops token injection\n'), warn.stdout);
});

test('doctor on a missing map: how to create it, exit 1', () => {
  const map = path.join(tempDir(), 'agent-tokens.json');
  const r = cli(['doctor', '--map', map]);
  assert.equal(r.code, 1);
  assert.equal(
    r.stdout,
    header(map) +
      `FAIL  map file: ${map}: not found\n` +
      `      fix: create it: claw-identity write-map --map ${map} --from FILE (or, if the plugin reads another file, check that one: --map PATH or --config openclaw.json)\n` +
      'skip  map content: not checked: the plugin cannot read the file\n' +
      '\n' +
      'agents: none (no map loaded)\n' +
      '\n' +
      ONE_PROBLEM,
  );
});

test("doctor without --map checks the plugin's default map under HOME", () => {
  const r = cli(['doctor']);
  assert.equal(r.code, 1);
  assert.ok(r.stdout.startsWith(header(path.join(HOME, '.config/micelclaw/agent-tokens.json'))), r.stdout);
});

test("doctor on bad JSON: the parser's position, exit 1", () => {
  const { map } = healthy();
  writeMap(map, '{"paco--francis": ');
  const r = cli(['doctor', '--map', map]);
  assert.equal(r.code, 1);
  assert.equal(
    r.stdout,
    header(map) +
      gateOk() +
      'FAIL  map content: not a valid token map: EOF while parsing a value at line 1 column 18; expected a JSON object {"<agentId>": "<64 hex token>"}\n' +
      '      fix: rewrite it as a JSON object {"<agentId>": "<64 hex token>"}; claw-identity write-map validates a map before it writes it\n' +
      '\n' +
      'agents: none (no map loaded)\n' +
      '\n' +
      ONE_PROBLEM,
  );
});

test('doctor on bad entries: one problem per entry, valid agents still listed, exit 1', () => {
  const { map } = healthy();
  const good = randomToken();
  const misplaced = randomToken();
  writeMap(map, { [FRANCIS]: good, 'Paco--Dali': randomToken(), 'paco--atlas': 42, [misplaced]: 'abc' });
  const r = cli(['doctor', '--map', map]);
  assert.equal(r.code, 1);
  assert.equal(
    r.stdout,
    header(map) +
      gateOk() +
      'ok    map content: valid JSON; 1 agent with a well-formed token\n' +
      'FAIL  map entry: agent id "Paco--Dali" is not a valid OpenClaw agent id (^[a-z0-9][a-z0-9_-]{0,63}$); entry skipped\n' +
      `      fix: ${ENTRY_FIX}\n` +
      'FAIL  map entry: agent "paco--atlas": token must be a string, found a number; entry skipped\n' +
      `      fix: ${ENTRY_FIX}\n` +
      `FAIL  map entry: agent "<redacted sha256:${fingerprint(misplaced)}>": token is not 64 hex characters; entry skipped\n` +
      `      fix: ${ENTRY_FIX}\n` +
      '\n' +
      'AGENT          TOKEN SHA256\n' +
      `${FRANCIS}  ${fingerprint(good)}\n` +
      '\n' +
      '3 problems stop token injection; fix them and run doctor again\n',
  );
  assertNoTokenIn(r.stdout);
});

test('doctor on an empty map: no agent gets a token, exit 1', () => {
  const { map } = healthy();
  writeMap(map, '{}');
  const r = cli(['doctor', '--map', map]);
  assert.equal(r.code, 1);
  assert.equal(
    r.stdout,
    header(map) +
      gateOk() +
      'FAIL  map content: the map holds no agents, so no call gets a token\n' +
      `      fix: add the agents' tokens: claw-identity write-map --map ${map} --from FILE\n` +
      '\n' +
      'agents: none in the map\n' +
      '\n' +
      ONE_PROBLEM,
  );
});

test('doctor on a map over the size cap: refused before it is read, exit 1', () => {
  const { map } = healthy();
  fs.truncateSync(map, 16 * 1024 * 1024 + 1);
  const r = cli(['doctor', '--map', map]);
  assert.equal(r.code, 1);
  assert.equal(
    r.stdout,
    header(map) +
      `FAIL  map file: ${map}: larger than the 16777216 byte cap; refusing to load it\n` +
      '      fix: check that this is the token map: the plugin refuses maps over 16777216 bytes\n' +
      'skip  map content: not checked: the plugin cannot read the file\n' +
      '\n' +
      'agents: none (no map loaded)\n' +
      '\n' +
      ONE_PROBLEM,
  );
});

test('doctor on a config that does not enable the plugin: OpenClaw would not load it, exit 1', () => {
  const { dir, map, tokens } = healthy();
  const cfg = config(dir, `{ plugins: { entries: { "claw-identity": { config: { tokenMapPath: "${map}" } } } }, ${CONTAIN} }`);
  const r = cli(['doctor', '--config', cfg]);
  assert.equal(r.code, 1);
  assert.equal(
    r.stdout,
    header(map, cfg) +
      'FAIL  plugin enabled: plugins.entries.claw-identity.enabled is not set, not true: OpenClaw loads only an explicitly enabled plugin (and registers its trusted tool policy only then), and says nothing at runtime\n' +
      '      fix: openclaw plugins install <claw-identity.tgz> --force --accept-capabilities (it writes the enablement), or: openclaw config set plugins.entries.claw-identity.enabled true --strict-json\n' +
      `ok    plugin config: valid; the plugin reads ${map}\n` +
      gateOk() +
      'ok    map content: valid JSON; 2 agents with a well-formed token\n' +
      'skip  configured agents: the config lists no agents under agents.entries\n' +
      // Without a roster OpenClaw runs one implicit agent, "main".
      containedLine('main') +
      '\n' +
      'AGENT          TOKEN SHA256\n' +
      `${DALI}     ${fingerprint(tokens[DALI])}\n` +
      `${FRANCIS}  ${fingerprint(tokens[FRANCIS])}\n` +
      '\n' +
      '1 problem stops token injection; fix it and run doctor again\n',
  );
});

test('doctor flags enabled: false, a deny list and an allow list without the plugin', () => {
  const { dir, map } = healthy();
  const cfg = config(
    dir,
    `{ plugins: { deny: ["claw-identity"], allow: ["other"],
       entries: { "claw-identity": { enabled: false, config: { tokenMapPath: "${map}" } } } }, ${CONTAIN} }`,
  );
  const r = cli(['doctor', '--config', cfg]);
  assert.equal(r.code, 1);
  const fails = r.stdout.split('\n').filter((l) => l.startsWith('FAIL'));
  assert.deepEqual(fails, [
    'FAIL  plugin enabled: plugins.deny lists claw-identity: OpenClaw never loads it (deny wins over allow and enabled)',
    'FAIL  plugin enabled: plugins.allow is set and does not list claw-identity: OpenClaw does not load it',
    'FAIL  plugin enabled: plugins.entries.claw-identity.enabled is false, not true: OpenClaw loads only an explicitly enabled plugin (and registers its trusted tool policy only then), and says nothing at runtime',
  ]);
  assert.ok(r.stdout.endsWith('3 problems stop token injection; fix them and run doctor again\n'), r.stdout);
});

test('doctor on configured agents without a token: each named, listed as (no token), exit 1', () => {
  const { dir, map, tokens } = healthy();
  const cfg = config(
    dir,
    `{ plugins: { entries: { "claw-identity": { enabled: true, config: { tokenMapPath: "${map}" } } } },
       agents: { entries: { "${FRANCIS}": {}, "pepito--atlas": {} } }, ${CONTAIN} }`,
  );
  const r = cli(['doctor', '--config', cfg]);
  assert.equal(r.code, 1);
  assert.equal(
    r.stdout,
    header(map, cfg) +
      'ok    plugin enabled: plugins.entries.claw-identity.enabled is true\n' +
      `ok    plugin config: valid; the plugin reads ${map}\n` +
      gateOk() +
      'ok    map content: valid JSON; 2 agents with a well-formed token\n' +
      'FAIL  configured agent: agent "pepito--atlas" is in agents.entries but has no token in the map\n' +
      `      fix: mint its token and add it: claw-identity write-map --map ${map} --from FILE\n` +
      `warn  map agent: agent "${DALI}" has a token but is not in agents.entries\n` +
      '      fix: remove it from the map if that agent is gone\n' +
      containedLine(FRANCIS, 'pepito--atlas', "the agents the roster doesn't list") +
      '\n' +
      'AGENT          TOKEN SHA256  IN CONFIG\n' +
      `${DALI}     ${fingerprint(tokens[DALI])}  no\n` +
      `${FRANCIS}  ${fingerprint(tokens[FRANCIS])}  yes\n` +
      'pepito--atlas  (no token)    yes\n' +
      '\n' +
      '1 problem stops token injection (1 warning); fix it and run doctor again\n',
  );
});

test('doctor warns about a temporary file left by a writer that died', () => {
  const { dir, map } = healthy();
  const leftover = path.join(dir, '.agent-tokens.json.tmp-4242-0-0000abcd');
  writeMap(leftover, '{"paco--francis": "');
  const r = cli(['doctor', '--map', map]);
  assert.equal(r.code, 0);
  assert.ok(
    r.stdout.includes(
      `warn  temp file: ${leftover}: left by a writer that stopped before its rename (it is not the map)\n` +
        `      fix: rm ${leftover} (once no writer is running)\n`,
    ),
    r.stdout,
  );
  assert.ok(r.stdout.endsWith('healthy (1 warning): nothing found stops token injection\n'), r.stdout);
});

test('doctor --json: the same report as data', () => {
  const { map, tokens } = healthy();
  const r = cli(['doctor', '--map', map, '--json']);
  assert.equal(r.code, 0);
  const report = JSON.parse(r.stdout);
  assert.equal(report.ok, true);
  assert.equal(report.map, map);
  assert.deepEqual(report.agents, [
    { agentId: DALI, fingerprint: fingerprint(tokens[DALI]) },
    { agentId: FRANCIS, fingerprint: fingerprint(tokens[FRANCIS]) },
  ]);
  assert.deepEqual(
    report.checks.map((c) => [c.status, c.check]),
    [
      ['ok', 'map file'],
      ['ok', 'map content'],
    ],
  );
});

// ---- explain ----

/** Asserts that explain (through the command) takes the decision the hook takes for one call. */
function assertSameAsHook(layer, cfg, tokens, { agent, tool, params, sessionKey }, what) {
  const hook = layer.beforeToolCall({ toolName: tool, params: { auth_token: 'from-the-model', ...params } }, { agentId: agent, sessionKey });
  const r = cli([
    'explain',
    '--config',
    cfg,
    '--tool',
    tool,
    '--json',
    ...(agent === undefined ? [] : ['--agent', agent]),
    ...(sessionKey === undefined ? [] : ['--session-key', sessionKey]),
    '--params',
    JSON.stringify({ auth_token: 'from-the-model', ...params }),
  ]);
  const e = JSON.parse(r.stdout);
  if (hook === undefined) {
    assert.equal(e.decision, 'pass', what);
  } else if (hook.block) {
    assert.equal(e.decision, 'block', what);
    assert.equal(e.reason, hook.blockReason, what);
  } else if (hook.requireApproval) {
    assert.equal(e.decision, 'ask', what);
    assert.deepEqual(e.approval, hook.requireApproval, what);
  } else {
    assert.equal(e.decision, 'rewrite', what);
    // Every param explain says is set, the hook set to that value (tokens by fingerprint).
    for (const { param, value } of e.sets) {
      const got = hook.params[param];
      assertSameToken(value.startsWith('sha256:') ? `sha256:${fingerprint(got)}` : JSON.stringify(got), value, `${what} ${param}`);
    }
    assert.equal(
      e.sets.some((s) => s.param === 'auth_token'),
      e.token.status === 'injected',
      what,
    );
  }
  const injected = Object.hasOwn(tokens, agent ?? '') && hook?.params?.auth_token === tokens[agent];
  assert.equal(injected, e.token.status === 'injected', what);
  assert.equal(r.code, e.ok ? 0 : 1, what);
  assert.equal(e.ok, !hook?.block && e.token.status !== 'missing', what);
  return e.decision;
}

test("explain takes the hook's decision: same verdict, same token (by fingerprint), same block reason", () => {
  // The same OpenClaw config for both: agents contained on the host, or
  // exposed (no containment at all) under posture "enforce" and "warn". The
  // fix a refusal names is the plugin's sandbox where it runs here, which
  // the WebAssembly build (a run of this suite) never does, while the
  // command runs the native one: with no bwrap, both name the host's.
  const nowhere = { sandbox: { bwrap: '/nonexistent/bwrap' } };
  const openclaws = {
    contained: { config: {}, openclaw: CONTAINED_HOST },
    exposed: { config: nowhere, openclaw: {} },
    'exposed, warn': { config: { posture: 'warn', ...nowhere }, openclaw: {} },
  };
  const decisions = new Set();
  for (const onMissingToken of ['pass', 'block']) {
    for (const [posture, { config: options, openclaw }] of Object.entries(openclaws)) {
      const { dir, map, tokens } = healthy();
      const plugin = { tokenMapPath: map, onMissingToken, ...options };
      const openclawConfig = { plugins: { entries: { 'claw-identity': { enabled: true, config: plugin } } }, ...openclaw };
      const cfg = config(dir, JSON.stringify(openclawConfig));
      const layer = new IdentityLayer({ ...plugin, openclawConfig, logger: { info() {}, warn() {}, error() {} } });
      try {
        for (const agent of [FRANCIS, DALI, 'ghost', undefined]) {
          for (const tool of ['claw-os__claw_notes', 'exec']) {
            const what = `${onMissingToken} ${posture} ${agent} ${tool}`;
            decisions.add(`${posture}: ${assertSameAsHook(layer, cfg, tokens, { agent, tool }, what)}`);
          }
        }
      } finally {
        layer.close();
      }
    }
  }
  // The exposed config was refused, the others served.
  assert.ok(decisions.has('exposed: block') && !decisions.has('exposed: rewrite'), [...decisions].join(', '));
  assert.ok(decisions.has('contained: rewrite') && decisions.has('exposed, warn: rewrite'), [...decisions].join(', '));
});

test("explain takes the hook's decision for the rules that read params and the session", () => {
  const { dir, map, tokens } = healthy();
  const openclawConfig = { plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMapPath: map } } } }, ...CONTAINED_HOST };
  const cfg = config(dir, JSON.stringify(openclawConfig));
  const layer = new IdentityLayer({ tokenMapPath: map, openclawConfig, logger: { info() {}, warn() {}, error() {} } });
  const main = `agent:${FRANCIS}:main`;
  const decisions = new Set();
  try {
    for (const call of [
      { tool: 'sessions_send', params: { agentId: 'pepito--atlas', message: 'hi' } },
      { tool: 'sessions_send', params: { agentId: DALI, message: 'hi' } },
      { tool: 'sessions_send', params: { label: 'somebody', message: 'hi' } },
      { tool: 'sessions_spawn', params: { agentId: DALI, task: 'draw' } },
      { tool: 'sessions_spawn', params: { task: 'draw' } },
      { tool: 'workboard_list', params: { boardId: 'someone-elses' } },
      { tool: 'claw-os__claw_notes', params: {} },
      { tool: 'claw-os__claw_notes', params: {}, sessionKey: `agent:${FRANCIS}:subagent:1` },
    ]) {
      const what = `${call.tool} ${JSON.stringify(call.params)}`;
      decisions.add(assertSameAsHook(layer, cfg, tokens, { agent: FRANCIS, sessionKey: main, ...call }, what));
    }
  } finally {
    layer.close();
  }
  assert.ok(decisions.has('block') && decisions.has('rewrite'), [...decisions].join(','));
});

test('explain shows a rewrite with the rule, the reason and the token as a fingerprint only', () => {
  const { map, tokens } = healthy();
  const r = cli(['explain', '--map', map, '--agent', FRANCIS, '--tool', 'claw-os__claw_notes', '--params', `{"auth_token": "${randomToken()}"}`]);
  assert.equal(r.code, 0, r.stderr);
  const fp = fingerprint(tokens[FRANCIS]);
  const lines = r.stdout.split('\n');
  assert.deepEqual(lines.slice(0, 8), [
    'claw-identity explain',
    '  tool      claw-os__claw_notes',
    `  agent     ${FRANCIS}`,
    `  map       ${map} (loaded, 2 agents)`,
    `  token     injected: agent "${FRANCIS}" has a token in the map (sha256:${fp})`,
    '  decision  rewrite',
    '  rule      auth-token',
    '  why       the rule sets these params before the call runs, whatever the model wrote',
  ]);
  assert.ok(lines.includes(`  sets      auth_token = sha256:${fp}`), r.stdout);
  assertNoTokenIn(r.stdout);
});

test('explain shows a block with the reason the model would read, exit 1', () => {
  const { dir, map } = healthy();
  const cfg = config(
    dir,
    `{ plugins: { entries: { "claw-identity": { enabled: true, config: { tokenMapPath: "${map}", onMissingToken: "block" } } } }, ${CONTAIN} }`,
  );
  const r = cli(['explain', '--config', cfg, '--agent', 'ghost', '--tool', 'claw-os__claw_notes']);
  assert.equal(r.code, 1);
  assert.equal(
    r.stdout,
    'claw-identity explain\n' +
      '  tool      claw-os__claw_notes\n' +
      '  agent     ghost\n' +
      `  map       ${map} (loaded, 2 agents)\n` +
      '  token     missing: agent "ghost" has no token in the map\n' +
      '  decision  block\n' +
      '  rule      auth-token\n' +
      '  why       the call is not run; the model sees the reason below\n' +
      `  reason    auth-token: agent "ghost" has no token in the token map ${map}, so claw-os__claw_notes was not called; do not retry it. Tell the user this agent is not provisioned; the operator can check with: claw-identity doctor --map ${map}\n`,
  );
});

test('explain with an invalid plugin config says so, exit 1', () => {
  const { dir, map } = healthy();
  const cfg = config(dir, `{ plugins: { entries: { "claw-identity": { config: { tokenMapPath: "${map}", prefix: "x" } } } } }`);
  const r = cli(['explain', '--config', cfg, '--agent', FRANCIS, '--tool', 'claw-os__x']);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^claw-identity: cannot explain: the plugin's options are invalid: unknown option "prefix"/);
});

test('explain usage errors exit 2 and point to --help', () => {
  for (const [args, message] of [
    [['explain', '--agent', FRANCIS], 'claw-identity explain: missing --tool'],
    [['explain', '--agent', 'a', '--tool', 'x', '--params', '{'], 'claw-identity explain: --params is not valid JSON'],
    [['explain', '--agent', 'a', '--tool', 'x', '--params', '[1]'], 'claw-identity explain: --params must be a JSON object'],
  ]) {
    const r = cli(args);
    assert.equal(r.code, 2, args.join(' '));
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `${message}\nRun claw-identity explain --help for usage.\n`);
  }
});

// ---- write-map ----

test('write-map writes a map from a file, then reports it unchanged, never echoing a token', () => {
  const dir = tempDir();
  const map = path.join(dir, 'secrets', 'agent-tokens.json');
  const input = path.join(dir, 'in.json');
  const tokens = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
  fs.writeFileSync(input, JSON.stringify(tokens));
  let r = cli(['write-map', '--map', map, '--from', input]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `wrote ${map} (2 agents)\n`);
  assert.equal(fs.statSync(map).mode & 0o777, 0o600);
  assert.equal(fs.statSync(path.dirname(map)).mode & 0o777, 0o700);
  r = cli(['write-map', '--map', map, '--from', input]);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, `unchanged: ${map} already holds this map (2 agents); not rewritten\n`);
  assert.equal(cli(['doctor', '--map', map]).code, 0);
});

test('write-map reads standard input with --from -', () => {
  const map = path.join(tempDir(), 'agent-tokens.json');
  const token = randomToken();
  const r = cli(['write-map', '--map', map, '--from', '-', '--json'], { input: JSON.stringify({ [FRANCIS]: token }) });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { path: map, agents: 1, changed: true });
  assertSameToken(JSON.parse(fs.readFileSync(map, 'utf8'))[FRANCIS], token);
});

test('write-map refuses an invalid map, names the entries, writes nothing, exit 1', () => {
  const { map } = healthy();
  const before = fs.readFileSync(map);
  const bad = randomToken();
  const r = cli(['write-map', '--map', map, '--from', '-'], {
    input: JSON.stringify({ [FRANCIS]: bad, 'Paco--Dali': randomToken(), [DALI]: bad.slice(0, 40) }),
  });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.equal(
    r.stderr,
    `claw-identity: refusing to write ${map}: 2 invalid entries: agent id "Paco--Dali" is not a valid OpenClaw agent id (^[a-z0-9][a-z0-9_-]{0,63}$); agent "${DALI}": token is not 64 hex characters; nothing was written\n`,
  );
  assert.ok(fs.readFileSync(map).equals(before), 'the map file changed');
  assertNoTokenIn(r.stderr);
});

test('write-map usage errors exit 2', () => {
  const dir = tempDir();
  let r = cli(['write-map', '--map', path.join(dir, 'm.json')]);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'claw-identity write-map: missing --from\nRun claw-identity write-map --help for usage.\n');
  r = cli(['write-map', '--from', path.join(dir, 'nope.json')]);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, `claw-identity write-map: cannot read --from ${path.join(dir, 'nope.json')}: ENOENT\nRun claw-identity write-map --help for usage.\n`);
});

// ---- help and exit codes ----

test('audit prints the security findings for a config, each with its fix, most severe first; exit 1 on a warn or critical', () => {
  const { dir, map, tokens } = healthy();
  const cfg = config(
    dir,
    `{ plugins: { entries: { "claw-identity": { enabled: true, config: { tokenMapPath: "${map}", allowGroupReadable: true } } } },
       agents: { entries: { "${FRANCIS}": {}, "${DALI}": {} } }, ${CONTAIN} }`,
  );
  const r = cli(['audit', '--config', cfg]);
  assert.equal(r.code, 1, r.stderr);
  assertNoTokenIn(r.stdout, 'audit output');
  const json = cli(['audit', '--config', cfg, '--json']);
  const all = JSON.parse(json.stdout);
  // Every audit also lists what the agents' tools can't reach (info).
  const guarded = all.find((f) => f.checkId === 'claw-identity.guarded_locations');
  assert.equal(guarded?.severity, 'info');
  assert.match(guarded.detail, /^the token map \(.+\): read, write refused by map-access; /);
  const findings = all.filter((f) => f !== guarded);
  assert.deepEqual(
    findings.map((f) => f.checkId),
    ['claw-identity.allow_group_readable'],
  );
  const [f] = findings;
  assert.equal(f.severity, 'warn');
  assert.equal(
    r.stdout,
    `claw-identity audit\n  config  ${cfg}\n\nWARN      ${f.checkId}: ${f.title}\n          ${f.detail}\n          fix: ${f.remediation}\n` +
      `INFO      ${guarded.checkId}: ${guarded.title}\n          ${guarded.detail}\n          fix: ${guarded.remediation}\n`,
  );
  for (const t of Object.values(tokens)) assert.ok(!json.stdout.includes(fingerprint(t)), 'audit names a token, even by fingerprint');

  // The same config without the option: nothing to report, exit 0.
  const clean = config(dir, fs.readFileSync(cfg, 'utf8').replace('allowGroupReadable: true', 'allowGroupReadable: false'));
  const ok = cli(['audit', '--config', clean]);
  assert.equal(ok.code, 0, ok.stdout);
  assert.match(
    ok.stdout,
    new RegExp(
      `^claw-identity audit\\n  config  ${clean.replaceAll('.', '\\.')}\\n\\nINFO      claw-identity\\.guarded_locations: [^\\n]+\\n {10}[^\\n]+\\n {10}fix: [^\\n]+\\n$`,
    ),
  );

  // The standalone command has no gateway config of its own.
  const usage = cli(['audit']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /^claw-identity audit: missing --config\n/);
});

test('doctor, audit and explain print no token pasted into an agent id, a bind, an option or a param', () => {
  const pasted = randomToken();
  const dir = tempDir();
  const map = path.join(dir, 'agent-tokens.json');
  // A token is a valid agent id: the map may hold one as a key.
  writeMap(map, { [pasted]: randomToken(), [FRANCIS]: randomToken() });
  const entries = {
    [pasted]: { sandbox: { mode: 'all', docker: { binds: [`/srv/${pasted}:/x:ro`] } } },
    [FRANCIS]: { workspace: `/w/${pasted.toUpperCase()}`, tools: { exec: { host: pasted } } },
  };
  for (const options of [{}, { tokenParam: pasted }, { toolPrefix: pasted }, { onMissingToken: pasted }]) {
    const cfg = config(
      dir,
      JSON.stringify({ agents: { entries }, plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMapPath: map, ...options } } } } }),
    );
    const label = JSON.stringify(Object.keys(options));
    for (const args of [
      ['doctor', '--config', cfg],
      ['doctor', '--config', cfg, '--json'],
      ['audit', '--config', cfg],
      ['audit', '--config', cfg, '--json'],
      [
        'explain',
        '--config',
        cfg,
        '--agent',
        pasted,
        '--tool',
        'claw-os__x',
        '--session-key',
        `agent:${pasted}:main`,
        '--params',
        JSON.stringify({ note: pasted }),
      ],
      ['explain', '--config', cfg, '--agent', FRANCIS, '--tool', pasted, '--json'],
    ]) {
      const r = cli(args);
      assert.ok(r.stdout.length + r.stderr.length > 0, `${args[0]} ${label} printed nothing`);
      assertNoTokenIn(r.stdout + (r.guarded ?? ''), `${args.join(' ')} ${label} (stdout)`);
      assertNoTokenIn(r.stderr, `${args.join(' ')} ${label} (stderr)`);
    }
  }
  // An invalid option is still named, with the value shown by its fingerprint.
  const cfg = config(
    dir,
    JSON.stringify({ plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMapPath: map, onMissingToken: pasted } } } } }),
  );
  assert.match(
    cli(['doctor', '--config', cfg]).stdout,
    /FAIL {2}plugin config: plugins\.entries\.claw-identity\.config is invalid: invalid options: onMissingToken: unknown variant `<redacted sha256:[0-9a-f]{12}>`/,
  );
});

test('every command has --help, with the exit codes scripts rely on', () => {
  for (const cmd of ['doctor', 'explain', 'write-map', 'audit']) {
    const r = cli([cmd, '--help']);
    assert.equal(r.code, 0, cmd);
    assert.ok(r.stdout.startsWith(`Usage: claw-identity ${cmd} `), r.stdout);
    assert.match(r.stdout, /Exit status: 0 .*\n[\s\S]* 1 [\s\S]* 2 usage error\.\n$/, cmd);
    assert.equal(cli(['help', cmd]).stdout, r.stdout);
  }
  const main = cli(['--help']);
  assert.equal(main.code, 0);
  assert.match(main.stdout, /^Usage: claw-identity <command> \[options\]\n/);
});

test('unknown commands and options are usage errors (exit 2); no command prints usage to stderr', () => {
  let r = cli(['doctr']);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'claw-identity: no such command: doctr\nRun claw-identity --help for usage.\n');
  r = cli(['doctor', '--mapp', 'x']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^claw-identity doctor: Unknown option '--mapp'/);
  r = cli([]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^Usage: claw-identity <command>/);
});

test('--version prints the package version', () => {
  const r = cli(['--version']);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, `${JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version}\n`);
});

test('the package ships the command as its bin', () => {
  const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.bin['claw-identity'], './bin/claw-identity.js');
  const root = path.dirname(path.dirname(BIN));
  const out = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  const files = JSON.parse(out.stdout)[0].files.map((f) => f.path);
  assert.ok(files.includes('bin/claw-identity.js'), files.join(', '));
  assert.ok(fs.readFileSync(BIN, 'utf8').startsWith('#!/usr/bin/env node\n'));
});
