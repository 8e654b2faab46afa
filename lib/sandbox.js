// The `claw-identity` sandbox backend: every command of an agent whose
// sandbox selects it (agents.*.sandbox.backend: "claw-identity") runs under
// bubblewrap, with the command line the addon builds
// (core/src/sandbox/): which paths are hidden, read-only or writable, and
// which flags, is decided there. Here: OpenClaw's backend contract around
// that command line (openclaw/plugin-sdk/sandbox, `SandboxBackendHandle` in
// OpenClaw's `backend-handle.types`), spawning, and cleanup on the host side.
// Where the sandbox can't run, the factory throws, and OpenClaw fails the
// turn: nothing falls back to the host.
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';

export const BACKEND_ID = 'claw-identity';

/**
 * The variable that marks one command's processes on the host. OpenClaw's
 * default cleanup (`createSandboxProcessCleanup`, `fs-bridge-stat-parse-*.mjs`)
 * looks for its marker from inside the sandbox, which here is a PID
 * namespace of its own per command: it would find nothing.
 */
const MARKER = 'CLAW_IDENTITY_SANDBOX_EXEC';

/** OpenClaw's cap on a sandbox shell command's output (`SANDBOX_COMMAND_MAX_BUFFER_BYTES`). */
const DEFAULT_MAX_BUFFER = 100 * 1024 * 1024;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The error OpenClaw shows when the sandbox can't run: why, what to do, and that nothing ran on the host. */
function refusal(reason, fix) {
  return new Error(`claw-identity sandbox: ${reason} Fix: ${fix} (The command did not run, in the sandbox or on the host.)`);
}

/** Runs `argv` with `env`, feeding it `stdin`: `{ stdout, stderr, code }` as OpenClaw's `runShellCommand` returns it. */
function run(argv, { env, cwd, stdin, signal, maxBuffer }) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { env, cwd, stdio: ['pipe', 'pipe', 'pipe'], signal });
    const out = [];
    const err = [];
    let size = 0;
    const take = (list) => (chunk) => {
      size += chunk.length;
      if (size > maxBuffer) {
        child.kill('SIGKILL');
        reject(new Error(`claw-identity sandbox: command output exceeds ${maxBuffer} bytes`));
        return;
      }
      list.push(chunk);
    };
    child.stdout.on('data', take(out));
    child.stderr.on('data', take(err));
    child.once('error', reject);
    child.once('close', (code, sig) => resolve({ stdout: Buffer.concat(out), stderr: Buffer.concat(err), code: code ?? (sig ? 128 : 1) }));
    child.stdin.on('error', () => {});
    child.stdin.end(stdin ?? undefined);
  });
}

/** Signals every host process of one command (found by its marker) and waits for them to go. */
async function terminate(native, marker) {
  for (const signal of ['SIGTERM', 'SIGKILL']) {
    const pids = native.sandboxProcesses(marker);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // gone already
      }
    }
    await sleep(1000);
  }
  const left = native.sandboxProcesses(marker);
  if (left.length > 0) throw new Error(`claw-identity sandbox: processes ${left.join(', ')} survived SIGKILL`);
}

/**
 * The backend's registration for `registerSandboxBackend` (`backend-*.mjs`):
 * `{ factory, manager, resolveWorkdir, capabilities }`. `sdk` is
 * `openclaw/plugin-sdk/sandbox`; `native` the loaded build.
 */
