// Scale: maps of 10, 1,000 and 100,000 agents, plus one filled up to the size
// cap. Each size runs in a fresh child process (so RSS is its own): load time,
// RSS added by the layer, per-call cost next to the N-API floor, and what the
// plain-JS design pays on the first call after a change (read + JSON.parse).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { interleave, median, now, pairedRatio, randomToken, tempDir, turn, writeMapAtomic } from './harness.mjs';

const SELF = fileURLToPath(import.meta.url);
/** Keep in step with DEFAULT_MAX_MAP_BYTES in src/token_map/mod.rs. */
export const MAX_MAP_BYTES = 16 * 1024 * 1024;

const agentId = (i) => `user-${String(i).padStart(6, '0')}--assistant`;

/** A canonical map of `n` agents, or as many as fit under `bytes`. */
function makeMap({ n, bytes }) {
  const map = {};
  if (n !== undefined) {
    for (let i = 0; i < n; i++) map[agentId(i)] = randomToken();
    return map;
  }
  // `"id":"<64 hex>",` per entry; stop one entry short of the cap.
  const per = JSON.stringify({ [agentId(0)]: randomToken() }).length - 1;
  const count = Math.floor((bytes - 2) / per) - 1;
  return makeMap({ n: count });
}

async function child(file, agents) {
  const { IdentityLayer, noop } = await import('../index.js');
  const ids = [];
  for (let i = 0; i < 1024; i++) ids.push(agentId(Math.floor((i * agents) / 1024) % agents));
  globalThis.gc();
  const rss0 = process.memoryUsage.rss();
  const t0 = now();
  const layer = new IdentityLayer({ tokenMapPath: file });
  const loadMs = Number(now() - t0) / 1e6;
  const s = layer.stats();
  if (s.agents !== agents || !s.loaded) throw new Error(`bench: loaded ${s.agents} of ${agents} agents`);
  globalThis.gc();
  const rss1 = process.memoryUsage.rss();

  // One reload at this size, before the per-call loop grows the JS heap: the
  // parent prepared the next map (one token changed); rename it over the map.
  // Old map, new map, file bytes and parse state coexist for a moment.
  const reloads = layer.stats().reloads;
  const t1 = now();
  fs.renameSync(`${file}.next`, file);
  while (layer.stats().reloads === reloads) {
    if (now() - t1 > 30_000_000_000n) throw new Error('bench: the map was not reloaded');
    await new Promise((r) => setTimeout(r, 1));
  }
  const reloadMs = Number(now() - t1) / 1e6;
  const peakMiB = (process.resourceUsage().maxRSS * 1024 - rss0) / 2 ** 20;

  const ctxs = ids.map((id) => ({ agentId: id, sessionKey: `agent:${id}:main` }));
  const ev = { toolName: 'claw-os__claw_notes', params: { action: 'search', query: 'groceries', limit: 20, tags: ['home'], auth_token: 'x' } };
  let k = 0;
  const rounds = await interleave(
    [
      { id: 'noop', run: () => noop() },
      { id: 'owned', run: () => layer.beforeToolCall(ev, ctxs[k++ & 1023]) },
    ],
    { samples: Number(process.env.BENCH_SAMPLES ?? 9), calls: 100_000, clock: process.env.BENCH_CLOCK ?? 'wall' },
  );
  const injected = layer.stats().injected;
  layer.close();
  if (injected === 0) throw new Error('bench: no token was injected');

  // The plain-JS design's first call after a change: read and parse on the JS thread.
  const parse = [];
  for (let i = 0; i < 5; i++) {
    const t = now();
    JSON.parse(fs.readFileSync(file, 'utf8'));
    parse.push(Number(now() - t) / 1e6);
    await turn();
  }
  return {
    loadMs,
    rssMiB: (rss1 - rss0) / 2 ** 20,
    reloadMs,
    peakMiB,
    ns: median(rounds.map((r) => r.owned)),
    vsNoop: pairedRatio(rounds, 'owned', 'noop'),
    plainParseMs: median(parse),
  };
}

export function scale({ sizes = [10, 1_000, 100_000], samples = 9, clock = 'wall' } = {}) {
  const tmp = tempDir();
  try {
    const rows = [];
    for (const size of [...sizes.map((n) => ({ n })), { bytes: MAX_MAP_BYTES }]) {
      const map = makeMap(size);
      const file = path.join(tmp.dir, 'agent-tokens.json');
      writeMapAtomic(file, map);
      const agents = Object.keys(map).length;
      map[agentId(0)] = randomToken();
      fs.writeFileSync(`${file}.next`, JSON.stringify(map), { mode: 0o600 });
      const out = execFileSync(process.execPath, ['--expose-gc', SELF, '--child', file, String(agents)], {
        encoding: 'utf8',
        env: { ...process.env, BENCH_SAMPLES: String(samples), BENCH_CLOCK: clock },
      });
      rows.push({ agents, bytes: fs.statSync(file).size, atCap: size.bytes !== undefined, ...JSON.parse(out) });
    }
    return rows;
  } finally {
    tmp.cleanup();
  }
}

if (process.argv[2] === '--child') {
  process.stdout.write(JSON.stringify(await child(process.argv[3], Number(process.argv[4]))));
}
