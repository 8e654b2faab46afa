// `npm pack` of the repo for the suites that install the tarball: the real
// one, whose prepack builds every build index.js can pick from the current
// sources, or refuses. npm test's first step (scripts/system-deps.mjs)
// makes sure the arm64 cross toolchain it needs is here.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.dirname(path.dirname(path.dirname(fileURLToPath(import.meta.url))));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Packs the repo into `dest`: `{ info, tarball }`, `info` being npm's JSON for it. */
export function pack(dest) {
  const out = execFileSync(npm, ['pack', '--json', '--pack-destination', dest], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 16 << 20,
  });
  const info = JSON.parse(out)[0];
  return { info, tarball: path.join(dest, info.filename) };
}

/**
 * A PATH on which every command of this one is found but `hidden`: a
 * directory of links to the others. `npm pack` with it runs on a machine
 * that lacks that one command.
 */
export function pathWithout(hidden, dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claw-identity-path-'))) {
  for (const d of (process.env.PATH ?? '').split(path.delimiter)) {
    let names;
    try {
      names = fs.readdirSync(d);
    } catch {
      continue;
    }
    for (const name of names) {
      if (name === hidden || fs.existsSync(path.join(dir, name))) continue;
      const target = path.join(d, name);
      try {
        fs.accessSync(target, fs.constants.X_OK);
        if (!fs.statSync(target).isFile()) continue;
        fs.symlinkSync(target, path.join(dir, name));
      } catch {
        /* not a program */
      }
    }
  }
  return dir;
}
