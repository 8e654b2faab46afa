// The package a user installs: `npm pack` makes the whole package (every
// build index.js can pick, built by prepack) or refuses, naming what is
// missing; the tarball holds those builds and the plugin files, and nothing
// else; and the installed package loads and injects on Node 24 and Node 26,
// through the build index.js picks and through its WebAssembly build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { ensureNode, NODE_MAJORS } from '../scripts/ensure-openclaw.mjs';
import { pack, pathWithout, root } from './helpers/pack.mjs';
import { randomToken, recordEmitted, tempDir, writeMap } from './helpers/support.mjs';
import { entryUrl } from './helpers/subject.mjs';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

// The native builds and their ELF e_machine, and the WebAssembly build.
const X64 = { file: 'claw-identity.linux-x64-gnu.node', machine: 62 }; // EM_X86_64
const ARM64 = { file: 'claw-identity.linux-arm64-gnu.node', machine: 183 }; // EM_AARCH64
const WASM = 'claw-identity.wasm32-wasi.wasm';

/** The files index.js loads a build from, by its literal load table. */
function buildsIndexJsLoads() {
  const text = fs.readFileSync(path.join(root, 'index.js'), 'utf8');
  const files = [...text.matchAll(/require\('\.\/((?:claw-identity\.[^']+)|lib\/wasi\.cjs)'\)/g)].map((m) => m[1]);
  assert.ok(files.includes('lib/wasi.cjs'), `index.js does not load lib/wasi.cjs: ${files}`);
  const wasi = fs.readFileSync(path.join(root, 'lib', 'wasi.cjs'), 'utf8');
  assert.ok(wasi.includes(`'${WASM}'`), `lib/wasi.cjs does not load ${WASM}`);
  return [...files.filter((f) => f !== 'lib/wasi.cjs'), WASM].sort();
}

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
  assert.ok(
    glibc.some((n) => n.library === 'libc.so.6'),
    `${path.basename(file)}: no GLIBC_ version needs found: ${JSON.stringify(needs)}`,
  );
  const [major, minor] = minGlibc();
  for (const { library, version } of glibc) {
    const v = /^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$/.exec(version);
    assert.ok(v, `${path.basename(file)} needs ${version} from ${library}`);
    const [vmaj, vmin] = [Number(v[1]), Number(v[2])];
    assert.ok(
      vmaj < major || (vmaj === major && vmin <= minor),
      `${path.basename(file)} needs ${version} from ${library}, newer than index.js's MIN_GLIBC ${major}.${minor}`,
    );
  }
  return glibc.map((n) => n.version);
}

/** Fails unless `file` is a WebAssembly module that Node's WASI and emnapi can load (what lib/wasi.cjs does). */
function assertWasmBuild(file) {
  const bytes = fs.readFileSync(file);
  assert.deepEqual([...bytes.subarray(0, 8)], [0, 0x61, 0x73, 0x6d, 1, 0, 0, 0], `${path.basename(file)} is not a version 1 WebAssembly module`);
  const module = new WebAssembly.Module(bytes);
  const imports = new Set(WebAssembly.Module.imports(module).map((i) => i.module));
  for (const m of ['wasi_snapshot_preview1', 'napi', 'emnapi']) assert.ok(imports.has(m), `${path.basename(file)} imports nothing from ${m}`);
  const exports = WebAssembly.Module.exports(module).map((e) => e.name);
  assert.ok(exports.includes('napi_register_wasm_v1'), `${path.basename(file)} does not export napi_register_wasm_v1`);
  assert.ok(
    exports.some((e) => e.startsWith('__napi_register__')),
    `${path.basename(file)} registers no N-API exports`,
  );
  // The front's plain exports (src/bridge/front.rs), which lib/wasm-front.cjs calls.
  for (const name of ['fields', 'header', 'enter', 'route', 'decide'].map((n) => `claw_identity_front_${n}`)) {
    assert.ok(exports.includes(name), `${path.basename(file)} does not export ${name}`);
  }
}

test('npm pack refuses, naming the build it cannot make and how to get it, and packs nothing', () => {
  // A machine without the arm64 cross linker: this one, with that command hidden.
  const dest = tempDir();
  const r = spawnSync(npm, ['pack', '--json', '--pack-destination', dest], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, PATH: pathWithout('aarch64-linux-gnu-gcc') },
  });
  assert.notEqual(r.status, 0, 'npm pack succeeded without the arm64 cross linker');
  assert.match(r.stderr, /npm pack refused: the package holds every build index\.js can pick/);
  assert.match(
    r.stderr,
    /the linux-arm64 addon \(cross-compiled\) \(claw-identity\.linux-arm64-gnu\.node\): aarch64-linux-gnu-gcc not found: apt-get install gcc-aarch64-linux-gnu/,
  );
  assert.deepEqual(fs.readdirSync(dest), [], 'a tarball was left behind');
});

