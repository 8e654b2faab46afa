// The WebAssembly build's host file system (src/sys.rs, `Host`): what WASI
// lacks, from Node's own fs. Compiled once, on the JS thread. Never throws:
// a result is an array, an error is its code (a string).
(() => {
  const fs = process.getBuiltinModule('node:fs');
  const { O_CREAT, O_EXCL, O_WRONLY, O_NOFOLLOW } = fs.constants;
  const ids = (s) => [String(s.dev), String(s.ino), String(s.uid), String(s.mode)];
  const guard =
    (f) =>
    (...args) => {
      try {
        return f(...args);
      } catch (e) {
        return String(e?.code ?? e?.message ?? e);
      }
    };
  return {
    stat: guard((path) => ids(fs.statSync(path, { bigint: true }))),
    euid: guard(() => (typeof process.geteuid === 'function' ? [String(process.geteuid())] : 'ENOSYS')),
    platform: guard(() => [process.platform]),
    // Windows: the owner and DACL of `path`, as JSON, from OpenClaw's fs-safe
    // (`readOwnerAndDacl`), which lib/wasi.cjs hands over in this slot. Its
    // failure is its message: the gate refuses the map and says why.
    windowsSecurity: (path) => {
      try {
        const read = globalThis[Symbol.for('claw-identity.wasm.readOwnerAndDacl')];
        if (typeof read !== 'function') return 'no Windows ACL reader was handed to the WebAssembly build (lib/wasi.cjs)';
        const facts = read(path);
        if (facts?.status !== 'supported') return `OpenClaw's fs-safe does not read ACLs here (${facts?.status}, ${facts?.platform})`;
        return [JSON.stringify(facts)];
      } catch (e) {
        return String(e?.message ?? e);
      }
    },
    createPrivate: guard((path) => {
      // O_NOFOLLOW is missing where it has no meaning (Windows); there is no mode to set either.
      const fd = fs.openSync(path, O_CREAT | O_EXCL | O_WRONLY | (O_NOFOLLOW ?? 0), 0o600);
      try {
        return ids(fs.fstatSync(fd, { bigint: true }));
      } finally {
        fs.closeSync(fd);
      }
    }),
    mkdirPrivate: guard((path) => {
      fs.mkdirSync(path, { recursive: true, mode: 0o700 });
      return [];
    }),
    realpath: guard((path) => [fs.realpathSync(path)]),
    cwd: guard(() => [process.cwd()]),
    pid: guard(() => [String(process.pid)]),
    env: guard((name) => (typeof process.env[name] === 'string' ? [process.env[name]] : [])),
    homedir: guard(() => [process.getBuiltinModule('node:os').homedir()]),
    fileUrlToPath: guard((url) => [process.getBuiltinModule('node:url').fileURLToPath(url)]),
  };
})();
