// The fault matrix: what every call returns while the token map is damaged,
// and after. Each fault is driven to a point the layer has provably seen (a
// failed reload counted, or a later write served) before "during" is
// checked, so a check never passes merely because the watcher was slow.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { IdentityLayer, buildInfo } from './helpers/subject.mjs';
import {
  NATIVE_ADDON,
  assertSameToken,
  captureLogger,
  fingerprint,
  randomToken,
  recordEmitted,
  spawnNodeSync,
  tempDir,
  waitFor,
  writeMap,
  writeMapAtomic,
} from './helpers/support.mjs';

const AGENTS = ['paco--francis', 'paco--dali', 'pepito--atlas'];
const MAP_NAME = 'agent-tokens.json';
const generation = () => Object.fromEntries(AGENTS.map((a) => [a, randomToken()]));
const IS_ROOT = process.getuid() === 0;

// The WebAssembly build's watcher polls, every 500 ms by default (its
// latency is measured in bench/): here every 10 ms, which also sees more of
// each half-written state. Its code is the same.
const poll = buildInfo.native ? {} : { pollIntervalMs: 10 };

/** A layer on a fresh map (generation 0) in `dir` (a private temp dir by default). */
function setup(t, options = {}, dir = tempDir()) {
  const file = path.join(dir, MAP_NAME);
  const gen0 = generation();
  writeMap(file, gen0);
  const log = captureLogger();
  const layer = new IdentityLayer({ tokenMapPath: file, logger: log.logger, ...poll, ...options });
  t.after(() => layer.close());
  return { dir, file, gen0, log, layer };
}

const call = (layer, agentId) => layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: { note: 'hi', auth_token: 'model-wrote-this' } }, { agentId });
const tokenOf = (layer, agent) => call(layer, agent)?.params?.auth_token;
const serves = (layer, gen) => AGENTS.every((a) => tokenOf(layer, a) === gen[a]);

/** Every agent gets exactly its token of `gen`. */
function assertServes(layer, gen, when) {
  for (const agent of AGENTS) assertSameToken(tokenOf(layer, agent), gen[agent], `${when}: ${agent}`);
}

const errorsOf = (layer) => layer.stats().reloadErrors;

/**
 * Waits until the layer has refused the map more than `before` times, the
 * last time for `why` (pass -1 to wait on the reason alone).
 */
async function refused(layer, before, why = /./, what = 'the map to be refused') {
  const ok = () => layer.stats().reloadErrors > before && why.test(layer.stats().lastError ?? '');
  try {
    await waitFor(ok, { what });
  } catch (e) {
    assert.fail(`${e.message}; last error: ${layer.stats().lastError}`);
  }
}

/**
 * A write of the same tokens plus a barrier agent, waited for: once the
 * barrier is served, every event before it has been handled.
 */
async function barrier(s, gen) {
  const b = randomToken();
  writeMapAtomic(s.file, { ...gen, barrier: b });
  await waitFor(() => tokenOf(s.layer, 'barrier') === b, { what: 'the barrier write to be served' });
}

test('a writer that crashes and leaves its .tmp file: the .tmp is never read, the next complete write is served', async (t) => {
  const s = setup(t);
  const gen1 = generation();
  const before = s.layer.stats();
  // One writer died half way through its temp file, another just before its rename.
  writeMap(`${s.file}.tmp-4242`, JSON.stringify(gen1).slice(0, 100));
  writeMap(`${s.file}.tmp-4243`, generation());
  await barrier(s, s.gen0);
  assertServes(s.layer, s.gen0, 'during (temp files left behind)');
  const during = s.layer.stats();
  assert.equal(during.reloadErrors, before.reloadErrors, 'a temp file was read as the map');
  assert.equal(during.reloads, before.reloads + 1, 'only the barrier write reloaded the map');
  assert.ok(fs.existsSync(`${s.file}.tmp-4242`));

  writeMapAtomic(s.file, gen1);
  await waitFor(() => serves(s.layer, gen1), { what: 'the next write' });
  assertServes(s.layer, gen1, 'after the next complete write');
});

