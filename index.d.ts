/**
 * claw-identity: per-agent host-side identity for OpenClaw.
 *
 * Before an owned tool call runs (by default every `claw-os__*` MCP tool), the
 * layer sets its `auth_token` to the token of the calling agent (`ctx.agentId`)
 * from a token map file that a background watcher keeps current. The model
 * never handles the secret.
 *
 * `claw-identity` runs the native build on Linux x64 and arm64 with glibc
 * 2.34 or newer, and the WebAssembly build everywhere else (see
 * {@link buildInfo}). `claw-identity/wasm` has this same API, always on the
 * WebAssembly build.
 */

/** A logger such as OpenClaw's `api.logger`. Lines start with `[claw-identity]`. */
export interface Logger {
  info(line: string): void;
  warn(line: string): void;
  error(line: string): void;
}

/** Options of an {@link IdentityLayer} (and of the plugin's `config`). Unknown keys are an error. */
export interface IdentityOptions {
  /**
   * The token map: a JSON object `{ "<agentId>": "<64 hex token>" }`, mode 0600
   * in a directory others cannot write. A leading `~` is `$HOME`.
   * @default "~/.config/micelclaw/agent-tokens.json"
   */
  tokenMapPath?: string;
  /**
   * Tool ids starting with this prefix (or any of these) carry the agent's token.
   * @default "claw-os__"
   */
  toolPrefix?: string | string[];
  /**
   * The parameter that carries the token.
   * @default "auth_token"
   */
  tokenParam?: string;
  /**
   * An owned call whose agent has no token: `"pass"` leaves it unchanged;
   * `"block"` refuses it with a reason that names the rule, the agent and the map.
   * @default "pass"
   */
  onMissingToken?: 'pass' | 'block';
  /**
   * Accept a map readable by group or others, with a warning (Kubernetes secret
   * volumes mount 0644 unless `defaultMode` is set). A map others can write is always refused.
   * @default false
   */
  allowGroupReadable?: boolean;
  /**
   * When the map has been unreadable for longer than this many seconds, treat
   * every agent as missing, so `onMissingToken` applies. Off by default: the last
   * good map stays in force.
   */
  maxStaleSeconds?: number;
  /**
   * `"auto"`: file-system events on the map's directories (inotify on the
   * native build, Node's `fs.watch` on the WebAssembly build), falling back to
   * polling when they cannot be set up. `"poll"`: content-comparing polling
   * only (network file systems).
   * @default "auto"
   */
  watcher?: 'auto' | 'poll';
  /**
   * Polling interval, when polling is in use.
   * @default 1000
   */
  pollIntervalMs?: number;
  /**
   * Rule `map-access`: `"paths"` refuses the agents' file tools any path that
   * reaches the token map or its directory (by device and inode); `"strict"`
   * also refuses `exec`/`process` to agents outside OpenClaw's sandbox;
   * `"off"` turns the rule off. See docs/threat-model.md.
   * @default "paths"
   */
  protectMap?: 'off' | 'paths' | 'strict';
  /**
   * While an agent's own tools can reach the token map or OpenClaw's config
   * (it is not contained by a sandbox, or on the host by
   * `tools.fs.workspaceOnly` without host tools): `"enforce"` serves no
   * token, refusing every owned call with a reason that names the agents
   * and the config that contains each; `"warn"` serves tokens and logs what
   * is exposed. Judged from `openclawConfig`; without one, nobody judges it
   * and tokens are served (said once in the log). See docs/threat-model.md.
   * @default "enforce"
   */
  posture?: 'enforce' | 'warn';
  /** Configuration of the identity rules (see docs/rules.md). Every rule is on by default. */
  rules?: RulesOptions;
  /** Where log lines go. Default: warnings and errors to the console, info discarded. */
  logger?: Logger;
  /**
   * OpenClaw's session store, for the rules that need it (the plugin passes
   * one built on `api.runtime.agent.session`). Without it, delegation sessions
   * are not created and a sub-agent's conversation is its own session key.
   */
  sessions?: SessionStore;
  /**
   * OpenClaw's config (`api.config`; the plugin passes it): each agent's
   * workspace and sandbox, which `map-access` needs to resolve relative paths
   * (the hook's ctx carries neither), and what the posture is judged from.
   * Without it the posture is not judged: tokens are served, and the log says
   * so once.
   */
  openclawConfig?: Record<string, unknown>;
  /**
   * Set by the plugin: the directories it is installed (`api.rootDir`) and
   * loaded from, which rule `layer-controls` keeps the agents' tools from
   * changing.
   */
  pluginDirs?: string[];
  /**
   * Set by the plugin: a file of OpenClaw's package
   * (`require.resolve('openclaw')`), whose package root rule
   * `layer-controls` keeps the agents' tools from changing. The layer also
   * finds it from `process.argv[1]`, and guards its own directory unasked.
   */
  openclawFiles?: string[];
  /**
   * Set by the plugin: each configured agent's workspace as OpenClaw itself
   * resolves it (`api.runtime.agent.resolveAgentWorkspaceDir`). Without it,
   * `map-access` resolves an agent's relative paths against every workspace
   * OpenClaw may pick.
   */
  workspaces?: Record<string, string>;
  /**
   * The loopback MCP proxy (docs/operating.md, "The MCP proxy"): each
   * server named here is served at `http://127.0.0.1:<port>/<name>`, where
   * OpenClaw's `mcp.servers.<name>` points (`transport: "streamable-http"`).
   * Its calls carry a single-use handle instead of the token, and the
   * proxy forwards them with the agent's credential where the upstream
   * takes it. A server named here has its tools owned (no `toolPrefix`
   * needed).
   */
  proxy?: ProxyOptions;
}

