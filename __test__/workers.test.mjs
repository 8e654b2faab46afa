// The addon in worker_threads. Decision: it loads and works there. napi-rs 3
// modules are context-aware, every worker gets its own module instance, and
// the layer keeps no per-thread state that a second context could trip on
// (the layer table is a process-wide lock; each layer's logger bridge is a
// threadsafe function bound to the context that created it). These tests
// pin that down, including a worker torn down while its layer is logging.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import { buildInfo, stats, entryUrl } from './helpers/subject.mjs';
import { fingerprint, randomToken, recordEmitted, tempDir, waitFor, writeMap, writeMapAtomic } from './helpers/support.mjs';

const indexUrl = entryUrl;

/**
 * Starts a worker running `body` (an async function body, as an ES module
 * snippet) with `IdentityLayer`, `configure`, `stats`, `fingerprint`,
 * `workerData` and `post` in scope. Resolves its messages as they come.
 */
function startWorker(body, workerData) {
  const source = `
    import { parentPort, workerData } from 'node:worker_threads';
    const { IdentityLayer, configure, stats, fingerprint } = await import(${JSON.stringify(indexUrl)});
    const post = (m) => parentPort.postMessage(m);
    const lines = [];
    const logger = { info: (l) => lines.push(l), warn: (l) => lines.push(l), error: (l) => lines.push(l) };
    ${body}
  `;
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), { workerData });
  const messages = [];
  worker.on('message', (m) => {
    recordEmitted('worker message', m);
    messages.push(m);
  });
  const exit = new Promise((resolve, reject) => {
    worker.on('exit', resolve);
    worker.on('error', reject);
  });
  return {
    worker,
    messages,
    exit,
    next: (type) => waitFor(() => messages.find((m) => m.type === type), { what: `the worker's ${type} message`, timeoutMs: 15_000 }),
  };
}

/** Live map watcher threads in this process (Linux truncates thread names to 15 bytes). */
const watcherThreads = () =>
  fs.readdirSync('/proc/self/task').filter((tid) => {
    try {
      return fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').startsWith('claw-identity-w');
    } catch {
      return false; // the thread ended while we looked
    }
  }).length;

function mapFile(agents) {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const tokens = Object.fromEntries(agents.map((a) => [a, randomToken()]));
  writeMap(file, tokens);
  return { file, tokens };
}

test('the addon loads in a worker thread, injects tokens there, and logs through a logger living in that worker', async () => {
  const { file, tokens } = mapFile(['paco--francis', 'paco--dali']);
  const w = startWorker(
    `const layer = new IdentityLayer({ tokenMapPath: workerData.file, logger });
     const fp = (agentId) => {
       const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: { note: 'x' } }, { agentId });
       return r?.params ? fingerprint(r.params.auth_token) : null;
     };
     const got = { francis: fp('paco--francis'), dali: fp('paco--dali'), ghost: fp('paco--ghost') };
     await new Promise((r) => setTimeout(r, 50));
     while (!lines.some((l) => l.includes('agent=paco--ghost token-status=missing'))) await new Promise((r) => setTimeout(r, 5));
     post({ type: 'done', got, stats: layer.stats(), lines });
     layer.close();`,
    { file },
  );
  const done = await w.next('done');
  assert.equal(await w.exit, 0);
  assert.deepEqual(done.got, { francis: fingerprint(tokens['paco--francis']), dali: fingerprint(tokens['paco--dali']), ghost: null });
  assert.equal(done.stats.injected, 2);
  assert.equal(done.stats.missing, 1);
  assert.ok(
    done.lines.some((l) => l.startsWith('[claw-identity] plugin loaded; token map = ')),
    done.lines.join('\n'),
  );
});

