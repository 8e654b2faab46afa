// claw-identity: the OpenClaw plugin entry and the JS half of the identity
// layer. Every decision is made in Rust (claw-identity.linux-x64-gnu.node);
// this file only moves values between OpenClaw and the addon.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';

if (process.platform !== 'linux' || process.arch !== 'x64') {
  throw new Error(
    `claw-identity ships a prebuilt addon for linux-x64 (glibc) only; this is ${process.platform}-${process.arch}`,
  );
}
// A literal path: OpenClaw copies plugin code and follows literal requires,
// and no environment variable can redirect which binary is loaded.
const native = createRequire(import.meta.url)('./claw-identity.linux-x64-gnu.node');

export const { fingerprint, noop } = native;

const PLUGIN_ID = 'claw-identity';
const SECRET_RUN = /[0-9a-fA-F]{16,}/g;
const kSafetyNet = Symbol('claw-identity.safetyNet');
const kAttachSessions = Symbol('claw-identity.attachSessions');
/** More spawner look-ups than this for one call means a broken session store. */
const MAX_LINEAGE_LOOKUPS = 16;
/** Tool call ids the trusted tier sent for approval, so the safety net does not ask again. */
const MAX_ASKED = 1024;

/** Text we did not write (an exception message) may hold anything: hide hex runs. */
const scrub = (text) => String(text).replace(SECRET_RUN, '<redacted>');
const str = (v) => (typeof v === 'string' ? v : undefined);

function discard() {}

const defaultLogger = {
  info: discard,
  warn: (line) => console.warn(line),
  error: (line) => console.error(line),
};

function checkLogger(logger) {
  if (logger === undefined) return defaultLogger;
  for (const level of ['info', 'warn', 'error']) {
    if (typeof logger?.[level] !== 'function') {
      throw new TypeError(`claw-identity: options.logger must have info, warn and error functions (missing ${level})`);
    }
  }
  return logger;
}

/**
 * V8 before 12 (Node 20) gives a spread copy a map that it then rebuilds for
 * every property added to it: adding the conversation id cost about 700 ns a
 * call (measured). A copy built by assignment is fast there, but slower than
 * spread when nothing is added.
 */
const SLOW_SPREAD_ADD = Number(process.versions.v8.split('.')[0]) < 12;

/** Whether setting `keys` on a copy of `params` adds a property to it. */
function addsTo(params, keys) {
  for (let i = 0; i < keys.length; i++) if (!Object.hasOwn(params, keys[i])) return true;
  return false;
}

/**
 * `{...params}` built by assignment, or undefined where assignment could
 * differ from spread's define: a symbol key, or a key Object.prototype has
 * (`__proto__`, or a setter or read-only property someone put there).
 * Checked before any value is read, so a getter still runs once.
 */
function assignedCopy(params) {
  const keys = Object.keys(params);
  for (let i = 0; i < keys.length; i++) if (keys[i] in Object.prototype) return undefined;
  if (Object.getOwnPropertySymbols(params).length !== 0) return undefined;
  const out = {};
  for (let i = 0; i < keys.length; i++) out[keys[i]] = params[keys[i]];
  return out;
}

/**
 * A copy of `params` exactly as `{...params}` makes it (own enumerable string
 * and symbol keys, getters read once). Spread would turn an own `__proto__`
 * key (JSON.parse can make one) into the copy's prototype, so that one key is
 * defined instead.
 */
