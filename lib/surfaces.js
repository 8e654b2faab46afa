// claw-identity's operator surfaces in OpenClaw: the `openclaw claw-identity`
// commands, the `claw-identity.status` gateway method, the findings for
// `openclaw security audit`, and the watcher as an OpenClaw service with its
// health and reload policy. Wiring only: the checks run in Rust (ops::checks),
// the commands in cli.js, loaded when one of them runs.
import { createRequire } from 'node:module';

import { listThroughProxy, proxyService } from './proxy.js';

/** `openclaw claw-identity`, as the manifest declares it for `openclaw --help`. */
const [COMMAND] = createRequire(import.meta.url)('../openclaw.plugin.json').cliCommands;

/** Where OpenClaw keeps this plugin's options. */
export const CONFIG_PREFIX = 'plugins.entries.claw-identity.config';
/**
 * The config the posture is judged from (core/src/posture.rs): a change
 * under any of these restarts the watcher service, which configures the
 * layer with the committed config, and so judges it again. Each is a key
 * OpenClaw hot-applies or ignores (`config-reload-plan-*.mjs`): a service's
 * prefix turns a key it matches into a hot one, so a key that restarts the
 * gateway (which judges it again anyway) is left out. `agents` itself is
 * split, since OpenClaw's own rule for it ("none") would be matched first.
 */
export const POSTURE_PREFIXES = ['agents.defaults', 'agents.entries', 'agents.list', 'tools', 'session.scope', 'acp', 'cron', 'hooks'];
/** How often the service compares the layer's state with what it last reported. */
const HEALTH_INTERVAL_MS = 1000;

/** The gateway method's answer: the live layer's stats and its map's agents by fingerprint (never a token). */
export function statusOf(native, version) {
  return { plugin: 'claw-identity', version, pid: process.pid, stats: native.stats() ?? null, agents: native.mapFingerprints() ?? [] };
}

/** `openclaw claw-identity ...`: described up front, loaded only when one runs, with this build's API. */
export function registerCommands(api, lib) {
  api.registerCli?.(async ({ program }) => (await import('./cli.js')).registerOpenClawCommand(program, COMMAND, lib), {
    descriptors: [COMMAND],
  });
}

/** Registers the operator surfaces this OpenClaw offers. */
export function registerOperatorSurfaces(api, native, lib) {
  registerCommands(api, lib);
  // profileAccess stays "required" (the default): it reads the live layer.
  api.registerGatewayMethod?.('claw-identity.status', ({ respond }) => respond(true, statusOf(native, lib.version)), { scope: 'operator.read' });
  // `doctor --mcp`: each proxied server's tools as the model sees them, listed through this gateway's proxy.
  api.registerGatewayMethod?.(
    'claw-identity.proxy',
    ({ respond }) =>
      listThroughProxy(native).then(
        (servers) => respond(true, servers),
        (e) => respond(false, { message: String(e?.message ?? e) }),
      ),
    { scope: 'operator.read' },
  );
  api.registerSecurityAuditCollector?.((ctx) => native.opsAudit(ctx.configPath).report);
}

/**
 * What OpenClaw's health should show for the layer in force, or null when
 * all is well. Built from stats(), so it never holds a token.
 */
export function healthProblem(s) {
  if (!s) return 'claw-identity is not configured';
  if (s.posture && !s.posture.servesTokens) {
    const exposed = s.posture.agents.filter((a) => a.contained === null).map((a) => (a.agentId === '*' ? "the agents the roster doesn't list" : a.agentId));
    return `no token is served: ${exposed.join(', ')} can reach the token map or OpenClaw's config with their own tools, and posture is "enforce". claw-identity doctor names the config that contains each`;
  }
  const path = s.tokenMapPath;
  if (!s.loaded)
    return `no token map is in force: ${s.lastError ?? `${path} has not been read`}. Calls that need a token get none until ${path} is a valid map`;
  if (s.stale) return `the token map has been unusable for longer than maxStaleSeconds, so every agent counts as missing: ${s.lastError ?? 'see the log'}`;
  if (s.lastError) return `${path} is not in force: ${s.lastError}. The last good map (${s.agents} agents) stays in force until the file is fixed`;
  return null;
}

/**
 * The token-map watcher as an OpenClaw service: started and stopped with the
 * gateway, restarted with the committed config when the plugin's options
 * change (hot, with no plugin reload), and reporting an unusable map to
 * OpenClaw's health (`openclaw health`, `plugins.list`) until it is good again.
 *
 * `configure(openclawConfig)` configures the layer for that config and
 * returns it; `current` is the layer register() configured. `watchers.running`
 * counts the services watching, over every copy of the plugin: OpenClaw can
 * start a new registry's service before it stops the old one's, so the
 * watcher stops only when none runs.
 */
export function registerWatcherService(api, native, configure, current, watchers) {
  if (typeof api.registerService !== 'function') return;
  const proxy = proxyService(native, api.logger);
  let timer;
  let started = false;
  api.registerService({
    id: 'claw-identity',
    reload: { configPrefixes: [CONFIG_PREFIX, ...POSTURE_PREFIXES] },
    start(ctx) {
      // Options that don't validate leave the layer in force as it is, and
      // are reported until they are fixed.
      let invalid = null;
      try {
        current = configure(ctx.config);
      } catch (err) {
        invalid = `the options under ${CONFIG_PREFIX} were not applied: ${err.message.replace(/^claw-identity: /, '')}`;
      }
      current.watch();
      // The MCP proxy, where the options plan one (lib/proxy.js): started
      // with the layer that plans it.
      proxy.start();
      started = true;
      watchers.running += 1;
      let shown = null;
      const check = () => {
        const problem = invalid ?? healthProblem(native.stats());
        if (problem === shown) return;
        shown = problem;
        if (problem === null) ctx.serviceHealth?.clearFailure();
        else ctx.serviceHealth?.reportFailure(new Error(`claw-identity: ${problem}`));
      };
      check();
      timer = setInterval(check, HEALTH_INTERVAL_MS);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      if (!started) return;
      started = false;
      watchers.running -= 1;
      proxy.stop();
      // The map in force stays in force; only its watching stops.
      if (watchers.running === 0) current.close();
    },
  });
  // A change of the plugin's options restarts this service (above) and
  // nothing else: no plugin reload, no MCP runtimes disposed.
  api.registerReload?.({ hotPrefixes: [CONFIG_PREFIX] });
}
