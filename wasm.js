// claw-identity/wasm: the same API and OpenClaw plugin entry as
// `claw-identity`, always on the WebAssembly build (wasi.cjs), whatever the
// platform. For tests, and for users who would rather not load native code.
import { createRequire } from 'node:module';
import { surface } from './plugin.js';

const require = createRequire(import.meta.url);
const api = surface({ name: 'wasm32-wasi', native: false, reason: 'chosen with claw-identity/wasm' }, () => require('./wasi.cjs'));

export default api.plugin;
export const {
  IdentityLayer,
  configure,
  beforeToolCall,
  safetyNet,
  redactToolResult,
  stats,
  fingerprint,
  noop,
  resolveTokenMapPath,
  writeTokenMap,
  writeTokenMapSync,
  doctor,
  audit,
  explain,
} = api;
/** Which build this process runs: `{ name, native, reason }`. */
export const buildInfo = api.build;