test('an in-place truncate then a slow write: every call gets the last good token until the new map is complete, never part of one', async (t) => {
  const s = setup(t);
  const gen1 = generation();
  const content = Buffer.from(JSON.stringify(gen1));
  const fd = fs.openSync(s.file, 'r+');
  t.after(() => fs.closeSync(fd));
  // The parser's refusal names the column where the text ran out: waiting for
  // it proves the layer read exactly this partial state before we check.
  const partial = (n) => new RegExp(`not a valid token map: EOF while parsing .* at line 1 column ${n};`);
  fs.ftruncateSync(fd, 0);
  await refused(s.layer, -1, partial(0), 'the empty file to be refused');
  assertServes(s.layer, s.gen0, 'during (file truncated to 0 bytes)');
  const CHUNK = 9;
  let partials = 0;
  for (let off = 0; off < content.length; off += CHUNK) {
    const n = Math.min(CHUNK, content.length - off);
    fs.writeSync(fd, content, off, n, off);
    if (off + n === content.length) break;
    await refused(s.layer, -1, partial(off + n), `the partial map (${off + n} bytes) to be refused`);
    assertServes(s.layer, s.gen0, `during (${off + n} of ${content.length} bytes written)`);
    partials++;
  }
  assert.equal(partials, Math.ceil(content.length / CHUNK) - 1);
  await waitFor(() => serves(s.layer, gen1), { what: 'the completed map' });
  assertServes(s.layer, gen1, 'after the write completed');
  await waitFor(() => s.log.has(/token map not loaded: .*keeping the last good map \(3 agents\)/), { what: 'the refusal line' });
});

test('a vim-style save (original renamed to a backup, a new file created and written): the last good map until the new one is complete', async (t) => {
  const s = setup(t);
  const gen1 = generation();
  // vim's probe for a writable directory, then the backup rename.
  fs.writeFileSync(path.join(s.dir, '4913'), '');
  fs.unlinkSync(path.join(s.dir, '4913'));
  let before = errorsOf(s.layer);
  fs.renameSync(s.file, `${s.file}~`);
  await refused(s.layer, before, /not found/, 'the renamed-away map to be missed');
  assertServes(s.layer, s.gen0, 'during (map renamed to its backup)');

  // The new file, created empty with the original's mode, then written.
  before = errorsOf(s.layer);
  const fd = fs.openSync(s.file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o600);
  await refused(s.layer, before, /not a valid token map/, 'the new empty file to be refused');
  assertServes(s.layer, s.gen0, 'during (new file created, still empty)');
  fs.writeSync(fd, JSON.stringify(gen1));
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  await waitFor(() => serves(s.layer, gen1), { what: 'the saved map' });
  fs.unlinkSync(`${s.file}~`);
  await barrier(s, gen1);
  assertServes(s.layer, gen1, 'after the save (backup removed)');
});

test('editor probe, swap and backup files in the directory are never read', async (t) => {
  const s = setup(t);
  const decoy = JSON.stringify(generation());
  const before = s.layer.stats();
  const names = ['4913', `.${MAP_NAME}.swp`, `.${MAP_NAME}.swx`, `${MAP_NAME}~`, `#${MAP_NAME}#`, `${MAP_NAME}.bak`, `${MAP_NAME}.orig`];
  for (const name of names) writeMap(path.join(s.dir, name), decoy);
  fs.symlinkSync('root@host.1234', path.join(s.dir, `.#${MAP_NAME}`)); // emacs lock (a dangling symlink)
  await barrier(s, s.gen0);
  assertServes(s.layer, s.gen0, 'during (editor files present)');
  const during = s.layer.stats();
  assert.equal(during.reloadErrors, before.reloadErrors, 'an editor file was read as the map');
  assert.equal(during.reloads, before.reloads + 1, 'only the barrier write reloaded the map');

  for (const name of [...names, `.#${MAP_NAME}`]) fs.rmSync(path.join(s.dir, name));
  const gen1 = generation();
  writeMapAtomic(s.file, gen1);
  await waitFor(() => serves(s.layer, gen1), { what: 'the next write' });
  assertServes(s.layer, gen1, 'after (editor files removed, map rewritten)');
});

