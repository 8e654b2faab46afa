// index.js picks the build by platform alone: native on Linux x64/arm64 with
// glibc >= 2.34, the WebAssembly build everywhere else, and it never throws
// for lack of a native build. Each case runs index.js in a child Node whose
// platform facts a preloaded module overrides (macOS, a CPU without a native
// build, musl, an old glibc), then injects a token through it. The fakes sit
// on a real Linux x64 or arm64 (this project's CI and qemu). Windows, whose
// files have ACLs instead of owners and modes, has its own suite,
// windows.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { assertSupportedNode, nodeSupported, pickBuild } from '../lib/loader.js';
import { fingerprint } from './helpers/subject.mjs';
import { randomToken, spawnNodeSync, tempDir, writeMap } from './helpers/support.mjs';

const indexUrl = new URL('../index.js', import.meta.url).href;

/** Runs index.js with `platform`, `arch` and the glibc `process.report` gives (`null`: none, as on musl). */
function load({ platform = process.platform, arch = process.arch, glibc }) {
  const dir = tempDir();
  const map = path.join(dir, 'm.json');
  const token = randomToken();
  writeMap(map, { 'paco--francis': token });
  const fake = `
    Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} });
    Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} });
    ${
      glibc === undefined
        ? ''
        : `
    const real = process.report.getReport.bind(process.report);
    process.report.getReport = () => {
      const r = real();
      r.header.glibcVersionRuntime = ${JSON.stringify(glibc ?? undefined)};
      if (${glibc === null}) delete r.header.glibcVersionRuntime;
      return r;
    };`
    }`;
  const script = `
    import fs from 'node:fs';
    import path from 'node:path';
    const { buildInfo, IdentityLayer, fingerprint, writeTokenMap, doctor } = await import(${JSON.stringify(indexUrl)});
    const layer = new IdentityLayer({ tokenMapPath: ${JSON.stringify(map)}, logger: { info() {}, warn() {}, error() {} } });
    const r = layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: 'paco--francis' });
    // The operator tools run on the same build: write a map (0600, in a new 0700 directory), then doctor it.
    const written = await writeTokenMap(${JSON.stringify(path.join(dir, 'new', 'm.json'))}, { 'paco--dali': ${JSON.stringify(randomToken())} });
    const mode = (p) => (fs.statSync(p).mode & 0o777).toString(8);
    console.log(JSON.stringify({
      buildInfo, fp: r?.params ? fingerprint(r.params.auth_token) : null, watcher: layer.stats().watcher,
      written: { agents: written.agents, mode: mode(written.path), dirMode: mode(path.dirname(written.path)) },
      doctorOk: doctor({ map: written.path }).ok,
    }));
    layer.close();`;
  const r = spawnNodeSync(['--import', `data:text/javascript,${encodeURIComponent(fake)}`, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
  });
  assert.equal(r.status, 0, r.stderr);
  return { ...JSON.parse(r.stdout.trim().split('\n').at(-1)), expected: fingerprint(token) };
}

const wasmCases = [
  ['macOS', { platform: 'darwin', arch: 'arm64' }, 'no native build for darwin-arm64'],
  ['a CPU without a native build', { arch: 'riscv64' }, `no native build for ${process.platform}-riscv64`],
  ['musl (no glibc)', { glibc: null }, 'this Linux has no glibc (musl?)'],
  ['glibc older than the native builds need', { glibc: '2.31' }, 'glibc 2.31 is older than 2.34'],
];

for (const [what, facts, reason] of wasmCases) {
  test(`on ${what}, index.js loads the WebAssembly build instead of throwing, and it injects`, () => {
    const r = load(facts);
    assert.deepEqual(r.buildInfo, { name: 'wasm32-wasi', native: false, reason });
    assert.equal(r.watcher, 'fs.watch');
    assert.equal(r.fp, r.expected);
    assert.deepEqual(r.written, { agents: 1, mode: '600', dirMode: '700' });
    assert.equal(r.doctorOk, true);
  });
}

test('on Linux with glibc 2.34 (the oldest the native builds take), index.js loads the native build', () => {
  const r = load({ glibc: '2.34' });
  assert.equal(r.buildInfo.native, true);
  assert.equal(r.buildInfo.name, `linux-${process.arch}-gnu`);
  assert.equal(r.watcher, 'inotify');
  assert.equal(r.fp, r.expected);
  assert.deepEqual(r.written, { agents: 1, mode: '600', dirMode: '700' });
  assert.equal(r.doctorOk, true);
});

test('the build is picked from the platform facts alone', () => {
  const linux = { platform: 'linux', arch: 'x64', glibc: [2, 36] };
  assert.deepEqual(pickBuild(linux), { name: 'linux-x64-gnu', native: true, reason: 'native build for linux-x64 with glibc' });
  assert.equal(pickBuild({ ...linux, arch: 'arm64' }).name, 'linux-arm64-gnu');
  assert.equal(pickBuild({ ...linux, glibc: [2, 34] }).native, true);
  for (const [facts, reason] of [
    [{ platform: 'darwin', arch: 'arm64' }, 'no native build for darwin-arm64'],
    [{ platform: 'win32', arch: 'x64' }, 'no native build for win32-x64'],
    [{ ...linux, arch: 'riscv64' }, 'no native build for linux-riscv64'],
    [{ ...linux, glibc: undefined }, 'this Linux has no glibc (musl?)'],
    [{ ...linux, glibc: [2, 33] }, 'glibc 2.33 is older than 2.34'],
    [{ ...linux, glibc: [1, 99] }, 'glibc 1.99 is older than 2.34'],
  ]) {
    assert.deepEqual(pickBuild(facts), { name: 'wasm32-wasi', native: false, reason }, JSON.stringify(facts));
  }
});

test("the entries refuse a Node outside OpenClaw's range, with a message naming it", () => {
  for (const v of ['24.16.0', 'v24.22.3', '26.1.0', '26.3.1', '27.0.0']) assert.equal(nodeSupported(v), true, v);
  for (const v of ['20.19.0', '22.12.0', '24.15.9', '25.2.0', '26.0.0', 'garbage']) {
    assert.equal(nodeSupported(v), false, v);
    assert.throws(
      () => assertSupportedNode(v),
      (e) => e.message.includes(`Node ${v} is not supported`) && e.message.includes('>=24.16.0 <25 || >=26.1.0'),
    );
  }
  assert.doesNotThrow(() => assertSupportedNode(process.versions.node));
});
