// Torture: reader workers call beforeToolCall for many agents, each on its
// own layer, while a writer worker rotates the map 10,000 times. Every token
// returned is checked: it must be whole, of the calling agent, and of a
// generation that was written. RSS growth from after a warm-up to the end
// (1,000,000 calls and all the rotations) must stay under a generous bound,
// and nothing the layers said may hold a long hex run.
//
// A token encodes who and when: agent index (2 hex) + generation (6 hex) +
// 56 hex of sha256(secret, agent, generation). A torn token (two
// generations spliced) or another agent's token fails the hash or the index.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import { recordEmitted, tempDir, waitFor, writeMap } from './helpers/support.mjs';
import { entryUrl } from './helpers/subject.mjs';

const AGENTS = Array.from({ length: 32 }, (_, i) => `agent-${String(i).padStart(2, '0')}`);
const ROTATIONS = 10_000;
const READERS = 2;
const WARMUP_CALLS = 50_000; // per reader, before the measured window
const MEASURED_CALLS = 1_000_000; // in all, after the warm-up
// Generous: a 64-byte leak per call would be 64 MB; a leaked map per
// rotation per layer, about 45 MB. Measured growth here is a few MB.
const RSS_GROWTH_BOUND = 48 * 1024 * 1024;

const indexUrl = entryUrl;

const shared = `
  const crypto = require('node:crypto');
  const token = (secret, agents, i, gen) =>
    i.toString(16).padStart(2, '0') + gen.toString(16).padStart(6, '0') +
    crypto.createHash('sha256').update(secret + '|' + agents[i] + '|' + gen).digest('hex').slice(0, 56);
  const mapOf = (secret, agents, gen) => Object.fromEntries(agents.map((a, i) => [a, token(secret, agents, i, gen)]));
`;

const writerSource = `
  const { workerData, parentPort } = require('node:worker_threads');
  const fs = require('node:fs');
  ${shared}
  const { file, secret, agents, rotations, flags } = workerData;
  parentPort.once('message', () => {
    for (let gen = 1; gen <= rotations; gen++) {
      const tmp = file + '.tmp';
      fs.writeFileSync(tmp, JSON.stringify(mapOf(secret, agents, gen)), { mode: 0o600 });
      fs.renameSync(tmp, file);
    }
    Atomics.store(flags, 0, 1);
    parentPort.postMessage({ type: 'done' });
  });
`;

const readerSource = `
  const { workerData, parentPort } = require('node:worker_threads');
  ${shared}
  const { file, secret, agents, rotations, flags, warmup, calls: target, index } = workerData;
  const HEX_RUN = /[0-9a-f]{16,}/i;
  const log = { lines: 0, suspicious: 0, sample: [] };
  const keep = (line) => {
    log.lines++;
    if (HEX_RUN.test(line)) log.suspicious++;
    if (log.sample.length < 50 || !line.includes('token-status=ok')) log.sample.push(line);
  };
  import(workerData.indexUrl).then(async ({ IdentityLayer }) => {
    const layer = new IdentityLayer({ tokenMapPath: file, pollIntervalMs: 10, logger: { info: keep, warn: keep, error: keep } });
    const params = { note: 'x', auth_token: 'model-wrote-this' };
    const last = new Array(agents.length).fill('');
    const bad = { torn: 0, wrongAgent: 0, missing: 0, examples: [] };
    const seenGens = new Set();
    let maxGen = 0;
    let calls = 0;
    const check = (i) => {
      const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params }, { agentId: agents[i] });
      const t = r?.params?.auth_token;
      calls++;
      if (t === last[i]) return;
      if (typeof t !== 'string' || t === 'model-wrote-this') { bad.missing++; return; }
      const who = parseInt(t.slice(0, 2), 16);
      const gen = parseInt(t.slice(2, 8), 16);
      const whole = t.length === 64 && who < agents.length && gen <= rotations && t === token(secret, agents, who, gen);
      if (!whole) bad.torn++;
      else if (who !== i) bad.wrongAgent++;
      else { last[i] = t; seenGens.add(gen); if (gen > maxGen) maxGen = gen; return; }
      if (bad.examples.length < 5) bad.examples.push({ call: calls, agent: agents[i], length: t.length });
    };
    const batch = async (n) => {
      for (let k = 0; k < n; k++) check((k + index) % agents.length);
      await new Promise((r) => setImmediate(r)); // let queued log lines in
    };
    while (calls < warmup) await batch(1000);
    parentPort.postMessage({ type: 'warm' });
    // This reader's share of the measured calls, then gentler calls (so the
    // writer gets the CPU) until the writer is done, then until every agent
    // is served the last generation.
    while (calls < warmup + target) await batch(1000);
    const measured = calls - warmup;
    while (Atomics.load(flags, 0) === 0) {
      await batch(agents.length);
      await new Promise((r) => setTimeout(r, 1));
    }
    while (!last.every((t, i) => t === token(secret, agents, i, rotations))) await batch(agents.length);
    await new Promise((r) => setTimeout(r, 50)); // let the last log lines in
    // Stay alive (layer open, heap in use) while the main thread reads RSS.
    parentPort.once('message', () => layer.close());
    parentPort.postMessage({ type: 'done', calls, measured, bad, generations: seenGens.size, maxGen, stats: layer.stats(), log });
  });
`;

