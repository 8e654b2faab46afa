// claw-identity's JS surface over a loaded build (native or WebAssembly):
// the re-exported API, the operator helpers, and the OpenClaw plugin entry
// that wires the trusted policy, the safety net and the result middleware
// to it. Every decision is made in Rust; nothing here decides. index.js and
// wasm.js each load a build by a literal path and hand it here.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { registerCommands, registerOperatorSurfaces, registerWatcherService } from './ops.js';

const { version } = createRequire(import.meta.url)('./package.json');

// OpenClaw loads each registration of a plugin from a copy of its own, and a
// gateway runs its tool calls through another registration than the one
// that runs its services and answers its gateway methods. So that all of
// them share one layer (one map, one watcher, one set of counters, which
// `status` and health report), the first copy of this version and build
// loaded in a JS realm is the one every later copy uses, with the count of
// the services watching its map; later copies don't even load the build.
// Once set, the slot can't be replaced; code that runs before this plugin
// could plant it, as it could patch the addon loader itself
// (docs/threat-model.md).
function sharedAddon(build, load) {
  const slot = Symbol.for(`claw-identity.native.${build.name}`);
  if (globalThis[slot]?.version === version) return globalThis[slot];
  const own = Object.freeze({ version, native: Object.freeze(load()), watchers: { running: 0 } });
  if (!Object.hasOwn(globalThis, slot)) Object.defineProperty(globalThis, slot, { value: own });
  return own;
}

/**
 * The whole API over one build. `build` is `{ name, native, reason }`:
 * `name` is the binary's platform name (`linux-x64-gnu`, `linux-arm64-gnu`,
 * `wasm32-wasi`), `reason` why the loader picked it; `load()` loads it.
 */
