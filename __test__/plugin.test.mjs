// The plugin entry as OpenClaw calls it (the real gateway is in e2e/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import plugin, { IdentityLayer, stats } from '../index.js';
import { captureLogger, randomToken, recordEmitted, tempDir, waitFor, writeMap } from './helpers/support.mjs';

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
  };
  assert.deepEqual(props, Object.keys(samples).sort());
  const layer = new IdentityLayer({ ...samples, logger: captureLogger().logger });
  layer.close();
  // The plugin passes config through, and the logger is the only extra key.
  assert.throws(() => new IdentityLayer({ notInSchema: 1 }), /unknown option "notInSchema"/);
});

test('register wires a trusted tool policy and a priority-100 hook with no matcher', () => {
  const file = mapWith({ 'paco--francis': randomToken() });
  const { api, log } = fakeApi({ tokenMapPath: file });
  plugin.register(api);
  assert.equal(api.hooks.length, 1);
  assert.equal(api.hooks[0].name, 'before_tool_call');
  assert.deepEqual(api.hooks[0].opts, { priority: 100 });
  assert.equal(api.policies.length, 1);
  assert.equal(api.policies[0].id, 'claw-identity');
  assert.equal(api.policies[0].matcher, undefined);
  assert.equal(typeof api.policies[0].evaluate, 'function');
  return waitFor(() => log.has(/identity is enforced by the trusted tool-policy tier/), { what: 'the tier line' });
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

test('the safety net checks the policy\'s own rewrite of the same call instead of deciding again', async () => {
  const t1 = randomToken();
  const file = mapWith({ 'paco--francis': t1 });
  const { api, log } = fakeApi({ tokenMapPath: file });
  plugin.register(api);
  const ctx = { agentId: 'paco--francis', toolCallId: 'call-1' };
  const event = { toolName: 'claw-os__claw_notes', params: { auth_token: 'wrong' }, toolCallId: 'call-1' };
  const decided = api.policies[0].evaluate(event, ctx);
  assert.equal(decided.params.auth_token, t1);
  // The map rotates between the two tiers: deciding again would see a new
  // token, call the policy's rewrite undone, and apply the new one.
  const t2 = randomToken();
  writeMap(file, { 'paco--francis': t2 });
  await waitFor(() => api.policies[0].evaluate({ ...event, toolCallId: 'probe' }, { ...ctx, toolCallId: 'probe' }).params.auth_token === t2, { what: 'the rotated map' });
  assert.equal(api.hooks[0].handler({ ...event, params: decided.params }, ctx), undefined);
  // A rewrite that is not in place is still applied.
  const again = api.policies[0].evaluate({ ...event, toolCallId: 'call-2' }, { ...ctx, toolCallId: 'call-2' });
  assert.equal(again.params.auth_token, t2);
  const fixed = api.hooks[0].handler({ ...event, toolCallId: 'call-2' }, { ...ctx, toolCallId: 'call-2' });
  assert.equal(fixed.params.auth_token, t2);
  await waitFor(() => log.has(/trusted tool-policy tier did not run/), { what: 'the loud line for the undone rewrite' });
});
