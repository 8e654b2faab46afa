// What `doctor --mcp` and `audit --mcp` need from a live system, gathered
// for Rust to judge (core/src/ops/mcp.rs, core/src/ops/after_hook.rs):
// - each owned MCP server's tool list, with the official MCP SDK, connected
//   the way OpenClaw connects (mcp-transport-*.mjs): a stdio command with its
//   args, env and cwd, or a URL with its headers over SSE or streamable HTTP.
//   Only `initialize` and `tools/list`: no tool is called, no token is sent.
// - OpenClaw's own list of loaded plugins and their hooks
//   (`openclaw plugins inspect --all --runtime --json`).
// Which servers, and what their schemas mean, Rust decides.
import { spawn } from 'node:child_process';
import { hostMcpSdk as hostSdk, ownMcpSdk as ownSdk } from './mcp-sdk.js';

/** The SDK modules the probe uses, by their paths in the SDK package. */
const SDK_MODULES = {
  Client: 'client/index.js',
  StdioClientTransport: 'client/stdio.js',
  SSEClientTransport: 'client/sse.js',
  StreamableHTTPClientTransport: 'client/streamableHttp.js',
};

/** The SDK installed with this package. */
export const ownMcpSdk = () => ownSdk(SDK_MODULES);
/** The SDK of the OpenClaw running this process (`lib/mcp-sdk.js`). */
export const hostMcpSdk = (entry) => hostSdk(SDK_MODULES, entry);

/** Rejects after `ms` with `what` timed out; `clear()` cancels it. */
function deadline(ms, what) {
  let timer;
  const promise = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    timer.unref?.();
  });
  return { promise, clear: () => clearTimeout(timer) };
}

const STDERR_TAIL = 2000;
const MAX_PAGES = 100;

/** One server's tools: `{ server, tools: [{ name, inputSchema }] }` or `{ server, error, stderr? }`. */
async function listOne(sdk, launch, clientInfo) {
  let stderr = '';
  let transport;
  if (launch.transport === 'stdio') {
    transport = new sdk.StdioClientTransport({
      command: launch.command,
      args: launch.args,
      env: launch.env,
      cwd: launch.cwd ?? undefined,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL);
    });
  } else {
    // The SDK puts requestInit's headers on every request, the SSE stream's GET included.
    const Transport = launch.transport === 'streamable-http' ? sdk.StreamableHTTPClientTransport : sdk.SSEClientTransport;
    transport = new Transport(new URL(launch.url), { requestInit: { headers: launch.headers } });
  }
  const client = new sdk.Client(clientInfo, { capabilities: {} });
  const total = deadline(launch.connectTimeoutMs + launch.requestTimeoutMs, `listing the tools of ${launch.server}`);
  try {
    const work = (async () => {
      await client.connect(transport, { timeout: launch.connectTimeoutMs });
      const tools = [];
      let cursor;
      for (let page = 0; page < MAX_PAGES; page++) {
        const r = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: launch.requestTimeoutMs });
        for (const t of r.tools ?? []) tools.push({ name: String(t.name), inputSchema: t.inputSchema ?? null });
        cursor = r.nextCursor;
        if (cursor === undefined) return tools;
      }
      throw new Error(`tools/list returned more than ${MAX_PAGES} pages`);
    })();
    return { server: launch.server, tools: await Promise.race([work, total.promise]) };
  } catch (e) {
    // The SDK's StreamableHTTPError carries the HTTP status as `code`.
    const httpStatus = Number.isInteger(e?.code) && e.code >= 100 && e.code < 600 ? e.code : undefined;
    return { server: launch.server, error: String(e?.message ?? e), ...(httpStatus ? { httpStatus } : {}), ...(stderr ? { stderr } : {}) };
  } finally {
    total.clear();
    // Closing a stdio transport stops the server: stdin closed, then SIGTERM
    // and SIGKILL, 2 s apart (the SDK's own bound). Waited for, so that no
    // server outlives the command.
    await client.close().catch(() => {});
  }
}

/**
 * The tools of each server in `launches` (`mcpServers()`'s plan), all at
 * once. `sdk` is a loaded SDK (see `ownMcpSdk`, `hostMcpSdk`).
 */
export async function listTools(launches, sdk, { version = '0' } = {}) {
  const clientInfo = { name: 'claw-identity-doctor', version };
  return Promise.all(launches.map((l) => listOne(sdk, l, clientInfo)));
}

const INSPECT_TIMEOUT_MS = 180_000;

/**
 * OpenClaw's own list of plugins with their hooks, from the `openclaw`
 * running this process: `{ plugins }`, or `{ pluginsError }`. It runs
 * `openclaw plugins inspect --all --runtime --json` for `config`, in a
 * process of its own (it loads every plugin).
 */
export function inspectPlugins(config, { node = process.execPath, entry = process.argv[1], env = process.env } = {}) {
  return new Promise((resolve) => {
    const child = spawn(node, [entry, 'plugins', 'inspect', '--all', '--runtime', '--json'], {
      env: { ...env, ...(config ? { OPENCLAW_CONFIG_PATH: config } : {}) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err = (err + c).slice(-STDERR_TAIL)));
    const timer = setTimeout(() => child.kill('SIGTERM'), INSPECT_TIMEOUT_MS);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ pluginsError: `openclaw plugins inspect could not start: ${e.message}` });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      // Log lines may come before the JSON array.
      const at = out.search(/^\[/m);
      try {
        if (code === 0 && at >= 0) return resolve({ plugins: JSON.parse(out.slice(at)) });
      } catch {
        /* reported below */
      }
      const why = signal ? `stopped by ${signal}` : `exit ${code}`;
      resolve({ pluginsError: `openclaw plugins inspect --all --runtime --json: ${why}${err.trim() ? `: ${err.trim().split('\n').at(-1)}` : ''}` });
    });
  });
}
