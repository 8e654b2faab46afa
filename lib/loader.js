// Which build of the addon a platform gets, decided on the platform facts
// alone (no environment variable can redirect it), with the facts injected
// so that the choice is testable on any machine. index.js and wasm.js load
// the build by a literal path: OpenClaw copies plugin code and follows
// literal requires.
//
// The native builds are for Linux with glibc 2.34 or newer, on x64 and
// arm64; everything else (macOS, Windows, musl, an older glibc, another
// CPU) gets the WebAssembly build, which runs the same Rust.

/** The newest glibc symbol version the native builds need (checked in __test__/package.test.mjs). */
export const MIN_GLIBC = [2, 34];

/** The Node versions OpenClaw 2026.9.6 runs on (its engines: ">=24.16.0 <25 || >=26.1.0"), as package.json says. */
export const NODE_RANGE = '>=24.16.0 <25 || >=26.1.0';

/** Whether Node `version` (`24.16.0`, `v26.1.0`) is in OpenClaw's range. */
export function nodeSupported(version) {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(String(version));
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major === 24) return minor >= 16;
  if (major === 26) return minor >= 1;
  return major > 26;
}

/** Throws, naming the range and the fix, on a Node outside OpenClaw's range. */
export function assertSupportedNode(version) {
  if (nodeSupported(version)) return;
  throw new Error(
    `claw-identity: Node ${version} is not supported: claw-identity runs where OpenClaw runs, Node ${NODE_RANGE} (OpenClaw's own range). Run OpenClaw, and this plugin, on Node 24.16+ or 26.1+.`,
  );
}

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

/** This process's platform facts: `{ platform, arch, glibc }` (`glibc` only on Linux). */
export function platformFacts() {
  return {
    platform: process.platform,
    arch: process.arch,
    glibc: process.platform === 'linux' ? glibcVersion() : undefined,
  };
}

/**
 * The build for these facts: `{ name, native, reason }`. `name` is the
 * binary's platform name (`linux-x64-gnu`, `linux-arm64-gnu`, `wasm32-wasi`),
 * `reason` why it was picked, as the gateway's load line says it.
 */
export function pickBuild({ platform, arch, glibc }) {
  const wasm = (reason) => ({ name: 'wasm32-wasi', native: false, reason });
  if (platform !== 'linux' || (arch !== 'x64' && arch !== 'arm64')) {
    return wasm(`no native build for ${platform}-${arch}`);
  }
  if (glibc === undefined) return wasm('this Linux has no glibc (musl?)');
  if (glibc[0] < MIN_GLIBC[0] || (glibc[0] === MIN_GLIBC[0] && glibc[1] < MIN_GLIBC[1])) {
    return wasm(`glibc ${glibc.join('.')} is older than ${MIN_GLIBC.join('.')}`);
  }
  return { name: `linux-${arch}-gnu`, native: true, reason: `native build for ${platform}-${arch} with glibc` };
}
