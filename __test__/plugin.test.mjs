// The plugin entry as OpenClaw calls it (the real gateway is in e2e/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import plugin, { IdentityLayer, stats } from './helpers/subject.mjs';
import { buildInfo, entryFile, entryUrl } from './helpers/subject.mjs';
import { contained, deepMerge } from './helpers/posture.mjs';
import { captureLogger, randomToken, recordEmitted, tempDir, tick, waitFor, writeMap, writeMapAtomic } from './helpers/support.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'openclaw.plugin.json'), 'utf8'));
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

function fakeApi(config, mode = 'full') {
  const log = captureLogger();
  const api = {
    pluginConfig: config,
    registrationMode: mode,
    logger: log.logger,
    hooks: [],
    policies: [],
    on(name, handler, opts) {
      this.hooks.push({ name, handler, opts });
    },
    registerTrustedToolPolicy(policy) {
      this.policies.push(policy);
    },
  };
  return { api, log };
}

function mapWith(tokens) {
  const dir = tempDir();
  const file = path.join(dir, 'agent-tokens.json');
  writeMap(file, tokens);
  return file;
}

test('the manifest declares the id, startup activation, the trusted policy and a strict schema', () => {
  assert.equal(manifest.id, 'claw-identity');
  assert.equal(plugin.id, manifest.id);
  assert.equal(manifest.activation.onStartup, true);
  assert.deepEqual(manifest.contracts.trustedToolPolicies, ['claw-identity']);
  assert.equal(manifest.configSchema.additionalProperties, false);
  assert.deepEqual(pkg.openclaw.extensions, ['./index.js']);
  assert.equal(typeof plugin.register, 'function');
  assert.ok(plugin.name && plugin.description);
});

test('every option in the configSchema is one the layer accepts, and no other', () => {
  const props = Object.keys(manifest.configSchema.properties).sort();
  const samples = {
    tokenMapPath: '/nonexistent/claw-identity/m.json',
    toolPrefix: ['a__'],
    tokenParam: 'tok',
    onMissingToken: 'block',
    allowGroupReadable: true,
    maxStaleSeconds: 5,
    watcher: 'poll',
    pollIntervalMs: 100,
    protectMap: 'strict',
    rules: {},
    sandbox: { network: 'host', bwrap: '/usr/bin/bwrap', hide: ['/srv/secrets'] },
    posture: 'warn',
  };
  assert.deepEqual(props, Object.keys(samples).sort());
  const layer = new IdentityLayer({ ...samples, logger: captureLogger().logger });
  layer.close();
  // The plugin passes config through, and the logger is the only extra key.
  assert.throws(() => new IdentityLayer({ notInSchema: 1 }), /unknown option "notInSchema"/);
});

test('register wires a trusted tool policy, a priority-100 hook with no matcher, and the transcript redaction last', () => {
  const file = mapWith({ 'paco--francis': randomToken() });
  const { api, log } = fakeApi({ tokenMapPath: file });
  plugin.register(api);
  assert.deepEqual(
    api.hooks.map((h) => [h.name, h.opts]),
    [
      ['before_tool_call', { priority: 100 }],
      ['tool_result_persist', { priority: -1000 }],
      ['before_message_write', { priority: -1000 }],
    ],
  );
  assert.equal(api.policies.length, 1);
  assert.equal(api.policies[0].id, 'claw-identity');
  assert.equal(api.policies[0].matcher, undefined);
  assert.equal(typeof api.policies[0].evaluate, 'function');
  return waitFor(() => log.has(/identity is enforced by the trusted tool-policy tier/), { what: 'the tier line' });
});

test('the load line says which build runs, and why', () => {
  const file = mapWith({ 'paco--francis': randomToken() });
  const { api, log } = fakeApi({ tokenMapPath: file });
  plugin.register(api);
  const line = buildInfo.native
    ? `[claw-identity] running the native ${buildInfo.name} build; identity is enforced by`
    : `[claw-identity] running the WebAssembly build (${buildInfo.reason}); identity is enforced by`;
  assert.ok(
    log.lines.some((l) => l.line.includes(line)),
    `no line says "${line}"`,
  );
  // index.js picks by platform alone.
  const [major, minor] = (process.report.getReport().header.glibcVersionRuntime ?? '0.0').split('.').map(Number);
  const expected = process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch) && (major > 2 || (major === 2 && minor >= 34));
  if (!process.env.CLAW_IDENTITY_TEST_BUILD) assert.equal(buildInfo.native, expected);
});

