// writeTokenMap as JS sees it: what the binding accepts and how it turns
// a JS value into the bytes the Rust writer validates, the errors that cross
// into JS, `~`, and a live layer serving what it wrote. The writer itself
// (validation, the canonical layout, the private atomic write, no rewrite of
// an unchanged map, concurrent writers) is tested next to it, in
// core/src/ops/writer.rs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { IdentityLayer, writeTokenMap, writeTokenMapSync } from './helpers/subject.mjs';
import { assertNoTokenIn, assertSameToken, randomToken, recordEmitted, tempDir, waitFor } from './helpers/support.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';

const mode = (p) => fs.statSync(p).mode & 0o777;

/** Runs `fn`, which must throw or reject; returns the error after showing it to the leak guard. */
async function refused(fn) {
  try {
    await fn();
  } catch (err) {
    recordEmitted('writeTokenMap error', err.message);
    return err;
  }
  assert.fail('expected the write to be refused');
}

test('an object, a Map, JSON text, a Buffer or a Uint8Array is a map; arrays, null and non-string paths are type errors', async () => {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const token = randomToken();
  const text = JSON.stringify({ [FRANCIS]: token });
  const inputs = [{ [FRANCIS]: token }, new Map([[FRANCIS, token]]), text, Buffer.from(text), new Uint8Array(Buffer.from(text))];
  for (const [i, input] of inputs.entries()) {
    assert.deepEqual(writeTokenMapSync(file, input), { path: file, agents: 1, changed: i === 0 }, `input ${i}`);
    assertSameToken(JSON.parse(fs.readFileSync(file, 'utf8'))[FRANCIS], token);
  }
  assert.deepEqual(await writeTokenMap(file, { [FRANCIS]: randomToken() }), { path: file, agents: 1, changed: true });
  for (const bad of [null, [], 42, undefined]) {
    assert.throws(() => writeTokenMapSync(file, bad), TypeError);
    await assert.rejects(writeTokenMap(file, bad), TypeError);
  }
  assert.throws(() => writeTokenMapSync(undefined, {}), TypeError);
  assert.throws(() => writeTokenMapSync('', {}), TypeError);
});

test("a path starting with ~ is the user's home, as for tokenMapPath", () => {
  const home = tempDir();
  const saved = process.env.HOME;
  process.env.HOME = home;
  try {
    const w = writeTokenMapSync('~/.config/micelclaw/agent-tokens.json', { [FRANCIS]: randomToken() });
    assert.equal(w.path, path.join(home, '.config/micelclaw/agent-tokens.json'));
    assert.equal(mode(w.path), 0o600);
  } finally {
    process.env.HOME = saved;
  }
});

test('refusals cross into JS with their kind and message, sync and async, and without a token', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'agent-tokens.json');
  const token = randomToken();
  // An undefined token becomes null on the way to Rust, so it is refused by name.
  const invalid = { [FRANCIS]: token, [DALI]: token.slice(0, 63), 'paco--atlas': undefined };
  for (const write of [writeTokenMap, writeTokenMapSync]) {
    const err = await refused(() => write(file, invalid));
    assert.equal(err.code, 'InvalidArg');
    assert.equal(
      err.message,
      `claw-identity: refusing to write ${file}: 2 invalid entries: agent "${DALI}": token is not 64 hex characters; agent "paco--atlas": token must be a string, found null; nothing was written`,
    );
    assertNoTokenIn(err.message);
  }
  fs.chmodSync(dir, 0o777);
  for (const write of [writeTokenMap, writeTokenMapSync]) {
    const err = await refused(() => write(file, { [FRANCIS]: token }));
    assert.equal(err.code, 'GenericFailure');
    assert.match(err.message, /the plugin would refuse it: .*directory is writable by group or others \(mode 0777\)/);
    assertNoTokenIn(err.message);
  }
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('a live layer serves the written map', async () => {
  const file = path.join(tempDir(), 'agent-tokens.json');
  const first = randomToken();
  const second = randomToken();
  writeTokenMapSync(file, { [FRANCIS]: first });
  const layer = new IdentityLayer({
    tokenMapPath: file,
    logger: { info() {}, warn: (l) => recordEmitted('warn', l), error: (l) => recordEmitted('error', l) },
  });
  try {
    const token = () => layer.beforeToolCall({ toolName: 'claw-os__claw_notes', params: {} }, { agentId: FRANCIS })?.params.auth_token;
    assert.equal(token(), first);
    await writeTokenMap(file, { [FRANCIS]: second });
    await waitFor(() => token() === second, { what: 'the layer to serve the new token' });
  } finally {
    layer.close();
  }
});
