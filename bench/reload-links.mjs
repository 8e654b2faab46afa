// Reload latency by the way the map is reached: from the write (the rename,
// or the in-place write) to the first call that returns the new token.
//   node bench/reload-links.mjs [rotations] [case name contains]
import fs from 'node:fs';
import path from 'node:path';

import { IdentityLayer } from '../index.js';
import { median, now, percentile, randomToken, tempDir, writeMapAtomic } from './harness.mjs';

const AGENT = 'paco--francis';
const TIMEOUT_NS = 2_000_000_000n;
const rotations = Number(process.argv[2] ?? 200);
const only = process.argv[3] ?? '';
const ev = { toolName: 'claw-os__claw_notes', params: {} };
const ctx = { agentId: AGENT };

// Each case: set up under `dir`, return [map path, write(map content)].
const cases = {
  'plain file, rename-over': (dir) => {
    const file = path.join(dir, 'm.json');
    return [file, (map) => writeMapAtomic(file, map)];
  },
  'symlink into another directory, target renamed over': (dir) => {
    fs.mkdirSync(path.join(dir, 'real'), { mode: 0o700 });
    const real = path.join(dir, 'real', 'real.json');
    fs.symlinkSync(real, path.join(dir, 'm.json'));
    return [path.join(dir, 'm.json'), (map) => writeMapAtomic(real, map)];
  },
  'in place through another path (hard link elsewhere)': (dir) => {
    fs.mkdirSync(path.join(dir, 'other'), { mode: 0o700 });
    const file = path.join(dir, 'm.json');
    const alias = path.join(dir, 'other', 'alias.json');
    writeMapAtomic(file, {});
    fs.linkSync(file, alias);
    // Same length every time, so only the content (and times) differ.
    return [file, (map) => fs.writeFileSync(alias, JSON.stringify(map))];
  },
};

// The cases take turns, one rotation each, so a busy machine hits them alike.
const quiet = () => {};
const runs = Object.entries(cases)
  .filter(([n]) => n.includes(only))
  .map(([name, setup]) => {
    const tmp = tempDir();
    const [file, write] = setup(tmp.dir);
    write({ [AGENT]: randomToken() });
    // In-place writes pass through an empty file: the refusals are expected, not shown.
    const layer = new IdentityLayer({ tokenMapPath: file, logger: { info: quiet, warn: quiet, error: quiet } });
    return { name, tmp, write, layer, us: [], timeouts: 0 };
  });
for (let i = 0; i < rotations; i++) {
  for (const r of runs) {
    const next = randomToken();
    const t = now();
    r.write({ [AGENT]: next });
    while (r.layer.beforeToolCall(ev, ctx)?.params.auth_token !== next) {
      if (now() - t > TIMEOUT_NS) {
        r.timeouts++;
        break;
      }
    }
    r.us.push(Number(now() - t) / 1e3);
    await new Promise((resolve) => setImmediate(resolve));
  }
}
const f = (x) => Math.round(x).toLocaleString('en-US');
for (const r of runs) {
  r.layer.close();
  r.tmp.cleanup();
  console.log(`${r.name}: median ${f(median(r.us))} µs, p99 ${f(percentile(r.us, 0.99))} µs, max ${f(Math.max(...r.us))} µs, timeouts ${r.timeouts}`);
}