test('register is idempotent: several registrations share one layer and one watcher', () => {
  const file = mapWith({ 'paco--francis': randomToken() });
  const first = fakeApi({ tokenMapPath: file }, 'discovery');
  const second = fakeApi({ tokenMapPath: file }, 'full');
  plugin.register(first.api);
  const before = stats().injected;
  plugin.register(second.api);
  const ev = { toolName: 'claw-os__claw_notes', params: {} };
  first.api.policies[0].evaluate(ev, { agentId: 'paco--francis' });
  second.api.policies[0].evaluate(ev, { agentId: 'paco--francis' });
  assert.equal(stats().injected, before + 2);
  assert.equal(stats().reloads, 1);
});

test('the policy returns the full params with the token; the safety net then does nothing', () => {
  const token = randomToken();
  const file = mapWith({ 'paco--francis': token });
  const { api } = fakeApi({ tokenMapPath: file });
  plugin.register(api);
  const ctx = { agentId: 'paco--francis' };
  const event = { toolName: 'claw-os__claw_notes', params: { note: 'n', auth_token: 'wrong' } };
  const decision = api.policies[0].evaluate(event, ctx);
  assert.deepEqual(decision.params, { note: 'n', auth_token: token });
  // OpenClaw then gives the ordinary hooks the policy's params.
  assert.equal(api.hooks[0].handler({ ...event, params: decision.params }, ctx), undefined);
});

test('the safety net applies the rewrite and says loudly that the trusted tier did not run', async () => {
  const token = randomToken();
  const file = mapWith({ 'paco--francis': token });
  const { api, log } = fakeApi({ tokenMapPath: file, onMissingToken: 'block' });
  plugin.register(api);
  const ctx = { agentId: 'paco--francis' };
  const r = api.hooks[0].handler({ toolName: 'claw-os__claw_notes', params: { auth_token: 'wrong' } }, ctx);
  assert.equal(r.params.auth_token, token);
  api.hooks[0].handler({ toolName: 'claw-os__claw_notes', params: { auth_token: 'wrong' } }, ctx);
  await waitFor(() => log.has(/trusted tool-policy tier did not run/), { what: 'the loud line' });
  assert.equal(log.lines.filter((l) => /trusted tool-policy tier did not run/.test(l.line)).length, 1);
  const blocked = api.hooks[0].handler({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: 'paco--ghost' });
  recordEmitted('blockReason', blocked.blockReason);
  assert.equal(blocked.block, true);
});

test('without registerTrustedToolPolicy (older OpenClaw) the hook alone enforces identity', async () => {
  const token = randomToken();
  const file = mapWith({ 'paco--francis': token });
  const { api, log } = fakeApi({ tokenMapPath: file });
  delete api.registerTrustedToolPolicy;
  plugin.register(api);
  const r = api.hooks[0].handler({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: 'paco--francis' });
  assert.equal(r.params.auth_token, token);
  await waitFor(() => log.has(/enforced by the ordinary before_tool_call hook only/), { what: 'the tier line' });
});

test('once the policy has run, the hook costs no decision: the counters count each call once', () => {
  const token = randomToken();
  const file = mapWith({ 'paco--francis': token });
  const { api } = fakeApi({ tokenMapPath: file });
  plugin.register(api);
  const ctx = { agentId: 'paco--francis' };
  const event = { toolName: 'claw-os__claw_notes', params: { auth_token: 'wrong' } };
  const before = stats().injected;
  for (let i = 0; i < 3; i++) {
    const decided = api.policies[0].evaluate(event, ctx);
    assert.equal(api.hooks[0].handler({ ...event, params: decided.params }, ctx), undefined);
  }
  assert.equal(stats().injected - before, 3, 'the hook decided again');
});

// ---- the watcher as an OpenClaw service ----

const CONFIG_PREFIX = 'plugins.entries.claw-identity.config';
/** The config the posture reads, whose hot reload must judge it again (core/src/posture.rs). */
const POSTURE_CONFIG = ['agents.defaults', 'agents.entries', 'agents.list', 'tools', 'session.scope', 'acp', 'cron', 'hooks'];

/** A fake api that also takes services and reload policies, as a gateway's does. */
function gatewayApi(config) {
  const f = fakeApi(config);
  f.api.services = [];
  f.api.reloads = [];
  f.api.registerService = (s) => f.api.services.push(s);
  f.api.registerReload = (r) => f.api.reloads.push(r);
  return f;
}

/**
 * What OpenClaw hands a service: the committed config, and a health reporter
 * we can read. The config contains its agents on the host (helpers/posture.mjs),
 * so the layer serves tokens under posture "enforce"; `openclaw` is merged
 * over it (an exposed agent, for the posture's own tests).
 */
function serviceCtx(pluginConfig, openclaw = {}) {
  const health = { failures: [], clears: 0 };
  health.reportFailure = (e) => health.failures.push(String(e?.message ?? e));
  health.clearFailure = () => (health.clears += 1);
  const config = deepMerge(contained({ plugins: { entries: { 'claw-identity': { config: pluginConfig } } } }), openclaw);
  return { ctx: { config, serviceHealth: health }, health };
}

