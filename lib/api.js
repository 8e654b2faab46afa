// claw-identity's JS API over one loaded build (native or WebAssembly): the
// build's own functions, and the operator helpers that shape their
// arguments. Every decision is made in Rust; nothing here decides.
import { createRequire } from 'node:module';

import { startProxy } from './proxy.js';

const { version } = createRequire(import.meta.url)('../package.json');

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
 * The API over one build. `build` is `{ name, native, reason }` (see
 * lib/loader.js); `load()` loads it. Returns `{ api, native, watchers }`:
 * the public API, the build itself, and the count of the watcher services
 * running over every copy of the plugin.
 */
export function surface(build, load) {
  const shared = sharedAddon(build, load);
  const { native } = shared;

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

  /**
   * `claw-identity doctor` as data: `{ ok, text, report }`. `live` is what
   * `--mcp` gathered: `{ servers, plugins?, pluginsError? }`.
   */
  function doctor({ map, config, live } = {}) {
    return native.opsDoctor(map, config, live);
  }

  /**
   * `claw-identity audit` for the gateway config `config` (and `live`, as for
   * doctor): `{ ok, text, report }`, `report` being the findings.
   */
  function audit({ config, live } = {}) {
    if (typeof config !== 'string' || config === '') throw new TypeError('claw-identity: audit(): config must be the path of an openclaw.json');
    return native.opsAudit(config, live);
  }

  /** How OpenClaw would launch each `mcp.servers` entry of `config` whose tools the plugin owns. */
  function mcpServers({ config } = {}) {
    if (typeof config !== 'string' || config === '') throw new TypeError('claw-identity: mcpServers(): config must be the path of an openclaw.json');
    return native.opsMcpPlan(config);
  }

  /** `claw-identity explain` as data: `{ ok, text, report }`. */
  function explain({ agent, tool, params, sessionKey, map, config } = {}) {
    if (typeof tool !== 'string') throw new TypeError('claw-identity: explain(): tool must be a string');
    return native.opsExplain({ map, config, agent, tool, sessionKey, params });
  }

  const api = Object.freeze({
    IdentityLayer: native.IdentityLayer,
    configure: native.configure,
    beforeToolCall: native.beforeToolCall,
    redactToolResult: native.redactToolResult,
    stats: native.stats,
    fingerprint: native.fingerprint,
    noop: native.noop,
    resolveTokenMapPath,
    writeTokenMap,
    writeTokenMapSync,
    doctor,
    audit,
    mcpServers,
    explain,
    startMcpProxy: ({ logger } = {}) => startProxy({ native, logger }),
    version,
    buildInfo: Object.freeze({ ...build }),
  });
  return { api, native, watchers: shared.watchers };
}