export interface ProxyOptions {
  /** The proxy's port on 127.0.0.1; required with `servers`. */
  port?: number;
  /** How long a handle stays good, in ms (default 900000: longer than OpenClaw's longest plugin approval). */
  handleTtlMs?: number;
  /** By the `mcp.servers` key each one stands in for. */
  servers?: Record<string, ProxyServer>;
}

export interface ProxyServer {
  /** Streamable HTTP (`url`, static `headers`), or a stdio command, one child per agent. */
  upstream: { url: string; headers?: Record<string, string> } | { command: string; args?: string[]; env?: Record<string, string>; cwd?: string };
  /**
   * Where the upstream takes the agent's credential: `bearer` (the
   * default for a URL), a `header` of `name`, the tool `argument`
   * `tokenParam` (claw-os as it is), or the `env` var `name` (default
   * `CLAW_TOKEN`; the default for a command).
   */
  credential?: { in: 'bearer' | 'argument' } | { in: 'header'; name: string } | { in: 'env'; name?: string };
  /** The agent whose credential lists tools, resources and prompts (requests that carry no handle); without it they carry none. */
  listAs?: string;
}

/** The running proxy (`startMcpProxy`). */
export interface McpProxy {
  port: number;
  /** Each server's URL, for `mcp.servers.<name>.url`. */
  urls: Record<string, string>;
  /** True once a request came where the platform can't tell which process connected (the WebAssembly build): the handles are then the only gate. */
  readonly peerUnknown: boolean;
  stop(): Promise<void>;
}

/**
 * Starts the MCP proxy the last `configure({ proxy })` of this process
 * plans (the plugin's gateway service does this; `openclaw agent --local`
 * starts no services). Resolves to `null` when it plans none. Only this
 * process's own connections get an answer (Linux, native build).
 *
 * The proxy keeps the port, servers and upstream addresses it started
 * with; what each call is worth (its handle, the credential and where it
 * goes) is decided by the layer in force at that call. After a
 * `configure()` that changes `proxy`, `stop()` it and start it again (the
 * plugin's service does this by itself).
 */
export function startMcpProxy(options?: { logger?: Logger }): Promise<McpProxy | null>;

