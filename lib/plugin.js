// The OpenClaw plugin entry over one build: it registers the trusted policy,
// the ordinary hook, the tool-result middleware and the operator surfaces.
// Wiring only: every decision is made in Rust.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { registerSandbox } from './sandbox.js';
import { registerCommands, registerOperatorSurfaces, registerWatcherService } from './surfaces.js';

const PLUGIN_ID = 'claw-identity';
/** Below any other plugin's transcript hooks: the redaction sees the message as it will be stored. */
const PERSIST_PRIORITY = -1000;

/**
 * OpenClaw's session store, as the rules call it: `ensure` creates a
 * delegation session if it is missing (create-only: an existing session is
 * left exactly as it is); `entryOf` reads the fields of a session's entry
 * the rules read: who spawned it, and the cwd and workspace it was spawned
 * with (its tools run there).
 */
function sessionStoreOf(api, sandboxSdk) {
  const store = api.runtime?.agent?.session;
  if (typeof store?.patchSessionEntry !== 'function' || typeof store?.getSessionEntry !== 'function') return undefined;
  const config = () => api.runtime?.config?.current?.() ?? api.config;
  return {
    // What OpenClaw says of a chat now, for the posture's per-chat check
    // (core/src/posture.rs): OpenClaw's own resolver says whether it runs in
    // the sandbox (it reads the chat's override), and the entry holds the
    // chat's exec and permission overrides. Throws while the resolver is
    // not loaded: the call is then refused, not guessed.
    now: (agentId, sessionKey) => {
      const sdk = sandboxSdk();
      if (typeof sdk?.resolveSandboxRuntimeStatus !== 'function') throw new Error("OpenClaw's sandbox resolver (openclaw/plugin-sdk/sandbox) is not loaded");
      const { sandboxed } = sdk.resolveSandboxRuntimeStatus({ cfg: config(), agentId, sessionKey });
      const e = sessionKey === '' ? undefined : store.getSessionEntry({ agentId, sessionKey, readConsistency: 'latest' });
      return {
        sandboxed: sandboxed === true,
        execHost: e?.execHost,
        execNode: e?.execNode,
        elevatedLevel: e?.elevatedLevel,
        permissionMode: e?.permissionMode,
      };
    },
    ensure: (agentId, sessionKey) =>
      store.patchSessionEntry({
        agentId,
        sessionKey,
        fallbackEntry: { sessionId: randomUUID(), updatedAt: Date.now() },
        update: (_entry, context) => (context?.existingEntry === undefined ? {} : undefined),
      }),
    entryOf: (agentId, sessionKey) => {
      const e = store.getSessionEntry({ agentId, sessionKey, readConsistency: 'latest' });
      return e && { spawnedBy: e.spawnedBy, spawnedCwd: e.spawnedCwd, spawnedWorkspaceDir: e.spawnedWorkspaceDir };
    },
  };
}

/**
 * Each configured agent's workspace, as OpenClaw itself resolves it
 * (`api.runtime.agent.resolveAgentWorkspaceDir`), where this OpenClaw offers
 * it: map-access resolves the agents' relative paths against it.
 */
function workspacesOf(api, config) {
  const resolve = api.runtime?.agent?.resolveAgentWorkspaceDir;
  const entries = config?.agents?.entries ?? Object.fromEntries((config?.agents?.list ?? []).map((a) => [a?.id, a]));
  if (typeof resolve !== 'function' || entries === null || typeof entries !== 'object') return undefined;
  const out = {};
  for (const id of Object.keys(entries)) {
    try {
      const dir = resolve(config, id);
      if (typeof dir === 'string' && dir !== '') out[id] = dir;
    } catch {
      // Left out: map-access then takes every workspace OpenClaw may pick.
    }
  }
  return out;
}

/**
 * A file of the OpenClaw package this plugin runs in, through the
 * `node_modules/openclaw` link OpenClaw makes in a plugin: the layer keeps
 * that package (its code, imported lazily) out of the agents' tools' reach.
 */
function openclawFilesOf() {
  try {
    return [createRequire(import.meta.url).resolve('openclaw')];
  } catch {
    return []; // not linked: the layer finds the package from process.argv[1]
  }
}

/** Where this plugin is installed, and the copy OpenClaw loaded: no agent tool may change them. */
function pluginDirsOf(api) {
  const loaded = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
  return [...new Set([api.rootDir, loaded].filter((d) => typeof d === 'string' && d !== ''))];
}