for (const watcher of ['auto', 'poll']) {
  test(`two complete writes with the same mtime and size: the second wins (watcher ${watcher})`, async (t) => {
    const s = setup(t, { watcher, pollIntervalMs: 25 });
    const tick = new Date(Math.floor(Date.now() / 1000) * 1000);
    const gen1 = generation();
    const gen2 = generation();
    writeMap(s.file, gen1);
    fs.utimesSync(s.file, tick, tick);
    await waitFor(() => serves(s.layer, gen1), { what: 'the first write' });
    const first = fs.statSync(s.file);
    writeMap(s.file, gen2);
    fs.utimesSync(s.file, tick, tick);
    const second = fs.statSync(s.file);
    assert.equal(second.mtimeMs, first.mtimeMs);
    assert.equal(second.size, first.size);
    assert.equal(second.ino, first.ino);
    await waitFor(() => serves(s.layer, gen2), { what: 'the second write' });
    assertServes(s.layer, gen2, 'after the second in-place write');

    // The rename-over form: a new inode, but the same mtime and size again.
    const gen3 = generation();
    const tmp = `${s.file}.tmp`;
    writeMap(tmp, gen3);
    fs.utimesSync(tmp, tick, tick);
    fs.renameSync(tmp, s.file);
    await waitFor(() => serves(s.layer, gen3), { what: 'the renamed write' });
    assert.equal(fs.statSync(s.file).mtimeMs, first.mtimeMs);
    assertServes(s.layer, gen3, 'after the rename-over with the same mtime');
  });
}

// [unsafe mode, a second unsafe mode, the problem each is refused for]. The
// second mode, set after a rewrite, changes the refusal message: seeing it
// proves the layer read the complete rewritten file and refused it.
const UNSAFE_MODES = [
  [0o644, 0o604, 'readable'],
  [0o640, 0o644, 'readable'],
  [0o604, 0o644, 'readable'],
  [0o620, 0o622, 'writable'],
  [0o602, 0o622, 'writable'],
];
const octal = (mode) => `0${mode.toString(8)}`;
const problem = (mode) => new RegExp(`is ${mode & 0o022 ? 'writable' : 'readable'} by group or others \\(mode ${octal(mode)}\\)`);

for (const [mode, second] of UNSAFE_MODES) {
  test(`a map flipped to mode ${octal(mode)} is refused, even when rewritten; flipped back to 0600 it is served`, async (t) => {
    const s = setup(t);
    fs.chmodSync(s.file, mode);
    await refused(s.layer, -1, problem(mode), `mode ${octal(mode)} to be refused`);
    assertServes(s.layer, s.gen0, 'during (unsafe mode)');
    // One line naming the path, the problem and the fix.
    const line = await waitFor(() => s.log.lines.find((l) => problem(mode).test(l.line))?.line, { what: 'the refusal line' });
    assert.ok(line.includes(`${s.file}: is `) && line.includes(`(fix: chmod 600 ${s.file}`), line);

    // New tokens written while the mode is unsafe are not served.
    const gen1 = generation();
    writeMap(s.file, gen1, mode);
    fs.chmodSync(s.file, second);
    await refused(s.layer, -1, problem(second), 'the complete unsafe rewrite to be refused');
    assertServes(s.layer, s.gen0, 'during (rewritten while unsafe)');

    fs.chmodSync(s.file, 0o600);
    await waitFor(() => serves(s.layer, gen1), { what: 'the map to be served at 0600' });
    assertServes(s.layer, gen1, 'after chmod 600');
    assert.equal(s.layer.stats().lastError, null);
  });
}

test('allowGroupReadable accepts a group-readable map with a warning, and still refuses a group-writable one', async (t) => {
  const s = setup(t, { allowGroupReadable: true });
  const gen1 = generation();
  writeMapAtomic(s.file, gen1, 0o640);
  await waitFor(() => serves(s.layer, gen1), { what: 'the 0640 map' });
  await waitFor(() => s.log.has(/is readable by group or others \(mode 0640\); allowed by allowGroupReadable/), { what: 'the warning' });
  const before = errorsOf(s.layer);
  fs.chmodSync(s.file, 0o660);
  await refused(s.layer, before, /is writable by group or others \(mode 0660\)/);
  assertServes(s.layer, gen1, 'during (group-writable)');
  fs.chmodSync(s.file, 0o640);
  const gen2 = generation();
  writeMapAtomic(s.file, gen2, 0o640);
  await waitFor(() => serves(s.layer, gen2), { what: 'the 0640 map again' });
  assertServes(s.layer, gen2, 'after');
});

test('a map directory flipped to group/other-writable is refused; flipped back, the map written meanwhile is served', async (t) => {
  const base = tempDir();
  const dir = path.join(base, 'maps');
  fs.mkdirSync(dir, { mode: 0o700 });
  const s = setup(t, {}, dir);
  fs.chmodSync(dir, 0o777);
  const gen1 = generation();
  const before = errorsOf(s.layer);
  writeMapAtomic(s.file, gen1);
  await refused(s.layer, before, /directory is writable by group or others \(mode 0777\)/);
  assertServes(s.layer, s.gen0, 'during (directory 0777)');
  await waitFor(() => s.log.has(new RegExp(`directory is writable .*\\(fix: chmod go-w ${dir}\\)`)), { what: 'the refusal line' });

  fs.chmodSync(dir, 0o700);
  await waitFor(() => serves(s.layer, gen1), { what: 'the map written while the directory was open' });
  assertServes(s.layer, gen1, 'after chmod go-w');
});

