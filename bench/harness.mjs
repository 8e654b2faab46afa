// Measurement helpers shared by the bench sections: interleaved sampling,
// medians, paired ratios, and private temporary token maps.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const now = () => process.hrtime.bigint();

/**
 * The clock a sample is timed with. `wall` (the default) is what a caller
 * waits; `cpu` is the process's CPU time (all its threads), which a busy
 * shared machine does not inflate by preempting the benchmark.
 */
export const clocks = {
  wall: () => Number(process.hrtime.bigint()),
  cpu: () => {
    const u = process.cpuUsage();
    return (u.user + u.system) * 1000;
  },
};
export const turn = () => new Promise((resolve) => setImmediate(resolve));

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The value below which `p` (0..1) of the samples fall (nearest rank). */
export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
}

/** A fresh random 64-hex token. The bench never prints one. */
export const randomToken = () => crypto.randomBytes(32).toString('hex');

/** A private (0700) temporary directory, removed by `cleanup()`. */
export function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claw-identity-bench-'));
  fs.chmodSync(dir, 0o700);
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

let seq = 0;
/** Writes a map the way the minting service does: a 0600 temp file, then rename over. */
export function writeMapAtomic(file, map) {
  const tmp = `${file}.tmp-${process.pid}-${seq++}`;
  fs.writeFileSync(tmp, typeof map === 'string' ? map : JSON.stringify(map), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/**
 * Runs every variant `samples` times, interleaved (round r runs them all, in
 * an order rotated by r, so drift and GC hit each alike). One sample is
 * `calls` calls of `variant.run()`, in chunks of `chunk` calls with an event
 * loop turn after each chunk, so work a call hands to the loop (log lines
 * through the threadsafe function) is delivered and counted in the time.
 * Returns ns/call per variant per round.
 */
export async function interleave(variants, { samples, calls, chunk = 500, warmup = 20_000, clock = 'wall' }) {
  const read = clocks[clock];
  let sink = 0;
  for (const v of variants) {
    for (let done = 0; done < warmup; done += chunk) {
      for (let i = 0; i < chunk; i++) if (v.run() !== undefined) sink++;
      await turn();
    }
  }
  const rounds = [];
  for (let r = 0; r < samples; r++) {
    const row = {};
    for (let k = 0; k < variants.length; k++) {
      const v = variants[(k + r) % variants.length];
      const run = v.run;
      const t0 = read();
      for (let done = 0; done < calls; done += chunk) {
        for (let i = 0; i < chunk; i++) if (run() !== undefined) sink++;
        await turn();
      }
      row[v.id] = (read() - t0) / calls;
    }
    rounds.push(row);
  }
  if (sink < 0) throw new Error('unreachable: keeps results alive');
  return rounds;
}

/** Median over rounds of the per-round ratio a/b: paired, so load drift cancels. */
export const pairedRatio = (rounds, a, b) => median(rounds.map((r) => r[a] / r[b]));

export const fmtNs = (ns) => (ns >= 100 ? ns.toFixed(0) : ns.toFixed(1));
export const fmtRatio = (x) => (x >= 10 ? x.toFixed(0) : x >= 1 ? x.toFixed(2) : x.toFixed(3));

/** A Markdown table from a header row and data rows. */
export function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map((_, i) => (i === 0 ? '---' : '--:'))), ...rows.map(line)].join('\n');
}
