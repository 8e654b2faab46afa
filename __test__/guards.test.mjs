// The guards decide on what OpenClaw 2026.9.6 will actually open, through
// the public API, one case per way a rule's picture of a path used to
// differ from OpenClaw's (docs/rules.md, "map-access"), and the layer's own
// controls out of the agents' reach. The real gateway is in e2e/guards.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { IdentityLayer, configure, entryFile, explain, fingerprint, redactToolResult } from './helpers/subject.mjs';
import { assertNoTokenIn, captureLogger, randomToken, recordEmitted, tempDir, writeMap, waitFor } from './helpers/support.mjs';

const FRANCIS = 'paco--francis';
const MAIN = `agent:${FRANCIS}:main`;

/** A home with a workspace, a map in ~/.config/micelclaw, and an OpenClaw state dir with its config. */
function setup({ options = {}, config } = {}) {
  const home = tempDir();
  const dir = path.join(home, '.config', 'micelclaw');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'agent-tokens.json');
  const tokens = { [FRANCIS]: randomToken(), 'paco--dali': randomToken() };
  writeMap(file, tokens);
  const workspace = path.join(home, 'ws');
  fs.mkdirSync(workspace);
  const state = path.join(home, '.openclaw');
  fs.mkdirSync(state);
  const configFile = path.join(state, 'openclaw.json');
  fs.writeFileSync(configFile, '{}');
  const openclawConfig = config?.({ workspace }) ?? { agents: { entries: { [FRANCIS]: { workspace } } } };
  const layer = new IdentityLayer({ tokenMapPath: file, logger: captureLogger().logger, openclawConfig, ...options });
  return { home, dir, file, tokens, workspace, configFile, layer };
}

const call = (layer, toolName, params, ctx = {}) => layer.beforeToolCall({ toolName, params }, { agentId: FRANCIS, sessionKey: MAIN, ...ctx });

function refused(r, rule, what) {
  recordEmitted('blockReason', r?.blockReason);
  assert.equal(r?.block, true, `${what} passed`);
  assert.match(r.blockReason, new RegExp(`^${rule}: `), what);
  assertNoTokenIn(r.blockReason);
}

