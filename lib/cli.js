// claw-identity's operator commands: `claw-identity <command>` (bin/) and
// `openclaw claw-identity <command>` (registered by the plugin). One parser
// and one printer for both, so they print the same report for the same
// inputs. Every check and decision is made in Rust, by the same code the
// plugin runs; this module parses arguments, prints, and returns the exit
// status. It runs with `io`: how to print, the program's name, the API of a
// build (`io.lib()`, loaded only when a command needs it), how to load the
// MCP SDK (`io.mcpSdk()`), and, under OpenClaw, the gateway client, the
// active config and OpenClaw's plugin list. Of the package it imports only
// lib/probe.js (which loads no build), so it can be tested in-process with
// any `io`.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

import { firstMcpSdk } from './mcp-sdk.js';
import { hostMcpSdk, inspectPlugins, listTools, ownMcpSdk } from './probe.js';

const EXIT_OK = 0;
const EXIT_PROBLEM = 1;
const EXIT_USAGE = 2;

const MAP_OPTIONS = `  --map PATH       the token map (default: the config's tokenMapPath, else
                   ~/.config/micelclaw/agent-tokens.json, as the plugin)
  --config FILE    the gateway's openclaw.json (JSON5): the plugin's options,
                   whether OpenClaw loads it, and the configured agents`;

