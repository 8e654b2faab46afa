// claw-identity's WebAssembly build: the same Rust as the native builds,
// compiled for wasm32-wasip1-threads and run by Node's WASI through
// @napi-rs/wasm-runtime (emnapi). It starts no threads: its watcher runs on
// this thread, on Node's fs.watch and a heartbeat timer (core/src/watcher/node.rs,
// src/bridge/watch.rs), and it checks owners
// and modes, which WASI lacks, through Node's fs (src/bridge/host_fs.js), or
// on Windows owners and DACLs, through OpenClaw's fs-safe.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');
const { WASI } = require('node:wasi');
const { createContext, instantiateNapiModuleSync, emnapiTSFNPlugin } = require('@napi-rs/wasm-runtime');
const makeFront = require('./wasm-front.cjs');

// Windows files have no owner uid and no mode bits: there the permission
// gate checks the owner and DACL instead, as OpenClaw's own fs-safe reads
// them (`readOwnerAndDacl`: its native helper, or Windows PowerShell). It is
// the gateway's own copy: OpenClaw links its package into a plugin that
// names it as a peer (`node_modules/openclaw`, its plugin-peer-link.ts), and
// fs-safe, one of its dependencies, resolves from there. The host
// (src/bridge/host_fs.js) finds the reader in this slot; the first one set
// stays. Loaded on Windows only, at the first check.
if (process.platform === 'win32') {
  const slot = Symbol.for('claw-identity.wasm.readOwnerAndDacl');
  let permissions;
  const load = () => {
    let openclaw;
    try {
      openclaw = require.resolve('openclaw');
    } catch {
      throw new Error(
        "OpenClaw's package is not linked into claw-identity (node_modules/openclaw), so its Windows ACL reader, @openclaw/fs-safe, can't be found",
      );
    }
    return createRequire(openclaw)('@openclaw/fs-safe/permissions');
  };
  const readOwnerAndDacl = (target) => {
    permissions ??= load();
    return permissions.readOwnerAndDacl(target);
  };
  if (!Object.hasOwn(globalThis, slot)) Object.defineProperty(globalThis, slot, { value: readOwnerAndDacl });
}

// WASI names files by POSIX paths. On a POSIX host `/` is the host's `/`.
// On Windows each drive that is there at load is preopened under its own
// name, `/C:` for `C:\`: core/src/paths/win32.rs turns a Windows path into
// that guest path and back. WASI can't reach a share (`\\server\share`);
// the host's fs gives what the guards need of those.
function preopens() {
  if (process.platform !== 'win32') return { '/': '/' };
  const drives = {};
  for (let c = 'A'.charCodeAt(0); c <= 'Z'.charCodeAt(0); c++) {
    const drive = `${String.fromCharCode(c)}:`;
    if (fs.existsSync(`${drive}\\`)) drives[`/${drive}`] = `${drive}\\`;
  }
  return drives;
}
const wasi = new WASI({ version: 'preview1', env: process.env, preopens: preopens() });
const memory = new WebAssembly.Memory({ initial: 4000, maximum: 65536, shared: true }); // as napi-rs sizes it;

const file = path.join(__dirname, '..', 'claw-identity.wasm32-wasi.wasm');
const { instance, napiModule } = instantiateNapiModuleSync(fs.readFileSync(file), {
  // What node_api_get_module_file_name returns, as Node gives a native addon
  // its own file: the layer guards the directory it was loaded from.
  filename: require('node:url').pathToFileURL(file).href,
  context: createContext(),
  wasi,
  asyncWorkPoolSize: 0,
  plugins: [emnapiTSFNPlugin],
  onCreateWorker() {
    throw new Error('claw-identity: the WebAssembly build starts no threads, but something asked for one');
  },
  overwriteImports(imports) {
    imports.env = { ...imports.env, ...imports.napi, ...imports.emnapi, memory };
    return imports;
  },
  beforeInit({ instance }) {
    for (const name of Object.keys(instance.exports)) {
      if (name.startsWith('__napi_register__')) instance.exports[name]();
    }
  },
});

// The front decides a tool call with no N-API call (src/bridge/front.rs):
// Rust makes every hook through it from now on, and the module's own
// `beforeToolCall`, made at load, is made again through it.
const native = napiModule.exports;
native.beforeToolCall = native.__useFront(makeFront(instance.exports, memory));
delete native.__useFront;

module.exports = native;
