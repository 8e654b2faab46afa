// Loading the official MCP SDK, for the probe (lib/probe.js) and the proxy
// (lib/proxy.js): OpenClaw's own copy (the gateway's entry point depends
// on it) or the one installed with this package (an optional dependency).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

export const SDK = '@modelcontextprotocol/sdk';

/**
 * `modules` maps an export's name to its module's path in the SDK package;
 * the name `types` takes the whole module. `resolve` turns a specifier into
 * what `import()` takes.
 */
async function load(modules, resolve) {
  const out = {};
  for (const [name, sub] of Object.entries(modules)) {
    const m = await import(resolve(`${SDK}/${sub}`));
    out[name] = name === 'types' ? m : m[name];
  }
  return out;
}

/** The SDK installed with this package. */
export const ownMcpSdk = (modules) => load(modules, (s) => s);

/**
 * The SDK of the OpenClaw running this process: resolved from the running
 * `openclaw` entry point, which an installed plugin's own node_modules does
 * not reach.
 */
export function hostMcpSdk(modules, entry = process.argv[1]) {
  const require = createRequire(fs.realpathSync(entry));
  return load(modules, (s) => pathToFileURL(require.resolve(s)).href);
}

/** The first of `loaders` that loads; the error says where the SDK was looked for. */
export async function firstMcpSdk(loaders) {
  const tried = [];
  for (const [where, loadOne] of loaders) {
    try {
      return await loadOne();
    } catch (e) {
      tried.push(`${where}: ${e?.code ?? e?.message ?? e}`);
    }
  }
  throw new Error(
    `the MCP SDK (${SDK}) is not installed (${tried.join('; ')}): install it next to claw-identity (npm install ${SDK}), or run openclaw claw-identity, which uses OpenClaw's`,
  );
}
