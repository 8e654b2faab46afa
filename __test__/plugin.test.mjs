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
    proxy: {
      port: 4100,
      handleTtlMs: 60000,
      servers: { notes: { upstream: { url: 'http://127.0.0.1:1/mcp' }, credential: { in: 'header', name: 'x-api-key' }, listAs: 'a' } },
    },
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

// ---- the posture, as the plugin wires it ----
//
// The layer judges OpenClaw's config (`api.config`, then each service
// start's `ctx.config`) in Rust (core/src/posture.rs); these tests check
// what the JS gives it and shows of it: the block of owned calls, stats,
// health, the reload that judges again, and the per-chat check's reading of
// OpenClaw's session store and sandbox resolver.

const FRANCIS = 'paco--francis';
/** One agent with every host tool OpenClaw offers by default, and no containment. */
const EXPOSED = Object.freeze({ agents: { entries: { [FRANCIS]: {} } } });
const containedConfig = (kind = 'host') => contained({ agents: { entries: { [FRANCIS]: {} } } }, kind);

/** A gateway's fake api whose `api.config` is `openclaw`, with the plugin's options in it too. */
function judgedApi(pluginConfig, openclaw, mode = 'full') {
  const f = gatewayApi(pluginConfig);
  f.api.registrationMode = mode;
  f.api.config = deepMerge(openclaw, { plugins: { entries: { 'claw-identity': { enabled: true, config: pluginConfig } } } });
  return f;
}

const owned = (api, agentId = FRANCIS) => api.policies[0].evaluate({ toolName: 'claw-os__claw_notes', params: { auth_token: 'from-the-model' } }, { agentId });

test('under posture "enforce", an exposed agent makes every owned call refused with the posture reason, by the policy and the safety net alike; the log says so at start', async () => {
  const t = randomToken();
  const file = mapWith({ [FRANCIS]: t, 'paco--dali': randomToken() });
  const { api, log } = judgedApi({ tokenMapPath: file }, EXPOSED);
  plugin.register(api);
  for (const agentId of [FRANCIS, 'paco--dali', undefined]) {
    const d = owned(api, agentId);
    recordEmitted('blockReason', d?.blockReason);
    assert.equal(d?.block, true, `${agentId}: not refused`);
    assert.equal(d.params, undefined, `${agentId}: params were set`);
    assert.ok(d.blockReason.startsWith('posture: claw-identity serves no token while '), d.blockReason);
    // It names the agent, what exposes it with its config key, and the config that contains it.
    assert.ok(d.blockReason.includes(`Not contained: ${FRANCIS}: its file tools are not confined to its workspace (tools.fs.workspaceOnly)`), d.blockReason);
    assert.match(d.blockReason, /contain it with: openclaw config set \S+ '.+' --strict-json/);
    assert.ok(d.blockReason.includes("the agents the roster doesn't list: "), d.blockReason);
  }
  // Where OpenClaw dropped the trusted policy, the safety net refuses alike.
  const older = judgedApi({ tokenMapPath: file }, EXPOSED, 'discovery').api;
  delete older.registerTrustedToolPolicy;
  plugin.register(older);
  const net = older.hooks[0].handler({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: FRANCIS });
  recordEmitted('blockReason', net?.blockReason);
  assert.equal(net?.block, true);
  assert.ok(net.blockReason.startsWith('posture: '), net.blockReason);
  // A tool that carries no token is not the posture's to refuse.
  assert.equal(api.policies[0].evaluate({ toolName: 'web_search', params: { query: 'q' } }, { agentId: FRANCIS }), undefined);
  await waitFor(
    () =>
      log.has(
        /posture: serving NO token, since 2 agents can reach the token map or OpenClaw's config with their own tools, and posture is "enforce"\. paco--francis: /,
      ),
    {
      what: 'the error line at start',
    },
  );
  assert.ok(
    log.lines.some((l) => l.level === 'error' && l.line.startsWith('[claw-identity] posture: serving NO token')),
    log.text(),
  );
});

