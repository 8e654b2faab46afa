// Calls keep running while another thread swaps the map thousands of times:
// every token returned must be one written for that agent, never torn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import { IdentityLayer } from './helpers/subject.mjs';
import { captureLogger, guardTokens, randomToken, tempDir, writeMap } from './helpers/support.mjs';

const AGENTS = ['paco--francis', 'paco--dali', 'pepito--atlas', 'main'];
const ROTATIONS = 3000;

test('no torn or wrong-agent token while the map is swapped 3,000 times', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'agent-tokens.json');
  const generations = [];
  for (let g = 0; g <= ROTATIONS; g++) {
    generations.push(Object.fromEntries(AGENTS.map((a) => [a, randomToken()])));
  }
  const valid = new Map(AGENTS.map((a) => [a, new Set(generations.map((m) => m[a]))]));
  writeMap(file, generations[0]);
  // pollIntervalMs: the WebAssembly build polls (every 500 ms by default); the native one ignores it.
  const layer = new IdentityLayer({ tokenMapPath: file, pollIntervalMs: 10, logger: captureLogger().logger });

  const done = new Int32Array(new SharedArrayBuffer(4));
  const writer = new Worker(
    `const { workerData } = require('node:worker_threads');
     const fs = require('node:fs');
     const { file, generations, done } = workerData;
     for (let g = 1; g < generations.length; g++) {
       const tmp = file + '.tmp';
       fs.writeFileSync(tmp, JSON.stringify(generations[g]), { mode: 0o600 });
       fs.renameSync(tmp, file);
     }
     Atomics.store(done, 0, 1);`,
    { eval: true, workerData: { file, generations, done } },
  );
  const exited = new Promise((resolve, reject) => {
    writer.on('exit', resolve);
    writer.on('error', reject);
  });

  let calls = 0;
  const seen = new Map(AGENTS.map((a) => [a, new Set()]));
  const params = { note: 'x', auth_token: 'model-value' };
  // Synchronous stretches: the native watcher thread swaps the map
  // underneath them. Between stretches the event loop turns, which is when
  // the WebAssembly build's poll timer runs. Then until the last map is in force.
  const last = generations.at(-1);
  while (Atomics.load(done, 0) === 0 || calls < 10_000 || !AGENTS.every((a) => seen.get(a).has(last[a]))) {
    if (calls % 1000 === 999) await new Promise((r) => setTimeout(r, 1));
    const agent = AGENTS[calls % AGENTS.length];
    const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params }, { agentId: agent });
    const token = r.params.auth_token;
    if (!valid.get(agent).has(token)) {
      assert.fail(`call ${calls}: agent ${agent} got a token not written for it (length ${token.length})`);
    }
    seen.get(agent).add(token);
    calls++;
  }
  await exited;
  // The loop really overlapped the rotations: it saw several generations.
  for (const a of AGENTS) assert.ok(seen.get(a).size > 1, `${a} saw ${seen.get(a).size} generations`);
  layer.close();
  guardTokens(...generations.flatMap((m) => Object.values(m)));
});