/** What the rules need of OpenClaw's session store. */
export interface SessionStore {
  /** Creates the session if it does not exist; leaves an existing one as it is. A rejection blocks the send. */
  ensure(agentId: string, sessionKey: string): Promise<unknown>;
  /**
   * The fields of a session's entry the rules read: who spawned it, and the
   * cwd and workspace it was spawned with (`map-access` resolves its tools'
   * relative paths there). `undefined` when the store has no entry.
   */
  entryOf?(agentId: string, sessionKey: string): { spawnedBy?: string; spawnedCwd?: string; spawnedWorkspaceDir?: string } | undefined;
  /** Without `entryOf`: the key of the session that spawned this sub-agent session (its entry's `spawnedBy`), if any. */
  spawnerOf?(agentId: string, sessionKey: string): string | undefined;
  /**
   * What OpenClaw says of a chat now, for the posture's per-chat check: whether
   * it runs in the sandbox (OpenClaw's `resolveSandboxRuntimeStatus`, which reads
   * the chat's own override), and the chat's exec and permission overrides. Read
   * at every call of a contained agent's tool that could reach the host; a throw
   * (or no `sandboxed` boolean) refuses that call. Without `now`, no per-chat
   * override is known.
   */
  now?(agentId: string, sessionKey: string): SessionNow;
}

/** A chat's state as {@link SessionStore.now} reports it. */
export interface SessionNow {
  sandboxed: boolean;
  /** `/exec host=`: `"gateway"` or `"node"` take exec out of the sandbox. */
  execHost?: string;
  execNode?: string;
  /** `/elevated`: anything but `"off"` lets exec run elevated, out of the sandbox. */
  elevatedLevel?: string;
  /** `"full"` lifts `tools.fs.workspaceOnly` for the chat. */
  permissionMode?: string;
}

/** `rules` (docs/rules.md). Unknown keys are an error. */
export interface RulesOptions {
  /** Rule `cross-user-send`. */
  crossUserSend?: {
    enabled?: boolean;
    /** `{ "<from>": { "<to>": "allow" | "ask" } }`; each side an agent id or `<userprefix>--*`. */
    grants?: Record<string, Record<string, 'allow' | 'ask'>>;
  };
  /** Rule `spawn-redirect`. */
  spawnRedirect?: { enabled?: boolean };
  /** Rule `delegation-session`. */
  delegationSession?: { enabled?: boolean };
  /** Rule `workboard-scope`. `boardPrefix` defaults to `"wb_"`. */
  workboardScope?: { enabled?: boolean; boardPrefix?: string };
  /** Rule `conversation-id`. `param` defaults to `"_conversation_id"`. */
  conversationId?: { enabled?: boolean; param?: string };
  /** Rule `layer-controls`: OpenClaw's config and the plugin's files out of the agents' tools' reach. */
  layerControls?: { enabled?: boolean };
}

/** The event OpenClaw passes to `before_tool_call` (the fields the layer reads). */
export interface ToolCallEvent {
  toolName?: unknown;
  params?: unknown;
  [key: string]: unknown;
}

/** The hook context OpenClaw passes to `before_tool_call` (the fields the layer reads). */
export interface ToolCallContext {
  agentId?: unknown;
  sessionKey?: unknown;
  [key: string]: unknown;
}

/** OpenClaw's `before_tool_call` result shape. */
export interface ToolCallResult {
  /**
   * The full params to run the tool with: every own enumerable property of
   * `event.params`, plus the rewrite, defined as own properties. A param the
   * call must run without (the model's `auth_token` when the agent has no
   * token, its `_conversation_id` when no conversation is known) is an own
   * property whose value is `undefined`.
   */
  params?: Record<string, unknown>;
  block?: true;
  /** Starts with the rule id; tells the model what to do instead. Never holds a token. */
  blockReason?: string;
  /** OpenClaw's shape; claw-identity asks per call only. */
  requireApproval?: {
    title: string;
    description: string;
    severity: 'warning';
    allowedDecisions: Array<'allow-once' | 'deny'>;
  };
}

