// The hot path never touches the file system: strace counts every file and
// file-descriptor syscall of a child process across 100,000 owned calls.
// The window is bracketed by two marker syscalls (an access() of a path that
// does not exist), so start-up, warm-up and exit are not counted. A control
// run of the plain-JS design (fs.statSync per call) must show one syscall per
// call, which proves the instrument sees what it is meant to see.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { randomToken, recordEmitted, tempDir, writeMap } from './helpers/support.mjs';
import { entryUrl } from './helpers/subject.mjs';

const CALLS = 100_000;
const INDEX = entryUrl;
const AGENT = 'paco--francis';

/**
 * The traced child. It loads the map and warms up outside the window, then
 * runs CALLS calls between the markers, counts the calls that got the right
 * token, and reports its thread names (read after the window) as JSON.
 */
const CHILD = `
import fs from 'node:fs';
const { IdentityLayer } = await import(process.env.CLAW_INDEX);
const { file, mark, mode, calls, agent } = JSON.parse(process.env.CLAW_SYSCALLS);
const expected = JSON.parse(fs.readFileSync(file, 'utf8'))[agent];
let hook;
if (mode === 'plain-js') {
  let mtimeMs = -1, map = {};
  hook = (event, ctx) => {
    const m = fs.statSync(file).mtimeMs;
    if (m !== mtimeMs) { map = JSON.parse(fs.readFileSync(file, 'utf8')); mtimeMs = m; }
    return { params: { ...event.params, auth_token: map[ctx.agentId] } };
  };
} else {
  const lines = { info: 0, warn: 0, error: 0 };
  const logger = { info: () => lines.info++, warn: () => lines.warn++, error: () => lines.error++ };
  const layer = new IdentityLayer(mode === 'logger' ? { tokenMapPath: file, logger } : { tokenMapPath: file });
  hook = (event, ctx) => layer.beforeToolCall(event, ctx);
}
const event = { toolName: 'claw-os__claw_notes', params: { action: 'search', query: 'groceries', auth_token: 'made-up' } };
const ctx = { agentId: agent, sessionKey: 'agent:' + agent + ':main' };
const run = (n) => { let ok = 0; for (let i = 0; i < n; i++) if (hook(event, ctx)?.params.auth_token === expected) ok++; return ok; };
const marker = (name) => { try { fs.accessSync(mark + '-' + name); } catch {} };
run(20000);
await new Promise((r) => setTimeout(r, 50));
marker('begin');
const ok = run(calls);
marker('end');
const threads = {};
for (const tid of fs.readdirSync('/proc/self/task')) threads[tid] = fs.readFileSync('/proc/self/task/' + tid + '/comm', 'utf8').trim();
process.stdout.write(JSON.stringify({ ok, pid: process.pid, threads }));
`;

function haveStrace() {
  const r = spawnSync('strace', ['-V'], { encoding: 'utf8' });
  assert.equal(r.status, 0, 'strace is required for this test (Debian package: strace)');
}

/**
 * Runs the child under `strace -f -y` tracing the %file and %desc classes
 * (every syscall that takes a path or a descriptor) and sorts the window's
 * syscalls, per thread name, into file-system ones and the rest: `-y` names
 * what each descriptor is, so an eventfd wake-up, an epoll wait, a pipe or an
 * anonymous mmap (descriptor -1: V8 growing its heap) is told apart from a
 * file. A descriptor strace cannot name counts as file system.
 */