test('under posture "warn" the same exposed agent gets its token, and the log warns what is exposed', async () => {
  const t = randomToken();
  const file = mapWith({ [FRANCIS]: t });
  const { api, log } = judgedApi({ tokenMapPath: file, posture: 'warn' }, EXPOSED);
  plugin.register(api);
  assert.equal(owned(api).params?.auth_token, t);
  await waitFor(() => log.has(/posture "warn": serving tokens although 2 agents can reach the token map or OpenClaw's config/), { what: 'the warning' });
  assert.ok(
    log.lines.some((l) => l.level === 'warn' && /posture "warn": serving tokens although .*paco--francis: its file tools are not confined/.test(l.line)),
    log.text(),
  );
});

test('with a contained config (host or the plugin sandbox) the agent gets its token, and the log says every agent is contained', async () => {
  for (const [kind, how] of [
    ['host', 'host, confined'],
    ['sandbox', 'sandbox'],
  ]) {
    const t = randomToken();
    const file = mapWith({ [FRANCIS]: t });
    const { api, log } = judgedApi({ tokenMapPath: file }, containedConfig(kind));
    plugin.register(api);
    assert.equal(owned(api).params?.auth_token, t, kind);
    await waitFor(
      () => log.has(new RegExp(`posture: every agent is contained \\(${FRANCIS}: ${how}, the agents the roster doesn't list: ${how}\\); tokens are served`)),
      {
        what: `the contained line (${kind})`,
      },
    );
  }
});

test('stats().posture: the mode, whether it was judged and tokens are served, and each agent with its exposures (each with its config key) and fix', () => {
  const file = mapWith({ [FRANCIS]: randomToken() });
  plugin.register(judgedApi({ tokenMapPath: file }, EXPOSED).api);
  const exposed = stats().posture;
  assert.equal(exposed.mode, 'enforce');
  assert.equal(exposed.judged, true);
  assert.equal(exposed.servesTokens, false);
  assert.deepEqual(
    exposed.agents.map((a) => [a.agentId, a.contained]),
    [
      [FRANCIS, null],
      ['*', null],
    ],
  );
  const [francis] = exposed.agents;
  assert.ok(
    francis.exposures.some((e) => e.key === 'tools.fs.workspaceOnly' && /not confined to its workspace/.test(e.what)),
    JSON.stringify(francis.exposures),
  );
  // The shell, and the config line that denies it to this agent.
  assert.ok(
    francis.exposures.some((e) => e.what.startsWith('exec ') && e.key === `agents.entries.${FRANCIS}.tools.deny`),
    JSON.stringify(francis.exposures),
  );
  assert.match(francis.fix, /^openclaw config set /);

  plugin.register(judgedApi({ tokenMapPath: file }, containedConfig('host')).api);
  assert.deepEqual(stats().posture, {
    mode: 'enforce',
    judged: true,
    servesTokens: true,
    agents: [
      { agentId: FRANCIS, contained: 'host', exposures: [], fix: null },
      { agentId: '*', contained: 'host', exposures: [], fix: null },
    ],
  });

  plugin.register(judgedApi({ tokenMapPath: file, posture: 'warn' }, EXPOSED).api);
  const warned = stats().posture;
  assert.deepEqual([warned.mode, warned.judged, warned.servesTokens], ['warn', true, true]);
  assert.deepEqual(
    warned.agents.map((a) => a.contained),
    [null, null],
  );
});

test('healthProblem: an enforce refusal names every exposed agent ("*" by what it stands for), ahead of map problems; nothing under warn or when contained', async () => {
  const { healthProblem } = await import('../lib/surfaces.js');
  const base = { loaded: true, stale: false, lastError: null, tokenMapPath: '/m.json', agents: 1 };
  const agents = [
    { agentId: FRANCIS, contained: null, exposures: [], fix: 'f' },
    { agentId: 'paco--dali', contained: 'sandbox', exposures: [], fix: null },
    { agentId: '*', contained: null, exposures: [], fix: 'f' },
  ];
  assert.equal(
    healthProblem({ ...base, loaded: false, posture: { mode: 'enforce', judged: true, servesTokens: false, agents } }),
    `no token is served: ${FRANCIS}, the agents the roster doesn't list can reach the token map or OpenClaw's config with their own tools, and posture is "enforce". claw-identity doctor names the config that contains each`,
  );
  assert.equal(healthProblem({ ...base, posture: { mode: 'warn', judged: true, servesTokens: true, agents } }), null);
  assert.equal(healthProblem({ ...base, posture: { mode: 'enforce', judged: false, servesTokens: true, agents: [] } }), null);
});

test("a config reload (the service restarted with OpenClaw's committed config) judges the posture again: exposed → contained → the token is served, and health follows", async () => {
  const t = randomToken();
  const file = mapWith({ [FRANCIS]: t });
  const { api } = judgedApi({ tokenMapPath: file }, EXPOSED);
  plugin.register(api);
  const [service] = api.services;
  const exposed = serviceCtx({ tokenMapPath: file }, { tools: { fs: { workspaceOnly: false } } });
  service.start(exposed.ctx);
  try {
    const refused = owned(api);
    recordEmitted('blockReason', refused?.blockReason);
    assert.equal(refused?.block, true);
    assert.ok(refused.blockReason.startsWith('posture: '), refused.blockReason);
    assert.equal(exposed.health.failures.length, 1);
    assert.match(exposed.health.failures[0], /^claw-identity: no token is served: main can reach the token map/);
  } finally {
    service.stop(exposed.ctx);
  }
  // What OpenClaw does when a key under one of the service's prefixes changes.
  const fixed = serviceCtx({ tokenMapPath: file });
  service.start(fixed.ctx);
  try {
    assert.equal(owned(api).params?.auth_token, t, 'the contained config served no token');
    assert.equal(stats().posture.servesTokens, true);
    // OpenClaw gives each start a health reporter of its own
    // (createPluginServiceHealthReporter, service-health-*.mjs): nothing is reported on it.
    assert.deepEqual(fixed.health.failures, []);
  } finally {
    service.stop(fixed.ctx);
  }
});

test("the service's reload prefixes cover every key the posture reads, and each is one OpenClaw reloads without restarting the gateway", async () => {
  const { POSTURE_PREFIXES, CONFIG_PREFIX: prefix } = await import('../lib/surfaces.js');
  assert.equal(prefix, CONFIG_PREFIX);
  assert.deepEqual(POSTURE_PREFIXES, POSTURE_CONFIG);
  // Each key a change of which changes the posture (core/src/posture.rs,
  // core/src/openclaw/) is matched by a prefix, so the service restarts and
  // the layer judges it again.
  const read = [
    'agents.defaults.sandbox.mode',
    'agents.entries.paco--francis.tools.deny',
    'agents.list',
    'tools.fs.workspaceOnly',
    'tools.codeMode',
    'tools.sandbox.tools.alsoAllow',
    'tools.exec.host',
    'tools.elevated.enabled',
    'cron.triggers.enabled',
    'session.scope',
    'acp.enabled',
  ];
  const matched = (key) => POSTURE_PREFIXES.some((p) => key === p || key.startsWith(`${p}.`));
  assert.deepEqual(
    read.filter((k) => !matched(k)),
    [],
  );
});

/** An OpenClaw session store as `api.runtime.agent.session` offers it, with entries we set. */
function sessionRuntime(openclaw, entries = {}) {
  return {
    config: { current: () => openclaw },
    agent: {
      session: {
        getSessionEntry: ({ sessionKey }) => entries[sessionKey],
        patchSessionEntry: async () => ({}),
      },
    },
  };
}

/** The plugin entry over the build under test, with `loadSdk` standing for `openclaw/plugin-sdk/sandbox`. */
async function pluginWith(loadSdk) {
  const { surface } = await import('../lib/api.js');
  const { createPlugin } = await import('../lib/plugin.js');
  // The build is loaded already (helpers/subject.mjs): surface() shares it.
  return createPlugin(
    surface(buildInfo, () => assert.fail('a second copy of the build was loaded')),
    loadSdk,
  );
}

test("the per-chat check reads the store's now(): OpenClaw's resolver says whether the chat runs in the sandbox, and the chat's entry its exec and permission overrides", async () => {
  const file = mapWith({ [FRANCIS]: randomToken() });
  const asked = [];
  const sandboxed = new Map();
  const sdk = {
    resolveSandboxRuntimeStatus: ({ cfg, agentId, sessionKey }) => {
      asked.push({ cfg, agentId, sessionKey });
      return { agentId, sandboxed: sandboxed.get(sessionKey) ?? true };
    },
    registerSandboxBackend: () => () => {},
  };
  const p = await pluginWith(async () => sdk);
  const check = async (kind, entries, calls) => {
    const openclaw = deepMerge(containedConfig(kind), { plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMapPath: file } } } } });
    const { api } = judgedApi({ tokenMapPath: file }, openclaw);
    api.runtime = sessionRuntime(openclaw, entries);
    p.register(api);
    await tick();
    return calls.map(([sessionKey, toolName, params]) => {
      const d = api.policies[0].evaluate({ toolName, params }, { agentId: FRANCIS, sessionKey });
      recordEmitted('blockReason', d?.blockReason);
      return d?.block ? d.blockReason : 'pass';
    });
  };
  const chat = (name) => `agent:${FRANCIS}:${name}`;

  // Contained by the sandbox: exec passes in a sandboxed chat, and is refused
  // where the resolver says the chat runs outside it, or the chat routes exec out.
  sandboxed.set(chat('off'), false);
  const [inside, outside, routed, node, elevated, elevatedOff] = await check(
    'sandbox',
    {
      [chat('gateway')]: { execHost: 'gateway' },
      [chat('node')]: { execNode: 'node-1' },
      [chat('elevated')]: { elevatedLevel: 'on' },
      [chat('elevated-off')]: { elevatedLevel: 'off' },
    },
    ['main', 'off', 'gateway', 'node', 'elevated', 'elevated-off'].map((c) => [chat(c), 'exec', { command: 'ls' }]),
  );
  assert.equal(inside, 'pass');
  assert.equal(
    outside,
    `posture: exec refused: agent ${FRANCIS} is contained by its sandbox, but this chat runs outside it (no session key, or an admin switched the sandbox off for it), so it would run on the gateway's host, where it would reach the token map and OpenClaw's config. Do not retry; the operator can restore this chat's containment.`,
  );
  assert.match(routed, /^posture: exec refused: this chat routes exec to "gateway" \(\/exec host=\), out of agent paco--francis's sandbox/);
  assert.match(node, /^posture: exec refused: this chat binds exec to a node/);
  assert.match(elevated, /^posture: exec refused: this chat allows elevated exec/);
  assert.equal(elevatedOff, 'pass');
  // The resolver was asked about each chat, with the config OpenClaw runs now.
  const off = asked.find((a) => a.sessionKey === chat('off'));
  assert.equal(off.agentId, FRANCIS);
  assert.equal(off.cfg.agents.defaults.sandbox.backend, 'claw-identity');

  // Contained on the host: a chat whose permission mode is "full" lifts
  // workspaceOnly, so its file tools are refused there, and only there.
  const [plain, full] = await check('host', { [chat('full')]: { permissionMode: 'full' } }, [
    [chat('plain'), 'read', { path: 'notes.md' }],
    [chat('full'), 'read', { path: 'notes.md' }],
  ]);
  assert.equal(plain, 'pass');
  assert.match(full, /^posture: read refused: this chat's permission mode is "full", which lifts tools\.fs\.workspaceOnly for agent paco--francis/);
});