/** Counters and map state. Never holds a token. */
export interface IdentityStats {
  /** Agents in the map in force. */
  agents: number;
  /** Whether a map was ever loaded. */
  loaded: boolean;
  /** Successful loads that put a new map in force (the first load included). */
  reloads: number;
  /** Failed load attempts (the map in force was kept). */
  reloadErrors: number;
  /** Why the map cannot be loaded right now; `null` when the file on disk is in force. */
  lastError: string | null;
  /** True while `maxStaleSeconds` has expired and every agent is treated as missing. */
  stale: boolean;
  /** Owned calls that got their agent's token. */
  injected: number;
  /** Calls left unchanged (tools the layer does not own included). */
  passed: number;
  /** Owned calls whose agent had no token (passed or blocked, per `onMissingToken`). */
  missing: number;
  /** Calls blocked or sent for approval. */
  blocked: number;
  /** Calls whose params were rewritten. */
  rewritten: number;
  /** Log lines dropped because the JS logger could not keep up. */
  logDropped: number;
  /** Internal errors caught by the hook (it never throws). */
  internalErrors: number;
  /**
   * Runs of text replaced because they held a piece of a token, in tool
   * results, transcripts and text for another agent: each is a compromise
   * signal, also logged (at most 10 lines a minute) with the agent, the tool
   * and the token's fingerprint.
   */
  redactionHits: number;
  /** `"inotify"` (native build), `"fs.watch"` (WebAssembly build), `"poll"`, `"starting"` or `"closed"`. */
  watcher: string;
  tokenMapPath: string;
  /** Whether the agents are contained, as judged from OpenClaw's config. */
  posture: Posture;
}

/** Whether the agents' own tools can reach the token map (`stats().posture`). */
export interface Posture {
  mode: 'enforce' | 'warn';
  /** False when no OpenClaw config was given: nobody judged the agents, and tokens are served. */
  judged: boolean;
  /** Whether tokens are served now: under `"enforce"`, only while every agent is contained. */
  servesTokens: boolean;
  agents: AgentPosture[];
}

export interface AgentPosture {
  /** The agent id; `"*"` stands for the agents the roster doesn't list (they get `agents.defaults`). */
  agentId: string;
  /** How it is contained, or `null` when its own tools can reach the secrets. */
  contained: 'sandbox' | 'host' | null;
  /** What exposes it, each with the config key it comes from (empty when contained). */
  exposures: { what: string; key: string }[];
  /** The config that contains it, as `openclaw config set` commands; `null` when contained. */
  fix: string | null;
}

/** One identity layer: its own map, watcher and counters. */
export class IdentityLayer {
  /** Loads the map (a missing or bad map is logged, not thrown) and starts the watcher. Throws on invalid options. */
  constructor(options?: IdentityOptions);
  /**
   * Decides one tool call. Returns `undefined` for a call it leaves alone,
   * `{ params }` with the rewrite applied to a copy (the event is not mutated),
   * `{ block: true, blockReason }`, or `{ requireApproval, params? }`. A send
   * routed to a delegation session returns a promise, settled once the session
   * exists. Never throws (nor rejects).
   */
  beforeToolCall(
    event: ToolCallEvent | null | undefined,
    ctx: ToolCallContext | null | undefined,
  ): ToolCallResult | undefined | Promise<ToolCallResult | undefined>;
  stats(): IdentityStats;
  /** Stops the watcher; the map in force stays in force. Idempotent. */
  close(): void;
  /**
   * Starts the watcher again after `close()` (the plugin's service does, when
   * OpenClaw restarts it), reading the map first. Idempotent. Throws if the
   * watcher can't be started.
   */
  watch(): void;
}

/**
 * Configures the layer the plugin uses. Idempotent: the same options return
 * the same layer; different options replace it (starting from the map the
 * old one had in force), and the module's `beforeToolCall` and the plugin's
 * registrations reach the new one from then on. Options
 * are compared as the layer resolves them, so a default written out or left
 * out is the same. One layer per JS realm (a worker has its own): every copy
 * of the plugin loaded in a realm uses the first copy's addon.
 */
export function configure(options?: IdentityOptions): IdentityLayer;

/** `beforeToolCall` of the process-wide layer (configured with defaults on first use). */
export function beforeToolCall(
  event: ToolCallEvent | null | undefined,
  ctx: ToolCallContext | null | undefined,
): ToolCallResult | undefined | Promise<ToolCallResult | undefined>;

/** Stats of the process-wide layer, or `undefined` before `configure`. */
export function stats(): IdentityStats | undefined;

