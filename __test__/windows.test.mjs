// Native Windows, with only the operating system faked. The packed tarball
// is installed as OpenClaw installs it (npm, scripts off, then OpenClaw's
// link of its own package into the plugin, node_modules/openclaw, which a
// plugin that names it as a peer gets); then each case runs it in a child
// Node whose process says it is Windows (`process.platform` is win32, no
// geteuid), on this Linux. index.js then picks the WebAssembly build, and
// its permission gate asks the real fs-safe of the real OpenClaw 2026.9.6
// (`readOwnerAndDacl`) for each file's owner and DACL. With no fs-safe
// native helper for win32 here, fs-safe runs its Windows PowerShell
// fallback, and the only fake is that PowerShell: a script found on PATH
// under the exact name fs-safe runs, which answers as fs-safe's bridge
// script would, from a table of ACLs this suite writes. No real Windows
// machine is reachable from here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ensureOpenclaw } from '../scripts/ensure-openclaw.mjs';
import { pack } from './helpers/pack.mjs';
import { contained } from './helpers/posture.mjs';
import { fingerprint, randomToken, recordEmitted, tempDir, writeMap } from './helpers/support.mjs';

const ME = 's-1-5-21-1004336348-1177238915-682003330-1001';
const SYSTEM = 's-1-5-18';
const ADMINISTRATORS = 's-1-5-32-544';
const FULL = 0x1f01ff;
const MODIFY = 0x1301bf;
// The command fs-safe runs for PowerShell (windows-command.js, with no SystemRoot set).
const POWERSHELL = 'C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe';

let project; // a user's project with the tarball installed
let fakeBin; // the directory holding the fake PowerShell
// The Node this suite runs on (24 or 26: scripts/test.mjs runs it on both).
const node = process.execPath;
let hostLink; // the installed plugin's node_modules/openclaw

// Made in a hook, so cleaned by hand: tempDir() ties its cleanup to the test that calls it.
let scratch;
after(() => scratch && fs.rmSync(scratch, { recursive: true, force: true }));

before(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'claw-identity-windows-'));
  const dest = path.join(scratch, 'pack');
  fs.mkdirSync(dest);
  const { tarball } = pack(dest);
  project = path.join(dest, 'gateway');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), '{"name":"gateway","private":true,"type":"module"}');
  // OpenClaw's npm install for a plugin (docs/plugins/dependency-resolution.md in its package),
  // then its link of its own package into a plugin that names it as a peer.
  execFileSync(
    'npm',
    ['install', '--omit=dev', '--omit=peer', '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', tarball],
    {
      cwd: project,
      stdio: 'pipe',
    },
  );
  const { openclawDir } = await ensureOpenclaw({ log: () => {} });
  hostLink = path.join(project, 'node_modules', 'claw-identity', 'node_modules', 'openclaw');
  fs.mkdirSync(path.dirname(hostLink), { recursive: true });
  fs.symlinkSync(openclawDir, hostLink, 'dir');

  fakeBin = path.join(scratch, 'bin');
  fs.mkdirSync(fakeBin);
  const answers = `
    const fs = require('node:fs');
    const target = process.env.FS_SAFE_WINDOWS_SECURITY_PATH;
    fs.appendFileSync(process.env.FAKE_WINDOWS_LOG, JSON.stringify({ args: process.argv.slice(2), target }) + '\\n');
    const acls = JSON.parse(fs.readFileSync(process.env.FAKE_WINDOWS_ACLS, 'utf8'));
    // A file the table doesn't name gets its directory's '*' entry (the writer's temporary files).
    const facts = acls[target] ?? acls[require('node:path').win32.join(require('node:path').win32.dirname(target), '*')];
    process.stdout.write(JSON.stringify(facts ? { ok: true, result: facts } : { ok: false, code: 'ENOENT', message: 'no such file' }));
  `;
  fs.writeFileSync(path.join(fakeBin, POWERSHELL), `#!${node}\n${answers}`, { mode: 0o755 });
});