test("without OpenClaw's sandbox resolver (the SDK did not load), now() throws, and a contained agent's host-reaching call is refused, not guessed", async () => {
  const file = mapWith({ [FRANCIS]: randomToken() });
  const p = await pluginWith(() => Promise.reject(new Error('Cannot find package openclaw')));
  const openclaw = containedConfig('sandbox');
  const { api, log } = judgedApi({ tokenMapPath: file }, openclaw);
  api.runtime = sessionRuntime(openclaw);
  p.register(api);
  await waitFor(
    () =>
      log.has(
        /OpenClaw's sandbox SDK did not load \(Cannot find package openclaw\): calls that reach the host from a contained agent are refused until it does/,
      ),
    {
      what: 'the warning',
    },
  );
  const d = api.policies[0].evaluate({ toolName: 'exec', params: { command: 'ls' } }, { agentId: FRANCIS, sessionKey: `agent:${FRANCIS}:main` });
  assert.equal(d?.block, true);
  assert.equal(
    d.blockReason,
    "posture: exec refused: OpenClaw could not say whether this chat runs in the sandbox (OpenClaw's sandbox resolver (openclaw/plugin-sdk/sandbox) is not loaded), where it would reach the token map and OpenClaw's config. Do not retry; the operator can restore this chat's containment.",
  );
  // A tool that reaches nothing of the host is not refused for it.
  assert.equal(
    api.policies[0].evaluate({ toolName: 'web_search', params: { query: 'q' } }, { agentId: FRANCIS, sessionKey: `agent:${FRANCIS}:main` }),
    undefined,
  );
});

test('the JS API without openclawConfig is unjudged: tokens are served, stats say so, and the log says once that nobody judged the posture', async () => {
  const t = randomToken();
  const file = mapWith({ [FRANCIS]: t });
  const log = captureLogger();
  const layer = new IdentityLayer({ tokenMapPath: file, logger: log.logger });
  try {
    for (let i = 0; i < 3; i++) {
      assert.equal(layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: FRANCIS })?.params?.auth_token, t);
    }
    assert.deepEqual(layer.stats().posture, { mode: 'enforce', judged: false, servesTokens: true, agents: [] });
    await waitFor(() => log.has(/posture: no OpenClaw config was given/), { what: 'the unjudged line' });
    await tick(50);
    const unjudged = log.lines.filter((l) => /nobody judged whether the agents' own tools can reach the token map/.test(l.line));
    assert.equal(unjudged.length, 1, log.text());
    assert.equal(unjudged[0].level, 'warn');
  } finally {
    layer.close();
  }
});
