// `claw-identity doctor --mcp` and `audit --mcp` against real MCP servers:
// the claw-os fixture on the official SDK, over stdio and on 127.0.0.1 over
// streamable HTTP and SSE. Each schema problem named with its fix, exit 0 on
// the recommended schema, an unreachable server a finding and not a crash,
// and doctor only lists tools: no tool call, no token sent. The same checks
// under a real OpenClaw are in e2e/schema.test.mjs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { assertNoTokenIn, randomToken, recordEmitted, spawnNode, tempDir, writeMap } from './helpers/support.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(root, 'bin', 'claw-identity.js');
const SERVER = path.join(root, '__test__', 'e2e', 'fixtures', 'claw-os-server.mjs');
const INTERNAL = 'Internal. Injected by the gateway; never set this manually.';
const FRANCIS = 'paco--francis';

/** Runs the command; all output goes to the leak guard. */
function cli(args, env = {}) {
  return new Promise((resolve) => {
    const child = spawnNode([BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.once('close', (code) => {
      recordEmitted(`claw-identity ${args.join(' ')}`, stdout + stderr);
      resolve({ code, stdout, stderr });
    });
  });
}

const servers = [];
after(() => {
  for (const s of servers) s.kill();
});

/** The fixture on loopback (`--http` or `--sse`); resolves to its URL. */
function serve(mode, env = {}) {
  const child = spawnNode([SERVER, mode], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  servers.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`the fixture server exited ${code}`)));
  });
}

/** A private dir with a map, the RPC log, and a gateway config naming `mcpServers`. */
function setup(mcpServers, plugin = {}) {
  const dir = tempDir();
  const map = path.join(dir, 'agent-tokens.json');
  const tokens = { [FRANCIS]: randomToken() };
  writeMap(map, tokens);
  const rpcLog = path.join(dir, 'rpc.jsonl');
  const callLog = path.join(dir, 'calls.jsonl');
  const config = path.join(dir, 'openclaw.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMapPath: map, ...plugin } } } },
      // Sandboxed agents (OpenClaw's Docker sandbox, nothing mounted), and
      // Code Mode off: contained, so no posture finding or exec notice to
      // report here (helpers/posture.mjs has the plugin's own sandbox).
      agents: { defaults: { sandbox: { mode: 'all' } }, entries: { [FRANCIS]: {} } },
      tools: { codeMode: false },
      mcp: { servers: mcpServers({ rpcLog, callLog }) },
    }),
  );
  return { dir, map, tokens, config, rpcLog, callLog };
}

const stdio = (variant, { rpcLog, callLog }) => ({
  command: process.execPath,
  args: [SERVER],
  env: { CLAW_OS_VARIANT: variant, CLAW_OS_RPC_LOG: rpcLog, CLAW_OS_CALL_LOG: callLog },
});

/** The JSON-RPC methods a server received. */
const methods = (file) =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).method)
    : [];

/** Doctor's lines for the MCP servers. */
const mcpLines = (stdout) => stdout.split('\n').filter((l) => /^\S+ +mcp (tool|server|servers): |^ +fix: (declare|make|check)/.test(l));

