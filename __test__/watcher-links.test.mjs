// A map reached through symlinks, or written through another path, is kept
// live like a plain file: whatever the path resolves through, a change of the
// file it ends at is served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { IdentityLayer } from './helpers/subject.mjs';
import { assertSameToken, captureLogger, randomToken, tempDir, waitFor, writeMap, writeMapAtomic } from './helpers/support.mjs';

const A = 'paco--francis';
const B = 'paco--dali';
const call = (layer, agentId) => layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId })?.params?.auth_token;

function open(file) {
  const log = captureLogger();
  const layer = new IdentityLayer({ tokenMapPath: file, logger: log.logger });
  return { layer, log };
}

/** Publishes `map` at `file` (a temp file in the same directory, renamed over it). */
const rotate = (file, map) => writeMapAtomic(file, map);

async function dropsB(layer, ta, what) {
  await waitFor(() => call(layer, B) === undefined, { what: `B revoked (${what})` });
  assertSameToken(call(layer, A), ta, 'A after the rotation');
  const s = layer.stats();
  assert.equal(s.agents, 1);
  assert.equal(s.lastError, null);
}

test('a symlink into another directory: a rotation of its target is served', async () => {
  const linkDir = tempDir();
  const realDir = tempDir();
  const real = path.join(realDir, 'real.json');
  const ta = randomToken();
  writeMap(real, { [A]: ta, [B]: randomToken() });
  const map = path.join(linkDir, 'm.json');
  fs.symlinkSync(real, map);
  const { layer } = open(map);
  assert.equal(layer.stats().agents, 2);
  const reloads = layer.stats().reloads;
  rotate(real, { [A]: ta });
  await dropsB(layer, ta, 'target rotated in its own directory');
  assert.equal(layer.stats().reloads, reloads + 1);
  layer.close();
});

test('a symlink to another name in the same directory', async () => {
  const dir = tempDir();
  const real = path.join(dir, 'real.json');
  const ta = randomToken();
  writeMap(real, { [A]: ta, [B]: randomToken() });
  const map = path.join(dir, 'm.json');
  fs.symlinkSync('real.json', map);
  const { layer } = open(map);
  assert.equal(layer.stats().agents, 2);
  rotate(real, { [A]: ta });
  await dropsB(layer, ta, 'target rotated next to the link');
  layer.close();
});

test('a chain of two links, through two other directories', async () => {
  const [d1, d2, d3] = [tempDir(), tempDir(), tempDir()];
  const real = path.join(d3, 'real.json');
  const ta = randomToken();
  writeMap(real, { [A]: ta, [B]: randomToken() });
  fs.symlinkSync(real, path.join(d2, 'hop'));
  const map = path.join(d1, 'm.json');
  fs.symlinkSync(path.join(d2, 'hop'), map);
  const { layer } = open(map);
  assert.equal(layer.stats().agents, 2);
  rotate(real, { [A]: ta });
  await dropsB(layer, ta, 'the end of a two-link chain rotated');
  layer.close();
});

test('a link of the chain re-pointed (a new symlink renamed over it) to another file', async () => {
  const [d1, d2, d3] = [tempDir(), tempDir(), tempDir()];
  const ta = randomToken();
  const one = path.join(d3, 'one.json');
  const two = path.join(d3, 'two.json');
  writeMap(one, { [A]: ta, [B]: randomToken() });
  writeMap(two, { [A]: ta });
  const hop = path.join(d2, 'hop');
  fs.symlinkSync(one, hop);
  const map = path.join(d1, 'm.json');
  fs.symlinkSync(hop, map);
  const { layer } = open(map);
  assert.equal(layer.stats().agents, 2);
  fs.symlinkSync(two, `${hop}.tmp`);
  fs.renameSync(`${hop}.tmp`, hop);
  await dropsB(layer, ta, 'the link re-pointed');
  // The new target is the one watched now: its rotation is served, the old one's is not.
  const t2 = randomToken();
  writeMap(one, { [A]: randomToken(), [B]: randomToken() });
  rotate(two, { [A]: t2 });
  await waitFor(() => call(layer, A) === t2, { what: 'the new target rotated' });
  assert.equal(call(layer, B), undefined);
  layer.close();
});

test('an in-place rewrite through the real path of a symlinked map', async () => {
  const linkDir = tempDir();
  const realDir = tempDir();
  const real = path.join(realDir, 'real.json');
  const ta = randomToken();
  writeMap(real, { [A]: ta, [B]: randomToken() });
  const map = path.join(linkDir, 'm.json');
  fs.symlinkSync(real, map);
  const { layer } = open(map);
  const ino = fs.statSync(real).ino;
  writeMap(real, { [A]: ta });
  assert.equal(fs.statSync(real).ino, ino, 'same inode');
  await dropsB(layer, ta, 'rewritten in place through its real path');
  layer.close();
});

test('an in-place rewrite through another path to the same inode (the shape of a single-file bind mount)', async () => {
  // A hard link in another directory reaches the map's inode the way a bind
  // mount's host side does: no event in the map's directory.
  const dir = tempDir();
  const elsewhere = tempDir();
  const map = path.join(dir, 'm.json');
  const ta = randomToken();
  writeMap(map, { [A]: ta, [B]: randomToken() });
  const alias = path.join(elsewhere, 'alias.json');
  fs.linkSync(map, alias);
  const { layer } = open(map);
  for (let i = 0; i < 3; i++) {
    const t = randomToken();
    writeMap(alias, { [A]: t, [B]: randomToken() });
    await waitFor(() => call(layer, A) === t, { what: `write ${i} through the other path` });
  }
  writeMap(alias, { [A]: ta });
  await dropsB(layer, ta, 'rewritten in place through a hard link');
  layer.close();
});
