// claw-identity's operator surfaces in OpenClaw: the `openclaw claw-identity`
// commands, the `claw-identity.status` gateway method and the findings for
// `openclaw security audit`. Wiring only: the checks run in Rust (ops::audit),
// the commands in cli.js, loaded when one of them runs.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { version } = require('./package.json');
/** `openclaw claw-identity`, as the manifest declares it for `openclaw --help`. */
const [COMMAND] = require('./openclaw.plugin.json').cliCommands;

/** The gateway method's answer: the live layer's stats and its map's agents by fingerprint (never a token). */
export function statusOf(native) {
  return { plugin: 'claw-identity', version, pid: process.pid, stats: native.stats() ?? null, agents: native.mapFingerprints() ?? [] };
}

/** `openclaw claw-identity ...`: described up front, loaded only when one runs. */
export function registerCommands(api) {
  api.registerCli?.(async ({ program }) => (await import('./cli.js')).registerOpenClawCommand(program, COMMAND), {
    descriptors: [COMMAND],
  });
}

/** Registers the operator surfaces this OpenClaw offers. */
export function registerOperatorSurfaces(api, native) {
  registerCommands(api);
  // profileAccess stays "required" (the default): it reads the live layer.
  api.registerGatewayMethod?.('claw-identity.status', ({ respond }) => respond(true, statusOf(native)), { scope: 'operator.read' });
  api.registerSecurityAuditCollector?.((ctx) => JSON.parse(native.opsAudit(ctx.configPath)));
}
