// The package a user installs: `npm pack` holds the prebuilt addon, and the
// installed package works on Node 20 (this machine) and Node 24 (OpenClaw's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ensureOpenclaw } from '../scripts/ensure-openclaw.mjs';
import { randomToken, recordEmitted, tempDir, writeMap } from './helpers/support.mjs';
import { entryUrl } from './helpers/subject.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function pack(dest) {
  const out = execFileSync(npm, ['pack', '--json', '--pack-destination', dest], { cwd: root, encoding: 'utf8' });
  return JSON.parse(out)[0];
}

test('npm pack ships the prebuilt linux-x64-gnu addon and the plugin files, and nothing else', () => {
  const dest = tempDir();
  const info = pack(dest);
  const files = info.files.map((f) => f.path).sort();
  for (const required of ['claw-identity.linux-x64-gnu.node', 'index.js', 'index.d.ts', 'openclaw.plugin.json', 'package.json', 'README.md']) {
    assert.ok(files.includes(required), `${required} missing from the tarball: ${files.join(', ')}`);
  }
  for (const f of files) {
    assert.doesNotMatch(f, /^(src|target|__test__|bench|fuzz|\.cache|node_modules)\//, `${f} should not ship`);
  }
  const addon = info.files.find((f) => f.path === 'claw-identity.linux-x64-gnu.node');
  assert.ok(addon.size > 100_000, `the addon is ${addon.size} bytes`);
});

test('the installed tarball loads and injects on Node 20 and on Node 24', async () => {
  const dest = tempDir();
  const info = pack(dest);
  const project = path.join(dest, 'user-project');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), '{"name":"user-project","private":true,"type":"module"}');
  // OpenClaw installs plugin dependencies with scripts off: so do we.
  execFileSync(npm, ['install', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', path.join(dest, info.filename)], { cwd: project, stdio: 'pipe' });

  const map = path.join(tempDir(), 'm.json');
  const token = randomToken();
  writeMap(map, { 'paco--francis': token });
  const script = `
    import { IdentityLayer, fingerprint } from 'claw-identity';
    const layer = new IdentityLayer({ tokenMapPath: ${JSON.stringify(map)}, logger: { info() {}, warn() {}, error() {} } });
    const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: { auth_token: 'wrong' } }, { agentId: 'paco--francis' });
    console.log(JSON.stringify({ node: process.version, fp: fingerprint(r.params.auth_token) }));
  `;
  const { node: node24 } = await ensureOpenclaw({ log: () => {} });
  const runs = [];
  for (const node of [process.execPath, node24]) {
    const r = spawnSync(node, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    runs.push(JSON.parse(recordEmitted('package run', r.stdout.trim())));
  }
  const { fingerprint } = await import(entryUrl);
  assert.equal(runs[0].node, process.version);
  assert.match(runs[1].node, /^v24\./);
  for (const r of runs) assert.equal(r.fp, fingerprint(token));
});
