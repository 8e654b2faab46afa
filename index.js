// claw-identity: picks the build for this platform, loads it by a literal
// path, and re-exports its API and OpenClaw plugin entry (plugin.js wires
// it). Every decision is made in Rust; nothing here decides.
//
// The native builds are for Linux with glibc 2.34 or newer, on x64 and
// arm64; everything else (macOS, Windows, musl, an older glibc, another CPU)
// gets the WebAssembly build, which runs the same Rust. The choice depends
// on the platform alone: no environment variable can redirect it. The
// `claw-identity/wasm` entry always loads the WebAssembly build.
import { createRequire } from 'node:module';
import { surface } from './plugin.js';

const require = createRequire(import.meta.url);

/** The newest glibc symbol version the native builds need (checked in __test__/package.test.mjs). */
const MIN_GLIBC = [2, 34];

/** The C library's version as [major, minor], or undefined when it is not glibc (musl). */
function glibcVersion() {
  const report = process.report;
  const excludeNetwork = report.excludeNetwork;
  report.excludeNetwork = true; // no DNS lookups for open sockets
  try {
    const v = report.getReport().header.glibcVersionRuntime;
    return typeof v === 'string' ? v.split('.').map(Number) : undefined;
  } finally {
    report.excludeNetwork = excludeNetwork;
  }
}

function pick() {
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) {
    return { reason: `no native build for ${process.platform}-${process.arch}` };
  }
  const glibc = glibcVersion();
  if (glibc === undefined) return { reason: 'this Linux has no glibc (musl?)' };
  if (glibc[0] < MIN_GLIBC[0] || (glibc[0] === MIN_GLIBC[0] && glibc[1] < MIN_GLIBC[1])) {
    return { reason: `glibc ${glibc.join('.')} is older than ${MIN_GLIBC.join('.')}` };
  }
  // Literal paths: OpenClaw copies plugin code and follows literal requires.
  if (process.arch === 'x64') {
    return { name: 'linux-x64-gnu', load: () => require('./claw-identity.linux-x64-gnu.node') };
  }
  return { name: 'linux-arm64-gnu', load: () => require('./claw-identity.linux-arm64-gnu.node') };
}

const picked = pick();
const build = picked.load
  ? { name: picked.name, native: true, reason: `native build for ${process.platform}-${process.arch} with glibc` }
  : { name: 'wasm32-wasi', native: false, reason: picked.reason };
const api = surface(build, picked.load ?? (() => require('./wasi.cjs')));

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