function copyParams(params, adding = false) {
  if (adding) {
    const out = assignedCopy(params);
    if (out !== undefined) return out;
  }
  if (!Object.hasOwn(params, '__proto__')) return { ...params };
  const out = {};
  for (const key of Reflect.ownKeys(params)) {
    if (!Object.prototype.propertyIsEnumerable.call(params, key)) continue;
    Object.defineProperty(out, key, { value: params[key], enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * The `sessions` option: OpenClaw's session store as the rules need it.
 * `ensure(agentId, sessionKey)` creates a session if it does not exist
 * (delegation sessions); `spawnerOf(agentId, sessionKey)` returns the key
 * that spawned a sub-agent session (conversation routing).
 */
function checkSessions(sessions) {
  if (sessions === undefined) return undefined;
  if (typeof sessions?.ensure !== 'function' || typeof sessions?.spawnerOf !== 'function') {
    throw new TypeError('claw-identity: options.sessions must have ensure and spawnerOf functions');
  }
  return sessions;
}

const toolCallIdOf = (event, ctx) => str(event?.toolCallId) ?? (ctx == null ? undefined : str(ctx.toolCallId));

function alreadyApplied(params, patch) {
  for (const key of Object.keys(patch)) {
    const want = patch[key];
    if (!Object.hasOwn(params, key)) return false;
    const have = params[key];
    if (typeof want === 'object' && want !== null) {
      if (JSON.stringify(have) !== JSON.stringify(want)) return false;
    } else if (!Object.is(have, want)) {
      return false;
    }
  }
  return true;
}

export class IdentityLayer {
  #native;
  #handle;
  #prefixes;
  #tools;
  #slots;
  #logger;
  #log;
  #unowned = 0;
  #internalErrors = 0;
  #blockOnMissing;
  #warnedUntrusted = false;
  #sessions;
  #asked = new Set();
  /** toolCallId → the string rewrite this layer returned for it, so the safety net can check without deciding again. */
  #applied = new Map();

  constructor(options = {}) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new TypeError('claw-identity: options must be an object');
    }
    const { logger, sessions, ...rest } = options;
    this.#logger = checkLogger(logger);
    this.#sessions = checkSessions(sessions);
    const log = this.#logger;
    // Lines from the watcher thread arrive through the event loop; lines of
    // a decision are given to it during `decide` (see JsThreadLog in lib.rs).
    this.#log = (level, line) => {
      try {
        // Not log[level]: a level string made by N-API is not internalized, so
        // a keyed lookup with it goes through V8's string table every time.
        if (level === 'info') log.info(line);
        else if (level === 'warn') log.warn(line);
        else log.error(line);
      } catch {
        // A logger that throws must not take the watcher or a tool call down.
      }
    };
    this.#native = new native.NativeLayer(JSON.stringify(rest), this.#log, log.info !== discard);
    this.#handle = this.#native.handle;
    const interest = this.#native.interest();
    this.#prefixes = interest.prefixes;
    this.#tools = new Set(interest.tools);
    // Property keys from N-API are not internalized: every `out[slot] = v`
    // would look them up in V8's string table (measured). Internalize once.
    this.#slots = interest.slots.map((slot) => Object.keys({ [slot]: 0 })[0]);
    this.#blockOnMissing = rest.onMissingToken === 'block';
  }

  #owns(tool) {
    const prefixes = this.#prefixes;
    for (let i = 0; i < prefixes.length; i++) if (tool.startsWith(prefixes[i])) return true;
    return this.#tools.has(tool);
  }

  #decide(tool, params, ctx, quiet) {
    const agentId = ctx == null ? undefined : str(ctx.agentId);
    const sessionKey = ctx == null ? undefined : str(ctx.sessionKey);
    const json = this.#tools.has(tool) ? JSON.stringify(params) : undefined;
    let d = native.decide(this.#handle, tool, agentId, sessionKey, json, quiet, this.#log);
    // A sub-agent's conversation is its spawner's, which only OpenClaw's
    // session store knows: look it up once per session, then decide again.
    for (let n = 0; typeof d === 'object' && d.lineage !== undefined; n++) {
      if (n === MAX_LINEAGE_LOOKUPS) throw new Error('sub-agent lineage does not resolve');
      const { agentId: owner, sessionKey: child } = d.lineage;
      this.#native.noteSpawn(child, this.#spawnerOf(owner, child));
      d = native.decide(this.#handle, tool, agentId, sessionKey, json, quiet, this.#log);
    }
    return d;
  }

  #spawnerOf(agentId, sessionKey) {
    try {
      const spawner = this.#sessions?.spawnerOf(agentId, sessionKey);
      return typeof spawner === 'string' ? spawner : undefined;
    } catch (err) {
      this.#logger.warn(`[claw-identity] cannot read the spawner of a sub-agent session: ${scrub(err?.message ?? err)}`);
      return undefined;
    }
  }

  /** A decision that is not the plain string rewrite: maybe asks, maybe needs a session first. */
  #result(d, params, event, ctx) {
    if (d.approval !== undefined) this.#noteAsked(toolCallIdOf(event, ctx));
    if (d.ensureSession === undefined || this.#sessions === undefined) return toResult(d, params, this.#slots);
    return this.#ensureThen(d, params);
  }

  async #ensureThen(d, params) {
    const { agentId, sessionKey, failureReason } = d.ensureSession;
    try {
      await this.#sessions.ensure(agentId, sessionKey);
    } catch (err) {
      this.#logger.warn(
        `[claw-identity] cannot create delegation session agent=${scrub(agentId)}: ${scrub(err?.message ?? err)}`,
      );
      return { block: true, blockReason: failureReason };
    }
    return toResult(d, params, this.#slots);
  }

  #noteAsked(id) {
    if (id === undefined) return;
    if (this.#asked.size >= MAX_ASKED) this.#asked.clear();
    this.#asked.add(id);
  }

  [kAttachSessions](sessions) {
    this.#sessions = checkSessions(sessions);
  }

  /**
   * The whole decision for one tool call, in OpenClaw's hook result shape.
   * Never throws.
   */
  beforeToolCall(event, ctx) {
    let tool;
    try {
      tool = event == null ? undefined : event.toolName;
      if (typeof tool !== 'string' || !this.#owns(tool)) {
        this.#unowned++;
        return undefined;
      }
      const raw = event.params;
      const params = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? raw : {};
      const d = this.#decide(tool, params, ctx, false);
      if (d === undefined) return undefined;
      if (typeof d === 'string') {
        this.#remember(toolCallIdOf(event, ctx), d);
        return toResult(d, params, this.#slots);
      }
      return this.#result(d, params, event, ctx);
    } catch (err) {
      return this.#failed(tool, err);
    }
  }

  #remember(id, d) {
    if (id === undefined) return;
    if (this.#applied.size >= MAX_ASKED) this.#applied.clear();
    this.#applied.set(id, d);
  }

  /** The ordinary-hook safety net: a no-op when the trusted tier already did the work. */
  [kSafetyNet](event, ctx) {
    let tool;
    try {
      tool = event == null ? undefined : event.toolName;
      if (typeof tool !== 'string' || !this.#owns(tool)) return undefined;
      const raw = event.params;
      const params = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? raw : {};
      // The trusted policy decided this very call a moment ago: check that its
      // rewrite is in place instead of deciding again (a second native call).
      const id = toolCallIdOf(event, ctx);
      const applied = id === undefined ? undefined : this.#applied.get(id);
      if (applied !== undefined) {
        this.#applied.delete(id);
        if (alreadyApplied(params, patchOf(applied, this.#slots))) return undefined;
      }
      const check = this.#decide(tool, params, ctx, true);
      if (check === undefined) return undefined;
      // The trusted tier asked already (approval requests are not params, so
      // they can't be recognized as applied): asking twice would ask the user twice.
      if (check.approval !== undefined && this.#asked.delete(toolCallIdOf(event, ctx))) return undefined;
      const patch = patchOf(check, this.#slots);
      if (patch !== undefined && alreadyApplied(params, patch)) return undefined;
      if (!this.#warnedUntrusted) {
        this.#warnedUntrusted = true;
        this.#logger.error(
          '[claw-identity] the trusted tool-policy tier did not run for this call, so identity is enforced only by the ordinary before_tool_call hook: another plugin\'s hook at a lower priority can undo the rewrite and approvals may freeze the model\'s params. Declare contracts.trustedToolPolicies and enable the plugin explicitly (openclaw plugins install <tgz> --force --accept-capabilities).',
        );
      }
      const d = this.#decide(tool, params, ctx, false);
      if (d === undefined) return undefined;
      if (typeof d === 'string') return toResult(d, params, this.#slots);
      return this.#result(d, params, event, ctx);
    } catch (err) {
      return this.#failed(tool, err);
    }
  }

  #failed(tool, err) {
    this.#internalErrors++;
    try {
      this.#logger.error(`[claw-identity] internal error deciding tool=${scrub(tool)}: ${scrub(err?.message ?? err)}`);
    } catch {
      // nothing left to report to
    }
    if (typeof tool !== 'string') return undefined;
    // Fail closed where passing would bypass a guard: the rules' own tools
    // (the cross-user guard denies by default), and every owned tool under
    // onMissingToken "block".
    if (this.#tools.has(tool) || (this.#blockOnMissing && this.#owns(tool))) {
      return {
        block: true,
        blockReason: `${this.#tools.has(tool) ? 'claw-identity' : 'auth-token'}: claw-identity could not decide this call, so it was not run; do not retry it. The operator will find the error in the gateway log.`,
      };
    }
    return undefined;
  }

  /** Counters and map state; never holds a token. */
  stats() {
    const s = this.#native.stats();
    s.passed += this.#unowned;
    s.lastError ??= null;
    s.internalErrors = this.#internalErrors;
    return s;
  }

  /** Stops the watcher. The map in force stays in force. Idempotent. */
  close() {
    this.#native.close();
  }
}

/**
 * The patch a decision sets. `decide` returns a rewrite of only the layer's
 * slots (the token, the conversation id) as one string: the slot values in
 * order, NUL-separated, empty for a slot left alone. An N-API object costs
 * about 1 µs to build; a string about 50 ns.
 */
function patchOf(d, slots) {
  if (typeof d !== 'string') return d.patch;
  const patch = {};
  applySlots(patch, d, slots);
  return patch;
}

function applySlots(out, d, slots) {
  if (slots.length === 1) {
    out[slots[0]] = d;
    return;
  }
  if (slots.length === 2) {
    // The usual pair (the token, the conversation), one store site each: the
    // loop's single site sees both keys and goes megamorphic (measured).
    let cut = d.indexOf('\0');
    if (cut < 0) cut = d.length;
    if (cut > 0) out[slots[0]] = d.slice(0, cut);
    if (cut + 1 < d.length) out[slots[1]] = d.slice(cut + 1);
    return;
  }
  let start = 0;
  for (let i = 0; i < slots.length; i++) {
    let end = d.indexOf('\0', start);
    if (end < 0) end = d.length;
    if (end > start) out[slots[i]] = d.slice(start, end);
    start = end + 1;
  }
}

function toResult(d, params, slots) {
  if (typeof d === 'string') {
    const out = copyParams(params, SLOW_SPREAD_ADD && addsTo(params, slots));
    applySlots(out, d, slots);
    return { params: out };
  }
  if (d.block !== undefined) return { block: true, blockReason: d.block };
  let out;
  if (d.patch !== undefined) {
    out = copyParams(params);
    for (const key of Object.keys(d.patch)) out[key] = d.patch[key];
  }
  if (d.approval !== undefined) {
    // OpenClaw's requireApproval shape (docs/plugins/hooks/tool-policy.md).
    const { title, description, severity, allowedDecisions } = d.approval;
    const requireApproval = { title, description, severity, allowedDecisions };
    return out === undefined ? { requireApproval } : { params: out, requireApproval };
  }
  return out === undefined ? undefined : { params: out };
}

/**
 * OpenClaw's session store, for the rules that need it: `ensure` creates a
 * delegation session if it is missing (create-only and atomic: an existing
 * session is left exactly as it is); `spawnerOf` reads which session spawned
 * a sub-agent session (its entry's `spawnedBy`).
 */
function sessionStoreOf(api) {
  let store;
  try {
    store = api.runtime?.agent?.session;
  } catch {
    return undefined;
  }
  if (typeof store?.patchSessionEntry !== 'function' || typeof store?.getSessionEntry !== 'function') return undefined;
  return {
    ensure: (agentId, sessionKey) =>
      store.patchSessionEntry({
        agentId,
        sessionKey,
        fallbackEntry: { sessionId: randomUUID(), updatedAt: Date.now() },
        update: (_entry, context) => (context?.existingEntry === undefined ? {} : undefined),
      }),
    spawnerOf: (agentId, sessionKey) => {
      const spawnedBy = store.getSessionEntry({ agentId, sessionKey })?.spawnedBy;
      return typeof spawnedBy === 'string' ? spawnedBy : undefined;
    },
  };
}

let shared;
let sharedKey;

/**
 * Configures the process-wide layer. Idempotent: the same options keep the
 * same layer (and its watcher); different options replace it.
 */
export function configure(options = {}) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError('claw-identity: options must be an object');
  }
  const { logger, sessions, ...rest } = options;
  const key = JSON.stringify(rest);
  if (shared !== undefined && key === sharedKey) {
    if (sessions !== undefined) shared[kAttachSessions](sessions);
    return shared;
  }
  const next = new IdentityLayer(options);
  shared?.close();
  shared = next;
  sharedKey = key;
  return shared;
}

/** `beforeToolCall` of the process-wide layer (configured with defaults if `configure` was never called). */
export function beforeToolCall(event, ctx) {
  return (shared ?? configure()).beforeToolCall(event, ctx);
}

/** Stats of the process-wide layer, or `undefined` before `configure`. */
export function stats() {
  return shared?.stats();
}

// ---- operator tools: writeTokenMap, and the reports behind bin/claw-identity.js ----

/** The map path the plugin would read: `map` (or the config's tokenMapPath, or the default), `~` expanded. */
export function resolveTokenMapPath({ map, config } = {}) {
  return native.opsMapPath(map, config);
}

const NOT_JSON = new Set(['undefined', 'function', 'symbol', 'bigint']);

function tokenMapBytes(map) {
  if (typeof map === 'string') return Buffer.from(map, 'utf8');
  if (ArrayBuffer.isView(map)) return Buffer.from(map.buffer, map.byteOffset, map.byteLength);
  if (map instanceof Map) map = Object.fromEntries(map);
  if (map === null || typeof map !== 'object' || Array.isArray(map)) {
    throw new TypeError('claw-identity: writeTokenMap(path, map): map must be an object of agent id to token, a Map, or JSON text');
  }
  // JSON.stringify would drop an entry whose value it cannot encode; make it
  // null instead, so validation refuses that agent by name.
  return Buffer.from(JSON.stringify(map, (key, value) => (key !== '' && NOT_JSON.has(typeof value) ? null : value)));
}

function writeArgs(path, map) {
  if (typeof path !== 'string' || path === '') {
    throw new TypeError('claw-identity: writeTokenMap(path, map): path must be a non-empty string');
  }
  return [native.opsMapPath(path, undefined), tokenMapBytes(map)];
}

/**
 * Validates a token map and writes it atomically (0600 temp file, fsync,
 * rename, fsync of the directory); skips the write when the file already
 * holds exactly this map. Resolves to `{ path, agents, changed }`.
 */
export function writeTokenMap(path, map) {
  try {
    return native.opsWriteMap(...writeArgs(path, map));
  } catch (err) {
    return Promise.reject(err);
  }
}

/** `writeTokenMap`, blocking the calling thread. */
export function writeTokenMapSync(path, map) {
  return native.opsWriteMapSync(...writeArgs(path, map));
}

/** `claw-identity doctor` as data: `{ ok, text, report }`. */
export function doctor({ map, config } = {}) {
  const r = native.opsDoctor(map, config);
  return { ok: r.ok, text: r.text, report: JSON.parse(r.json) };
}

/** `claw-identity explain` as data: `{ ok, text, report }`. */
export function explain({ agent, tool, params, sessionKey, map, config } = {}) {
  if (typeof tool !== 'string') throw new TypeError('claw-identity: explain(): tool must be a string');
  const paramsJson = params === undefined ? undefined : JSON.stringify(params);
  const r = native.opsExplain({ map, config, agent, tool, sessionKey, paramsJson });
  return { ok: r.ok, text: r.text, report: JSON.parse(r.json) };
}

export default {
  id: PLUGIN_ID,
  name: 'claw-identity',
  description:
    "Per-agent identity for MCP tools: injects each agent's auth_token from a live token map, and enforces the identity rules.",
  register(api) {
    // Every registration's: OpenClaw may import this module again for a later
    // (discovery) registration whose policy and hooks are then the ones that run.
    const sessions = sessionStoreOf(api);
    const layer = configure({ ...(api.pluginConfig ?? {}), logger: api.logger, sessions });
    let tier = 'the ordinary before_tool_call hook only (this OpenClaw has no trusted tool policies)';
    if (typeof api.registerTrustedToolPolicy === 'function') {
      api.registerTrustedToolPolicy({
        id: PLUGIN_ID,
        description: "Sets each agent's auth_token and enforces claw-identity's rules before any ordinary hook runs.",
        evaluate: (event, ctx) => layer.beforeToolCall(event, ctx),
      });
      tier = 'the trusted tool-policy tier, with the before_tool_call hook (priority 100) as a safety net';
    }
    api.on('before_tool_call', (event, ctx) => layer[kSafetyNet](event, ctx), { priority: 100 });
    if (api.registrationMode === 'full') {
      api.logger.info(`[claw-identity] identity is enforced by ${tier}`);
      if (sessions === undefined) {
        api.logger.warn(
          "[claw-identity] this OpenClaw offers no session store to plugins (api.runtime.agent.session): delegation sessions can't be created, so redirected sessions_send calls will fail, and sub-agent calls carry their own session as _conversation_id",
        );
      }
    }
  },
};
