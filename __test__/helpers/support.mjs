// Shared test support: temporary token maps, capturing loggers, polling, and
// the leak guard. Every suite imports this module; the guard then checks, at
// the end of that suite, everything the layer emitted against every token
// the suite created.
//
// What the guard sees, without a suite having to ask: every log line of a
// captureLogger, every block reason, approval and stats() of any
// IdentityLayer (the prototype is wiretapped below), and everything the test
// process writes to stdout and stderr (the default logger, console.*).
// Suites add the rest with recordEmitted (CLI output, worker messages, thrown
// error messages). Tokens are those of randomToken/guardTokens plus every
// 64-hex value written through writeMap/writeMapAtomic.
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { IdentityLayer } from './subject.mjs';

const tokens = new Set();
const emitted = [];
let haystack; // every token, lowercased, one per line; rebuilt when tokens change

/** A fresh random 64-hex token, registered with the leak guard. */
export function randomToken() {
  const t = crypto.randomBytes(32).toString('hex');
  guardTokens(t);
  return t;
}

/** Registers tokens made elsewhere (for example by a fixture) with the leak guard. */
export function guardTokens(...list) {
  for (const t of list.flat()) {
    if (!tokens.has(t)) {
      tokens.add(t);
      haystack = undefined;
    }
  }
}

/** Registers every 64-hex run of a map's content: whatever a test writes as a map is guarded. */
function guardContent(content) {
  const text = Buffer.isBuffer(content) ? content.toString('latin1') : String(content);
  guardTokens(text.match(/(?<![0-9a-fA-F])[0-9a-fA-F]{64}(?![0-9a-fA-F])/g) ?? []);
}

/** Hands text the layer emitted (a log line, a block reason, stats, CLI output) to the leak guard. */
export function recordEmitted(label, value) {
  emitted.push([label, typeof value === 'string' ? value : JSON.stringify(value)]);
  return value;
}

export function fingerprint(token) {
  return crypto.createHash('sha256').update(token).digest('hex').slice(0, 12);
}

/**
 * Throws if `text` holds any registered token or any 16-character run of one,
 * in either case. Only runs of 16+ hex digits can hold one, so only those are
 * looked up (which keeps the guard fast with tens of thousands of tokens).
 */
export function assertNoTokenIn(text, label = 'output') {
  const s = (typeof text === 'string' ? text : (JSON.stringify(text) ?? '')).toLowerCase();
  const runs = s.match(/[0-9a-f]{16,}/g);
  if (runs === null) return;
  haystack ??= [...tokens].join('\n').toLowerCase();
  for (const run of runs) {
    for (let i = 0; i + 16 <= run.length; i++) {
      const needle = run.slice(i, i + 16);
      if (haystack.includes(needle)) {
        const owner = [...tokens].find((t) => t.toLowerCase().includes(needle));
        assert.fail(`leak guard: ${label} holds 16 characters of a token (sha256:${fingerprint(owner)})`);
      }
    }
  }
}

/**
 * Compares two tokens; a failure shows fingerprints, never the tokens (an
 * assert.equal diff would print both).
 */
export function assertSameToken(actual, expected, what = 'token') {
  if (actual === expected) return;
  const show = (t) => (typeof t === 'string' ? `sha256:${fingerprint(t)} (${t.length} chars)` : String(t));
  assert.fail(`${what}: got ${show(actual)}, expected ${show(expected)}`);
}

// The wiretap: whatever an IdentityLayer says besides the token itself.
for (const [method, pick] of [
  ['stats', (r) => r],
  ['beforeToolCall', (r) => (r === undefined ? undefined : { blockReason: r.blockReason, requireApproval: r.requireApproval })],
]) {
  const original = IdentityLayer.prototype[method];
  IdentityLayer.prototype[method] = function (...args) {
    const result = original.apply(this, args);
    const said = pick(result);
    if (said !== undefined && (method === 'stats' || said.blockReason !== undefined || said.requireApproval !== undefined)) {
      recordEmitted(`IdentityLayer.${method}`, said);
    }
    return result;
  };
}

// Everything this process prints.
for (const stream of [process.stdout, process.stderr]) {
  const write = stream.write;
  const label = stream === process.stdout ? 'stdout' : 'stderr';
  stream.write = function (chunk, ...rest) {
    recordEmitted(label, typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('latin1'));
    return write.call(this, chunk, ...rest);
  };
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

/** A private (0700) temporary directory (under `parent`, the system's by default), removed after the suite. */
export function tempDir(prefix = 'claw-identity-test-', parent = os.tmpdir()) {
  const dir = fs.mkdtempSync(path.join(parent, prefix));
  fs.chmodSync(dir, 0o700);
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes a map in place (not atomically), mode 0600 unless told otherwise. */
export function writeMap(file, map, mode = 0o600) {
  const content = typeof map === 'string' || Buffer.isBuffer(map) ? map : JSON.stringify(map);
  guardContent(content);
  fs.writeFileSync(file, content);
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

/**
 * The native addon for this CPU, which index.js loads: the x64 one natively,
 * the arm64 one when scripts/arm64.mjs runs the suite under qemu.
 */
export const NATIVE_ADDON = `claw-identity.linux-${process.arch}-gnu.node`;

/**
 * How to start a Node like this one with `args`: [command, args]. Under qemu-user
 * (scripts/arm64.mjs) process.execPath is an arm64 Node that this kernel cannot
 * exec (no binfmt_misc), so the runner names the emulator in
 * CLAW_IDENTITY_TEST_EMULATOR (a JSON array: the command and its arguments) and
 * the child is started through it.
 */
export function nodeCommand(args) {
  const emulator = process.env.CLAW_IDENTITY_TEST_EMULATOR ? JSON.parse(process.env.CLAW_IDENTITY_TEST_EMULATOR) : [];
  if (emulator.length === 0) return [process.execPath, args];
  return [emulator[0], [...emulator.slice(1), process.execPath, ...args]];
}

/** spawnSync(process.execPath, args, options), through the emulator when there is one. */
export function spawnNodeSync(args, options) {
  return spawnSync(...nodeCommand(args), options);
}

/** spawn(process.execPath, args, options), through the emulator when there is one. */
export function spawnNode(args, options) {
  return spawn(...nodeCommand(args), options);
}

/** Lets the event loop run so queued log lines are delivered. */
export const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));
