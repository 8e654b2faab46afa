// The package a user installs: `npm pack` holds the prebuilt addon, and the
// installed package works on Node 20 (this machine) and Node 24 (OpenClaw's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { haveCrossToolchain } from '../scripts/arm64.mjs';
import { ensureOpenclaw } from '../scripts/ensure-openclaw.mjs';
import { randomToken, recordEmitted, tempDir, writeMap } from './helpers/support.mjs';
import { entryUrl } from './helpers/subject.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

// The native builds and their ELF e_machine. The arm64 one is cross-built by
// `npm run build:arm64` (and by prepare.mjs where the cross toolchain is):
// CI installs that toolchain, so there it must ship; on a machine without it
// the tarball cannot hold it, and the check says so instead.
const X64 = { file: 'claw-identity.linux-x64-gnu.node', machine: 62 }; // EM_X86_64
const ARM64 = { file: 'claw-identity.linux-arm64-gnu.node', machine: 183 }; // EM_AARCH64
const ARM64_REQUIRED = Boolean(process.env.CI) || haveCrossToolchain();

/** package.json's bundleDependencies and every package they depend on: the node_modules/ the tarball may hold. */
function bundledPackages() {
  const todo = [...(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).bundleDependencies ?? [])];
  const seen = new Set();
  while (todo.length) {
    const name = todo.pop();
    if (seen.has(name)) continue;
    seen.add(name);
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'node_modules', name, 'package.json'), 'utf8'));
    todo.push(...Object.keys(pkg.dependencies ?? {}));
  }
  return seen;
}

/** index.js's MIN_GLIBC: the newest glibc symbol version a native build may need. */
function minGlibc() {
  const m = /const MIN_GLIBC = \[(\d+), (\d+)\];/.exec(fs.readFileSync(path.join(root, 'lib', 'loader.js'), 'utf8'));
  assert.ok(m, 'MIN_GLIBC not found in index.js');
  return [Number(m[1]), Number(m[2])];
}

/**
 * A 64-bit little-endian ELF's e_machine and the symbol versions it needs from
 * each library: its SHT_GNU_verneed section (.gnu.version_r), as `readelf -V`
 * lists them. Section headers survive strip, so this works on release builds.
 */
function elfNeeds(file) {
  const b = fs.readFileSync(file);
  assert.equal(b.toString('latin1', 0, 4), '\x7fELF', `${file} is not an ELF file`);
  assert.equal(b[4], 2, `${file} is not a 64-bit ELF`);
  assert.equal(b[5], 1, `${file} is not little-endian`);
  const shoff = Number(b.readBigUInt64LE(0x28));
  const shentsize = b.readUInt16LE(0x3a);
  const section = (i) => {
    const o = shoff + i * shentsize;
    return { type: b.readUInt32LE(o + 4), offset: Number(b.readBigUInt64LE(o + 0x18)), link: b.readUInt32LE(o + 0x28), info: b.readUInt32LE(o + 0x2c) };
  };
  const needs = [];
  for (let i = 0; i < b.readUInt16LE(0x3c); i++) {
    const verneed = section(i);
    if (verneed.type !== 0x6ffffffe) continue; // SHT_GNU_verneed
    const strtab = section(verneed.link).offset;
    const str = (off) => b.toString('latin1', strtab + off, b.indexOf(0, strtab + off));
    // sh_info Verneed entries {u16 version, u16 cnt, u32 file, u32 aux, u32 next},
    // each with cnt Vernaux entries {u32 hash, u16 flags, u16 other, u32 name, u32 next}.
    for (let n = 0, vn = verneed.offset; n < verneed.info; n++, vn += b.readUInt32LE(vn + 12)) {
      const library = str(b.readUInt32LE(vn + 4));
      for (let k = 0, va = vn + b.readUInt32LE(vn + 8); k < b.readUInt16LE(vn + 2); k++, va += b.readUInt32LE(va + 12)) {
        needs.push({ library, version: str(b.readUInt32LE(va + 8)) });
      }
    }
  }
  return { machine: b.readUInt16LE(18), needs };
}