test('doctor --mcp on the recommended schema (stdio): each owned tool ok, exit 0, and only initialize and tools/list were sent', async () => {
  const s = setup((logs) => ({ 'claw-os': stdio('recommended', logs) }));
  const r = await cli(['doctor', '--mcp', '--config', s.config]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.deepEqual(mcpLines(r.stdout), [
    'ok    mcp tool: claw-os__claw_notes (server "claw-os") declares auth_token and _conversation_id, optional: the server gets what claw-identity sets, and a model that leaves them out is not refused',
    'ok    mcp tool: claw-os__claw_audio (server "claw-os") declares auth_token and _conversation_id, optional: the server gets what claw-identity sets, and a model that leaves them out is not refused',
  ]);
  // The standalone command has no OpenClaw to ask which plugins get the token.
  assert.match(r.stdout, /^info {2}token readers: this command runs without OpenClaw/m);
  assert.match(r.stdout, /^healthy: nothing found stops token injection$/m);
  assert.deepEqual(methods(s.rpcLog), ['initialize', 'notifications/initialized', 'tools/list']);
  assert.equal(fs.existsSync(s.callLog), false, 'no tool was called');
  assertNoTokenIn(fs.readFileSync(s.rpcLog, 'utf8'), 'what the server received');
  assertNoTokenIn(r.stdout + r.stderr);
});

test('doctor --mcp names each of the three schema problems with its fix: undeclared token (FAIL), undeclared conversation id, a required token', async () => {
  const s = setup((logs) => ({ 'claw-os': stdio('e2e', logs), 'claw-os-bare': stdio('bare', logs) }), { toolPrefix: ['claw-os__', 'claw-os-bare__'] });
  const r = await cli(['doctor', '--mcp', '--config', s.config]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const lines = mcpLines(r.stdout);
  const zod = (p) => `${p}: z.string().optional().describe("${INTERNAL}")`;
  assert.deepEqual(lines, [
    'ok    mcp tool: claw-os__claw_notes (server "claw-os") declares auth_token and _conversation_id, optional: the server gets what claw-identity sets, and a model that leaves them out is not refused',
    'ok    mcp tool: claw-os__claw_audio (server "claw-os") declares auth_token and _conversation_id, optional: the server gets what claw-identity sets, and a model that leaves them out is not refused',
    "warn  mcp tool: claw-os__claw_legacy (server \"claw-os\") lists auth_token in required: where OpenClaw offers the tool to the model by name (tools.toolSearch false, for one), it validates the model's arguments against the schema before any plugin runs (argument-validation), so a call whose model leaves it out, as a model that has learned not to handle the secret does, is refused before claw-identity can set it (Tool Search's tool_call does not check an MCP tool's arguments)",
    `      fix: make it optional in the tool's inputSchema (drop auth_token from required) and describe it as internal, injected by the gateway, e.g. with zod: ${zod('auth_token')}`,
    'FAIL  mcp tool: claw-os-bare__claw_bare (server "claw-os-bare") does not declare auth_token in its inputSchema: the MCP SDK drops every argument a tool\'s schema does not declare, so the token claw-identity sets never reaches the server, and the call fails authentication or runs without its agent\'s identity',
    `      fix: declare auth_token in the tool's inputSchema as an optional string described as internal, e.g. with zod: ${zod('auth_token')}`,
    'warn  mcp tool: claw-os-bare__claw_bare (server "claw-os-bare") does not declare _conversation_id in its inputSchema while rule conversation-id is on: the MCP SDK drops it, so the server never learns which conversation a call came from, and its approval cards lose their chat',
    `      fix: declare it in the tool's inputSchema as an optional string described as internal (${zod('_conversation_id')}); or, if the server does not route by conversation, turn the rule off: openclaw config set plugins.entries.claw-identity.config.rules.conversationId.enabled false --strict-json`,
  ]);
  assert.match(r.stdout, /^1 problem stops token injection \(2 warnings\); fix it and run doctor again$/m);
  assert.equal(fs.existsSync(s.callLog), false, 'no tool was called');

  // The same findings in audit --mcp, by checkId, each with its fix.
  const a = await cli(['audit', '--mcp', '--json', '--config', s.config]);
  assert.equal(a.code, 1, a.stderr);
  const found = JSON.parse(a.stdout).filter((f) => f.checkId.startsWith('claw-identity.mcp_'));
  assert.deepEqual(
    found.map((f) => [f.checkId, f.severity]),
    [
      ['claw-identity.mcp_injected_param_required', 'warn'],
      ['claw-identity.mcp_token_param_undeclared', 'critical'],
      ['claw-identity.mcp_conversation_param_undeclared', 'warn'],
    ],
  );
  assert.ok(found.every((f) => f.remediation));
  // Without --mcp, audit connects to nothing.
  const offline = await cli(['audit', '--json', '--config', s.config]);
  assert.deepEqual(
    JSON.parse(offline.stdout).filter((f) => f.checkId.startsWith('claw-identity.mcp_')),
    [],
  );
});

// biome-ignore lint/suspicious/noTemplateCurlyInString: OpenClaw's own ${VAR} syntax, named
test("doctor --mcp over streamable HTTP and SSE on 127.0.0.1, with the config's headers (${VAR} substituted) and without them", async () => {
  const bearer = 'e2e-bearer';
  const http = await serve('--http', { CLAW_OS_BEARER: bearer, CLAW_OS_VARIANT: 'recommended' });
  const sse = await serve('--sse', { CLAW_OS_BEARER: bearer, CLAW_OS_VARIANT: 'recommended' });
  // biome-ignore lint/suspicious/noTemplateCurlyInString: OpenClaw substitutes ${VAR} in MCP headers
  const auth = { Authorization: 'Bearer ${CLAW_MCP_TEST_BEARER}' };
  const s = setup(
    () => ({
      'claw-os': { url: http, transport: 'streamable-http', headers: auth },
      'claw-os-sse': { url: sse, headers: auth },
    }),
    { toolPrefix: ['claw-os__', 'claw-os-sse__'] },
  );
  const r = await cli(['doctor', '--mcp', '--config', s.config], { CLAW_MCP_TEST_BEARER: bearer });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const ok = mcpLines(r.stdout).map((l) => l.split(' (server')[0]);
  assert.deepEqual(ok, [
    'ok    mcp tool: claw-os__claw_notes',
    'ok    mcp tool: claw-os__claw_audio',
    'ok    mcp tool: claw-os-sse__claw_notes',
    'ok    mcp tool: claw-os-sse__claw_audio',
  ]);

  // Without the variable, doctor can't send the header the gateway would: it says so, and connects to neither.
  const unset = await cli(['doctor', '--mcp', '--config', s.config]);
  assert.equal(unset.code, 0, unset.stdout);
  const unchecked = mcpLines(unset.stdout);
  assert.equal(unchecked.length, 2, unset.stdout);
  for (const l of unchecked) assert.match(l, /^warn {2}mcp server: mcp\.servers\.claw-os(-sse)? uses \$\{CLAW_MCP_TEST_BEARER\}, which is not set here/);

  // A wrong bearer: the server answers 401, a finding (FAIL), not a crash.
  const wrong = await cli(['doctor', '--mcp', '--config', s.config], { CLAW_MCP_TEST_BEARER: 'nope' });
  assert.equal(wrong.code, 1, wrong.stdout + wrong.stderr);
  const failed = mcpLines(wrong.stdout).filter((l) => l.startsWith('FAIL'));
  assert.equal(failed.length, 2, wrong.stdout);
  assert.ok(failed[0].startsWith(`FAIL  mcp server: the tools of server "claw-os" could not be listed (streamable-http: ${http}): `), failed[0]);
  assert.ok(failed[1].startsWith(`FAIL  mcp server: the tools of server "claw-os-sse" could not be listed (sse: ${sse}): `), failed[1]);
  assert.ok(!wrong.stdout.includes('nope') && !wrong.stdout.includes(bearer), 'the header is never printed');
});

test('an MCP server that does not start is a finding with its stderr, not a crash; a server whose tools toolPrefix does not name is not started', async () => {
  const s = setup(
    () => ({
      'claw-os': { command: process.execPath, args: ['-e', 'process.stderr.write("boot failed: no database\\n"); process.exit(3)'] },
      'claw-os-gone': { command: path.join(root, 'no-such-server') },
      files: { command: path.join(root, 'never-started') },
    }),
    { toolPrefix: 'claw-os' },
  );
  const r = await cli(['doctor', '--mcp', '--config', s.config]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const lines = mcpLines(r.stdout).filter((l) => l.startsWith('FAIL'));
  assert.equal(lines.length, 2, r.stdout);
  assert.match(
    lines[0],
    /^FAIL {2}mcp server: the tools of server "claw-os" could not be listed \(stdio: .*\): .*; its stderr ends: boot failed: no database\. OpenClaw launches it the same way/,
  );
  assert.match(lines[1], /^FAIL {2}mcp server: the tools of server "claw-os-gone" could not be listed \(stdio: .*no-such-server\): .*ENOENT/);
  assert.ok(!r.stdout.includes('never-started'), 'the server toolPrefix does not name is left alone');
});

/** PIDs whose environment carries `mark`. */
function marked(mark) {
  const needle = Buffer.from(`CLAW_MCP_TEST_MARK=${mark}\0`);
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/environ`).includes(needle);
      } catch {
        return false;
      }
    });
}

test('a server that never answers times out as configured (connectionTimeoutMs), and no server outlives the command', async () => {
  const mark = crypto.randomBytes(6).toString('hex');
  const s = setup(() => ({
    'claw-os': { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'], env: { CLAW_MCP_TEST_MARK: mark }, connectionTimeoutMs: 300 },
  }));
  const r = await cli(['doctor', '--mcp', '--config', s.config]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^FAIL {2}mcp server: the tools of server "claw-os" could not be listed \(stdio: .*\): .*timed out/m);
  assert.deepEqual(marked(mark), [], 'the server is still running');
});

test('doctor --mcp needs a config (exit 2); --json carries the MCP checks', async () => {
  const none = await cli(['doctor', '--mcp']);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /--mcp needs --config FILE/);
  const s = setup((logs) => ({ 'claw-os': stdio('bare', logs) }), { toolPrefix: 'claw-os__' });
  const r = await cli(['doctor', '--mcp', '--json', '--config', s.config]);
  assert.equal(r.code, 1);
  const report = JSON.parse(r.stdout);
  assert.equal(report.ok, false);
  assert.deepEqual(
    report.checks.filter((c) => c.check.startsWith('mcp')).map((c) => c.status),
    ['fail', 'warn'],
  );
});

test('without the MCP SDK installed (an optional dependency), doctor --mcp says how to get it', async () => {
  // The package as shipped, without its node_modules.
  const dir = tempDir();
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  for (const f of ['package.json', ...pkg.files]) if (fs.existsSync(path.join(root, f))) fs.cpSync(path.join(root, f), path.join(dir, f), { recursive: true });
  const s = setup((logs) => ({ 'claw-os': stdio('recommended', logs) }));
  const r = await new Promise((resolve) => {
    const child = spawnNode([path.join(dir, 'bin', 'claw-identity.js'), 'doctor', '--mcp', '--config', s.config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.once('close', (code) => resolve({ code, stdout }));
  });
  assert.equal(r.code, 1, r.stdout);
  assert.match(
    r.stdout,
    /^FAIL {2}mcp server: the tools of server "claw-os" could not be listed \(stdio: .*\): the MCP SDK \(@modelcontextprotocol\/sdk\) is not installed .*npm install @modelcontextprotocol\/sdk/m,
  );
  assert.equal(methods(s.rpcLog).length, 0, 'the server was not started');
});
