// The drift check (scripts/openclaw-drift.mjs): clean on the pinned
// OpenClaw; failing, naming the function and its mirror, when a mirrored
// function's text changes; indifferent to a function no mirror cites; and
// an extractor that braces in strings, templates, regular expressions and
// comments don't fool.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  DEFAULT_DIST,
  DEFAULT_MANIFEST,
  chunkPattern,
  compare,
  distFiles,
  extractDefinition,
  findDefinitions,
  scanPackage,
} from '../scripts/openclaw-drift.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const script = path.join(root, 'scripts', 'openclaw-drift.mjs');
const manifest = JSON.parse(fs.readFileSync(DEFAULT_MANIFEST, 'utf8'));
const temps = [];
after(() => {
  for (const t of temps) fs.rmSync(t, { recursive: true, force: true });
});

function check(...args) {
  const r = spawnSync(process.execPath, [script, ...args], { cwd: root, encoding: 'utf8' });
  return { status: r.status, lines: r.stdout.trim().split('\n'), stderr: r.stderr };
}

/**
 * The files of the pinned dist/ that define a function of the manifest: the
 * only ones the check's result depends on, so a dist/ of links to them (not
 * to all 7,000 entries, slow to make and remove on a busy disk) checks clean.
 */
const mirroredChunks = (() => {
  const names = new Set(manifest.functions.map((f) => f.name));
  return distFiles(DEFAULT_DIST).filter(
    (f) => !f.startsWith('extensions/') && findDefinitions(fs.readFileSync(path.join(DEFAULT_DIST, f), 'utf8'), names).length,
  );
})();

/**
 * A dist/ of links to the pinned one's mirrored chunks and bundled plugins
 * (and to package.json beside it), but for `chunk`, a copy with one character
 * of `name`'s definition changed: the first letter of its body, upper-cased.
 */
function distWithAlteredFunction(chunk, name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claw-drift-'));
  temps.push(dir);
  const dist = path.join(dir, 'dist');
  fs.mkdirSync(dist);
  fs.symlinkSync(path.join(DEFAULT_DIST, '..', 'package.json'), path.join(dir, 'package.json'));
  for (const entry of [...mirroredChunks, 'extensions']) if (entry !== chunk) fs.symlinkSync(path.join(DEFAULT_DIST, entry), path.join(dist, entry));
  const text = fs.readFileSync(path.join(DEFAULT_DIST, chunk), 'utf8');
  const [def] = findDefinitions(text, new Set([name]));
  const definition = extractDefinition(text, def.start);
  const at = def.start + definition.indexOf('\n') + definition.slice(definition.indexOf('\n')).search(/[a-z]/);
  assert.ok(at > def.start && at < def.start + definition.length, `a letter inside ${name}'s body`);
  fs.writeFileSync(path.join(dist, chunk), text.slice(0, at) + text[at].toUpperCase() + text.slice(at + 1));
  return dist;
}

/** The chunk of dist/ matching `pattern` (`home-dir-*.mjs`) that defines `name`. */
function chunkDefining(pattern, name) {
  const chunks = distFiles(DEFAULT_DIST).filter((f) => chunkPattern(f) === pattern);
  const chunk = chunks.find((f) => findDefinitions(fs.readFileSync(path.join(DEFAULT_DIST, f), 'utf8'), new Set([name])).length);
  assert.ok(chunk, `a ${pattern} defines ${name}`);
  return chunk;
}

test('the pinned OpenClaw is in step with the manifest', () => {
  const r = check();
  assert.equal(r.status, 0, r.lines.join('\n') + r.stderr);
  assert.match(r.lines.at(-1), /^openclaw-drift: no drift: \d+ OpenClaw functions mirrored in \d+ Rust files, OpenClaw \S+/);
  assert.equal(r.lines.length, 1);
});