/** Fails unless `file` is an ELF for `machine` that needs no glibc newer than index.js's MIN_GLIBC. */
function assertNativeBuild(file, machine) {
  const { machine: got, needs } = elfNeeds(file);
  assert.equal(got, machine, `${path.basename(file)}: e_machine ${got}, expected ${machine}`);
  const glibc = needs.filter((n) => n.version.startsWith('GLIBC_'));
  assert.ok(glibc.some((n) => n.library === 'libc.so.6'), `${path.basename(file)}: no GLIBC_ version needs found: ${JSON.stringify(needs)}`);
  const [major, minor] = minGlibc();
  for (const { library, version } of glibc) {
    const v = /^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$/.exec(version);
    assert.ok(v, `${path.basename(file)} needs ${version} from ${library}`);
    const [vmaj, vmin] = [Number(v[1]), Number(v[2])];
    assert.ok(vmaj < major || (vmaj === major && vmin <= minor), `${path.basename(file)} needs ${version} from ${library}, newer than index.js's MIN_GLIBC ${major}.${minor}`);
  }
  return glibc.map((n) => n.version);
}

function pack(dest) {
  const out = execFileSync(npm, ['pack', '--json', '--pack-destination', dest], { cwd: root, encoding: 'utf8' });
  return JSON.parse(out)[0];
}

test('npm pack ships the prebuilt native addons and the plugin files, and nothing else', (t) => {
  const dest = tempDir();
  const info = pack(dest);
  const files = info.files.map((f) => f.path).sort();
  const addons = ARM64_REQUIRED || files.includes(ARM64.file) ? [X64, ARM64] : [X64];
  if (addons.length === 1) t.diagnostic(`${ARM64.file} not built here (no arm64 cross toolchain; npm run build:arm64 names what is missing), so not checked`);
  for (const required of [...addons.map((a) => a.file), 'index.js', 'index.d.ts', 'openclaw.plugin.json', 'package.json', 'README.md']) {
    assert.ok(files.includes(required), `${required} missing from the tarball: ${files.join(', ')}`);
  }
  const bundled = bundledPackages();
  for (const f of files) {
    assert.doesNotMatch(f, /^(src|target|__test__|bench|fuzz|\.cache)\//, `${f} should not ship`);
    const dep = /^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f);
    if (f.startsWith('node_modules/')) assert.ok(dep && bundled.has(dep[1]), `${f} should not ship: not a bundled dependency`);
  }
  for (const { file, machine } of addons) {
    const addon = info.files.find((f) => f.path === file);
    assert.ok(addon.size > 100_000, `${file} is ${addon.size} bytes`);
    const versions = assertNativeBuild(path.join(root, file), machine);
    t.diagnostic(`${file}: e_machine ${machine}, ${addon.size} bytes, needs ${[...new Set(versions)].sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1)} at most`);
  }
  t.diagnostic(`tarball ${info.filename}: ${info.size} bytes packed, ${info.unpackedSize} unpacked`);
});

test('the installed tarball loads and injects on Node 20 and on Node 24', async () => {
  const dest = tempDir();
  const info = pack(dest);
  const project = path.join(dest, 'user-project');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), '{"name":"user-project","private":true,"type":"module"}');
  // OpenClaw installs plugin dependencies with scripts off: so do we.
  execFileSync(npm, ['install', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', path.join(dest, info.filename)], { cwd: project, stdio: 'pipe' });

  const map = path.join(tempDir(), 'm.json');
  const token = randomToken();
  writeMap(map, { 'paco--francis': token });
  const script = `
    import { IdentityLayer, fingerprint } from 'claw-identity';
    const layer = new IdentityLayer({ tokenMapPath: ${JSON.stringify(map)}, logger: { info() {}, warn() {}, error() {} } });
    const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: { auth_token: 'wrong' } }, { agentId: 'paco--francis' });
    console.log(JSON.stringify({ node: process.version, fp: fingerprint(r.params.auth_token) }));
  `;
  const { node: node24 } = await ensureOpenclaw({ log: () => {} });
  const runs = [];
  for (const node of [process.execPath, node24]) {
    const r = spawnSync(node, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    runs.push(JSON.parse(recordEmitted('package run', r.stdout.trim())));
  }
  const { fingerprint } = await import(entryUrl);
  assert.equal(runs[0].node, process.version);
  assert.match(runs[1].node, /^v24\./);
  for (const r of runs) assert.equal(r.fp, fingerprint(token));
});