const call = (api, agentId) => api.policies[0].evaluate({ toolName: 'claw-os__claw_notes', params: {} }, { agentId })?.params?.auth_token;

test('in a gateway the watcher is a service: stopped and started by OpenClaw, with a hot reload policy for the plugin options', async () => {
  const t1 = randomToken();
  const file = mapWith({ 'paco--francis': t1 });
  const { api } = gatewayApi({ tokenMapPath: file });
  plugin.register(api);
  assert.equal(api.services.length, 1);
  const [service] = api.services;
  assert.equal(service.id, 'claw-identity');
  // The plugin's options, and the config the posture is judged from.
  assert.deepEqual(service.reload, { configPrefixes: [CONFIG_PREFIX, ...POSTURE_CONFIG] });
  assert.deepEqual(api.reloads, [{ hotPrefixes: [CONFIG_PREFIX] }]);

  const { ctx } = serviceCtx({ tokenMapPath: file });
  service.start(ctx);
  assert.notEqual(stats().watcher, 'closed');
  service.stop(ctx);
  // Stopped with the gateway: no watcher, and the map in force stays in force.
  assert.equal(stats().watcher, 'closed');
  const t2 = randomToken();
  writeMapAtomic(file, { 'paco--francis': t2 });
  await tick(300);
  assert.equal(call(api, 'paco--francis'), t1);
  // Started again: it reads the map first.
  service.start(ctx);
  assert.notEqual(stats().watcher, 'closed');
  await waitFor(() => call(api, 'paco--francis') === t2, { what: 'the map read again when the service starts' });
  service.stop(ctx);
});

test('a changed tokenMapPath restarts the service with the committed config: the next call uses the new map', async () => {
  const old = mapWith({ 'paco--francis': randomToken() });
  const { api } = gatewayApi({ tokenMapPath: old });
  plugin.register(api);
  const [service] = api.services;
  const first = serviceCtx({ tokenMapPath: old });
  service.start(first.ctx);
  const t = randomToken();
  const moved = mapWith({ 'paco--francis': t });
  // What OpenClaw does for a change under plugins.entries.claw-identity.config.
  service.stop(first.ctx);
  const next = serviceCtx({ tokenMapPath: moved });
  service.start(next.ctx);
  assert.equal(stats().tokenMapPath, moved);
  assert.notEqual(stats().watcher, 'closed');
  // The registration made before the change reaches the new layer.
  assert.equal(call(api, 'paco--francis'), t);
  assert.deepEqual(next.health.failures, []);
  service.stop(next.ctx);
});

test('options that do not validate on a reload are reported to health, and the layer in force keeps running', async () => {
  const t = randomToken();
  const file = mapWith({ 'paco--francis': t });
  const { api } = gatewayApi({ tokenMapPath: file });
  plugin.register(api);
  const [service] = api.services;
  const bad = serviceCtx({ tokenMapPath: file, tokenParam: 5 });
  service.start(bad.ctx);
  assert.equal(bad.health.failures.length, 1);
  assert.match(
    bad.health.failures[0],
    /^claw-identity: the options under plugins\.entries\.claw-identity\.config were not applied: invalid options: tokenParam: invalid type: integer `5`, expected a string$/,
  );
  assert.equal(stats().tokenMapPath, file);
  assert.notEqual(stats().watcher, 'closed');
  assert.equal(call(api, 'paco--francis'), t);
  service.stop(bad.ctx);
});

test('an unusable map is reported to OpenClaw health, without a token, and cleared when the map is good again', async () => {
  const t = randomToken();
  const file = mapWith({ 'paco--francis': t });
  const { api } = gatewayApi({ tokenMapPath: file });
  plugin.register(api);
  const [service] = api.services;
  const { ctx, health } = serviceCtx({ tokenMapPath: file });
  service.start(ctx);
  assert.deepEqual(health.failures, []);
  writeMapAtomic(file, `{"paco--francis": "${t}"`);
  await waitFor(() => health.failures.length === 1, { timeoutMs: 10_000, intervalMs: 50, what: 'the failure report' });
  assert.match(health.failures[0], /is not in force: .*not a valid token map.* The last good map \(1 agents\) stays in force until the file is fixed$/);
  assert.ok(!health.failures[0].includes(t.slice(0, 16)), 'the report holds part of a token');
  assert.equal(call(api, 'paco--francis'), t);
  writeMapAtomic(file, { 'paco--francis': t });
  await waitFor(() => health.clears === 1, { timeoutMs: 10_000, intervalMs: 50, what: 'the failure cleared' });
  assert.equal(health.failures.length, 1, 'reported more than once');
  service.stop(ctx);
});