/** The bridge script's answer for one file (windows-security-bridge.cs, `Security`). */
function descriptor(owner, aces) {
  const flags = {
    raw: 16,
    objectInherit: false,
    containerInherit: false,
    noPropagateInherit: false,
    inheritOnly: false,
    inherited: true,
    successfulAccess: false,
    failedAccess: false,
  };
  return {
    ownerSid: owner,
    currentUserSid: ME,
    daclPresent: true,
    daclProtected: false,
    isLocal: true,
    aceListComplete: true,
    unsupportedAceTypes: [],
    aces: aces.map(([sid, mask]) => ({ sid, mask, aceType: 'allow', flags })),
  };
}

/** What a user profile folder gives its files: the user, SYSTEM and Administrators, full control. */
const PRIVATE = [
  [SYSTEM, FULL],
  [ADMINISTRATORS, FULL],
  [ME, FULL],
];

/** The user's profile, as Windows names it, and the map's place in it. */
const PROFILE = 'C:\\Users\\me';
const MAP_DIR = `${PROFILE}\\.config\\micelclaw`;
const MAP = `${MAP_DIR}\\agent-tokens.json`;

/**
 * Runs the installed package on the faked Windows (helpers/fake-windows.mjs:
 * drive C: is a directory here) against a map at `C:\Users\me\.config\
 * micelclaw\agent-tokens.json` whose directory and file have the ACLs
 * `dirAcl` and `mapAcl`, with the user's profile as its only home
 * (`USERPROFILE`, no `HOME`, as on Windows). `calls` are tool calls the
 * agent makes after the MCP one. Returns what the layer did, and which
 * paths fs-safe asked PowerShell about.
 */
function onWindows({
  dirAcl = descriptor(ME, PRIVATE),
  mapAcl = descriptor(ME, PRIVATE),
  options = {},
  powershell = true,
  calls = [],
  rewrite = false,
  rotate = false,
} = {}) {
  const drives = tempDir();
  const onDisk = path.join(drives, 'C', 'Users', 'me', '.config', 'micelclaw');
  fs.mkdirSync(onDisk, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(drives, 'C', 'Users', 'me', 'notes.md'), 'notes');
  const token = randomToken();
  writeMap(path.join(onDisk, 'agent-tokens.json'), { 'paco--francis': token });
  const acls = path.join(tempDir(), 'acls.json');
  fs.writeFileSync(acls, JSON.stringify({ [MAP_DIR]: dirAcl, [MAP]: mapAcl, [`${MAP_DIR}\\*`]: mapAcl }));
  const log = path.join(path.dirname(acls), 'powershell.log');
  fs.writeFileSync(log, '');
  // `rewrite`: the operator's writer replaces the map, by its Windows path, before the layer starts.
  const rewritten = rewrite ? randomToken() : null;
  // `rotate`: the writer replaces it again once the layer runs, with no
  // timer running, so that only fs.watch's event can put it in force.
  const rotated = rotate ? randomToken() : null;
  const script = `
    if (${rotate}) globalThis.setInterval = () => ({ unref() {}, ref() {} });
    const { IdentityLayer, buildInfo, doctor, fingerprint, writeTokenMapSync } = await import('claw-identity');
    const written = ${rewrite} ? writeTokenMapSync(${JSON.stringify(MAP)}, { 'paco--francis': process.env.FAKE_NEW_TOKEN }) : null;
    const lines = [];
    const logger = { info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) };
    const layer = new IdentityLayer({ logger, ...${JSON.stringify(options)} });
    const agent = { agentId: 'paco--francis' };
    const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, agent);
    const calls = ${JSON.stringify(calls)}.map(([toolName, params]) => {
      const d = layer.beforeToolCall({ toolName, params }, agent);
      return d?.block ? d.blockReason : 'pass';
    });
    const stats = layer.stats();
    let rotated = null;
    if (${rotate}) {
      writeTokenMapSync(${JSON.stringify(MAP)}, { 'paco--francis': process.env.FAKE_ROTATED_TOKEN });
      for (let i = 0; i < 10000 && rotated === null; i++) {
        const t = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, agent)?.params?.auth_token;
        if (t === process.env.FAKE_ROTATED_TOKEN) rotated = fingerprint(t);
        else await new Promise((resolve) => setTimeout(resolve, 1));
      }
    }
    // Log lines are delivered from the JS thread's queue: let it run once.
    await new Promise((resolve) => setImmediate(resolve));
    layer.close();
    const report = doctor({});
    console.log(JSON.stringify({ buildInfo, written, fp: r?.params?.auth_token ? fingerprint(r.params.auth_token) : null, watcher: stats.watcher, rotated, calls, loaded: stats.loaded, lastError: stats.lastError, lines, doctor: { ok: report.ok, text: report.text, map: report.report?.map } }));`;
  const env = {
    ...process.env,
    PATH: powershell ? [fakeBin, process.env.PATH].join(path.delimiter) : process.env.PATH,
    FAKE_WINDOWS_DRIVES: drives,
    FAKE_WINDOWS_ACLS: acls,
    FAKE_WINDOWS_LOG: log,
    USERPROFILE: PROFILE,
    ...(rewritten && { FAKE_NEW_TOKEN: rewritten }),
    ...(rotated && { FAKE_ROTATED_TOKEN: rotated }),
    NODE_NO_WARNINGS: '1',
  };
  delete env.HOME;
  const fake = new URL('./helpers/fake-windows.mjs', import.meta.url).href;
  const r = spawnSync(node, ['--import', fake, '--input-type=module', '-e', script], {
    cwd: project,
    encoding: 'utf8',
    timeout: 120_000,
    env,
  });
  assert.equal(r.status, 0, r.error?.message ?? r.stderr);
  const out = JSON.parse(recordEmitted('windows run', r.stdout.trim().split('\n').at(-1)));
  const asked = fs
    .readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const files = fs.readdirSync(onDisk);
  return { ...out, asked, files, dir: MAP_DIR, map: MAP, expected: fingerprint(rewritten ?? token), expectedRotated: rotated && fingerprint(rotated) };
}

