// writeTokenMap: validation first, a private atomic write, no rewrite of an
// unchanged map, and no torn map with several writer processes at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

import { IdentityLayer, writeTokenMap, writeTokenMapSync, entryUrl } from './helpers/subject.mjs';
import { assertNoTokenIn, assertSameToken, randomToken, recordEmitted, spawnNode, tempDir, waitFor, writeMap } from './helpers/support.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const INDEX_URL = entryUrl;

/** The writer's one layout: keys sorted, two-space indent, a final newline. */
function canonical(map) {
  const sorted = Object.fromEntries(
    Object.keys(map)
      .sort()
      .map((k) => [k, map[k]]),
  );
  return `${JSON.stringify(sorted, null, 2)}\n`;
}

const mode = (p) => fs.statSync(p).mode & 0o777;

/** Runs `fn`, which must throw or reject; returns the error after showing it to the leak guard. */
async function refused(fn) {
  try {
    await fn();
  } catch (err) {
    recordEmitted('writeTokenMap error', err.message);
    return err;
  }
  assert.fail('expected the write to be refused');
}

test('writes the canonical map 0600, creating missing directories 0700', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'a', 'b', 'agent-tokens.json');
  const map = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
  const w = await writeTokenMap(file, map);
  assert.deepEqual(w, { path: file, agents: 2, changed: true });
  assertSameToken(fs.readFileSync(file, 'utf8'), canonical(map), 'map file content');
  assert.equal(mode(file), 0o600);
  assert.equal(mode(path.join(dir, 'a')), 0o700);
  assert.equal(mode(path.join(dir, 'a', 'b')), 0o700);
  assert.deepEqual(fs.readdirSync(path.dirname(file)), ['agent-tokens.json'], 'no temporary file left');
});

test('an unchanged map is not rewritten: same inode, changed: false', () => {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const map = { [FRANCIS]: randomToken(), [DALI]: randomToken() };
  writeTokenMapSync(file, map);
  const before = fs.statSync(file, { bigint: true });
  const reordered = { [DALI]: map[DALI], [FRANCIS]: map[FRANCIS] };
  assert.equal(writeTokenMapSync(file, reordered).changed, false);
  assert.equal(writeTokenMapSync(file, JSON.stringify(reordered, null, 4)).changed, false);
  const after = fs.statSync(file, { bigint: true });
  assert.equal(after.ino, before.ino);
  assert.equal(after.ctimeNs, before.ctimeNs);
  assert.equal(writeTokenMapSync(file, { [FRANCIS]: map[FRANCIS] }).changed, true);
  assert.notEqual(fs.statSync(file, { bigint: true }).ino, before.ino);
});

test('the same content in a file the plugin would refuse is rewritten private', () => {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const map = { [FRANCIS]: randomToken() };
  writeMap(file, canonical(map), 0o644);
  assert.equal(writeTokenMapSync(file, map).changed, true);
  assert.equal(mode(file), 0o600);
});

test('one invalid entry refuses the whole map, names the agents, and leaves the file untouched', async () => {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const good = { [FRANCIS]: randomToken() };
  writeTokenMapSync(file, good);
  const before = fs.readFileSync(file);
  const ino = fs.statSync(file).ino;
  const token = randomToken();
  const err = await refused(() => writeTokenMap(file, { [FRANCIS]: token, [DALI]: token.slice(0, 63), 'Bad Id': randomToken(), 'paco--atlas': undefined }));
  assert.equal(err.code, 'InvalidArg');
  assert.equal(
    err.message,
    `claw-identity: refusing to write ${file}: 3 invalid entries: agent "${DALI}": token is not 64 hex characters; agent id "Bad Id" is not a valid OpenClaw agent id (^[a-z0-9][a-z0-9_-]{0,63}$); agent "paco--atlas": token must be a string, found null; nothing was written`,
  );
  assertNoTokenIn(err.message);
  assert.ok(fs.readFileSync(file).equals(before), 'the map file changed');
  assert.equal(fs.statSync(file).ino, ino);
});

test('an invalid map never creates the directory', async () => {
  const dir = path.join(tempDir(), 'new');
  await refused(() => writeTokenMap(path.join(dir, 'm.json'), { [FRANCIS]: 'nope' }));
  assert.equal(fs.existsSync(dir), false);
});

test("JSON text is validated by the plugin's parser: duplicate agent ids are refused", () => {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const text = `{"${FRANCIS}": "${randomToken()}", "${FRANCIS}": "${randomToken()}"}`;
  for (const input of [text, Buffer.from(text), new Uint8Array(Buffer.from(text))]) {
    assert.throws(
      () => writeTokenMapSync(file, input),
      (err) => /agent id "paco--francis" appears more than once/.test(recordEmitted('writeTokenMap error', err.message)),
    );
  }
  assert.equal(fs.existsSync(file), false);
});