test('npm pack ships every build index.js can pick, each checked, and the plugin files, and nothing else', (t) => {
  const { info } = pack(tempDir());
  const files = info.files.map((f) => f.path).sort();
  const builds = buildsIndexJsLoads();
  assert.deepEqual(builds, [ARM64.file, X64.file, WASM].sort());
  for (const required of [...builds, 'index.js', 'wasm.js', 'index.d.ts', 'lib/wasi.cjs', 'openclaw.plugin.json', 'package.json', 'README.md']) {
    assert.ok(files.includes(required), `${required} missing from the tarball: ${files.join(', ')}`);
  }
  const bundled = bundledPackages();
  for (const f of files) {
    assert.doesNotMatch(f, /^(src|core|scripts|target|__test__|bench|fuzz|docs|\.cache)\//, `${f} should not ship`);
    const dep = /^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f);
    if (f.startsWith('node_modules/')) assert.ok(dep && bundled.has(dep[1]), `${f} should not ship: not a bundled dependency`);
    else assert.ok(!/\.(node|wasm)$/.test(f) || builds.includes(f), `${f} should not ship: not a build index.js loads`);
  }
  for (const { file, machine } of [X64, ARM64]) {
    const addon = info.files.find((f) => f.path === file);
    assert.ok(addon.size > 100_000, `${file} is ${addon.size} bytes`);
    const versions = assertNativeBuild(path.join(root, file), machine);
    t.diagnostic(
      `${file}: e_machine ${machine}, ${addon.size} bytes, needs ${[...new Set(versions)].sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1)} at most`,
    );
  }
  const wasm = info.files.find((f) => f.path === WASM);
  assert.ok(wasm.size > 100_000, `${WASM} is ${wasm.size} bytes`);
  assertWasmBuild(path.join(root, WASM));
  t.diagnostic(`${WASM}: ${wasm.size} bytes`);
  t.diagnostic(`tarball ${info.filename}: ${info.size} bytes packed, ${info.unpackedSize} unpacked`);
});

test('the installed tarball loads and injects on Node 24 and on Node 26, natively and through its WebAssembly build', async () => {
  const dest = tempDir();
  const { tarball } = pack(dest);
  const project = path.join(dest, 'user-project');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), '{"name":"user-project","private":true,"type":"module"}');
  // OpenClaw installs plugin dependencies with scripts off: so do we.
  execFileSync(npm, ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], { cwd: project, stdio: 'pipe' });

  const map = path.join(tempDir(), 'm.json');
  const token = randomToken();
  writeMap(map, { 'paco--francis': token });
  const script = (entry) => `
    const { IdentityLayer, fingerprint, buildInfo } = await import(${JSON.stringify(entry)});
    const layer = new IdentityLayer({ tokenMapPath: ${JSON.stringify(map)}, logger: { info() {}, warn() {}, error() {} } });
    const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: { auth_token: 'wrong' } }, { agentId: 'paco--francis' });
    layer.close();
    console.log(JSON.stringify({ node: process.version, build: buildInfo.name, fp: fingerprint(r.params.auth_token) }));
  `;
  const { fingerprint } = await import(entryUrl);
  const majors = Object.keys(NODE_MAJORS).map(Number);
  assert.deepEqual(majors, [24, 26]);
  for (const major of majors) {
    const node = await ensureNode(major, { log: () => {} });
    for (const [entry, build] of [
      ['claw-identity', `linux-${process.arch}-gnu`],
      ['claw-identity/wasm', 'wasm32-wasi'],
    ]) {
      const r = spawnSync(node, ['--input-type=module', '-e', script(entry)], { cwd: project, encoding: 'utf8', timeout: 60_000 });
      assert.equal(r.status, 0, r.stderr);
      const run = JSON.parse(recordEmitted('package run', r.stdout.trim()));
      assert.match(run.node, new RegExp(`^v${major}\\.`));
      assert.equal(run.build, build, `${entry} on Node ${major}`);
      assert.equal(run.fp, fingerprint(token), `${entry} on Node ${major} did not inject the agent's token`);
    }
  }
});