test('on Windows, index.js picks the WebAssembly build, and a map only the user, SYSTEM and Administrators reach is served', () => {
  const r = onWindows({ options: { tokenMapPath: MAP } });
  assert.deepEqual(r.buildInfo, { name: 'wasm32-wasi', native: false, reason: 'no native build for win32-x64' });
  assert.equal(r.loaded, true, r.lastError);
  assert.equal(r.fp, r.expected);
  // OpenClaw's check was asked, by path, about the map and about its directory.
  assert.deepEqual([...new Set(r.asked.map((a) => a.target))].sort(), [r.dir, r.map].sort());
  assert.ok(
    r.asked.every((a) => a.args.includes('-Operation') && a.args.at(-1) === 'path'),
    JSON.stringify(r.asked),
  );
  assert.equal(r.doctor.ok, true, r.doctor.text);
});

test('on Windows, a map others may write is refused, naming them, with the icacls fix', () => {
  const r = onWindows({ mapAcl: descriptor(ME, [...PRIVATE, ['s-1-5-11', MODIFY]]) });
  assert.equal(r.loaded, false);
  assert.equal(r.fp, null);
  assert.match(r.lastError, /is writable by others than you, SYSTEM and Administrators: Authenticated Users \(S-1-5-11\); refusing to load it/);
  assert.ok(r.lastError.includes(`(fix: icacls "${r.map}" /inheritance:r /grant:r "*${ME.toUpperCase()}:F" /grant:r "*S-1-5-18:F")`), r.lastError);
  assert.ok(
    r.lines.some((l) => l.includes('Authenticated Users (S-1-5-11)')),
    JSON.stringify(r.lines),
  );
  assert.equal(r.doctor.ok, false);
  assert.match(r.doctor.text, /icacls/);
});

test('on Windows, a map in a directory others may write is refused', () => {
  const r = onWindows({ dirAcl: descriptor(ME, [...PRIVATE, ['s-1-5-32-545', MODIFY]]) });
  assert.equal(r.loaded, false);
  assert.match(r.lastError, /directory is writable by others than you, SYSTEM and Administrators: Users \(S-1-5-32-545\)/);
  assert.ok(r.lastError.includes('(OI)(CI)F'), r.lastError);
});

