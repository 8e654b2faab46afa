// Plays the gateway for the sandbox suites: configures the layer as the
// plugin does (the token map, OpenClaw's config, the plugin's directories),
// makes the `claw-identity` backend with OpenClaw's own SDK, and runs each
// command of the spec the way OpenClaw runs exec (the argv and env of
// `buildExecSpec`, spawned as they are). Prints one JSON object:
// `{ probe, factoryError, results: [{ name, code, stdout, stderr }] }`.
// Run as the user the test is about; it never prints a command's output
// anywhere else.
//
//   node sandbox-child.mjs <spec.json>
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const lib = await import(spec.entry);
const { createSandboxBackend } = await import(new URL('../../lib/sandbox.js', import.meta.url));
const sdk = await import(spec.sdk);

const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const configure = (options) =>
  lib.configure({
    tokenMapPath: spec.map,
    ...options,
    logger: quiet,
    openclawConfig: spec.openclawConfig ?? {},
    pluginDirs: spec.pluginDirs ?? [],
  });
configure(spec.options ?? {});
const native = globalThis[Symbol.for(`claw-identity.native.${lib.buildInfo.name}`)].native;
const backend = createSandboxBackend({ native, sdk, logger: quiet });
const factoryParams = {
  workspaceDir: spec.workspace,
  agentWorkspaceDir: spec.agentWorkspace ?? spec.workspace,
  scopeKey: 'agent:paco--francis:main',
  cfg: { workspaceAccess: spec.workspaceAccess ?? 'rw', docker: {} },
};

// spec.turns: one factory call each, as OpenClaw makes one per turn; before
// it, a turn may remove a file (`rm`), append to one (`append: [file, text]`)
// or reconfigure the layer (`options`). Each records whether the factory
// made a sandbox, whether the event loop turned (a setImmediate ran) before
// it settled and, with spec.runLog, how many lines that file has then;
// nothing else runs.
if (spec.turns) {
  const lines = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0);
  const turns = [];
  for (const t of spec.turns) {
    if (t.rm) fs.rmSync(t.rm, { force: true });
    if (t.append) fs.appendFileSync(...t.append);
    if (t.options) configure(t.options);
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    try {
      await backend.factory(factoryParams);
      turns.push({ ok: true, turned });
    } catch (err) {
      turns.push({ ok: false, turned, error: err.message });
    }
    if (spec.runLog) turns.at(-1).runs = lines(spec.runLog);
  }
  process.stdout.write(JSON.stringify({ turns }));
  process.exit(0);
}

const out = { probe: await (native.sandboxProbe?.() ?? native.sandboxProbeSync()), results: [] };
let handle;
try {
  handle = await backend.factory(factoryParams);
} catch (err) {
  out.factoryError = err.message;
}
if (handle && spec.pathAfterFactory !== undefined) process.env.PATH = spec.pathAfterFactory;
for (const c of handle ? spec.commands : []) {
  let s;
  try {
    s = await handle.buildExecSpec({
      command: c.command,
      workdir: handle.workdir,
      env: { PATH: process.env.PATH, HOME: handle.workdir, ...(c.env ?? {}) },
      usePty: c.pty === true,
    });
  } catch (err) {
    out.results.push({ name: c.name, specError: err.message });
    continue;
  }
  const r = spawnSync(s.argv[0], s.argv.slice(1), {
    env: s.env,
    cwd: s.cwd,
    input: '',
    encoding: 'latin1',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 120_000,
  });
  out.results.push({ name: c.name, code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, argv: s.argv });
}
if (handle && spec.shell) {
  const r = await handle.runShellCommand({ ...spec.shell, allowFailure: true });
  out.shell = { code: r.code, stdout: r.stdout.toString('latin1'), stderr: r.stderr.toString('latin1') };
}
process.stdout.write(JSON.stringify(out));