test('layers in two workers and the main thread serve their own maps at once, and follow their own rotations', async () => {
  const a = mapFile(['paco--francis']);
  const b = mapFile(['paco--francis']);
  const body = `
    const layer = new IdentityLayer({ tokenMapPath: workerData.file, logger });
    const fp = () => fingerprint(layer.beforeToolCall({ toolName: 'claw-os__x', params: {} }, { agentId: 'paco--francis' }).params.auth_token);
    post({ type: 'first', fp: fp() });
    // Serve until the rotated token (announced by the main thread) shows up.
    parentPort.once('message', async (want) => {
      let calls = 0;
      while (fp() !== want) { calls++; await new Promise((r) => setTimeout(r, 2)); }
      post({ type: 'rotated', calls });
      layer.close();
    });`;
  const wa = startWorker(body, { file: a.file });
  const wb = startWorker(body, { file: b.file });
  const { IdentityLayer } = await import(entryUrl);
  const main = new IdentityLayer({ tokenMapPath: a.file });
  assert.equal((await wa.next('first')).fp, fingerprint(a.tokens['paco--francis']));
  assert.equal((await wb.next('first')).fp, fingerprint(b.tokens['paco--francis']));

  const rotatedA = randomToken();
  const rotatedB = randomToken();
  writeMapAtomic(a.file, { 'paco--francis': rotatedA });
  writeMapAtomic(b.file, { 'paco--francis': rotatedB });
  wa.worker.postMessage(fingerprint(rotatedA));
  wb.worker.postMessage(fingerprint(rotatedB));
  await wa.next('rotated');
  await wb.next('rotated');
  await waitFor(() => main.beforeToolCall({ toolName: 'claw-os__x', params: {} }, { agentId: 'paco--francis' }).params.auth_token === rotatedA, {
    what: 'the main thread layer to rotate',
  });
  assert.equal(await wa.exit, 0);
  assert.equal(await wb.exit, 0);
  main.close();
});

test("configure() in a worker is that worker's own: the main thread's process-wide layer is untouched", async () => {
  const { file } = mapFile(['paco--francis']);
  const w = startWorker(
    `configure({ tokenMapPath: workerData.file, logger });
     post({ type: 'done', agents: stats().agents });`,
    { file },
  );
  assert.equal((await w.next('done')).agents, 1);
  assert.equal(await w.exit, 0);
  assert.equal(stats(), undefined, 'the worker configured the main thread too');
});

test('a worker with a live layer and logger exits by itself', async () => {
  const { file } = mapFile(['paco--francis']);
  const w = startWorker(
    `const layer = new IdentityLayer({ tokenMapPath: workerData.file, logger });
     post({ type: 'ready', loaded: layer.stats().loaded });
     // no close(): the watcher thread and the logger bridge must not keep the worker alive`,
    { file },
  );
  assert.equal((await w.next('ready')).loaded, true);
  assert.equal(await w.exit, 0);
});

test('workers terminated while their layers reload and log do not take the process down, and their watchers stop', async () => {
  const { file, tokens } = mapFile(['paco--francis']);
  const { IdentityLayer } = await import(entryUrl);
  const main = new IdentityLayer({ tokenMapPath: file });
  const baseline = watcherThreads();
  // A native layer watches from a thread of its own; the WebAssembly build starts no threads.
  const perLayer = buildInfo.native ? 1 : 0;
  if (buildInfo.native) assert.ok(baseline >= 1, 'the main layer has a watcher thread');
  else assert.equal(baseline, 0, 'the WebAssembly build started a thread');
  for (let round = 0; round < 8; round++) {
    const w = startWorker(
      `const layer = new IdentityLayer({ tokenMapPath: workerData.file, logger });
       post({ type: 'ready' });
       // Keep the thread busy with calls, so log lines queue up while it dies.
       for (;;) {
         layer.beforeToolCall({ toolName: 'claw-os__x', params: {} }, { agentId: 'paco--francis' });
         await new Promise((r) => setImmediate(r));
       }`,
      { file },
    );
    await w.next('ready');
    assert.equal(watcherThreads(), baseline + perLayer);
    // Reloads (valid and refused maps) make the watcher thread log into the dying worker.
    writeMapAtomic(file, '{"broken');
    writeMapAtomic(file, tokens);
    await w.worker.terminate();
    assert.equal(await w.exit, 1);
    // The dead worker's layer was finalized: its watcher thread is gone.
    await waitFor(() => watcherThreads() === baseline, { what: "the terminated worker's watcher thread to stop" });
  }
  writeMapAtomic(file, '{"broken');
  await waitFor(() => main.stats().reloadErrors > 0, { what: 'the main layer to see the broken map' });
  writeMapAtomic(file, tokens);
  await waitFor(() => main.stats().lastError === null, { what: 'the main layer to recover' });
  const r = main.beforeToolCall({ toolName: 'claw-os__x', params: {} }, { agentId: 'paco--francis' });
  assert.equal(fingerprint(r.params.auth_token), fingerprint(tokens['paco--francis']));
  main.close();
});