test('a changed mirrored function fails the check, naming the function and its mirror', () => {
  const entry = manifest.functions.find((f) => f.name === 'resolveUserPath');
  assert.ok(entry.mirrors.includes('core/src/openclaw/paths.rs'));
  const dist = distWithAlteredFunction(chunkDefining('home-dir-*.mjs', 'resolveUserPath'), 'resolveUserPath');
  const r = check('--dist', dist);
  assert.equal(r.status, 1, r.lines.join('\n') + r.stderr);
  // exactly one drift: the other functions of the chunk (expandHomePrefix) are untouched
  const drifts = r.lines.slice(0, -1);
  assert.equal(drifts.length, 1, drifts.join('\n'));
  assert.match(
    drifts[0],
    /^OpenClaw's `resolveUserPath` \(dist\/home-dir-\*\.mjs[^)]*\) changed since the mirror was written: re-read [^,]*core\/src\/openclaw\/paths\.rs/,
  );
  assert.match(drifts[0], /then run `node scripts\/openclaw-drift\.mjs --write`$/);
  assert.match(r.lines.at(-1), /^openclaw-drift: 1 to settle/);
});

test('a changed function no mirror cites leaves the check clean', () => {
  const cited = new Set(manifest.functions.map((f) => f.name));
  const chunk = chunkDefining('home-dir-*.mjs', 'resolveUserPath');
  const text = fs.readFileSync(path.join(DEFAULT_DIST, chunk), 'utf8');
  // every module-scope function of the chunk, cited or not
  const all = findDefinitions(text, { has: () => true }).map((d) => d.name);
  const uncited = all.find((n) => !cited.has(n));
  assert.ok(uncited, `${chunk} defines a function no mirror cites (${all.join(', ')})`);
  const r = check('--dist', distWithAlteredFunction(chunk, uncited));
  assert.equal(r.status, 0, r.lines.join('\n') + r.stderr);
});

test('the manifest is sorted, one entry per function, each with its hash-free chunks and its mirrors', () => {
  const names = manifest.functions.map((f) => f.name);
  assert.deepEqual(names, [...new Set(names)].sort());
  for (const f of manifest.functions) {
    assert.match(f.fingerprint, /^[0-9a-f]{16}$/);
    assert.ok(f.chunks.length && f.mirrors.length, f.name);
    for (const c of f.chunks) assert.doesNotMatch(c, /^[^/]*-[A-Za-z0-9_-]{8}\.mjs$/, `${f.name}: ${c} is hashed`);
    for (const m of f.mirrors) assert.ok(fs.existsSync(path.join(root, m)), `${f.name}: no ${m}`);
  }
});

test('every mirrored definition in the pinned package ends where the bundler closes it, at the start of a line', () => {
  const names = new Set(manifest.functions.map((f) => f.name));
  for (const file of distFiles(DEFAULT_DIST)) {
    const text = fs.readFileSync(path.join(DEFAULT_DIST, file), 'utf8');
    for (const { name, start } of findDefinitions(text, names)) {
      const def = extractDefinition(text, start);
      // the rest of its line is empty, and its last line is not indented (a module-scope `}` or `};`)
      assert.match(text.slice(start + def.length, start + def.length + 1), /^\n?$/, `${name} in ${file} ends mid-line: ...${def.slice(-80)}`);
      assert.match(def, /(^|\n)\S[^\n]*$/, `${name} in ${file} ends inside a block: ...${def.slice(-80)}`);
    }
  }
});

// The extractor, on code that has braces where no block is (JavaScript source as data, hence the biome-ignore lines).
const TRICKY = [
  'function tricky(a = { b: "}" }, c = `}`) {',
  '  const s = "}{\\"}" + \'}\\\'\';',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal's source
  '  const t = `x ${ { y: "}" }.y } ${`nested ${a ? "}" : `{`}`} }`;',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal's source
  "  const v = `a ${`}`} b${'`'} ${/[`}]/.test(s)}`;",
  '  const r = /[}{/]\\/}/g, half = a / 2, u = "}/";',
  '  // } a comment',
  '  /* { another } */',
  '  if (r.test(s)) return /}"/.test(t) ? half / 2 : /\\{/;',
  '  return { s, t, u };',
  '}',
].join('\n');

test('the extractor skips braces in strings, templates and their substitutions, regular expressions and comments', () => {
  const text = `${TRICKY}\nfunction next() {}\n`;
  assert.equal(extractDefinition(text, 0), TRICKY);
});

