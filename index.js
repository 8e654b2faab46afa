// claw-identity: picks the build for this platform (lib/loader.js), loads it
// by a literal path, and exports its API and the OpenClaw plugin entry.
// Every decision is made in Rust; nothing here decides.
import { createRequire } from 'node:module';

import { surface } from './lib/api.js';
import { assertSupportedNode, pickBuild, platformFacts } from './lib/loader.js';
import { createPlugin } from './lib/plugin.js';

assertSupportedNode(process.versions.node);
const require = createRequire(import.meta.url);
const build = pickBuild(platformFacts());
// Literal paths: OpenClaw copies plugin code and follows literal requires.
const load = {
  'linux-x64-gnu': () => require('./claw-identity.linux-x64-gnu.node'),
  'linux-arm64-gnu': () => require('./claw-identity.linux-arm64-gnu.node'),
  'wasm32-wasi': () => require('./lib/wasi.cjs'),
}[build.name];
const built = surface(build, load);

export default createPlugin(built);
export const {
  IdentityLayer,
  configure,
  beforeToolCall,
  redactToolResult,
  stats,
  fingerprint,
  noop,
  resolveTokenMapPath,
  writeTokenMap,
  writeTokenMapSync,
  doctor,
  audit,
  mcpServers,
  explain,
  startMcpProxy,
  version,
  buildInfo,
} = built.api;
