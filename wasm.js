// claw-identity/wasm: the same API and OpenClaw plugin entry as
// `claw-identity`, always on the WebAssembly build (lib/wasi.cjs), whatever the
// platform. For tests, and for users who would rather not load native code.
import { createRequire } from 'node:module';

import { surface } from './lib/api.js';
import { assertSupportedNode } from './lib/loader.js';
import { createPlugin } from './lib/plugin.js';

assertSupportedNode(process.versions.node);
const require = createRequire(import.meta.url);
const built = surface({ name: 'wasm32-wasi', native: false, reason: 'chosen with claw-identity/wasm' }, () => require('./lib/wasi.cjs'));

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