test('the extractor ends a const at its statement, with or without a semicolon', () => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal's source
  const block = 'const f = async (a = {}) => {\n\treturn `}${a}`;\n};';
  assert.equal(extractDefinition(`${block}\nconst g = 1;\n`, 0), block);
  assert.equal(extractDefinition('const half = (x) => x / 2;\nfoo();\n', 0), 'const half = (x) => x / 2;');
  assert.equal(extractDefinition('const id = (x) => ({\n\tx\n})\nfoo();\n', 0), 'const id = (x) => ({\n\tx\n})');
  assert.equal(extractDefinition('const h = function (x) {\n\treturn x;\n}\nfoo();\n', 0), 'const h = function (x) {\n\treturn x;\n}');
});

test('only functions defined at module scope are definitions', () => {
  const text = [
    'function a(x) {}',
    'async function b() {}',
    'function* c() {}',
    'async function* d() {}',
    'const e = (x) => x;',
    'const f = async (x) => x;',
    'const g = x => x;',
    'const h = function () {};',
    'export function i() {}',
    'const notFn = (a + b);',
    'const alsoNot = { k: 1 };',
    'function j$1() {}',
    '\tfunction nested() {}',
    'foo(function k() {});',
  ].join('\n');
  const names = new Set(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'notFn', 'alsoNot', 'j', 'nested', 'k']);
  assert.deepEqual(
    findDefinitions(text, names).map((d) => d.name),
    ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'],
  );
});

test('chunk names lose their hash, plugin files keep their path', () => {
  assert.equal(chunkPattern('home-dir-BKwhAL2c.mjs'), 'home-dir-*.mjs');
  assert.equal(chunkPattern('home-dir-D0b-ywue.mjs'), 'home-dir-*.mjs');
  assert.equal(chunkPattern('managed-handoff-runtime.mjs'), 'managed-handoff-runtime.mjs');
  assert.equal(chunkPattern('extensions/crabbox/index.js'), 'extensions/crabbox/index.js');
  assert.equal(chunkPattern('extensions/onepassword/onepassword-secret-ref-resolver.js'), 'extensions/onepassword/onepassword-secret-ref-resolver.js');
});

test('the check reports a vanished function, a dropped citation, a new one, and another pin', () => {
  const f = (name, fingerprint, mirrors = ['core/src/x.rs']) => ({ name, chunks: ['x-*.mjs'], fingerprint, mirrors });
  const recorded = { openclaw: '1.0.0', functions: [f('goneFn', 'a'), f('droppedFn', 'b'), f('keptFn', 'c'), f('movedFn', 'd')] };
  const now = {
    openclaw: '2.0.0',
    functions: [f('keptFn', 'c'), f('newFn', 'e'), f('movedFn', 'd', ['core/src/openclaw/x.rs'])],
    cited: new Map([['goneFn', new Set(['core/src/x.rs'])]]),
  };
  assert.deepEqual(compare(recorded, now), [
    '`newFn` (dist/x-*.mjs) is cited by core/src/x.rs but not in the manifest: check the mirror against it, then run `node scripts/openclaw-drift.mjs --write`',
    '`movedFn` is cited by core/src/openclaw/x.rs now, by core/src/x.rs in the manifest: run `node scripts/openclaw-drift.mjs --write`',
    "OpenClaw's `goneFn` (dist/x-*.mjs) is gone from the pinned package: re-read core/src/x.rs, then run `node scripts/openclaw-drift.mjs --write`",
    '`droppedFn` is in the manifest but no file of core/src cites it any more: run `node scripts/openclaw-drift.mjs --write`',
    'the manifest was written for OpenClaw 1.0.0, the pinned one is 2.0.0: settle any drift above, then run `node scripts/openclaw-drift.mjs --write`',
  ]);
  assert.deepEqual(compare({ ...recorded, openclaw: '2.0.0', functions: now.functions }, now), []);
});

test('scanning the pinned package finds the mirrors of the core', () => {
  const now = scanPackage();
  assert.ok(now.functions.length > 100, `${now.functions.length} functions`);
  assert.deepEqual(
    now.functions.find((f) => f.name === 'resolveUserPath').chunks.filter((c) => c.startsWith('home-dir')),
    ['home-dir-*.mjs'],
  );
});