test('when OpenClaw overlaps an old and a new service, the watcher stops only with the last one', () => {
  const file = mapWith({ 'paco--francis': randomToken() });
  const a = gatewayApi({ tokenMapPath: file });
  const b = gatewayApi({ tokenMapPath: file });
  plugin.register(a.api);
  plugin.register(b.api);
  const { ctx } = serviceCtx({ tokenMapPath: file });
  a.api.services[0].start(ctx);
  b.api.services[0].start(ctx);
  a.api.services[0].stop(ctx);
  assert.notEqual(stats().watcher, 'closed');
  a.api.services[0].stop(ctx); // at most once per start: a second stop changes nothing
  assert.notEqual(stats().watcher, 'closed');
  b.api.services[0].stop(ctx);
  assert.equal(stats().watcher, 'closed');
});

test("a discovery registration (OpenClaw runs a gateway's tool calls through it) watches its map, and registers no service", () => {
  const file = mapWith({ 'paco--francis': randomToken() });
  const { api } = gatewayApi({ tokenMapPath: file, pollIntervalMs: 1234 });
  api.registrationMode = 'discovery';
  plugin.register(api);
  assert.equal(stats().tokenMapPath, file);
  assert.notEqual(stats().watcher, 'closed');
  assert.deepEqual(api.services, []);
  assert.equal(api.policies.length, 1);
});

test('configure() treats a default written out and one left out as the same options: one layer, loaded once', async () => {
  const { configure } = await import(entryUrl);
  const file = mapWith({ 'paco--francis': randomToken() });
  const first = captureLogger();
  configure({ tokenMapPath: file, logger: first.logger });
  assert.ok(first.has(/plugin loaded/));
  const second = captureLogger();
  // As OpenClaw's runtime snapshot has it, with the schema's defaults filled in.
  configure({ tokenMapPath: file, toolPrefix: 'claw-os__', tokenParam: 'auth_token', onMissingToken: 'pass', watcher: 'auto', logger: second.logger });
  assert.ok(!second.has(/plugin loaded/), 'the same settings made a second layer');
  const third = captureLogger();
  configure({ tokenMapPath: file, onMissingToken: 'block', logger: third.logger });
  assert.ok(third.has(/plugin loaded/), 'other settings did not make a new layer');
});

test("another copy of the plugin loaded in the same realm (OpenClaw loads each registration from a copy) shares the first copy's layer", async () => {
  const dir = tempDir();
  const entry = path.basename(entryFile);
  const binaries = buildInfo.native ? [`claw-identity.${buildInfo.name}.node`] : ['claw-identity.wasm32-wasi.wasm'];
  for (const f of [entry, 'package.json', 'openclaw.plugin.json', ...binaries]) {
    fs.copyFileSync(path.join(root, f), path.join(dir, f));
  }
  fs.cpSync(path.join(root, 'lib'), path.join(dir, 'lib'), { recursive: true });
  const copy = await import(pathToFileURL(path.join(dir, entry)).href);
  const original = await import(entryUrl);
  assert.notEqual(copy.default, original.default, 'not a second module instance');
  assert.equal(copy.beforeToolCall, original.beforeToolCall);
  // A registration through the copy (as OpenClaw's "discovery" one) reaches
  // the layer the original's status and health read.
  const t = randomToken();
  const file = mapWith({ 'paco--francis': t });
  const { api } = fakeApi({ tokenMapPath: file }, 'discovery');
  copy.default.register(api);
  assert.equal(stats().tokenMapPath, file);
  const before = stats().injected;
  assert.equal(call(api, 'paco--francis'), t);
  assert.equal(stats().injected, before + 1);
  // A service of each copy (an old and a new registry): the watcher stops with the last one.
  const a = gatewayApi({ tokenMapPath: file });
  const b = gatewayApi({ tokenMapPath: file });
  original.default.register(a.api);
  copy.default.register(b.api);
  const { ctx } = serviceCtx({ tokenMapPath: file });
  a.api.services[0].start(ctx);
  b.api.services[0].start(ctx);
  a.api.services[0].stop(ctx);
  assert.notEqual(stats().watcher, 'closed', "the old registry's service stopped the new one's watcher");
  b.api.services[0].stop(ctx);
  assert.equal(stats().watcher, 'closed');
  // The shared slot can't be replaced.
  const slot = Symbol.for(`claw-identity.native.${original.buildInfo.name}`);
  assert.throws(() => Object.defineProperty(globalThis, slot, { value: {} }), TypeError);
  assert.ok(Object.isFrozen(globalThis[slot]) && Object.isFrozen(globalThis[slot].native));
  assert.throws(() => {
    globalThis[slot].native = {};
  }, TypeError);
});
