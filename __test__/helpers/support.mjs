// Shared test support: temporary token maps, capturing loggers, polling, and
// the leak guard. Every suite imports this module; the guard then checks, at
// the end of that suite, everything the layer emitted against every token
// the suite created.
import { after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const tokens = new Set();
const emitted = [];

/** A fresh random 64-hex token, registered with the leak guard. */
export function randomToken() {
  const t = crypto.randomBytes(32).toString('hex');
  tokens.add(t);
  return t;
}

/** Registers tokens made elsewhere (for example by a fixture) with the leak guard. */
export function guardTokens(...list) {
  for (const t of list.flat()) tokens.add(t);
}

/** Hands text the layer emitted (a log line, a block reason, stats, CLI output) to the leak guard. */
export function recordEmitted(label, value) {
  emitted.push([label, typeof value === 'string' ? value : JSON.stringify(value)]);
  return value;
}

export function fingerprint(token) {
  return crypto.createHash('sha256').update(token).digest('hex').slice(0, 12);
}

/** Every 16-character run of every token: what the leak guard looks for. */
function needles() {
  const out = new Set();
  for (const t of tokens) for (let i = 0; i + 16 <= t.length; i++) out.add(t.slice(i, i + 16));
  return out;
}

/** Throws if `text` holds any registered token or any 16-character run of one. */
export function assertNoTokenIn(text, label = 'output') {
  const s = typeof text === 'string' ? text : JSON.stringify(text);
  for (const n of needles()) {
    if (s.includes(n)) {
      assert.fail(`leak guard: ${label} holds 16 characters of a token (sha256:${[...tokens].map(fingerprint).find((f, i) => [...tokens][i].includes(n))})`);
    }
  }
}

after(() => {
  for (const [label, text] of emitted) assertNoTokenIn(text, label);
});

/** A logger that keeps its lines (and shows them to the leak guard). */
export function captureLogger() {
  const lines = [];
  const push = (level) => (line) => {
    recordEmitted(`log.${level}`, line);
    lines.push({ level, line });
  };
  return {
    lines,
    logger: { info: push('info'), warn: push('warn'), error: push('error') },
    text: () => lines.map((l) => `${l.level} ${l.line}`).join('\n'),
    has: (re) => lines.some((l) => re.test(l.line)),
  };
}

/** A private (0700) temporary directory, removed after the suite. */
export function tempDir(prefix = 'claw-identity-test-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o700);
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes a map in place (not atomically), mode 0600 unless told otherwise. */
export function writeMap(file, map, mode = 0o600) {
  fs.writeFileSync(file, typeof map === 'string' || Buffer.isBuffer(map) ? map : JSON.stringify(map));
  fs.chmodSync(file, mode);
}

let seq = 0;
/** Writes a map the way the minting service does: a temp file, then rename over. */
export function writeMapAtomic(file, map, mode = 0o600) {
  const tmp = `${file}.tmp-${process.pid}-${seq++}`;
  writeMap(tmp, map, mode);
  fs.renameSync(tmp, file);
}

/** Polls `fn` until it returns a truthy value; fails after `timeoutMs`. */
export async function waitFor(fn, { timeoutMs = 5000, intervalMs = 2, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Lets the event loop run so queued log lines are delivered. */
export const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));