function traceWindow(mode, calls = CALLS) {
  const dir = tempDir('claw-identity-syscalls-');
  const file = path.join(dir, 'agent-tokens.json');
  writeMap(file, { [AGENT]: randomToken(), 'paco--dali': randomToken() });
  const mark = path.join(dir, 'claw-identity-strace-marker');
  // Not in the map's directory: strace writing its log there would wake the watcher.
  const out = path.join(tempDir('claw-identity-strace-'), 'strace.txt');
  const r = spawnSync(
    'strace',
    // -s 0: print no buffer contents (a read of the map would show token bytes).
    ['-f', '--seccomp-bpf', '-qq', '-y', '-s', '0', '-e', 'trace=%file,%desc', '-o', out, process.execPath, '--input-type=module', '-e', CHILD],
    {
      encoding: 'utf8',
      env: { ...process.env, CLAW_INDEX: INDEX, CLAW_SYSCALLS: JSON.stringify({ file, mark, mode, calls, agent: AGENT }) },
      maxBuffer: 1 << 20,
    },
  );
  recordEmitted('syscalls child stderr', r.stderr);
  recordEmitted('syscalls child stdout', r.stdout);
  assert.equal(r.status, 0, `traced child failed (exit ${r.status}): ${r.stderr.slice(-2000)}`);
  const report = JSON.parse(r.stdout);
  const lines = fs.readFileSync(out, 'utf8').split('\n');
  const begin = lines.findIndex((l) => l.includes(`${mark}-begin`));
  const end = lines.findIndex((l) => l.includes(`${mark}-end`));
  assert.ok(begin >= 0 && end > begin, `markers not found in the strace output (begin ${begin}, end ${end})`);
  const fsCalls = {};
  const other = {};
  const seen = [];
  for (const line of lines.slice(begin + 1, end)) {
    // "<tid>  name(args..." starts a syscall; "<... name resumed>" finishes one already counted.
    const m = /^(\d+)\s+([a-z_0-9]+)\((.*)$/.exec(line);
    if (m === null) continue;
    const [, tid, name, args] = m;
    const thread = report.threads[tid] ?? `tid ${tid}`;
    const who = tid === String(report.pid) ? `main (${thread})` : thread;
    // glibc's malloc reads /proc/sys/vm/overcommit_memory once per process,
    // the first time it shrinks a heap (check_may_shrink_heap, arena.c):
    // the allocator's, once, whichever call happens to free the memory.
    const allocator = args.includes('/proc/sys/vm/overcommit_memory');
    const notFs = (name === 'mmap' && args.includes('MAP_ANONYMOUS')) || /^\d+<(anon_inode|pipe|socket):/.test(args) || allocator;
    const bucket = notFs ? other : fsCalls;
    bucket[who] = (bucket[who] ?? 0) + 1;
    if (!notFs && seen.length < 20) seen.push(`${who}: ${name}(${args.slice(0, 100)}`);
  }
  recordEmitted('syscalls window', seen.join('\n'));
  return { ok: report.ok, fsCalls, other, seen };
}

const WATCHER = 'claw-identity-w'; // thread names are cut to 15 characters
const total = (counts) => Object.values(counts).reduce((a, b) => a + b, 0);

/**
 * No thread makes a file-system syscall, except the watcher's heartbeat
 * (periodic, so far fewer than one per 1,000 calls); and no other syscall is
 * per call either (V8 heap growth and task wake-ups are per collection).
 */
function assertNoPerCallSyscalls({ ok, fsCalls, other, seen }, calls = CALLS) {
  assert.equal(ok, calls, "every call in the window must have returned the agent's token");
  const perCall = Object.entries(fsCalls).filter(([who]) => who !== WATCHER);
  assert.deepEqual(perCall, [], `file-system syscalls during ${calls} calls:\n${seen.join('\n')}`);
  const heartbeat = fsCalls[WATCHER] ?? 0;
  assert.ok(heartbeat < calls / 1000, `the watcher thread made ${heartbeat} file-system syscalls during ${calls} calls`);
  assert.ok(total(other) < calls / 100, `${total(other)} other descriptor syscalls during ${calls} calls: ${JSON.stringify(other)}`);
}

const summary = ({ fsCalls, other }) => `file-system syscalls per thread ${JSON.stringify(fsCalls)}; other descriptor syscalls ${JSON.stringify(other)}`;

test('100,000 owned calls without a logger make no file-system syscall', (t) => {
  haveStrace();
  const r = traceWindow('quiet');
  t.diagnostic(summary(r));
  assertNoPerCallSyscalls(r);
});

test('100,000 owned calls with a logger (one info line each) make no file-system syscall', (t) => {
  haveStrace();
  const r = traceWindow('logger');
  t.diagnostic(summary(r));
  assertNoPerCallSyscalls(r);
});

test('control: the same check fails on the plain-JS design, which stats the map on every call', () => {
  haveStrace();
  const calls = 10_000; // each traced syscall costs a ptrace stop: keep the control short
  const r = traceWindow('plain-js', calls);
  assert.equal(r.ok, calls);
  const main = Object.entries(r.fsCalls).find(([who]) => who.startsWith('main'))?.[1] ?? 0;
  assert.ok(main >= calls, `expected at least ${calls} file-system syscalls on the main thread, counted ${main}`);
  assert.throws(() => assertNoPerCallSyscalls(r, calls), /file-system syscalls during/);
});