/**
 * The plugin's tool-result middleware (`api.registerAgentToolResultMiddleware`):
 * `{ result }`, a copy of `event.result` in which every run of hex digits
 * that holds 16 consecutive digits of a token of the process-wide layer's
 * map (or of the previous map, for 5 minutes after a rotation), in any
 * letter case, is replaced whole by `sha256:<12 hex>`, in every string; or
 * `undefined` when it holds none. Each replacement counts in
 * `stats().redactionHits` and is logged with `ctx.agentId` and
 * `event.toolName`. Throws only for a result too deep to walk, which
 * OpenClaw then replaces with an error.
 */
export function redactToolResult(event: { result?: unknown; toolName?: string }, ctx?: { agentId?: string }): { result: unknown } | undefined;

/** The first 12 hex digits of the sha256 of `secret`: how tokens are shown. */
export function fingerprint(secret: string): string;

/** This package's version. */
export const version: string;

/** An empty native call: the cost floor, for benchmarks. */
export function noop(): void;

/** The build this process loaded. */
export interface BuildInfo {
  /** `"linux-x64-gnu"`, `"linux-arm64-gnu"` or `"wasm32-wasi"`. */
  name: string;
  /** True for a native addon, false for the WebAssembly build. */
  native: boolean;
  /** Why the loader picked it, e.g. `"no native build for darwin-arm64"`. */
  reason: string;
}
/** Which build runs: chosen by platform alone (no environment variable redirects it). */
export const buildInfo: Readonly<BuildInfo>;

/** The OpenClaw plugin entry. */
declare const plugin: {
  id: 'claw-identity';
  name: string;
  description: string;
  register(api: unknown): void;
};
export default plugin;

// ---- operator tools (bin/claw-identity.js; docs/troubleshooting.md) ----

/**
 * A token map to write: an object or `Map` of agent id to 64-hex token, or
 * its JSON text (then duplicate agent ids are caught too).
 */
export type TokenMapInput = Record<string, string> | Map<string, string> | string | Uint8Array;

export interface WrittenTokenMap {
  /** The absolute path written (`~` expanded as for `tokenMapPath`). */
  path: string;
  /** Agents in the map now. */
  agents: number;
  /** False when the file already held exactly this map, so nothing was written. */
  changed: boolean;
}

/**
 * Validates a token map with the plugin's own parser and writes it
 * atomically: nothing is written if any entry is invalid (the error names the
 * agents, never a token; `code` is `'InvalidArg'`); a missing directory is
 * created 0700; the canonical map (keys sorted) goes to a uniquely named 0600
 * temporary file in the same directory, is fsynced, checked by the plugin's
 * permission gate, renamed over the map, and the directory is fsynced. An
 * unchanged map is not rewritten. Writers in several processes never tear
 * the map: the last rename wins. Runs on the libuv thread pool.
 */
export function writeTokenMap(path: string, map: TokenMapInput): Promise<WrittenTokenMap>;

/** `writeTokenMap`, blocking the calling thread. */
export function writeTokenMapSync(path: string, map: TokenMapInput): WrittenTokenMap;

/** Where the plugin would read its map: `map`, else the config's `tokenMapPath`, else the default. */
export function resolveTokenMapPath(options?: { map?: string; config?: string }): string;

export interface DoctorCheck {
  /** The check's stable id, e.g. `posture_exposed`: as in audit's `checkId` (`claw-identity.<id>`). */
  id: string;
  /** `fail`: stops token injection for some or all agents, or sends a token out of the gateway. */
  status: 'ok' | 'warn' | 'fail' | 'skip' | 'info';
  /** The line's label, e.g. `posture` (several ids share one). */
  check: string;
  message: string;
  fix?: string;
}

export interface DoctorReport {
  ok: boolean;
  problems: number;
  warnings: number;
  /** The user the checks ran as: the gate's owner rule depends on it. */
  uid: number;
  map: string;
  config: string | null;
  mapLoaded: boolean;
  checks: DoctorCheck[];
  /** Sorted by id; `fingerprint` is null for a configured agent without a token. */
  agents: Array<{ agentId: string; fingerprint: string | null; configured?: boolean }>;
}

/**
 * How OpenClaw would launch an `mcp.servers` entry whose tools the plugin
 * owns (`mcpServers()`). Holds the config's env and headers: never print it.
 */