export function createSandboxBackend({ native, sdk, logger }) {
  // The probe and the plans run on the addon's thread pool, off the
  // gateway's event loop (the factory runs at every turn); the WebAssembly
  // build, which runs no threads, has only the blocking ones.
  const probe = async () => native.sandboxProbe?.() ?? native.sandboxProbeSync();
  const spawnSpecOf = async (request) => native.sandboxSpawn?.(request) ?? native.sandboxSpawnSync(request);
  const logged = new Set();
  const refuse = (reason, fix) => {
    // Once per reason in the log; every refused turn gets the error.
    if (!logged.has(reason)) {
      logged.add(reason);
      logger?.error?.(`[claw-identity] the sandbox backend refused to start: ${reason} Fix: ${fix}`);
    }
    return refusal(reason, fix);
  };
  const maxBuffer = sdk?.SANDBOX_COMMAND_MAX_BUFFER_BYTES ?? DEFAULT_MAX_BUFFER;

  /** `factory(params)` (`context-*.mjs`, `resolveProvisionedSandboxContext`). */
  async function factory(params) {
    const status = await probe();
    if (!status.ok) throw refuse(status.reason, status.fix);
    const workdir = native.sandboxWorkdir(params.workspaceDir);
    const workspaceAccess = params.cfg?.workspaceAccess ?? 'none';
    // OpenClaw's own list of read-only skill mounts, for the paths its file bridge expects.
    const skillMounts = (
      sdk?.resolveReadOnlyWorkspaceSkillMounts?.({
        workspaceDir: params.workspaceDir,
        agentWorkspaceDir: params.agentWorkspaceDir,
        skillsWorkspaceDir: params.skillsWorkspaceDir,
        workdir,
        workspaceAccess,
      }) ?? []
    ).map(({ hostPath, containerPath }) => ({ hostPath, containerPath }));
    const session = {
      workspaceDir: params.workspaceDir,
      agentWorkspaceDir: params.agentWorkspaceDir ?? params.workspaceDir,
      workspaceAccess,
      workdir,
      skillMounts,
      resourceMounts: (params.readOnlyResourceMounts ?? []).map(({ hostPath, containerPath }) => ({ hostPath, containerPath })),
      binds: params.cfg?.docker?.binds ?? [],
    };
    const runtimeId = `claw-identity-${createHash('sha256').update(String(params.scopeKey)).digest('hex').slice(0, 12)}`;
    const spawnSpec = async (request) => {
      try {
        return await spawnSpecOf({ session, ...request });
      } catch (err) {
        throw new Error(`${err.message} (The command did not run, in the sandbox or on the host.)`);
      }
    };
    // The session itself, checked now (a workspace that holds a home, binds
    // the backend won't make): the turn is refused at its start, not at its first exec.
    try {
      await spawnSpecOf({ session, run: { command: 'true' }, env: {} });
    } catch (err) {
      logger?.error?.(`[claw-identity] the sandbox backend refused a session: ${err.message}`);
      throw new Error(`${err.message} (The command did not run, in the sandbox or on the host.)`);
    }

    return {
      id: BACKEND_ID,
      runtimeId,
      runtimeLabel: runtimeId,
      workdir,
      env: params.cfg?.docker?.env,
      configLabel: 'bubblewrap',
      configLabelKind: 'Sandbox',
      // OpenClaw checks the workdir on the host (`resolveHostValidatedSandboxWorkdir`):
      // paths inside are the host's own, and the addon refuses one outside the mounts.
      workdirValidation: 'host',
      capabilities: { browser: false, readOnlyResourceMounts: true },

      /** OpenClaw spawns what this returns (`prepareSpawnSpec`, `bash-tools.exec-runtime-*.mjs`). */
      async buildExecSpec({ command, workdir: cwd, env, usePty }) {
        // OpenClaw passes usePty false for every sandboxed exec; the ask
        // reaches here as rule sandbox-pty's marker in env (core/src/rules/sandbox_pty.rs).
        const s = await spawnSpec({ workdir: cwd, run: { command, pty: usePty === true }, env: env ?? {} });
        return { argv: s.argv, env: s.env, cwd: workdir, stdinMode: s.pty ? 'pipe-open' : 'pipe-closed' };
      },

      /** The file bridge's helpers (`createSandboxFsBridge`): `sh -c script openclaw-sandbox-fs args…`. */
      async runShellCommand({ script, args, stdin, allowFailure, signal }) {
        const s = await spawnSpec({ run: { script, args: args ?? [] }, env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: workdir } });
        const result = await run(s.argv, { env: s.env, cwd: workdir, stdin, signal, maxBuffer });
        if (result.code !== 0 && !allowFailure) {
          throw new Error(result.stderr.toString('utf8').trim() || `claw-identity sandbox: command exited ${result.code}`);
        }
        return result;
      },

      /** Cleanup custody for one command, on the host: its processes carry a marker. */
      prepareProcessCleanup(env) {
        const marker = `${MARKER}=${randomUUID()}`;
        const [name, value] = marker.split('=');
        return {
          env: { ...env, [name]: value },
          terminate: () => terminate(native, marker),
          async interrupt() {
            const pids = native.sandboxProcesses(marker);
            if (pids.length === 0) return false;
            for (const pid of pids) {
              try {
                process.kill(pid, 'SIGINT');
              } catch {
                // gone already
              }
            }
            return true;
          },
        };
      },
    };
  }

  return {
    factory,
    // Nothing outlives a command: no runtime to inspect or remove.
    manager: {
      async describeRuntime() {
        return { running: (await probe()).ok, actualConfigLabel: 'bubblewrap', configLabelMatch: true };
      },
      async removeRuntime() {},
    },
    resolveWorkdir: ({ workspaceDir }) => {
      try {
        return native.sandboxWorkdir(workspaceDir);
      } catch {
        return path.resolve(workspaceDir);
      }
    },
    capabilities: { readOnlyResourceMounts: true },
  };
}

/**
 * Registers the backend in the registration that runs the agents
 * (`registrationMode` "full", as OpenClaw's crabbox does), and takes it back
 * when the plugin is disabled or restarts. OpenClaw's loader resolves the
 * SDK for plugins; outside OpenClaw there is none, and nothing registers.
 * Returns a promise that settles once it is registered (or not).
 */
export function registerSandbox(api, native, loadSdk = () => import('openclaw/plugin-sdk/sandbox')) {
  if (api.registrationMode !== 'full') return;
  let unregister;
  let dropped = false;
  api.lifecycle?.registerRuntimeLifecycle?.({
    id: 'claw-identity-sandbox',
    cleanup: ({ reason, sessionKey, runId } = {}) => {
      if (sessionKey !== undefined || runId !== undefined) return;
      if (reason === 'disable' || reason === 'restart') {
        dropped = true;
        unregister?.();
      }
    },
  });
  return loadSdk().then(
    (sdk) => {
      if (dropped) return;
      unregister = sdk.registerSandboxBackend(BACKEND_ID, createSandboxBackend({ native, sdk, logger: api.logger }));
    },
    (err) => api.logger.warn(`[claw-identity] the sandbox backend is not registered: ${err.message}`),
  );
}