test('a Map is accepted; arrays, null and non-string paths are type errors', async () => {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const token = randomToken();
  assert.equal(writeTokenMapSync(file, new Map([[FRANCIS, token]])).agents, 1);
  assertSameToken(JSON.parse(fs.readFileSync(file, 'utf8'))[FRANCIS], token);
  for (const bad of [null, [], 42, undefined]) {
    assert.throws(() => writeTokenMapSync(file, bad), TypeError);
    await assert.rejects(writeTokenMap(file, bad), TypeError);
  }
  assert.throws(() => writeTokenMapSync(undefined, {}), TypeError);
  assert.throws(() => writeTokenMapSync('', {}), TypeError);
});

test("a path starting with ~ is the user's home, as for tokenMapPath", () => {
  const home = tempDir();
  const saved = process.env.HOME;
  process.env.HOME = home;
  try {
    const w = writeTokenMapSync('~/.config/micelclaw/agent-tokens.json', { [FRANCIS]: randomToken() });
    assert.equal(w.path, path.join(home, '.config/micelclaw/agent-tokens.json'));
    assert.equal(mode(w.path), 0o600);
  } finally {
    process.env.HOME = saved;
  }
});

test('a directory others can write is refused, and nothing is left in it', async () => {
  const dir = tempDir();
  fs.chmodSync(dir, 0o777);
  const err = await refused(() => writeTokenMap(path.join(dir, 'agent-tokens.json'), { [FRANCIS]: randomToken() }));
  assert.equal(err.code, 'GenericFailure');
  assert.match(err.message, /the plugin would refuse it: .*directory is writable by group or others \(mode 0777\)/);
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('a live layer serves the written map', async () => {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const first = randomToken();
  const second = randomToken();
  writeTokenMapSync(file, { [FRANCIS]: first });
  const layer = new IdentityLayer({
    tokenMapPath: file,
    logger: { info() {}, warn: (l) => recordEmitted('warn', l), error: (l) => recordEmitted('error', l) },
  });
  try {
    const token = () => layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: FRANCIS })?.params.auth_token;
    assert.equal(token(), first);
    await writeTokenMap(file, { [FRANCIS]: second });
    await waitFor(() => token() === second, { what: 'the layer to serve the new token' });
  } finally {
    layer.close();
  }
});

// Each child writes its own two maps in turn, `rounds` times, through the
// sync or the async API: processes, not threads, so nothing is shared but the
// file system.
const WRITER = `
const { writeTokenMap, writeTokenMapSync } = await import(process.env.INDEX_URL);
const { file, maps, rounds, async } = JSON.parse(process.env.JOB);
for (let i = 0; i < rounds; i++) {
  const map = maps[i % maps.length];
  if (async) await writeTokenMap(file, map);
  else writeTokenMapSync(file, map);
}
`;

test('several writer processes at once never produce a torn or foreign map', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'agent-tokens.json');
  const jobs = [0, 1, 2].map((w) => ({
    file,
    rounds: 150,
    async: w === 2,
    maps: [0, 1].map((v) => ({ [FRANCIS]: randomToken(), [`writer-${w}-${v}`]: randomToken() })),
  }));
  const allowed = new Set(jobs.flatMap((j) => j.maps.map(canonical)));
  writeTokenMapSync(file, jobs[0].maps[0]);

  let running = jobs.length;
  const exits = jobs.map(
    (job) =>
      new Promise((resolve) => {
        const child = spawnNode(['--input-type=module', '-e', WRITER], {
          env: { ...process.env, INDEX_URL, JOB: JSON.stringify(job) },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        child.on('exit', (code) => {
          running--;
          recordEmitted('writer stderr', stderr);
          resolve({ code, stderr });
        });
      }),
  );

  let reads = 0;
  const seen = new Set();
  while (running > 0) {
    const text = fs.readFileSync(file, 'utf8');
    assert.ok(allowed.has(text), `read ${reads} is not one of the written maps (${text.length} bytes)`);
    seen.add(text);
    reads++;
    await yieldToLoop();
  }
  for (const { code, stderr } of await Promise.all(exits)) assert.equal(code, 0, stderr);
  assert.ok(reads > 0);
  assert.ok(allowed.has(fs.readFileSync(file, 'utf8')));
  assert.equal(mode(file), 0o600);
  assert.deepEqual(fs.readdirSync(dir), ['agent-tokens.json'], 'no temporary file left');
  recordEmitted('concurrency', `${reads} reads, ${seen.size} distinct maps seen`);
});
