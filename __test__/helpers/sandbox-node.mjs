// A Node a command inside the claw-identity sandbox can run. The sandbox
// gives every command a private /tmp, so a Node under /tmp (a checkout
// cloned there, with its .cache/) is not there inside it: the suites then
// run a copy under /var/tmp, readable by the unprivileged test user too,
// removed when the process exits.
import fs from 'node:fs';
import path from 'node:path';

let copy;

export function sandboxNode() {
  const real = fs.realpathSync(process.execPath);
  if (!real.startsWith('/tmp/')) return real;
  if (!copy) {
    const dir = fs.mkdtempSync('/var/tmp/claw-identity-node-');
    fs.chmodSync(dir, 0o755);
    copy = path.join(dir, 'node');
    fs.copyFileSync(real, copy);
    fs.chmodSync(copy, 0o755);
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  }
  return copy;
}
