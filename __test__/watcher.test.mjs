// The watcher keeps the map live through every way a file gets replaced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';

import { Worker } from 'node:worker_threads';

import { IdentityLayer, buildInfo, entryUrl } from './helpers/subject.mjs';
import { captureLogger, randomToken, tempDir, waitFor, writeMap, writeMapAtomic } from './helpers/support.mjs';

const A = 'paco--francis';
const B = 'paco--dali';
const call = (layer, agentId) => layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId })?.params?.auth_token;

// Each build's own events: inotify from the native build's thread, Node's
// fs.watch on the WebAssembly build's JS thread (its heartbeat, every 500 ms,
// is only the net for writers no event shows).
const EVENTS = buildInfo.native ? 'inotify' : 'fs.watch';

function open(file, options = {}) {
  const log = captureLogger();
  const layer = new IdentityLayer({ tokenMapPath: file, logger: log.logger, ...options });
  if (options.watcher !== 'poll') assert.equal(layer.stats().watcher, EVENTS);
  return { layer, log };
}

const serves = (layer, agent, token, what) => waitFor(() => call(layer, agent) === token, { what });

test('an atomic rename-over is served, once per change', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  writeMap(file, { [A]: randomToken() });
  const { layer } = open(file);
  for (let i = 0; i < 20; i++) {
    const t = randomToken();
    writeMapAtomic(file, { [A]: t });
    await serves(layer, A, t, `rotation ${i}`);
  }
  // Each rename yields two events; content dedupe makes it one reload.
  await waitFor(() => layer.stats().reloads === 21, { what: '21 reloads' });
  assert.equal(layer.stats().reloadErrors, 0);
  layer.close();
});

test('with no timer running, renames and a directory deleted and made again are in force from their events alone', async () => {
  const dir = path.join(tempDir(), 'cfg');
  fs.mkdirSync(dir, { mode: 0o700 });
  const file = path.join(dir, 'm.json');
  writeMap(file, { [A]: randomToken() });
  // A worker whose setInterval starts nothing: the WebAssembly build's
  // heartbeat (its only timer) never ticks, so only fs.watch can reload.
  const source = `
    import { parentPort, workerData } from 'node:worker_threads';
    let timers = 0;
    globalThis.setInterval = () => (timers++, { unref() {}, ref() {} });
    const { IdentityLayer } = await import(workerData.entryUrl);
    const layer = new IdentityLayer({ tokenMapPath: workerData.file, logger: { info() {}, warn() {}, error() {} } });
    const served = () => layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: ${JSON.stringify(A)} })?.params?.auth_token;
    parentPort.on('message', async (token) => {
      while (served() !== token) await new Promise((r) => setTimeout(r, 1));
      parentPort.postMessage({ timers, watcher: layer.stats().watcher, reloads: layer.stats().reloads });
    });
    parentPort.postMessage({ ready: true });
  `;
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), { workerData: { entryUrl, file } });
  // events.once rejects on the worker's 'error', and leaves no listener behind.
  const next = async () => (await once(worker, 'message'))[0];
  const served = async (t, what) => {
    worker.postMessage(t);
    return Promise.race([next(), new Promise((_, no) => setTimeout(() => no(new Error(`${what} was never served`)), 10_000))]);
  };
  try {
    await next();
    let last;
    for (let i = 0; i < 5; i++) {
      const t = randomToken();
      writeMapAtomic(file, { [A]: t });
      last = await served(t, `rotation ${i}`);
    }
    assert.deepEqual(last, { timers: buildInfo.native ? 0 : 1, watcher: EVENTS, reloads: 6 });
    // The directory's inode number often comes back: only the event naming
    // the deleted directory tells its watch is dead.
    for (let round = 0; round < 5; round++) {
      fs.rmSync(dir, { recursive: true });
      fs.mkdirSync(dir, { mode: 0o700 });
      const t = randomToken();
      writeMapAtomic(file, { [A]: t });
      last = await served(t, `the map in the directory made again, round ${round}`);
    }
    assert.equal(last.watcher, EVENTS);
  } finally {
    await worker.terminate();
  }
});

