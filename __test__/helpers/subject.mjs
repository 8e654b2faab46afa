// The build the unit suites test: the one index.js picks for this platform,
// or, with CLAW_IDENTITY_TEST_BUILD=wasm, the WebAssembly build through
// `claw-identity/wasm`. A switch of the tests only: the product's own
// choice depends on the platform alone.
import { fileURLToPath } from 'node:url';

const wasm = process.env.CLAW_IDENTITY_TEST_BUILD === 'wasm';
/** The entry under test, for suites that import it in a child process or a copy. */
export const entryUrl = new URL(wasm ? '../../wasm.js' : '../../index.js', import.meta.url).href;
export const entryFile = fileURLToPath(entryUrl);
const mod = await import(entryUrl);

export default mod.default;
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
  explain,
  startMcpProxy,
  buildInfo,
} = mod;
