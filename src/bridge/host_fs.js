// The WebAssembly build's host file system (src/sys.rs, `Host`): what WASI
// lacks, from Node's own fs. Compiled once, on the JS thread. Never throws:
// a result is an array, an error is its code (a string).
(() => {
  const fs = process.getBuiltinModule('node:fs');
  const { O_CREAT, O_EXCL, O_WRONLY, O_NOFOLLOW } = fs.constants;
  const ids = (s) => [String(s.dev), String(s.ino), String(s.uid), String(s.mode)];
  const guard = (f) => (...args) => {
    try {
      return f(...args);
    } catch (e) {
      return String(e?.code ?? e?.message ?? e);
    }
  };
  return {
    stat: guard((path) => ids(fs.statSync(path, { bigint: true }))),
    euid: guard(() => (typeof process.geteuid === 'function' ? [String(process.geteuid())] : 'ENOSYS')),
    createPrivate: guard((path) => {
      // O_NOFOLLOW is missing where it has no meaning (Windows); there is no mode to set either.
      const fd = fs.openSync(path, O_CREAT | O_EXCL | O_WRONLY | (O_NOFOLLOW ?? 0), 0o600);
      try {
        return ids(fs.fstatSync(fd, { bigint: true }));
      } finally {
        fs.closeSync(fd);
      }
    }),
    mkdirPrivate: guard((path) => (fs.mkdirSync(path, { recursive: true, mode: 0o700 }), [])),
    realpath: guard((path) => [fs.realpathSync(path)]),
    cwd: guard(() => [process.cwd()]),
    pid: guard(() => [String(process.pid)]),
    env: guard((name) => (typeof process.env[name] === 'string' ? [process.env[name]] : [])),
    homedir: guard(() => [process.getBuiltinModule('node:os').homedir()]),
    fileUrlToPath: guard((url) => [process.getBuiltinModule('node:url').fileURLToPath(url)]),
  };
})()
