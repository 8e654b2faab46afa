#!/usr/bin/env node
// claw-identity: operator commands over the native functions of index.js.
// Every check and decision is made in Rust, by the same code the plugin runs;
// this script parses arguments, prints, and sets the exit status.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const EXIT_OK = 0;
const EXIT_PROBLEM = 1;
const EXIT_USAGE = 2;

const MAP_OPTIONS = `  --map PATH       the token map (default: the config's tokenMapPath, else
                   ~/.config/micelclaw/agent-tokens.json, as the plugin)
  --config FILE    the gateway's openclaw.json (JSON5): the plugin's options,
                   whether OpenClaw loads it, and the configured agents`;

const HELP = {
  main: `Usage: claw-identity <command> [options]

Commands:
  doctor      check the token map and the plugin's config; print agents by fingerprint
  explain     print the decision the layer would take for one tool call
  write-map   validate a token map and write it atomically

Run claw-identity <command> --help for its options.
Tokens are never printed: only fingerprints (first 12 hex of their sha256).

Exit status: 0 ok, 1 a problem was found (see each command), 2 usage error.
`,
  doctor: `Usage: claw-identity doctor [--map PATH] [--config FILE] [--json]

Checks what decides whether agents get their token: the map's permissions
(through the plugin's own gate, as the user running doctor: run it as the
gateway's user), its JSON and every entry, and, with --config, whether
OpenClaw loads the plugin at all and which configured agents have no token.
Prints each problem with its fix, and the agents with token fingerprints.

${MAP_OPTIONS}
  --json           print the report as JSON
  -h, --help       this help

Exit status: 0 nothing found stops token injection (warnings allowed),
             1 at least one problem (FAIL) stops it for some or all agents,
             2 usage error.
`,
  explain: `Usage: claw-identity explain [--agent ID] --tool NAME [--params JSON]
                             [--session-key KEY] [--map PATH] [--config FILE] [--json]

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
  'write-map': `Usage: claw-identity write-map --from FILE|- [--map PATH] [--config FILE] [--json]

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
};

const COMMON = {
  map: { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

const COMMANDS = {
  doctor: { options: {}, required: [], run: runDoctor },
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
};

/** A mistake in the command line: exit status 2, with a pointer to --help. */
class UsageError extends Error {
  constructor(message, command) {
    super(message);
    this.command = command;
  }
}

const out = (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
const err = (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
const json = (value) => out(JSON.stringify(value, null, 2));

async function runDoctor(o, lib) {
  let r;
  try {
    r = lib.doctor({ map: o.map, config: o.config });
  } catch (e) {
    // Only when there is no map path to check (no --map, and ~ cannot be expanded).
    throw new UsageError(e.message.replace(/^claw-identity: /, ''));
  }
  if (o.json) json(r.report);
  else out(r.text);
  return r.ok ? EXIT_OK : EXIT_PROBLEM;
}

async function runExplain(o, lib) {
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
    err(e.message);
    return EXIT_PROBLEM;
  }
  if (o.json) json(r.report);
  else out(r.text);
  return r.ok ? EXIT_OK : EXIT_PROBLEM;
}

async function runWriteMap(o, lib) {
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
    err(e.message);
    return EXIT_PROBLEM;
  }
  const agents = `${w.agents} agent${w.agents === 1 ? '' : 's'}`;
  if (o.json) json(w);
  else out(w.changed ? `wrote ${w.path} (${agents})` : `unchanged: ${w.path} already holds this map (${agents}); not rewritten`);
  return EXIT_OK;
}

async function main(argv) {
  const [name, ...rest] = argv;
  if (name === undefined) {
    err(HELP.main);
    return EXIT_USAGE;
  }
  if (name === '-h' || name === '--help') {
    out(HELP.main);
    return EXIT_OK;
  }
  if (name === '--version') {
    out(createRequire(import.meta.url)('../package.json').version);
    return EXIT_OK;
  }
  if (name === 'help') {
    const topic = rest[0] ?? 'main';
    if (!Object.hasOwn(HELP, topic)) throw new UsageError(`no such command: ${topic}`);
    out(HELP[topic]);
    return EXIT_OK;
  }
  if (!Object.hasOwn(COMMANDS, name)) throw new UsageError(`no such command: ${name}`);
  const cmd = COMMANDS[name];
  let values;
  try {
    ({ values } = parseArgs({ args: rest, options: { ...COMMON, ...cmd.options }, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new UsageError(e.message, name);
  }
  if (values.help) {
    out(HELP[name]);
    return EXIT_OK;
  }
  const missing = cmd.required.filter((k) => values[k] === undefined);
  if (missing.length > 0) {
    throw new UsageError(`missing ${missing.map((k) => `--${k}`).join(', ')}`, name);
  }
  // Loaded only now, so --help works even where the addon cannot load.
  const lib = await import('../index.js');
  try {
    return await cmd.run(values, lib);
  } catch (e) {
    if (e instanceof UsageError) e.command = name;
    throw e;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    if (e instanceof UsageError) {
      const where = e.command ? `claw-identity ${e.command}` : 'claw-identity';
      err(`${where}: ${e.message}\nRun ${where} --help for usage.`);
      process.exitCode = EXIT_USAGE;
    } else {
      err(`claw-identity: ${e?.message ?? e}`);
      process.exitCode = EXIT_PROBLEM;
    }
  },
);