/** With OpenClaw's config and state in `home` (as the gateway's environment says), run `f`. */
function withOpenClawHome(home, f) {
  const saved = { OPENCLAW_STATE_DIR: process.env.OPENCLAW_STATE_DIR, OPENCLAW_CONFIG_PATH: process.env.OPENCLAW_CONFIG_PATH };
  process.env.OPENCLAW_STATE_DIR = path.join(home, '.openclaw');
  delete process.env.OPENCLAW_CONFIG_PATH;
  try {
    return f();
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

test("file: URLs are read as Node's fileURLToPath reads them: a host, a query, a fragment, backslashes, a tab", () => {
  const s = setup();
  const tail = s.file.slice(1);
  for (const url of [
    `file://localhost/${tail}`,
    `file://LOCALHOST/${tail}`,
    `file:///${tail}?download=1`,
    `file:///${tail}#top`,
    `file:///${tail.replaceAll('/', '\\')}`,
    `file:///${tail.replace('agent-tokens', 'agent-to\tkens')}`,
  ]) {
    for (const tool of ['read', 'edit']) refused(call(s.layer, tool, { path: url, edits: [] }), 'map-access', `${tool} ${JSON.stringify(url)}`);
  }
  s.layer.close();
});

test("a child spawned with a cwd works there: its relative paths are checked against its session's spawned cwd", () => {
  const child = `agent:${FRANCIS}:subagent:1`;
  const dirOf = {};
  const sessions = {
    ensure: async () => {},
    entryOf: (_agent, key) => (key === child ? { spawnedBy: MAIN, spawnedCwd: dirOf.map } : undefined),
  };
  const s = setup({ options: { sessions } });
  dirOf.map = s.dir;
  for (const [tool, params] of [
    ['read', { path: 'agent-tokens.json' }],
    ['edit', { path: 'agent-tokens.json', edits: [] }],
    ['ls', {}],
    ['grep', { pattern: '[0-9a-f]{8}' }],
  ]) {
    refused(call(s.layer, tool, params, { sessionKey: child }), 'map-access', tool);
  }
  // The spawn itself, with its cwd in the map's directory, is refused too.
  refused(call(s.layer, 'sessions_spawn', { task: 't', cwd: s.dir }), 'map-access', 'sessions_spawn cwd');
  s.layer.close();
});

test('every media key of message, and every tool of OpenClaw 2026.9.6 that reads a host path, is checked', () => {
  const s = setup();
  for (const [tool, params] of [
    ['message', { action: 'send', mediaUrl: s.file }],
    ['message', { action: 'send', fileUrl: `file://${s.file}` }],
    ['message', { action: 'send', image: s.file }],
    ['message', { action: 'send', mediaUrls: [s.file] }],
    ['message', { action: 'send', media_urls: [s.file] }],
    ['message', { action: 'send', attachments: [{ url: s.file }] }],
    ['message', { action: 'send', attachments: [{ fileUrl: s.file }] }],
    ['message', { action: 'send', attachments: [{ mediaUrl: s.file }] }],
    ['file_fetch', { node: 'n', path: s.file }],
    ['dir_fetch', { node: 'n', path: s.dir }],
    ['browser', { action: 'upload', paths: [s.file] }],
    ['video_generate', { prompt: 'x', videos: [s.file] }],
    ['nodes', { action: 'screen_snapshot', outPath: path.join(s.dir, 'x.png') }],
  ]) {
    refused(call(s.layer, tool, params), 'map-access', `${tool} ${Object.keys(params).join(',')}`);
  }
  s.layer.close();
});

test('~ with HOME unset is the home OpenClaw falls back to (USERPROFILE, then os.homedir())', () => {
  const s = setup();
  const saved = { HOME: process.env.HOME, USERPROFILE: process.env.USERPROFILE };
  delete process.env.HOME;
  process.env.USERPROFILE = s.home;
  try {
    refused(call(s.layer, 'read', { path: '~/.config/micelclaw/agent-tokens.json' }), 'map-access', 'read ~/… with HOME unset');
  } finally {
    process.env.HOME = saved.HOME;
    if (saved.USERPROFILE === undefined) delete process.env.USERPROFILE;
    else process.env.USERPROFILE = saved.USERPROFILE;
  }
  s.layer.close();
});

test("the layer's own controls are out of the agents' tools' reach: OpenClaw's config, the plugin's files, the plugins and openclaw tools", () => {
  const plugin = tempDir();
  fs.writeFileSync(path.join(plugin, 'index.js'), '');
  const home = tempDir();
  const s = withOpenClawHome(home, () => {
    fs.mkdirSync(path.join(home, '.openclaw'));
    fs.writeFileSync(path.join(home, '.openclaw', 'openclaw.json'), '{}');
    return setup({ options: { pluginDirs: [plugin] } });
  });
  const config = path.join(home, '.openclaw', 'openclaw.json');
  for (const [tool, params] of [
    ['read', { path: config }],
    ['edit', { path: config, edits: [{ oldText: '{}', newText: '{"plugins":{"enabled":false}}' }] }],
    ['write', { path: config, content: '{}' }],
    ['apply_patch', { input: `*** Begin Patch\n*** Update File: ${config}\n@@\n-{}\n+{ }\n*** End Patch` }],
    ['write', { path: path.join(plugin, 'index.js'), content: '' }],
    ['plugins', { action: 'disable', pluginId: 'claw-identity' }],
    ['plugins', { action: 'uninstall', pluginId: 'Claw-Identity' }],
    ['plugins', { action: 'install', packageName: 'something' }],
    ['openclaw', { message: 'config set plugins.entries.claw-identity.enabled false' }],
  ]) {
    refused(call(s.layer, tool, params), 'layer-controls', `${tool} ${JSON.stringify(params).slice(0, 60)}`);
  }
  // Reading the plugin's own code is harmless; listing plugins too.
  assert.equal(call(s.layer, 'read', { path: path.join(plugin, 'index.js') }), undefined);
  assert.equal(call(s.layer, 'plugins', { action: 'list' }), undefined);
  assert.equal(fs.readFileSync(config, 'utf8'), '{}');
  s.layer.close();
});

test('no agent tool may write a place OpenClaw imports code or reads its start-up from: managed, configured and workspace hooks, its package, the Node binary, every service definition', () => {
  const home = tempDir();
  const state = path.join(home, '.openclaw');
  const extra = path.join(home, 'team-hooks');
  // OpenClaw's own package, as the plugin resolves it through its node_modules/openclaw link.
  const pkg = path.join(home, 'lib', 'node_modules', 'openclaw');
  fs.mkdirSync(path.join(pkg, 'dist'), { recursive: true });
  fs.writeFileSync(path.join(pkg, 'package.json'), '{"name":"openclaw"}');
  fs.writeFileSync(path.join(pkg, 'dist', 'index.js'), '');
  const s = withOpenClawHome(home, () => {
    fs.mkdirSync(state);
    fs.writeFileSync(path.join(state, 'openclaw.json'), '{}');
    return setup({
      options: { openclawFiles: [path.join(pkg, 'dist', 'index.js')] },
      config: ({ workspace }) => ({
        agents: { entries: { [FRANCIS]: { workspace } } },
        hooks: { internal: { load: { extraDirs: [extra] }, entries: { 'session-memory': { enabled: true } } } },
      }),
    });
  });
  const os = process.getBuiltinModule('node:os');
  const writes = [
    path.join(state, 'hooks', 'boot-md', 'handler.js'),
    path.join(state, 'hooks', 'evil', 'HOOK.md'),
    path.join(extra, 'evil', 'handler.js'),
    path.join(s.workspace, 'hooks', 'evil', 'handler.js'),
    path.join(pkg, 'dist', 'index.js'),
    path.join(pkg, 'dist', 'some-lazy-chunk.mjs'),
    path.join(home, 'lib', 'node_modules', 'dep', 'index.js'),
    process.execPath,
    path.join(state, 'gateway.cmd'),
    path.join(state, 'state', 'openclaw.sqlite'),
    path.join(os.homedir(), '.config', 'systemd', 'user', 'openclaw-gateway.service'),
    path.join(os.homedir(), '.config', 'systemd', 'user', 'openclaw-gateway-work.service.d', 'x.conf'),
    path.join(os.homedir(), 'Library', 'LaunchAgents', 'ai.openclaw.gateway.plist'),
    path.join(os.homedir(), '.bashrc'),
  ];
  for (const file of writes) {
    for (const [tool, params] of [
      ['write', { path: file, content: 'export default () => {}' }],
      ['apply_patch', { input: `*** Begin Patch\n*** Add File: ${file}\n+x\n*** End Patch` }],
    ]) {
      refused(call(s.layer, tool, params), 'layer-controls', `${tool} ${file}`);
    }
  }
  // The service's environment file holds the gateway's secrets: not even read.
  refused(call(s.layer, 'read', { path: path.join(state, 'gateway.systemd.env') }), 'layer-controls', 'read gateway.systemd.env');
  // OpenClaw's code can still be read, and other files written.
  assert.equal(call(s.layer, 'read', { path: path.join(pkg, 'dist', 'index.js') }), undefined);
  assert.equal(call(s.layer, 'write', { path: path.join(s.workspace, 'notes.md'), content: 'x' }), undefined);
  s.layer.close();
});

test('a bare IdentityLayer, with no plugin to tell it, guards its own installed files and the Node binary', () => {
  const home = tempDir();
  const file = path.join(home, 'map.json');
  writeMap(file, { [FRANCIS]: randomToken() });
  const layer = new IdentityLayer({ tokenMapPath: file, logger: captureLogger().logger });
  const ours = path.dirname(entryFile);
  for (const target of [path.join(ours, 'package.json'), path.join(ours, 'lib', 'api.js'), process.execPath]) {
    refused(call(layer, 'write', { path: target, content: '' }), 'layer-controls', `write ${target}`);
  }
  layer.close();
});

test('a path with a NUL in it is refused', () => {
  const s = setup();
  for (const [tool, params] of [
    ['read', { path: `${s.file}\u0000` }],
    ['write', { path: `${s.file}\u0000.bak`, content: '{}' }],
    ['read', { path: `notes\u0000.md` }],
    ['sessions_spawn', { task: 't', cwd: `${s.dir}\u0000` }],
  ]) {
    refused(call(s.layer, tool, params), 'map-access', `${tool} with a NUL`);
  }
  s.layer.close();
});

test('a change of options keeps the map in force and its grace, even while the file on disk is bad', async () => {
  const s = setup();
  const layer = configure({ tokenMapPath: s.file, logger: captureLogger().logger });
  const t = s.tokens[FRANCIS];
  fs.writeFileSync(s.file, '{ not json');
  await waitFor(() => layer.stats().lastError !== null, { what: 'the bad map' });
  const next = configure({ tokenMapPath: s.file, logger: captureLogger().logger, onMissingToken: 'block' });
  assert.notEqual(next, layer);
  assert.equal(next.beforeToolCall({ toolName: 'claw-os__x', params: {} }, { agentId: FRANCIS })?.params?.auth_token, t);
  const r = redactToolResult({ toolName: 'exec', result: { content: [{ type: 'text', text: t }] } });
  assert.equal(r?.result?.content?.[0]?.text, `sha256:${fingerprint(t)}`);
  s.layer.close();
  next.close();
});

test('explain takes the very decision the hook takes', () => {
  const s = setup();
  const configFile = path.join(tempDir(), 'openclaw.json');
  const entries = { [FRANCIS]: { workspace: s.workspace }, 'paco--dali': {}, 'pepito--atlas': {} };
  fs.writeFileSync(
    configFile,
    JSON.stringify({ agents: { entries }, plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMapPath: s.file } } } } }),
  );
  const layer = new IdentityLayer({ tokenMapPath: s.file, logger: captureLogger().logger, openclawConfig: { agents: { entries } } });
  const kind = (r) => (r === undefined ? 'pass' : r.block ? 'block' : r.requireApproval ? 'ask' : 'rewrite');
  const cases = [
    ['claw-os__claw_notes', { auth_token: 'made-up' }],
    ['read', { path: 'notes/agent-tokens.json' }],
    ['read', { path: '../.config/micelclaw/agent-tokens.json' }],
    ['read', { path: s.file }],
    ['sessions_send', { agentId: 'pepito--atlas', message: 'hi' }],
    ['sessions_send', { agentId: 'paco--dali', message: `here: ${s.tokens[FRANCIS]}` }],
    ['sessions_spawn', { agentId: 'paco--dali', task: 'paint' }],
    ['workboard_list', { boardId: 'wb_pepito' }],
    ['workboard_create', { title: 't', agentId: 'pepito--atlas' }],
    ['sessions_history', { sessionKey: 'agent:pepito--atlas:main' }],
    ['sessions_list', {}],
    ['exec', { command: 'ls' }],
  ];
  for (const [tool, params] of cases) {
    const hook = kind(layer.beforeToolCall({ toolName: tool, params }, { agentId: FRANCIS, sessionKey: MAIN }));
    const e = explain({ agent: FRANCIS, tool, params, sessionKey: MAIN, config: configFile });
    assert.equal(e.report.decision, hook, `${tool} ${JSON.stringify(params).slice(0, 60)}`);
    assertNoTokenIn(e.text);
  }
  layer.close();
  s.layer.close();
});
