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
lib.configure({
  tokenMapPath: spec.map,
  ...(spec.options ?? {}),
  logger: quiet,
  openclawConfig: spec.openclawConfig ?? {},
  pluginDirs: spec.pluginDirs ?? [],
});
const native = globalThis[Symbol.for(`claw-identity.native.${lib.buildInfo.name}`)].native;

const out = { probe: native.sandboxProbe(), results: [] };
let handle;
try {
  handle = await createSandboxBackend({ native, sdk, logger: quiet }).factory({
    workspaceDir: spec.workspace,
    agentWorkspaceDir: spec.agentWorkspace ?? spec.workspace,
    scopeKey: 'agent:paco--francis:main',
    cfg: { workspaceAccess: spec.workspaceAccess ?? 'rw', docker: {} },
  });
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
