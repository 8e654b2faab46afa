// A process holding a live layer (watcher thread, logger bridge) must exit on
// its own: neither may keep Node's event loop alive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { randomToken, spawnNodeSync, tempDir, writeMap } from './helpers/support.mjs';
import { entryUrl } from './helpers/subject.mjs';

const indexUrl = entryUrl;

test('a process with a live layer and a logger exits by itself', () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  writeMap(file, { 'paco--francis': randomToken() });
  const script = `
    const { IdentityLayer } = await import(${JSON.stringify(indexUrl)});
    const layer = new IdentityLayer({ tokenMapPath: ${JSON.stringify(file)}, logger: { info() {}, warn() {}, error() {} } });
    const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: 'paco--francis' });
    process.stdout.write(r.params.auth_token.length === 64 ? 'injected' : 'no');
  `;
  // The timeout only stops a hung child; a healthy one exits at once.
  const r = spawnNodeSync(['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.signal, null, 'the child had to be killed: something kept it alive');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'injected');
});

test('the process-wide plugin layer does not keep Node alive either', () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  writeMap(file, { 'paco--francis': randomToken() });
  const script = `
    const { default: plugin } = await import(${JSON.stringify(indexUrl)});
    const api = { pluginConfig: { tokenMapPath: ${JSON.stringify(file)} }, registrationMode: 'full',
      logger: { info() {}, warn() {}, error() {} }, on() {}, registerTrustedToolPolicy() {} };
    plugin.register(api);
  `;
  const r = spawnNodeSync(['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.signal, null, 'the child had to be killed: something kept it alive');
  assert.equal(r.status, 0, r.stderr);
});
