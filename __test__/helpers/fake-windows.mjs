// Native Windows, faked on this Linux for the WebAssembly build: loaded
// with `node --import` before anything else. The process says it is Windows
// (`process.platform` is win32, no geteuid), and a Windows drive path names
// a file under FAKE_WINDOWS_DRIVES, one directory per drive (`C:\Users` is
// `<it>/C/Users`), to Node's fs and to the drives WASI preopens. Nothing
// else is faked: Node's `path` stays POSIX (it is picked at start), so the
// code under test must read Windows paths itself, as it does on Windows.
// Unlike NTFS, these drives are case-sensitive: a test that needs a name
// in another case to open the same file can't run here.
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const drives = process.env.FAKE_WINDOWS_DRIVES;
const DRIVE = /^([A-Za-z]):(?:[\\/]|$)/;

/** A Windows drive path as the file under the fake drives; any other path as it is. */
const onLinux = (p) => {
  const m = typeof p === 'string' && DRIVE.exec(p);
  return m ? `${drives}/${m[1].toUpperCase()}/${p.slice(m[0].length).replaceAll('\\', '/')}` : p;
};
/** A file under the fake drives as its Windows path. */
const onWindows = (p) => {
  if (typeof p !== 'string' || !(p === drives || p.startsWith(`${drives}/`))) return p;
  const [drive, ...rest] = p.slice(drives.length + 1).split('/');
  return `${drive}:\\${rest.join('\\')}`;
};

Object.defineProperty(process, 'platform', { value: 'win32' });
delete process.geteuid;
delete process.getuid;

for (const name of [
  'existsSync',
  'statSync',
  'lstatSync',
  'openSync',
  'mkdirSync',
  'readFileSync',
  'writeFileSync',
  'renameSync',
  'unlinkSync',
  'readdirSync',
  'accessSync',
  'readlinkSync',
  'rmSync',
  'watch',
]) {
  const real = fs[name];
  fs[name] = (p, ...rest) => real(onLinux(p), ...rest);
}
const realpath = fs.realpathSync;
fs.realpathSync = Object.assign((p, ...rest) => onWindows(realpath(onLinux(p), ...rest)), {
  native: (p, ...rest) => onWindows(realpath.native(onLinux(p), ...rest)),
});

const wasi = require('node:wasi');
const WASI = wasi.WASI;
wasi.WASI = class extends WASI {
  constructor(options) {
    const preopens = Object.fromEntries(Object.entries(options.preopens ?? {}).map(([guest, host]) => [guest, onLinux(host)]));
    super({ ...options, preopens });
  }
};