/** The build, as the load line says it. */
function describe(build) {
  return build.native ? `running the native ${build.name} build` : `running the WebAssembly build (${build.reason})`;
}

/** The plugin entry for `surface()`'s result (lib/api.js). */
export function createPlugin({ api: lib, native, watchers }, loadSandboxSdk = () => import('openclaw/plugin-sdk/sandbox')) {
  // OpenClaw's sandbox SDK, loaded once per copy of the plugin: its
  // resolver answers the posture's per-chat check, and it registers the
  // sandbox backend.
  let sdk;
  let sdkLoad;
  const sandboxSdk = () => sdk;
  const loadSdk = () => {
    sdkLoad ??= loadSandboxSdk().then((m) => {
      sdk = m;
      return m;
    });
    return sdkLoad;
  };
  return {
    id: PLUGIN_ID,
    name: 'claw-identity',
    description: "Per-agent identity for MCP tools: injects each agent's auth_token from a live token map, and enforces the identity rules.",
    register(api) {
      // Collecting CLI metadata: OpenClaw offers no runtime then, and nothing may start.
      if (api.registrationMode === 'cli-metadata') return registerCommands(api, lib);
      const sessions = sessionStoreOf(api, sandboxSdk);
      loadSdk().catch((err) =>
        api.logger.warn(
          `[claw-identity] OpenClaw's sandbox SDK did not load (${err.message}): calls that reach the host from a contained agent are refused until it does`,
        ),
      );
      // Every registration reaches the layer in force: a later registration
      // with other options replaces it for the earlier ones too, including
      // those of other copies of this module, which use this addon (lib/api.js).
      // The watcher starts here, since `openclaw agent --local` starts no
      // services; in a gateway the service below then owns it.
      const configure = (config, pluginConfig = config?.plugins?.entries?.[PLUGIN_ID]?.config) =>
        native.configure({
          ...(pluginConfig ?? {}),
          logger: api.logger,
          sessions,
          openclawConfig: config,
          pluginDirs: pluginDirsOf(api),
          openclawFiles: openclawFilesOf(),
          workspaces: workspacesOf(api, config),
        });
      const layer = configure(api.config, api.pluginConfig);
      // This registration's two tiers: the hook decides only where OpenClaw
      // dropped the policy (docs/design.md).
      const { beforeToolCall, safetyNet } = native.tiers();
      let tier = 'the ordinary before_tool_call hook only (this OpenClaw has no trusted tool policies)';
      if (typeof api.registerTrustedToolPolicy === 'function') {
        api.registerTrustedToolPolicy({
          id: PLUGIN_ID,
          description: "Sets each agent's auth_token and enforces claw-identity's rules before any ordinary hook runs.",
          evaluate: beforeToolCall,
        });
        tier = 'the trusted tool-policy tier, with the before_tool_call hook (priority 100) where OpenClaw drops the policy';
      }
      api.on('before_tool_call', safetyNet, { priority: 100 });
      // Every tool result, before any model sees it: tokens become fingerprints.
      api.registerAgentToolResultMiddleware?.(native.redactToolResult, { runtimes: ['openclaw', 'codex'] });
      // Everything OpenClaw stores in a transcript, last before disk (the
      // lowest priority runs last): tool results, and the messages no
      // middleware sees (user messages such as exec completion notices, the
      // model's own tool-call arguments). Both hooks are synchronous.
      api.on('tool_result_persist', native.redactPersisted, { priority: PERSIST_PRIORITY });
      api.on('before_message_write', native.redactPersisted, { priority: PERSIST_PRIORITY });
      registerOperatorSurfaces(api, native, lib);
      // The `claw-identity` sandbox backend (bubblewrap), for agents that select it.
      registerSandbox(api, native, loadSdk);
      if (api.registrationMode === 'full') {
        registerWatcherService(api, native, configure, layer, watchers);
        api.logger.info(`[claw-identity] ${describe(lib.buildInfo)}; identity is enforced by ${tier}`);
        if (sessions === undefined) {
          api.logger.warn(
            "[claw-identity] this OpenClaw offers no session store to plugins (api.runtime.agent.session): delegation sessions can't be created, so redirected sessions_send calls will fail, and sub-agent calls carry their own session as _conversation_id",
          );
        }
      }
    },
  };
}