test('a map given to another uid is refused naming the owner; given back, it is served (needs root to chown)', async (t) => {
  assert.ok(IS_ROOT, 'this test and CI run as root; only root can give a file away');
  const s = setup(t);
  fs.chownSync(s.file, 65534, 65534);
  await refused(s.layer, -1, /is owned by uid 65534, not by uid 0 or root/);
  assertServes(s.layer, s.gen0, 'during (owned by nobody)');
  const gen1 = generation();
  writeMap(s.file, gen1); // root rewrites it in place; nobody still owns it
  fs.chownSync(s.file, 1, 1);
  await refused(s.layer, -1, /is owned by uid 1, not by uid 0 or root/, 'the complete rewrite to be refused');
  assertServes(s.layer, s.gen0, 'during (rewritten while owned by another uid)');
  fs.chownSync(s.file, 0, 0);
  await waitFor(() => serves(s.layer, gen1), { what: 'the map given back to root' });
  assertServes(s.layer, gen1, 'after chown root');
});

test('as a non-root gateway user: its own map is served; a map it cannot read, or owned by a third uid, is refused with its own message', () => {
  assert.ok(IS_ROOT, 'needs root to start a process as nobody');
  const root = fileURLToPath(new URL('..', import.meta.url));
  const home = tempDir();
  // A private copy of the package that nobody can load.
  for (const f of ['index.js', 'openclaw.plugin.json', 'package.json', NATIVE_ADDON]) fs.copyFileSync(path.join(root, f), path.join(home, f));
  fs.cpSync(path.join(root, 'lib'), path.join(home, 'lib'), { recursive: true });
  const maps = { own: generation(), root: generation(), daemon: generation() };
  for (const [name, gen] of Object.entries(maps)) writeMap(path.join(home, `${name}.json`), gen);
  fs.chownSync(path.join(home, 'own.json'), 65534, 65534);
  fs.chownSync(path.join(home, 'daemon.json'), 1, 1);
  fs.chmodSync(path.join(home, 'daemon.json'), 0o604); // readable by nobody, so the owner check is what refuses it
  for (const f of fs.readdirSync(home)) if (!f.endsWith('.json')) fs.chownSync(path.join(home, f), 65534, 65534);
  fs.chownSync(home, 65534, 65534);
  fs.writeFileSync(
    path.join(home, 'probe.mjs'),
    `import { IdentityLayer } from './index.js';
     const out = {};
     for (const name of ['own', 'root', 'daemon']) {
       const layer = new IdentityLayer({ tokenMapPath: new URL(name + '.json', import.meta.url).pathname, logger: { info() {}, warn() {}, error() {} } });
       const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: ${JSON.stringify(AGENTS[0])} });
       const s = layer.stats();
       out[name] = { fingerprint: r?.params ? (await import('./index.js')).fingerprint(r.params.auth_token) : null, loaded: s.loaded, lastError: s.lastError };
       layer.close();
     }
     console.log(JSON.stringify({ uid: process.getuid(), out }));`,
  );
  const r = spawnNodeSync([path.join(home, 'probe.mjs')], { uid: 65534, gid: 65534, encoding: 'utf8', cwd: home });
  recordEmitted('nobody probe (stdout)', r.stdout);
  recordEmitted('nobody probe (stderr)', r.stderr);
  assert.equal(r.status, 0, r.stderr);
  const { uid, out } = JSON.parse(r.stdout);
  assert.equal(uid, 65534);
  assert.equal(out.own.fingerprint, fingerprint(maps.own[AGENTS[0]]));
  assert.equal(out.root.fingerprint, null);
  assert.match(out.root.lastError, /root\.json: permission denied while opening; make it readable by uid 65534/);
  assert.equal(out.daemon.fingerprint, null);
  assert.match(out.daemon.lastError, /daemon\.json: is owned by uid 1, not by uid 65534 or root; refusing to load it \(fix: chown 65534 /);
});

test('a 50 MB map is refused without being read in full; the last good map stays, a normal one is served after', async (t) => {
  const s = setup(t);
  const before = errorsOf(s.layer);
  const big = path.join(s.dir, 'big.tmp');
  const fd = fs.openSync(big, 'w', 0o600);
  const gen1 = generation();
  fs.writeSync(fd, '{');
  fs.writeSync(fd, Buffer.alloc(50 * 1024 * 1024, 0x20));
  fs.writeSync(fd, JSON.stringify(gen1).slice(1));
  fs.closeSync(fd);
  fs.renameSync(big, s.file);
  await refused(s.layer, before, /larger than the 16777216 byte cap; refusing to load it/);
  assertServes(s.layer, s.gen0, 'during (50 MB map)');
  await waitFor(() => s.log.has(/larger than the 16777216 byte cap/), { what: 'the refusal line' });
  writeMapAtomic(s.file, gen1);
  await waitFor(() => serves(s.layer, gen1), { what: 'the normal map' });
  assertServes(s.layer, gen1, 'after');
});

test('bytes that are not UTF-8 refuse the whole file; a UTF-8 BOM is ignored', async (t) => {
  const s = setup(t);
  const gen1 = generation();
  const json = Buffer.from(JSON.stringify(gen1));
  const latin1Id = Buffer.from(`{"caf\xe9": "${randomToken()}", ${JSON.stringify(gen1).slice(1)}`, 'latin1');
  // Consecutive cases are refused with different messages, so each wait
  // proves the layer read that very file.
  const cases = [
    ['an invalid byte inside a key', latin1Id, /invalid unicode code point at line 1 column 6;/],
    ['UTF-16 with its BOM', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify(gen1), 'utf16le')]), /expected value at line 1 column 1;/],
    [
      'an invalid byte between entries',
      Buffer.concat([json.subarray(0, 1), Buffer.from([0xff]), json.subarray(1)]),
      /key must be a string at line 1 column 2;/,
    ],
    ['two BOMs', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf]), json]), /expected value at line 1 column 1;/],
  ];
  for (const [what, bytes, why] of cases) {
    writeMapAtomic(s.file, bytes);
    await refused(s.layer, -1, why, `${what} to be refused`);
    assert.ok(s.layer.stats().lastError.startsWith(`${s.file}: not a valid token map: `), s.layer.stats().lastError);
    assertServes(s.layer, s.gen0, `during (${what})`);
  }
  writeMapAtomic(s.file, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json]));
  await waitFor(() => serves(s.layer, gen1), { what: 'the map with a BOM' });
  assertServes(s.layer, gen1, 'after (UTF-8 with a BOM)');
});

