// Reload latency: from the rename of a new map over the old one to the first
// call that returns the new token, over many rotations. The layer sees the
// change through its watcher thread; the caller spins on beforeToolCall.
import fs from 'node:fs';
import path from 'node:path';

import { IdentityLayer } from '../index.js';
import { IdentityLayer as WasmLayer } from '../wasm.js';
import { plainHook } from './baseline.mjs';
import { median, now, percentile, randomToken, tempDir, turn, writeMapAtomic } from './harness.mjs';

const AGENT = 'paco--francis';
const TIMEOUT_NS = 2_000_000_000n;

export async function reloadLatency({ rotations, agents = 10 }) {
  const tmp = tempDir();
  try {
    const file = path.join(tmp.dir, 'agent-tokens.json');
    const map = {};
    for (let i = 1; i < agents; i++) map[`agent-${i}`] = randomToken();
    map[AGENT] = randomToken();
    writeMapAtomic(file, map);
    const layer = new IdentityLayer({ tokenMapPath: file });
    const plain = plainHook(file);
    const ev = { toolName: 'claw-os__claw_notes', params: { action: 'list' } };
    const ctx = { agentId: AGENT, sessionKey: `agent:${AGENT}:main` };

    const ours = [];
    const theirs = [];
    let timeouts = 0;
    let spins = 0;
    for (let i = 0; i < rotations; i++) {
      const next = randomToken();
      map[AGENT] = next;
      // The minting service's write: a 0600 temp file, then rename over (timed from the rename).
      const tmpFile = `${file}.tmp`;
      fs.writeFileSync(tmpFile, JSON.stringify(map), { mode: 0o600 });
      const t1 = now();
      fs.renameSync(tmpFile, file);
      for (;;) {
        spins++;
        if (layer.beforeToolCall(ev, ctx)?.params.auth_token === next) break;
        if (now() - t1 > TIMEOUT_NS) {
          timeouts++;
          break;
        }
      }
      ours.push(Number(now() - t1) / 1e3);
      // The plain-JS design sees it on its next call (stat, read, parse).
      const t2 = now();
      if (plain(ev, ctx)?.params.auth_token !== next) throw new Error('bench: plain-JS baseline missed a rotation');
      theirs.push(Number(now() - t2) / 1e3);
      await turn(); // deliver the watcher's log lines, as a gateway's event loop would
    }
    const stats = layer.stats();
    layer.close();
    const summary = (xs) => ({ median: median(xs), p99: percentile(xs, 0.99), max: Math.max(...xs) });
    return {
      rotations,
      agents,
      timeouts,
      spinsPerRotation: spins / rotations,
      reloads: stats.reloads,
      ours: summary(ours),
      plain: summary(theirs),
    };
  } finally {
    tmp.cleanup();
  }
}

/**
 * The same, on the WebAssembly build: its watcher polls from a JS timer
 * (every 500 ms by default), so the caller yields to the event loop
 * between calls, as a gateway does, instead of spinning.
 */
export async function wasmReloadLatency({ rotations, agents = 10 }) {
  const tmp = tempDir();
  try {
    const file = path.join(tmp.dir, 'agent-tokens.json');
    const map = {};
    for (let i = 1; i < agents; i++) map[`agent-${i}`] = randomToken();
    map[AGENT] = randomToken();
    writeMapAtomic(file, map);
    const layer = new WasmLayer({ tokenMapPath: file });
    const ev = { toolName: 'claw-os__claw_notes', params: { action: 'list' } };
    const ctx = { agentId: AGENT, sessionKey: `agent:${AGENT}:main` };
    const ms = [];
    let timeouts = 0;
    for (let i = 0; i < rotations; i++) {
      const next = randomToken();
      map[AGENT] = next;
      const tmpFile = `${file}.tmp`;
      fs.writeFileSync(tmpFile, JSON.stringify(map), { mode: 0o600 });
      const t1 = now();
      fs.renameSync(tmpFile, file);
      while (layer.beforeToolCall(ev, ctx)?.params.auth_token !== next) {
        if (now() - t1 > 3n * TIMEOUT_NS) {
          timeouts++;
          break;
        }
        await new Promise((r) => setTimeout(r, 1));
      }
      ms.push(Number(now() - t1) / 1e6);
      // Start the next rotation at a random point of the poll cycle.
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 500)));
    }
    layer.close();
    return { rotations, timeouts, ms: { median: median(ms), p99: percentile(ms, 0.99), max: Math.max(...ms) } };
  } finally {
    tmp.cleanup();
  }
}