test("on Windows, where OpenClaw's check can't run (no PowerShell), the map is refused and the gate says why", () => {
  const r = onWindows({ powershell: false });
  assert.equal(r.loaded, false);
  assert.equal(r.fp, null);
  assert.match(r.lastError, /can't read its owner and ACL: Windows permission command powershell\.exe failed/);
  assert.match(r.lastError, /openclaw plugins install/);
});

test("on Windows, without OpenClaw's package linked in (the plugin loaded outside OpenClaw), the map is refused and the gate says why", () => {
  const target = fs.readlinkSync(hostLink);
  fs.unlinkSync(hostLink);
  try {
    const r = onWindows();
    assert.equal(r.loaded, false);
    assert.match(r.lastError, /can't read its owner and ACL: OpenClaw's package is not linked into claw-identity/);
    assert.deepEqual(r.asked, []);
  } finally {
    fs.symlinkSync(target, hostLink, 'dir');
  }
});

test("on Windows, the default map is found under the user's profile, and the agents' tools can't reach it by any Windows spelling", () => {
  const spellings = [
    MAP,
    'c:\\users\\me\\.CONFIG\\Micelclaw\\AGENT-TOKENS.JSON',
    'C:/Users/me/.config/micelclaw/agent-tokens.json',
    `${MAP}.`,
    `${MAP}::$DATA`,
    '\\Users\\me\\.config\\micelclaw\\agent-tokens.json',
    '~\\.config\\micelclaw\\agent-tokens.json',
    '\\\\?\\C:\\Users\\me\\.config\\micelclaw\\agent-tokens.json',
    '\\\\localhost\\C$\\Users\\me\\.config\\micelclaw\\agent-tokens.json',
    // The NT object namespace's ways back to C:, and other spellings of a loopback host.
    '\\\\?\\GLOBALROOT\\??\\C:\\Users\\me\\.config\\micelclaw\\agent-tokens.json',
    '\\\\.\\GLOBAL??\\C:\\Users\\me\\.config\\micelclaw\\agent-tokens.json',
    '\\\\localhost.\\C$\\Users\\me\\.config\\micelclaw\\agent-tokens.json',
    '\\\\127.1\\C$\\Users\\me\\.config\\micelclaw\\agent-tokens.json',
  ];
  // The agent's workspace, as OpenClaw's config gives it: its relative paths
  // start there. Contained on the host (helpers/posture.mjs): the path guard
  // is the second line behind workspaceOnly, and under posture "enforce" an
  // exposed agent would get no token at all.
  const openclawConfig = contained({ agents: { entries: { 'paco--francis': { workspace: `${PROFILE}\\ws` } } } });
  spellings.push('..\\.config\\micelclaw\\agent-tokens.json', '..\\.config/micelclaw/./agent-tokens.json');
  const r = onWindows({
    options: { openclawConfig },
    calls: [
      ...spellings.map((p) => ['read', { path: p }]),
      ['write', { path: `${MAP_DIR}\\agent-tokens.json.tmp`, content: '{}' }],
      ['read', { path: `${PROFILE}\\notes.md` }],
      ['read', { path: 'D:\\Users\\me\\.config\\micelclaw\\agent-tokens.json' }],
    ],
  });
  assert.equal(r.loaded, true, r.lastError);
  assert.equal(r.fp, r.expected);
  const refused = r.calls.slice(0, spellings.length + 1);
  for (const [i, reason] of refused.entries()) {
    assert.match(reason, /^map-access: (read|write) refused/, `${JSON.stringify(spellings[i] ?? 'the write')} passed`);
    // The reason names the map as Windows does, and never its token.
    assert.ok(reason.includes(`(${MAP})`) || reason.includes(`(${MAP_DIR})`), reason);
  }
  assert.deepEqual(r.calls.slice(spellings.length + 1), ['pass', 'pass']);
  assert.equal(r.doctor.map, MAP);
  assert.equal(r.doctor.ok, true, r.doctor.text);
});

test("on Windows, the operator's writer replaces the map by its Windows path, and the layer serves the new one, from fs.watch's event alone", () => {
  const r = onWindows({ rewrite: true, rotate: true });
  assert.equal(r.written?.agents, 1, JSON.stringify(r.written));
  assert.equal(r.loaded, true, r.lastError);
  assert.equal(r.fp, r.expected);
  assert.equal(r.watcher, 'fs.watch');
  assert.equal(r.rotated, r.expectedRotated, 'the rotation after start was never served');
  // The rename left no temporary file beside it.
  assert.deepEqual(r.files, ['agent-tokens.json']);
});