test('duplicate agent ids refuse the whole file, whatever the tokens and however the key is spelled', async (t) => {
  const s = setup(t);
  const [francis, dali, atlas] = AGENTS;
  const a = randomToken();
  const b = randomToken();
  const rest = `"${dali}": "${randomToken()}", "${atlas}": "${randomToken()}"`;
  // [what, file, the column the parser reports (the end of the object)]:
  // each refusal differs from the last.
  const cases = [
    ['two tokens', `{"${francis}": "${a}", ${rest}, "${francis}": "${b}"}`],
    ['the same token twice, no spaces', `{"${francis}":"${a}",${rest},"${francis}":"${a}"}`],
    ['an escaped spelling', `{"${francis}": "${a}", ${rest}, "\\u0070aco--francis": "${b}"}`],
  ].map(([what, text]) => [what, text, text.length]);
  for (const [what, text, column] of cases) {
    writeMapAtomic(s.file, text);
    const why = new RegExp(`agent id "paco--francis" appears more than once \\(ambiguous owner\\); remove the duplicate at line 1 column ${column};`);
    await refused(s.layer, -1, why, `${what} to be refused`);
    // The unambiguous entries of the refused file are not served either.
    assertServes(s.layer, s.gen0, `during (duplicate key: ${what})`);
  }
  const gen1 = generation();
  writeMapAtomic(s.file, gen1);
  await waitFor(() => serves(s.layer, gen1), { what: 'the fixed map' });
  assertServes(s.layer, gen1, 'after the duplicate is removed');
});

