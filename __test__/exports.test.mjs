// The two entries and the type declarations name the same exports: a name
// added to one and not the others is a broken import for someone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const root = new URL('../', import.meta.url);

/** The runtime names `index.d.ts` declares (`export function|const|class`, and `default`). */
function declared() {
  const text = fs.readFileSync(new URL('index.d.ts', root), 'utf8');
  const names = new Set([...text.matchAll(/^export (?:declare )?(?:function|const|class) (\w+)/gm)].map((m) => m[1]));
  if (/^export default /m.test(text)) names.add('default');
  return [...names].sort();
}

test('index.js, wasm.js and index.d.ts export the same names', async () => {
  const index = Object.keys(await import(new URL('index.js', root))).sort();
  const wasm = Object.keys(await import(new URL('wasm.js', root))).sort();
  assert.deepEqual(wasm, index);
  assert.deepEqual(declared(), index);
});

test('docs/api.md lists exactly the names the entries export', async () => {
  const text = fs.readFileSync(new URL('docs/api.md', root), 'utf8');
  const line = text.split('\n').find((l) => l.startsWith('Both export the same names:'));
  assert.ok(line, 'docs/api.md has no list of the exports');
  const listed = [...line.slice(0, line.indexOf(', and as the default export')).matchAll(/`(\w+)`/g)].map((m) => m[1]).sort();
  const index = Object.keys(await import(new URL('index.js', root)))
    .filter((n) => n !== 'default')
    .sort();
  assert.deepEqual(listed, index);
});