export interface McpServerLaunch {
  server: string;
  transport: 'stdio' | 'sse' | 'streamable-http';
  command: string | null;
  args: string[];
  env: Record<string, string>;
  cwd: string | null;
  url: string | null;
  headers: Record<string, string>;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  /** A proxied server's upstream, listed in place of OpenClaw's entry (which points at the proxy). */
  proxied?: boolean;
}

/**
 * What `doctor --mcp` and `audit --mcp` gather for the checks to judge:
 * each server's `tools/list` (or why it gave none), and the output of
 * `openclaw plugins inspect --all --runtime --json` (or why there is none).
 */
export interface LiveFacts {
  servers: Array<{ server: string; tools?: Array<{ name: string; inputSchema: unknown }>; error?: string; httpStatus?: number; stderr?: string }>;
  plugins?: unknown[];
  pluginsError?: string;
  /** Each proxied server's tools as the gateway's own proxy lists them (the `claw-identity.proxy` gateway method). */
  proxied?: Array<{ server: string; tools?: Array<{ name: string; inputSchema: unknown }>; error?: string }>;
  proxiedError?: string;
}

/** The owned `mcp.servers` entries of the gateway config at `config`, as OpenClaw would launch them. */
export function mcpServers(options: { config: string }): McpServerLaunch[];

/**
 * `claw-identity doctor` as data. `map` defaults to the path the plugin
 * reads; `config` is the gateway's `openclaw.json` (JSON5); `live` adds the
 * checks of `--mcp`.
 */
export function doctor(options?: { map?: string; config?: string; live?: LiveFacts }): { ok: boolean; text: string; report: DoctorReport };

export interface Explanation {
  tool: string;
  agent: string | null;
  sessionKey?: string;
  map: { path: string; loaded: boolean; agents: number; error?: string };
  token: { status: 'injected' | 'missing' | 'not-needed'; fingerprint?: string; why: string };
  decision: 'pass' | 'rewrite' | 'block' | 'ask';
  /** The rule that decided (for a rewrite, the first that contributed). */
  rule: string | null;
  why: string;
  /** Params a rewrite sets; a token shows as `sha256:<fingerprint>`. */
  sets: Array<{ param: string; value: string }>;
  reason?: string;
  approval?: { title: string; description: string };
  /** The call runs, with its agent's token when it needs one. */
  ok: boolean;
}

/**
 * `claw-identity explain` as data: the decision the layer would take for one
 * call, by the same `Engine::decide` the hook runs. Throws when the plugin
 * could not run with the given config.
 */
export function explain(options: { tool: string; agent?: string; params?: Record<string, unknown>; sessionKey?: string; map?: string; config?: string }): {
  ok: boolean;
  text: string;
  report: Explanation;
};

/** One finding, in OpenClaw's `SecurityAuditFinding` shape. Never holds a token. */
export interface AuditFinding {
  /** `claw-identity.<check>`, e.g. `claw-identity.map_permissions`. */
  checkId: string;
  severity: 'info' | 'warn' | 'critical';
  title: string;
  detail: string;
  /** The fix. */
  remediation?: string;
}

/**
 * The findings claw-identity adds to `openclaw security audit --deep` (and
 * `claw-identity audit` prints), for the gateway config at `config`: `ok`
 * when none is above info, `text` as the CLI prints them, `report` the findings.
 */
export function audit(options: { config: string; live?: LiveFacts }): { ok: boolean; text: string; report: AuditFinding[] };

/** An agent of the map in force, by its token's fingerprint. */
export interface AgentFingerprint {
  agentId: string;
  /** First 12 hex digits of the token's sha256. */
  fingerprint: string;
}

/**
 * The answer of the gateway method `claw-identity.status` (what
 * `openclaw claw-identity status --json` prints). Never holds a token.
 */
export interface ClawIdentityStatus {
  plugin: 'claw-identity';
  version: string;
  /** The gateway's process id. */
  pid: number;
  /** The live layer's counters and map state; `null` before the plugin configured it. */
  stats: IdentityStats | null;
  /** The map in force, sorted by agent id. */
  agents: AgentFingerprint[];
}