export function surface(build, load) {
  const shared = sharedAddon(build, load);
  const { native } = shared;
  const PLUGIN_ID = 'claw-identity';

  /**
   * OpenClaw's session store, as the rules call it: `ensure` creates a
   * delegation session if it is missing (create-only: an existing session is
   * left exactly as it is); `spawnerOf` reads which session spawned a
   * sub-agent session (its entry's `spawnedBy`).
   */
  function sessionStoreOf(api) {
    const store = api.runtime?.agent?.session;
    if (typeof store?.patchSessionEntry !== 'function' || typeof store?.getSessionEntry !== 'function') return undefined;
    return {
      ensure: (agentId, sessionKey) =>
        store.patchSessionEntry({
          agentId,
          sessionKey,
          fallbackEntry: { sessionId: randomUUID(), updatedAt: Date.now() },
          update: (_entry, context) => (context?.existingEntry === undefined ? {} : undefined),
        }),
      spawnerOf: (agentId, sessionKey) => store.getSessionEntry({ agentId, sessionKey })?.spawnedBy,
    };
  }

  const plugin = {
    id: PLUGIN_ID,
    name: 'claw-identity',
    description:
      "Per-agent identity for MCP tools: injects each agent's auth_token from a live token map, and enforces the identity rules.",
    register(api) {
      // Collecting CLI metadata: OpenClaw offers no runtime then, and nothing may start.
      if (api.registrationMode === 'cli-metadata') return registerCommands(api);
      const sessions = sessionStoreOf(api);
      // Every registration reaches the layer in force: a later registration
      // with other options replaces it for the earlier ones too, including
      // those of other copies of this module, which use this addon (above).
      // The watcher starts here, since `openclaw agent --local` starts no
      // services; in a gateway the service below then owns it.
      const configure = (config, pluginConfig = config?.plugins?.entries?.[PLUGIN_ID]?.config) =>
        native.configure({ ...(pluginConfig ?? {}), logger: api.logger, sessions, openclawConfig: config });
      const layer = configure(api.config, api.pluginConfig);
      let tier = 'the ordinary before_tool_call hook only (this OpenClaw has no trusted tool policies)';
      if (typeof api.registerTrustedToolPolicy === 'function') {
        api.registerTrustedToolPolicy({
          id: PLUGIN_ID,
          description: "Sets each agent's auth_token and enforces claw-identity's rules before any ordinary hook runs.",
          evaluate: native.beforeToolCall,
        });
        tier = 'the trusted tool-policy tier, with the before_tool_call hook (priority 100) as a safety net';
      }
      api.on('before_tool_call', native.safetyNet, { priority: 100 });
      // Every tool result, before any model sees it: tokens become fingerprints.
      api.registerAgentToolResultMiddleware?.(native.redactToolResult, { runtimes: ['openclaw', 'codex'] });
      registerOperatorSurfaces(api, native);
      if (api.registrationMode === 'full') {
        registerWatcherService(api, native, configure, layer, shared.watchers);
        api.logger.info(`[claw-identity] ${describe(build)}; identity is enforced by ${tier}`);
        if (sessions === undefined) {
          api.logger.warn(
            "[claw-identity] this OpenClaw offers no session store to plugins (api.runtime.agent.session): delegation sessions can't be created, so redirected sessions_send calls will fail, and sub-agent calls carry their own session as _conversation_id",
          );
        }
      }
    },
  };

  // ---- operator tools: writeTokenMap, and the reports behind bin/claw-identity.js ----

  /** The map path the plugin would read: `map` (or the config's tokenMapPath, or the default), `~` expanded. */
  function resolveTokenMapPath({ map, config } = {}) {
    return native.opsMapPath(map, config);
  }

  function writeArgs(path, map) {
    if (typeof path !== 'string' || path === '') {
      throw new TypeError('claw-identity: writeTokenMap(path, map): path must be a non-empty string');
    }
    if (map instanceof Map) map = Object.fromEntries(map);
    if (typeof map === 'string') map = Buffer.from(map, 'utf8');
    else if (ArrayBuffer.isView(map)) map = Buffer.from(map.buffer, map.byteOffset, map.byteLength);
    else if (map === null || typeof map !== 'object' || Array.isArray(map)) {
      throw new TypeError('claw-identity: writeTokenMap(path, map): map must be an object of agent id to token, a Map, or JSON text');
    } else {
      // A value JSON can't encode becomes null, so validation refuses that agent by name.
      map = Buffer.from(JSON.stringify(map, (k, v) => (k !== '' && ['undefined', 'function', 'symbol', 'bigint'].includes(typeof v) ? null : v)));
    }
    return [native.opsMapPath(path, undefined), map];
  }

  /** Validates a token map and writes it atomically (0600 temp file, fsync, rename, fsync of the directory). */
  function writeTokenMap(path, map) {
    try {
      const args = writeArgs(path, map);
      // The WebAssembly build runs no threads: it writes on this one.
      return native.opsWriteMap ? native.opsWriteMap(...args) : Promise.resolve(native.opsWriteMapSync(...args));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** `writeTokenMap`, blocking the calling thread. */
  function writeTokenMapSync(path, map) {
    return native.opsWriteMapSync(...writeArgs(path, map));
  }

  /** `claw-identity doctor` as data: `{ ok, text, report }`. */
  function doctor({ map, config } = {}) {
    const r = native.opsDoctor(map, config);
    return { ok: r.ok, text: r.text, report: JSON.parse(r.json) };
  }

  /** The findings claw-identity adds to `openclaw security audit`, for the gateway config `config`. */
  function audit({ config } = {}) {
    if (typeof config !== 'string' || config === '') throw new TypeError('claw-identity: audit(): config must be the path of an openclaw.json');
    return JSON.parse(native.opsAudit(config));
  }

  /** `claw-identity explain` as data: `{ ok, text, report }`. */
  function explain({ agent, tool, params, sessionKey, map, config } = {}) {
    if (typeof tool !== 'string') throw new TypeError('claw-identity: explain(): tool must be a string');
    const paramsJson = params === undefined ? undefined : JSON.stringify(params);
    const r = native.opsExplain({ map, config, agent, tool, sessionKey, paramsJson });
    return { ok: r.ok, text: r.text, report: JSON.parse(r.json) };
  }

  return {
    ...native,
    build: Object.freeze({ ...build }),
    plugin,
    resolveTokenMapPath,
    writeTokenMap,
    writeTokenMapSync,
    doctor,
    audit,
    explain,
  };
}

/** The build, as the load line says it. */
function describe(build) {
  return build.native ? `running the native ${build.name} build` : `running the WebAssembly build (${build.reason})`;
}