test('the map directory replaced by a symlink: followed to a safe directory, refused into an open one, and a real directory again after', async (t) => {
  const base = tempDir();
  const maps = path.join(base, 'maps');
  fs.mkdirSync(maps, { mode: 0o700 });
  const s = setup(t, {}, maps);

  let before = errorsOf(s.layer);
  fs.renameSync(maps, path.join(base, 'maps.old'));
  await refused(s.layer, before, /directory not found/, 'the vanished directory to be noticed');
  assertServes(s.layer, s.gen0, 'during (directory renamed away)');

  const safe = path.join(base, 'safe');
  fs.mkdirSync(safe, { mode: 0o700 });
  const gen1 = generation();
  writeMap(path.join(safe, MAP_NAME), gen1);
  fs.symlinkSync(safe, maps);
  await waitFor(() => serves(s.layer, gen1), { what: 'the map behind the symlink' });
  assertServes(s.layer, gen1, 'symlink to a private directory');

  const open = path.join(base, 'open');
  fs.mkdirSync(open);
  writeMap(path.join(open, MAP_NAME), generation());
  fs.chmodSync(open, 0o777);
  before = errorsOf(s.layer);
  fs.symlinkSync(open, `${maps}.new`);
  fs.renameSync(`${maps}.new`, maps); // an atomic symlink swap
  await refused(s.layer, before, /maps: directory is writable by group or others \(mode 0777\)/, 'the open directory to be refused');
  assertServes(s.layer, gen1, 'during (symlink to a world-writable directory)');

  fs.unlinkSync(maps);
  fs.mkdirSync(maps, { mode: 0o700 });
  const gen2 = generation();
  writeMapAtomic(path.join(maps, MAP_NAME), gen2);
  await waitFor(() => serves(s.layer, gen2), { what: 'the map in a real directory again' });
  assertServes(s.layer, gen2, 'after (a real directory again)');
});

test('maxStaleSeconds: past the bound every agent is missing (blocked under onMissingToken block); without it, or within it, the last good map is served', async (t) => {
  const s = setup(t);
  const open = (options) => {
    const log = captureLogger();
    const layer = new IdentityLayer({ tokenMapPath: s.file, logger: log.logger, ...poll, ...options });
    t.after(() => layer.close());
    return { layer, log };
  };
  const strict = open({ maxStaleSeconds: 0.5, onMissingToken: 'block' });
  const within = open({ maxStaleSeconds: 3600, onMissingToken: 'block' });
  assertServes(strict.layer, s.gen0, 'before the fault (strict)');

  fs.unlinkSync(s.file);
  await waitFor(() => strict.layer.stats().stale, { what: 'the strict layer to go stale' });
  for (const agent of AGENTS) {
    const r = call(strict.layer, agent);
    assert.equal(r?.block, true, `${agent} was not blocked: ${JSON.stringify(r?.params && Object.keys(r.params))}`);
    assert.match(r.blockReason, /has been unreadable for longer than maxStaleSeconds/);
  }
  await waitFor(() => strict.log.has(/unreadable for more than 0\.5s \(maxStaleSeconds\); treating every agent as missing/), { what: 'the stale line' });
  // The same fault, the same moment: no bound, or a bound not reached, keeps serving.
  assert.ok(s.layer.stats().reloadErrors > 0 && !s.layer.stats().stale);
  assertServes(s.layer, s.gen0, 'during (no maxStaleSeconds)');
  assert.ok(!within.layer.stats().stale);
  assertServes(within.layer, s.gen0, 'during (maxStaleSeconds not reached)');

  const gen1 = generation();
  writeMapAtomic(s.file, gen1);
  await waitFor(() => !strict.layer.stats().stale && serves(strict.layer, gen1), { what: 'the strict layer to be fresh again' });
  for (const l of [strict.layer, within.layer, s.layer]) {
    await waitFor(() => serves(l, gen1), { what: 'every layer to serve the new map' });
    assertServes(l, gen1, 'after');
  }
  await waitFor(() => strict.log.has(/token map is fresh again; injecting tokens/), { what: 'the fresh-again line' });
});

test('maxStaleSeconds also runs out when the map directory itself is renamed away', async (t) => {
  const base = tempDir();
  const maps = path.join(base, 'maps');
  fs.mkdirSync(maps, { mode: 0o700 });
  const s = setup(t, { maxStaleSeconds: 0.5 }, maps);
  fs.renameSync(maps, path.join(base, 'gone'));
  await waitFor(() => s.layer.stats().stale, { what: 'the layer to go stale' });
  for (const agent of AGENTS) assert.equal(tokenOf(s.layer, agent), undefined, `${agent} still got a token`);
  fs.renameSync(path.join(base, 'gone'), maps);
  await waitFor(() => !s.layer.stats().stale, { what: 'the layer to be fresh again' });
  assertServes(s.layer, s.gen0, 'after the directory came back');
});