/** The help texts, for the command as it is invoked (`claw-identity` or `openclaw claw-identity`). */
const helpFor = (prog) => ({
  main: `Usage: ${prog} <command> [options]

Commands:
  doctor      check the token map and the plugin's config; print agents by fingerprint
  explain     print the decision the layer would take for one tool call
  write-map   validate a token map and write it atomically
  audit       print claw-identity's security-audit findings for a gateway config
  status      ask the running OpenClaw gateway for the live layer: map, reloads, counters

Run ${prog} <command> --help for its options.
Tokens are never printed: only fingerprints (first 12 hex of their sha256).

Exit status: 0 ok, 1 a problem was found (see each command), 2 usage error.
`,
  doctor: `Usage: ${prog} doctor [--map PATH] [--config FILE] [--mcp] [--json]

Checks what decides whether agents get their token: the map's permissions
(through the plugin's own gate, as the user running doctor: run it as the
gateway's user), its JSON and every entry, and, with --config, whether
OpenClaw loads the plugin at all, which configured agents have no token,
and the settings that send a token past the hook (OTEL content capture,
exec completion notices). Prints each problem with its fix, and the agents
with token fingerprints.

${MAP_OPTIONS}
  --mcp            also connect to each server of the config's mcp.servers
                   whose tools the plugin owns, list its tools (no tool is
                   called, no token is sent) and check that each declares
                   the params the plugin injects, as optional; under
                   OpenClaw, also ask it which other plugins get the token
  --json           print the report as JSON
  -h, --help       this help

Exit status: 0 nothing found stops token injection (warnings allowed),
             1 at least one problem (FAIL) stops it for some or all agents,
               or sends a token out of the gateway,
             2 usage error.
`,
  explain: `Usage: ${prog} explain [--agent ID] --tool NAME [--params JSON]
${' '.repeat(prog.length + 16)}[--session-key KEY] [--map PATH] [--config FILE] [--json]

Prints the decision the layer would take for one call (pass, rewrite, block
or ask), the rule that took it and why, by running the plugin's decision code
on the map as it is now. Token values show as sha256 fingerprints.

  --agent ID       the calling agent (ctx.agentId); without it, a call that
                   has no agent id
  --tool NAME      the tool id, as OpenClaw names it (e.g. claw-os__claw_notes)
  --params JSON    the call's params, a JSON object (default {})
  --session-key K  the calling session (ctx.sessionKey)
${MAP_OPTIONS}
  --json           print the explanation as JSON
  -h, --help       this help

Exit status: 0 the call runs, with its agent's token when it needs one,
             1 the call is blocked, or needs a token and gets none, or the
               plugin could not run with this config,
             2 usage error.
`,
  'write-map': `Usage: ${prog} write-map --from FILE|- [--map PATH] [--config FILE] [--json]

Validates a token map {"<agentId>": "<64 hex token>"} with the plugin's own
parser and writes it atomically: nothing is written if any entry is invalid;
a missing directory is created 0700; the map is written 0600 to a temporary
file in the same directory, fsynced, renamed over the map, and the directory
is fsynced. A map that already holds exactly this content is not rewritten.
Tokens are never echoed.

  --from FILE|-    read the map from FILE, or from standard input
${MAP_OPTIONS}
  --json           print {path, agents, changed} as JSON
  -h, --help       this help

Exit status: 0 written, or already up to date,
             1 refused (invalid map, unsafe directory) or failed: the map
               on disk is the one that was there before,
             2 usage error.
`,
  audit: `Usage: ${prog} audit [--config FILE] [--mcp] [--json]

Prints the findings claw-identity adds to \`openclaw security audit --deep\`,
each with its fix: whether OpenClaw loads the plugin and its trusted policy,
the map's owner and permissions, the map within reach of agents' file and
shell tools, OpenClaw settings that open sessions across users or send a
token past the hook (OTEL content capture, exec completion notices), and
options that weaken the layer (onMissingToken "pass" with agents missing
from the map, allowGroupReadable). OpenClaw 2026.9.6 runs plugin collectors
only inside a process that has loaded the plugin, which
\`openclaw security audit\` is not, so this command is how to see them
there. No token is printed.

  --config FILE    the gateway's openclaw.json (JSON5); under OpenClaw, its
                   own config by default
  --mcp            also check the owned MCP servers' tool schemas and, under
                   OpenClaw, which other plugins get the token (as doctor --mcp)
  --json           print the findings as JSON (OpenClaw's finding shape)
  -h, --help       this help

Exit status: 0 no critical or warn finding,
             1 at least one critical or warn finding,
             2 usage error.
`,
  status: `Usage: ${prog} status [--url URL] [--timeout MS] [--json]

Asks the running OpenClaw gateway (method claw-identity.status) about the
live identity layer: the map in force, its agents by token fingerprint, its
reloads and last error, the watcher, and the decision counters. It goes
through OpenClaw's gateway client, so it needs \`openclaw claw-identity status\`
(the standalone claw-identity command has no gateway client).

  --url URL        the gateway's WebSocket URL (default: the local gateway of
                   the OpenClaw config)
  --timeout MS     how long to wait for the answer (default 10000)
  --json           print the gateway's answer as JSON
  -h, --help       this help

Exit status: 0 the gateway answered and the map in force is loaded,
             1 no gateway answers, claw-identity does not run in it, or
               its map is not loaded,
             2 usage error.
`,
});
const COMMON = {
  map: { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

const COMMANDS = {
  doctor: { options: { mcp: { type: 'boolean' } }, required: [], run: runDoctor },
  explain: {
    options: {
      agent: { type: 'string' },
      tool: { type: 'string' },
      params: { type: 'string' },
      'session-key': { type: 'string' },
    },
    required: ['tool'],
    run: runExplain,
  },
  'write-map': { options: { from: { type: 'string' } }, required: ['from'], run: runWriteMap },
  audit: { options: { mcp: { type: 'boolean' } }, required: ['config'], run: runAudit },
  status: {
    options: { url: { type: 'string' }, timeout: { type: 'string' }, json: { type: 'boolean' }, help: COMMON.help },
    common: false,
    required: [],
    run: runStatus,
  },
};

/** A mistake in the command line: exit status 2, with a pointer to --help. */
class UsageError extends Error {
  constructor(message, command) {
    super(message);
    this.command = command;
  }
}

const line = (text) => (text.endsWith('\n') ? text : `${text}\n`);

/** How the standalone `claw-identity` command prints: no gateway client, no active config. */
export const STANDALONE = {
  prog: 'claw-identity',
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  /** The MCP SDK is an optional dependency of claw-identity. */
  mcpSdk: () => firstMcpSdk([["claw-identity's dependencies", ownMcpSdk]]),
};

/**
 * `--mcp`: what only a live system tells, for Rust to judge. The tools of
 * each MCP server the plan names, and, where `io` can ask OpenClaw, its
 * loaded plugins and their hooks.
 */
async function gatherLive(config, lib, io) {
  const launches = lib.mcpServers({ config });
  let servers = [];
  if (launches.length > 0) {
    try {
      servers = await listTools(launches, await io.mcpSdk(), { version: lib.version });
    } catch (e) {
      servers = launches.map((l) => ({ server: l.server, error: String(e?.message ?? e) }));
    }
  }
  // What the model sees through the proxy: only the gateway can use it, so
  // the gateway lists each proxied server through it (lib/proxy.js).
  let proxied = {};
  if (typeof io.callGateway === 'function' && launches.some((l) => l.proxied)) {
    try {
      proxied = { proxied: await io.callGateway('claw-identity.proxy', { timeout: '15000' }) };
    } catch (e) {
      proxied = { proxiedError: `the gateway did not list them (${String(e?.message ?? e)})` };
    }
  }
  let plugins = {};
  if (typeof io.inspectPlugins === 'function') {
    io.warn('claw-identity: asking OpenClaw which plugins are loaded, and with which hooks (openclaw plugins inspect --all --runtime --json)...');
    plugins = await io.inspectPlugins(config);
  }
  return { servers, ...proxied, ...plugins };
}

const MCP_NEEDS_CONFIG = "--mcp needs --config FILE: the MCP servers are those of the gateway config's mcp.servers";

async function runDoctor(o, lib, io) {
  if (o.mcp && o.config === undefined) throw new UsageError(MCP_NEEDS_CONFIG);
  const live = o.mcp ? await gatherLive(o.config, lib, io) : undefined;
  let r;
  try {
    r = lib.doctor({ map: o.map, config: o.config, live });
  } catch (e) {
    // Only when there is no map path to check (no --map, and ~ cannot be expanded).
    throw new UsageError(e.message.replace(/^claw-identity: /, ''));
  }
  if (o.json) io.json(r.report);
  else io.say(r.text);
  return r.ok ? EXIT_OK : EXIT_PROBLEM;
}

async function runExplain(o, lib, io) {
  let params;
  if (o.params !== undefined) {
    try {
      params = JSON.parse(o.params);
    } catch {
      throw new UsageError('--params is not valid JSON');
    }
    if (params === null || typeof params !== 'object' || Array.isArray(params)) {
      throw new UsageError('--params must be a JSON object');
    }
  }
  let r;
  try {
    r = lib.explain({ agent: o.agent, tool: o.tool, params, sessionKey: o['session-key'], map: o.map, config: o.config });
  } catch (e) {
    io.warn(e.message);
    return EXIT_PROBLEM;
  }
  if (o.json) io.json(r.report);
  else io.say(r.text);
  return r.ok ? EXIT_OK : EXIT_PROBLEM;
}

async function runWriteMap(o, lib, io) {
  let input;
  try {
    input = fs.readFileSync(o.from === '-' ? 0 : o.from);
  } catch (e) {
    throw new UsageError(`cannot read --from ${o.from}: ${e.code ?? e.message}`);
  }
  let path;
  let w;
  try {
    path = lib.resolveTokenMapPath({ map: o.map, config: o.config });
    w = lib.writeTokenMapSync(path, input);
  } catch (e) {
    io.warn(e.message);
    return EXIT_PROBLEM;
  }
  const agents = `${w.agents} agent${w.agents === 1 ? '' : 's'}`;
  if (o.json) io.json(w);
  else io.say(w.changed ? `wrote ${w.path} (${agents})` : `unchanged: ${w.path} already holds this map (${agents}); not rewritten`);
  return EXIT_OK;
}

async function runAudit(o, lib, io) {
  if (o.map !== undefined) throw new UsageError('--map is not an audit option: the map is the one the config names');
  const live = o.mcp ? await gatherLive(o.config, lib, io) : undefined;
  const r = lib.audit({ config: o.config, live });
  if (o.json) io.json(r.report);
  else io.say(r.text);
  return r.ok ? EXIT_OK : EXIT_PROBLEM;
}

/** One line on whether the agents are contained (`stats().posture`). */
function postureLine(p) {
  if (!p) return 'unknown';
  if (!p.judged) return `not judged (no OpenClaw config was given); tokens are served (${p.mode})`;
  const exposed = p.agents.filter((a) => a.contained === null).length;
  if (exposed === 0) return `every agent contained (${p.mode}); tokens are served`;
  if (!p.servesTokens) return `CRITICAL: ${exposed} not contained, so NO token is served (enforce)`;
  return `${exposed} not contained; tokens are served anyway (warn)`;
}

/** The gateway's `claw-identity.status` answer, for a terminal. */
export function renderStatus(s) {
  const st = s.stats;
  if (!st) return `claw-identity status (gateway pid ${s.pid})\n\nthe plugin is registered but its layer is not configured yet\n`;
  const rows = [
    ['map', `${st.tokenMapPath} (${st.loaded ? 'loaded' : 'NOT loaded'}${st.stale ? ', stale' : ''})`],
    ['agents', String(st.agents)],
    ['reloads', `${st.reloads} (${st.reloadErrors} failed)`],
    ['last error', st.lastError ?? 'none'],
    ['watcher', st.watcher],
    ['calls', `injected ${st.injected}, passed ${st.passed}, missing ${st.missing}, blocked ${st.blocked}, rewritten ${st.rewritten}`],
    ['internal', `errors ${st.internalErrors}, log lines dropped ${st.logDropped}`],
    ['posture', postureLine(st.posture)],
  ];
  let out = `claw-identity status (gateway pid ${s.pid}, plugin ${s.version})\n`;
  for (const [k, v] of rows) out += `  ${k.padEnd(10)}  ${v}\n`;
  out += '\n';
  // Each exposed agent, with the config that contains it (built in Rust).
  for (const a of st.posture?.agents ?? []) {
    if (a.contained !== null) continue;
    const who = a.agentId === '*' ? "the agents the roster doesn't list" : a.agentId;
    out += `${st.posture.servesTokens ? 'EXPOSED' : 'CRITICAL'}  ${who}: ${a.exposures.map((e) => `${e.what} (${e.key})`).join('; ')}\n`;
    if (a.fix) out += `  fix: ${a.fix}\n`;
  }
  if ((st.posture?.agents ?? []).some((a) => a.contained === null)) out += '\n';
  const agents = s.agents ?? [];
  if (agents.length === 0) out += 'agents: none in the map in force\n';
  else {
    const width = Math.max(5, ...agents.map((a) => a.agentId.length));
    out += `${'AGENT'.padEnd(width)}  TOKEN SHA256\n`;
    for (const a of agents) out += `${a.agentId.padEnd(width)}  ${a.fingerprint}\n`;
  }
  return out;
}

/** Errors that mean no gateway answered (as OpenClaw's own CLIs classify them). */
const UNAVAILABLE = /econnrefused|econnreset|ehostunreach|enotfound|gateway not connected|gateway unavailable|gateway closed|timeout|timed out/i;

async function runStatus(o, _lib, io) {
  if (typeof io.callGateway !== 'function') {
    io.warn(
      `${io.prog} status asks the running OpenClaw gateway, through OpenClaw's gateway client: run openclaw claw-identity status (${io.prog} doctor checks the map on disk without a gateway)`,
    );
    return EXIT_PROBLEM;
  }
  if (o.timeout !== undefined && !/^[1-9][0-9]*$/.test(o.timeout)) throw new UsageError('--timeout must be a whole number of milliseconds');
  let s;
  try {
    s = await io.callGateway('claw-identity.status', { url: o.url, timeout: o.timeout ?? '10000' });
  } catch (e) {
    const msg = String(e?.message ?? e);
    if (/unknown method/i.test(msg))
      io.warn(
        `the gateway answers, but claw-identity does not run in it (${msg}): check plugins.entries.claw-identity.enabled and run openclaw plugins inspect claw-identity --runtime`,
      );
    else if (UNAVAILABLE.test(msg))
      io.warn(
        `no gateway is running (or it does not answer): ${msg}\nstart it with openclaw gateway run; ${io.prog} doctor checks the map on disk without a gateway`,
      );
    else io.warn(`the gateway refused claw-identity.status: ${msg}`);
    return EXIT_PROBLEM;
  }
  if (o.json) io.json(s);
  else io.say(renderStatus(s));
  return s.stats?.loaded && s.stats?.posture?.servesTokens !== false ? EXIT_OK : EXIT_PROBLEM;
}

async function main(argv, io) {
  const HELP = helpFor(io.prog);
  const [name, ...rest] = argv;
  if (name === undefined) {
    io.warn(HELP.main);
    return EXIT_USAGE;
  }
  if (name === '-h' || name === '--help') {
    io.say(HELP.main);
    return EXIT_OK;
  }
  if (name === '--version') {
    io.say((await io.lib()).version);
    return EXIT_OK;
  }
  if (name === 'help') {
    const topic = rest[0] ?? 'main';
    if (!Object.hasOwn(HELP, topic)) throw new UsageError(`no such command: ${topic}`);
    io.say(HELP[topic]);
    return EXIT_OK;
  }
  if (!Object.hasOwn(COMMANDS, name)) throw new UsageError(`no such command: ${name}`);
  const cmd = COMMANDS[name];
  let values;
  try {
    const options = cmd.common === false ? cmd.options : { ...COMMON, ...cmd.options };
    ({ values } = parseArgs({ args: rest, options, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new UsageError(e.message, name);
  }
  if (values.help) {
    io.say(HELP[name]);
    return EXIT_OK;
  }
  // Under OpenClaw, the config is the gateway's own unless --config names another.
  if (cmd.common !== false && values.config === undefined && io.activeConfig) values.config = await io.activeConfig();
  const missing = cmd.required.filter((k) => values[k] === undefined);
  if (missing.length > 0) {
    throw new UsageError(`missing ${missing.map((k) => `--${k}`).join(', ')}`, name);
  }
  // Loaded only now, so --help works even where the addon cannot load.
  const lib = await io.lib();
  try {
    return await cmd.run(values, lib, io);
  } catch (e) {
    if (e instanceof UsageError) e.command = name;
    throw e;
  }
}

/**
 * Runs one command line (`argv` without the program name) and resolves to
 * its exit status; it never rejects. `io`: `{ prog, out(text), err(text),
 * lib(), mcpSdk() }` (`lib` resolves to the API of a build, `mcpSdk` to
 * the MCP SDK's client classes), and under OpenClaw `callGateway(method,
 * opts)`, `activeConfig()` and `inspectPlugins(config)`.
 */
export async function run(argv, io) {
  const p = {
    ...io,
    say: (text) => io.out(line(text)),
    warn: (text) => io.err(line(text)),
    json: (value) => io.out(line(JSON.stringify(value, null, 2))),
  };
  try {
    return await main(argv, p);
  } catch (e) {
    if (e instanceof UsageError) {
      const where = e.command ? `${io.prog} ${e.command}` : io.prog;
      p.warn(`${where}: ${e.message}\nRun ${where} --help for usage.`);
      return EXIT_USAGE;
    }
    p.warn(`claw-identity: ${e?.message ?? e}`);
    return EXIT_PROBLEM;
  }
}

// ---- under OpenClaw: `openclaw claw-identity <command>` ----

/**
 * A module of the running OpenClaw's plugin SDK. An installed plugin
 * resolves `openclaw` through the link OpenClaw makes for its host peer; a
 * plugin loaded from a folder (plugins.load.paths) has no such link, so the
 * SDK is resolved from the running `openclaw` entry point itself.
 */
async function hostSdk(name) {
  const spec = `openclaw/plugin-sdk/${name}`;
  try {
    return await import(spec);
  } catch (first) {
    const entry = process.argv[1] && fs.realpathSync(process.argv[1]);
    if (!entry) throw first;
    const { pathToFileURL } = await import('node:url');
    return import(pathToFileURL(createRequire(entry).resolve(spec)).href);
  }
}

const OPENCLAW = {
  prog: 'openclaw claw-identity',
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  /** OpenClaw's own MCP SDK (it connects its servers with it), else claw-identity's. */
  mcpSdk: () =>
    firstMcpSdk([
      ['OpenClaw', () => hostMcpSdk()],
      ["claw-identity's dependencies", ownMcpSdk],
    ]),
  inspectPlugins: (config) => inspectPlugins(config),
  async callGateway(method, { url, timeout }) {
    const { callGatewayFromCli } = await hostSdk('gateway-runtime');
    return callGatewayFromCli(method, { url, timeout }, {}, { mode: 'cli', scopes: ['operator.read'] });
  },
  /** The config file of the OpenClaw running this command, if it exists. */
  async activeConfig() {
    const { resolveConfigPath } = await hostSdk('state-paths');
    const file = resolveConfigPath(process.env);
    return fs.existsSync(file) ? file : undefined;
  },
};

/**
 * Adds `claw-identity` to OpenClaw's command tree. Its arguments go to `run`
 * untouched, so the commands, options, help and output are exactly those of
 * the standalone command.
 */
export function registerOpenClawCommand(program, { name, description }, lib) {
  program
    .command(name)
    .description(description)
    .helpOption(false)
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .argument('[args...]')
    .action(async (args) => {
      process.exitCode = await run(args ?? [], { ...OPENCLAW, lib: async () => lib });
    });
}
