// Install as a user would, the way OpenClaw's docs say to install a local
// package (docs/cli/plugins/install.md, docs/plugins/dependency-resolution.md
// in its package): `npm pack` the project, `openclaw plugins install
// npm-pack:<tgz> --force --accept-capabilities` (OpenClaw's own npm install
// of the tarball, dependencies included, in its managed project), set the
// config with `openclaw config set ... --strict-json`, check `openclaw
// plugins inspect --runtime --json`, then run one real turn with the
// installed copy.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as h from './harness.mjs';
import { startModelServer, marker, fakeToken } from './fixtures/model-server.mjs';

const FRANCIS = 'paco--francis';

describe('claw-identity installed from its npm tarball', () => {
  let model;
  let run;
  let tokens;
  let tgz;
  let installedDir;

  before(async () => {
    const src = h.pluginDir();
    await h.openclawRuntime();
    run = await h.createRun('install');
    model = await startModelServer({ recordFile: run.modelLog });
    tokens = h.makeTokens();
    h.writeTokenMap(run, tokens);
    await h.writeConfig(run, { modelBaseUrl: model.baseUrl }); // no plugin: the install adds it
    const dest = path.join(run.root, 'pack');
    fs.mkdirSync(dest, { mode: 0o700 });
    tgz = await h.npmPack(dest, src);
  });

  after(async () => {
    await model?.close();
    if (run) await h.finishRun(run);
  });

  it('scenario 5: plugins install, config set, inspect shows it loaded with its hook and trusted policy', async () => {
    let r = await h.openclaw(run, ['plugins', 'install', `npm-pack:${tgz}`, '--force', '--accept-capabilities'], { label: 'plugins-install' });
    assert.equal(r.code, 0, `plugins install exited ${r.code}: ${h.tail(r)}`);
    const afterInstall = h.readConfig(run);
    // The install writes the explicit enablement the trusted tier needs.
    assert.equal(afterInstall.plugins?.entries?.['claw-identity']?.enabled, true, `plugins config: ${JSON.stringify(afterInstall.plugins)}`);

    const config = { tokenMapPath: run.tokenMapPath, toolPrefix: 'claw-os__', tokenParam: 'auth_token', onMissingToken: 'pass' };
    r = await h.openclaw(run, ['config', 'set', 'plugins.entries.claw-identity.config', JSON.stringify(config), '--strict-json'], { label: 'config-set' });
    assert.equal(r.code, 0, `config set exited ${r.code}: ${h.tail(r)}`);
    assert.deepEqual(h.readConfig(run).plugins.entries['claw-identity'].config, config);

    r = await h.openclaw(run, ['plugins', 'inspect', 'claw-identity', '--runtime', '--json'], { label: 'plugins-inspect' });
    assert.equal(r.code, 0, `plugins inspect exited ${r.code}: ${h.tail(r)}`);
    const info = r.json;
    assert.ok(info?.plugin, `inspect output is not the expected JSON: ${h.scrub(r.stdout.slice(0, 500))}`);
    assert.equal(info.plugin.id, 'claw-identity');
    assert.equal(info.plugin.status, 'loaded', `status ${info.plugin.status}; diagnostics: ${JSON.stringify(info.diagnostics)}`);
    assert.equal(info.plugin.explicitlyEnabled, true);
    assert.ok(info.plugin.hookCount >= 1, `hookCount ${info.plugin.hookCount}`);
    assert.ok(JSON.stringify(info.typedHooks ?? []).includes('before_tool_call'), `typedHooks: ${JSON.stringify(info.typedHooks)}`);
    assert.deepEqual(info.plugin.contracts?.trustedToolPolicies, ['claw-identity']);
    // OpenClaw's npm install of the tarball, in its per-plugin npm project.
    assert.equal(info.install?.source, 'npm', JSON.stringify(info.install));
    assert.equal(info.install?.artifactKind, 'npm-pack');
    const projectModules = path.dirname(info.install.installPath);
    assert.equal(path.basename(projectModules), 'node_modules');
    // OpenClaw linked its own package into the plugin, which names it as an
    // optional peer: on Windows the WebAssembly build finds OpenClaw's fs-safe
    // (its ACL reader) from there, as lib/wasi.cjs resolves it.
    const host = fs.realpathSync(path.join(info.install.installPath, 'node_modules', 'openclaw'));
    assert.equal(host, fs.realpathSync(run.runtime.openclawDir), 'node_modules/openclaw is not the running OpenClaw');
    const wasi = createRequire(path.join(info.install.installPath, 'lib', 'wasi.cjs'));
    const fsSafe = createRequire(wasi.resolve('openclaw')).resolve('@openclaw/fs-safe/permissions');
    assert.ok(fs.existsSync(fsSafe), fsSafe);
    assert.ok(info.plugin.rootDir.startsWith(run.state), `installed under the state dir, not loaded from the repo: ${info.plugin.rootDir}`);
    installedDir = info.plugin.rootDir;
    assert.deepEqual(
      (info.diagnostics ?? []).filter((d) => /error/i.test(d.level ?? d.severity ?? '')),
      [],
    );
  });

  it("scenario 5: the installed copy puts francis's token on a real call", async () => {
    const seed = `install-${run.runId.slice(0, 6)}`;
    const res = await h.agentLocal(run, { agent: FRANCIS, message: `Please save a note. ${marker('notes', { wrong: seed })}` });
    assert.equal(res.code, 0, `openclaw agent --local exited ${res.code}: ${h.tail(res)}`);
    const calls = h.readCalls(run);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, tokens)}`);
    assert.equal(h.who(calls[0].args.auth_token, tokens, { "model's wrong token": fakeToken(seed) }), FRANCIS);
    const lines = h.logMessages(run);
    assert.ok(
      lines.some((l) => /plugin loaded; token map = /.test(l)),
      'log lacks `plugin loaded; token map = ...`',
    );
    assert.ok(
      lines.some((l) => /trusted tool-policy tier/.test(l)),
      'log does not say the trusted tier enforces identity',
    );
    const hits = h.grepForTokens(run.root, tokens, { exclude: [run.secrets, run.mcp] });
    assert.deepEqual(
      hits.map((x) => `${x.agent}@${x.file.slice(run.root.length)}`),
      [],
      'a token leaked',
    );
  });

  // Where OpenClaw runs without a native build (macOS, Windows, musl,
  // another CPU), index.js loads the WebAssembly build. Here, the installed
  // copy's entry is pointed at claw-identity/wasm, which always loads it:
  // the runtime bundled in the tarball must load from OpenClaw's own copies.
  it("the installed WebAssembly build puts francis's token on a real call", async () => {
    assert.ok(installedDir, 'the install test did not run');
    const pkgFile = path.join(installedDir, 'package.json');
    const pkg = JSON.parse(fs.readFileSync(pkgFile, 'utf8'));
    pkg.openclaw.extensions = ['./wasm.js'];
    fs.writeFileSync(pkgFile, JSON.stringify(pkg, null, 2));
    const before = h.readCalls(run).length;
    const seed = `install-wasm-${run.runId.slice(0, 6)}`;
    const res = await h.agentLocal(run, { agent: FRANCIS, message: `Please save a note. ${marker('notes', { wrong: seed })}` });
    assert.equal(res.code, 0, `openclaw agent --local exited ${res.code}: ${h.tail(res)}`);
    const calls = h.readCalls(run).slice(before);
    assert.equal(calls.length, 1, `calls: ${h.describeCalls(calls, tokens)}`);
    assert.equal(h.who(calls[0].args.auth_token, tokens, { "model's wrong token": fakeToken(seed) }), FRANCIS);
    const lines = h.logMessages(run);
    assert.ok(
      lines.some((l) => l.includes('running the WebAssembly build (chosen with claw-identity/wasm); identity is enforced by the trusted tool-policy tier')),
      'the load line does not say the WebAssembly build runs',
    );
    const hits = h.grepForTokens(run.root, tokens, { exclude: [run.secrets, run.mcp] });
    assert.deepEqual(
      hits.map((x) => `${x.agent}@${x.file.slice(run.root.length)}`),
      [],
      'a token leaked',
    );
  });
});