function start(source, workerData) {
  const worker = new Worker(source, {
    eval: true,
    workerData,
    // Bounded JS heaps, so RSS growth past them is native memory.
    resourceLimits: { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 16 },
  });
  const messages = [];
  worker.on('message', (m) => messages.push(m));
  const exit = new Promise((resolve, reject) => {
    worker.on('exit', resolve);
    worker.on('error', reject);
  });
  const next = (type) => waitFor(() => messages.find((m) => m.type === type), { what: `a ${type} message`, timeoutMs: 120_000, intervalMs: 10 });
  return { worker, exit, next };
}

test(`${READERS} reader workers, ${AGENTS.length} agents, ${ROTATIONS.toLocaleString('en')} rotations: no torn or wrong-agent token, bounded RSS over ${MEASURED_CALLS.toLocaleString('en')} calls`, async (t) => {
  // tmpfs when there is one: on this machine's disk a rename-over costs
  // about 0.6 ms and would make the writer, not the layer, the bottleneck.
  const file = path.join(fs.existsSync('/dev/shm') ? tempDir('claw-identity-torture-', '/dev/shm') : tempDir(), 'agent-tokens.json');
  const secret = crypto.randomBytes(16).toString('hex');
  const flags = new Int32Array(new SharedArrayBuffer(4));
  // Generation 0 goes through writeMap, so the leak guard holds its tokens;
  // the rotated ones are checked by the readers (no 16-hex run in any line).
  const token = (i, gen) =>
    i.toString(16).padStart(2, '0') +
    gen.toString(16).padStart(6, '0') +
    crypto.createHash('sha256').update(`${secret}|${AGENTS[i]}|${gen}`).digest('hex').slice(0, 56);
  writeMap(file, Object.fromEntries(AGENTS.map((a, i) => [a, token(i, 0)])));

  const writer = start(writerSource, { file, secret, agents: AGENTS, rotations: ROTATIONS, flags });
  const readers = Array.from({ length: READERS }, (_, index) =>
    start(readerSource, {
      file,
      secret,
      agents: AGENTS,
      rotations: ROTATIONS,
      flags,
      index,
      indexUrl,
      warmup: WARMUP_CALLS,
      calls: MEASURED_CALLS / READERS,
    }),
  );
  await Promise.all(readers.map((r) => r.next('warm')));
  const rssBefore = process.memoryUsage().rss;
  writer.worker.postMessage('go');
  await writer.next('done');
  const results = await Promise.all(readers.map((r) => r.next('done')));
  const rssAfter = process.memoryUsage().rss;
  for (const r of readers) r.worker.postMessage('bye');
  await Promise.all([writer, ...readers].map((w) => w.exit));

  let measured = 0;
  for (const [i, r] of results.entries()) {
    recordEmitted(`reader ${i} stats`, r.stats);
    for (const line of r.log.sample) recordEmitted(`reader ${i} log`, line);
    measured += r.measured;
    assert.deepEqual(
      { torn: r.bad.torn, wrongAgent: r.bad.wrongAgent, missing: r.bad.missing },
      { torn: 0, wrongAgent: 0, missing: 0 },
      `reader ${i}: ${JSON.stringify(r.bad.examples)}`,
    );
    assert.equal(r.maxGen, ROTATIONS);
    // The calls really overlapped the rotations.
    assert.ok(r.generations > 10, `reader ${i} saw only ${r.generations} generations`);
    assert.ok(r.stats.reloads > 10, `reader ${i}'s layer reloaded only ${r.stats.reloads} times`);
    assert.equal(r.stats.reloadErrors, 0, 'an atomic rename was seen half-written');
    assert.equal(r.log.suspicious, 0, `reader ${i}: ${r.log.suspicious} log lines hold a 16-hex run`);
    assert.ok(r.log.lines > 0);
  }
  assert.ok(measured >= MEASURED_CALLS, `only ${measured} calls were measured`);
  const growth = rssAfter - rssBefore;
  recordEmitted('torture rss', { rssBefore, rssAfter, growth, measured });
  t.diagnostic(
    `RSS ${(rssBefore / 2 ** 20).toFixed(1)} MB -> ${(rssAfter / 2 ** 20).toFixed(1)} MB over ${measured} calls; generations seen: ${results.map((r) => r.generations).join(', ')}; reloads: ${results.map((r) => r.stats.reloads).join(', ')}`,
  );
  assert.ok(growth < RSS_GROWTH_BOUND, `RSS grew by ${(growth / 2 ** 20).toFixed(1)} MB over ${measured} calls and ${ROTATIONS} rotations`);
});