test('a touch that leaves the content unchanged is not a reload', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  const t = randomToken();
  writeMap(file, { [A]: t });
  const { layer } = open(file);
  const before = layer.stats().reloads;
  const now = new Date();
  fs.utimesSync(file, now, now);
  writeMapAtomic(file, { [A]: t });
  // A later, real change proves the watcher processed the earlier events.
  const t2 = randomToken();
  writeMapAtomic(file, { [A]: t2 });
  await serves(layer, A, t2, 'the real change');
  assert.equal(layer.stats().reloads, before + 1);
  layer.close();
});

test('an in-place rewrite is served', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  writeMap(file, { [A]: randomToken() });
  const { layer } = open(file);
  const t = randomToken();
  writeMap(file, { [A]: t });
  await serves(layer, A, t, 'the rewritten token');
  layer.close();
});

test('delete then recreate: the last good map stays while the file is gone', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  const t1 = randomToken();
  writeMap(file, { [A]: t1 });
  const { layer, log } = open(file);
  fs.unlinkSync(file);
  await waitFor(() => layer.stats().lastError !== null, { what: 'the missing-file error' });
  assert.equal(call(layer, A), t1);
  assert.match(layer.stats().lastError, /not found/);
  await waitFor(() => log.has(/token map not loaded: .* not found; .*keeping the last good map \(1 agents\)/), { what: 'one warning' });
  const t2 = randomToken();
  writeMap(file, { [A]: t2 });
  await serves(layer, A, t2, 'the recreated map');
  assert.equal(layer.stats().lastError, null);
  layer.close();
});

test('a map directory that does not exist at start is picked up when it appears', async () => {
  const root = tempDir();
  const file = path.join(root, 'not', 'yet', 'm.json');
  const { layer } = open(file);
  assert.equal(layer.stats().loaded, false);
  assert.equal(call(layer, A), undefined);
  fs.mkdirSync(path.join(root, 'not', 'yet'), { recursive: true, mode: 0o700 });
  const t = randomToken();
  writeMapAtomic(file, { [A]: t });
  await serves(layer, A, t, 'the map in the new directory');
  layer.close();
});

test('the watched directory deleted and recreated (again and again: the inode number often comes back)', async () => {
  const root = tempDir();
  const dir = path.join(root, 'cfg');
  fs.mkdirSync(dir, { mode: 0o700 });
  const file = path.join(dir, 'm.json');
  let current = randomToken();
  writeMap(file, { [A]: current });
  const { layer } = open(file);
  for (let round = 0; round < 10; round++) {
    const errors = layer.stats().reloadErrors;
    fs.rmSync(dir, { recursive: true });
    await waitFor(() => layer.stats().reloadErrors > errors, { what: `the error of round ${round}` });
    assert.equal(call(layer, A), current);
    fs.mkdirSync(dir, { mode: 0o700 });
    current = randomToken();
    writeMapAtomic(file, { [A]: current });
    await serves(layer, A, current, `the map in the recreated directory, round ${round}`);
  }
  // And the last directory is really watched: a further change is seen.
  const last = randomToken();
  writeMapAtomic(file, { [A]: last });
  await serves(layer, A, last, 'a later change');
  layer.close();
});

test('a Kubernetes secret-volume symlink swap (..data replaced by rename)', async () => {
  const dir = tempDir();
  const publish = (n, map) => {
    const ts = path.join(dir, `..2026_11_30_${n}`);
    fs.mkdirSync(ts, { mode: 0o755 });
    writeMap(path.join(ts, 'm.json'), map);
    fs.symlinkSync(path.basename(ts), path.join(dir, '..data_tmp'));
    fs.renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
  };
  const t1 = randomToken();
  publish(1, { [A]: t1 });
  fs.symlinkSync('..data/m.json', path.join(dir, 'm.json'));
  const { layer } = open(path.join(dir, 'm.json'));
  assert.equal(call(layer, A), t1);
  for (let n = 2; n < 6; n++) {
    const t = randomToken();
    publish(n, { [A]: t });
    await serves(layer, A, t, `swap ${n}`);
  }
  layer.close();
});

