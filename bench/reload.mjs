// Reload latency: from the rename of a new map over the old one to the first
// call that returns the new token, over many rotations. The layer sees the
// change through its watcher thread; the caller spins on beforeToolCall.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
 * The native and WebAssembly builds side by side: each rotation renames a
 * new map over each build's own map (in a directory of its own), the builds
 * taking turns, one rotation each, so a busy machine hits them alike. The
 * caller yields to the event loop between calls, as a gateway does: the
 * WebAssembly build's events (Node's fs.watch) arrive on it, and the
 * native build's watcher thread needs no turn. µs.
 */
export async function buildsReloadLatency({ rotations, agents = 10 }) {
  const tmp = tempDir();
  try {
    const builds = [
      ['native', IdentityLayer],
      ['wasm', WasmLayer],
    ].map(([name, Layer]) => {
      const dir = path.join(tmp.dir, name);
      fs.mkdirSync(dir, { mode: 0o700 });
      const file = path.join(dir, 'agent-tokens.json');
      const map = {};
      for (let i = 1; i < agents; i++) map[`agent-${i}`] = randomToken();
      map[AGENT] = randomToken();
      writeMapAtomic(file, map);
      return { name, file, map, layer: new Layer({ tokenMapPath: file }), us: [], timeouts: 0 };
    });
    const ev = { toolName: 'claw-os__claw_notes', params: { action: 'list' } };
    const ctx = { agentId: AGENT, sessionKey: `agent:${AGENT}:main` };
    const yieldToLoop = () => new Promise((r) => setImmediate(r));
    for (let i = 0; i < rotations; i++) {
      for (const b of i % 2 ? builds : [...builds].reverse()) {
        const next = randomToken();
        b.map[AGENT] = next;
        const tmpFile = `${b.file}.tmp`;
        fs.writeFileSync(tmpFile, JSON.stringify(b.map), { mode: 0o600 });
        const t1 = now();
        fs.renameSync(tmpFile, b.file);
        while (b.layer.beforeToolCall(ev, ctx)?.params.auth_token !== next) {
          if (now() - t1 > TIMEOUT_NS) {
            b.timeouts++;
            break;
          }
          await yieldToLoop();
        }
        b.us.push(Number(now() - t1) / 1e3);
      }
      // The rename's second event, and the log lines, before the next one.
      await new Promise((r) => setTimeout(r, 2));
    }
    const out = { node: process.version, rotations, agents };
    for (const b of builds) {
      out[b.name] = { watcher: b.layer.stats().watcher, timeouts: b.timeouts, median: median(b.us), p99: percentile(b.us, 0.99), max: Math.max(...b.us) };
      b.layer.close();
    }
    return out;
  } finally {
    tmp.cleanup();
  }
}

// `node bench/reload.mjs --builds <rotations>`: the side-by-side rows as
// JSON, for `npm run bench` to take them on another Node.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--builds') {
  console.log(JSON.stringify(await buildsReloadLatency({ rotations: Number(process.argv[3] ?? 200) })));
}
