// The two OpenClaw configs the posture judges contained (core/src/posture.rs,
// the_documented_host_config_... and the_documented_sandbox_config_...;
// docs/operating.md shows them to operators). A suite that tests something
// else than the posture runs its agents under one of them, so that under
// posture "enforce" (the default) the layer serves tokens; the unit suites,
// the e2e harness (writeConfig's `contain`) and the demo share them here.
// Imports nothing of the package: the harness and the demo load it too.

/** Every tool of OpenClaw's catalog that reaches the host around `tools.fs.workspaceOnly`. */
export const HOST_TOOLS = [
  'exec',
  'process',
  'browser',
  'terminal',
  'canvas',
  'gateway',
  'plugins',
  'openclaw',
  'nodes',
  'computer',
  'mobile_ui',
  'file-transfer',
  'ollama',
];

/**
 * Contained on the host: the file tools confined to the workspace, every host
 * tool denied, Code Mode off, no stream automation. The workspace must hold
 * no secret (the map's directory, OpenClaw's config or state).
 */
export const CONTAINED_HOST = Object.freeze({
  tools: { fs: { workspaceOnly: true }, codeMode: false, deny: HOST_TOOLS },
  cron: { triggers: { enabled: false } },
});

/**
 * Contained by claw-identity's own sandbox (bubblewrap): every session in it,
 * Code Mode off, and the owned MCP tools allowed in sandboxed sessions
 * (OpenClaw's sandbox tool policy blocks every MCP tool it doesn't name).
 */
export const CONTAINED_SANDBOX = Object.freeze({
  tools: { codeMode: false, sandbox: { tools: { alsoAllow: ['claw-os__*'] } } },
  agents: { defaults: { sandbox: { mode: 'all', backend: 'claw-identity', workspaceAccess: 'rw' } } },
});

/** `b` merged into `a`: objects key by key, anything else (arrays too) replaced. */
export function deepMerge(a, b) {
  if (Array.isArray(b) || typeof b !== 'object' || b === null) return structuredClone(b);
  const out = { ...(typeof a === 'object' && a && !Array.isArray(a) ? a : {}) };
  for (const [k, v] of Object.entries(b)) out[k] = v === undefined ? undefined : deepMerge(out[k], v);
  return out;
}

/** `config` with the containment `kind` (`'host'` or `'sandbox'`) merged in. */
export function contained(config = {}, kind = 'host') {
  const c = { host: CONTAINED_HOST, sandbox: CONTAINED_SANDBOX }[kind];
  if (!c) throw new TypeError(`contained(): kind must be 'host' or 'sandbox', not ${JSON.stringify(kind)}`);
  return deepMerge(config, c);
}