test('invalid JSON keeps the last good map and says why, once', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  const t1 = randomToken();
  writeMap(file, { [A]: t1 });
  const { layer, log } = open(file);
  writeMapAtomic(file, '{"paco--francis": ');
  await waitFor(() => layer.stats().reloadErrors >= 1, { what: 'the reload error' });
  writeMapAtomic(file, '{"paco--francis": ');
  writeMapAtomic(file, '{"paco--francis": ');
  assert.equal(call(layer, A), t1);
  assert.match(layer.stats().lastError, /not a valid token map/);
  const t2 = randomToken();
  writeMapAtomic(file, { [A]: t2 });
  await serves(layer, A, t2, 'the fixed map');
  // Lines arrive in order: once the recovery line is in, every warning is.
  await waitFor(() => log.has(/token map is loadable again/), { what: 'the recovery line' });
  const warnings = log.lines.filter((l) => /not a valid token map/.test(l.line));
  assert.equal(warnings.length, 1, log.text());
  layer.close();
});

test('a warning and the recovery line right after it reach the logger in the order they were logged', async () => {
  // The watcher logs the refusal, then (the fixed map already written) the
  // recovery, back to back: lines of two levels, from its own thread. They
  // once took one threadsafe function per level, and the recovery line often
  // overtook the warning (about one round in six here).
  for (let round = 0; round < 50; round++) {
    const dir = tempDir();
    const file = path.join(dir, 'm.json');
    writeMap(file, { [A]: randomToken() });
    const { layer, log } = open(file);
    writeMapAtomic(file, '{"paco--francis": ');
    await waitFor(() => layer.stats().reloadErrors >= 1, { what: `round ${round}: the reload error` });
    writeMapAtomic(file, { [A]: randomToken() });
    await waitFor(() => log.has(/token map is loadable again/), { what: `round ${round}: the recovery line` });
    const order = log.lines.map((l) => l.line).filter((l) => /not a valid token map|loadable again/.test(l));
    assert.deepEqual(
      order.map((l) => (/loadable again/.test(l) ? 'recovered' : 'refused')),
      ['refused', 'recovered'],
      `round ${round}:\n${log.text()}`,
    );
    layer.close();
  }
});

test('an agent removed from the file loses its token at once', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  const ta = randomToken();
  const tb = randomToken();
  writeMap(file, { [A]: ta, [B]: tb });
  const { layer } = open(file);
  assert.equal(call(layer, B), tb);
  writeMapAtomic(file, { [A]: ta });
  await waitFor(() => call(layer, B) === undefined, { what: 'B revoked' });
  assert.equal(call(layer, A), ta);
  assert.equal(layer.stats().agents, 1);
  layer.close();
});

test('the polling fallback serves changes too', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  writeMap(file, { [A]: randomToken() });
  const { layer } = open(file, { watcher: 'poll', pollIntervalMs: 20 });
  assert.equal(layer.stats().watcher, 'poll');
  for (let i = 0; i < 3; i++) {
    const t = randomToken();
    writeMapAtomic(file, { [A]: t });
    await serves(layer, A, t, `polled change ${i}`);
  }
  layer.close();
});

test('a slow in-place write logs its failure once, not once per partial state', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  const t1 = randomToken();
  writeMap(file, { [A]: t1 });
  const { layer, log } = open(file);
  const t2 = randomToken();
  const full = JSON.stringify({ [A]: t2 });
  // Each partial state fails at a different column of the parser.
  for (let cut = 5; cut < full.length; cut += 9) {
    const errors = layer.stats().reloadErrors;
    fs.writeFileSync(file, full.slice(0, cut));
    await waitFor(() => layer.stats().reloadErrors > errors, { what: `partial state ${cut}` });
    assert.equal(call(layer, A), t1);
  }
  fs.writeFileSync(file, full);
  await serves(layer, A, t2, 'the completed write');
  await waitFor(() => log.has(/token map is loadable again/), { what: 'the recovery line' });
  const warnings = log.lines.filter((l) => /token map not loaded/.test(l.line));
  assert.equal(warnings.length, 1, log.text());
  layer.close();
});

test('a busy directory does not hold off the heartbeat (maxStaleSeconds still applies)', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'm.json');
  writeMap(file, { [A]: randomToken() });
  const { layer } = open(file, { maxStaleSeconds: 0.2 });
  fs.unlinkSync(file);
  // Another file in the map's directory, written far more often than the heartbeat.
  const noise = setInterval(() => fs.writeFileSync(path.join(dir, 'app.log'), String(Date.now())), 20);
  try {
    await waitFor(() => layer.stats().stale, { what: 'stale despite the stream of events' });
  } finally {
    clearInterval(noise);
  }
  layer.close();
});
