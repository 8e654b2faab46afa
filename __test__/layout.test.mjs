// The package's JS reads top-down: the entries at the root, everything else
// in lib/, and imports that run one way (no cycle, so every module can be
// loaded and tested on its own).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const ENTRIES = ['index.js', 'wasm.js', 'bin/claw-identity.js'];

/** The package's own modules each module imports (static, dynamic and require), by path from the root. */
function graph() {
  const files = [...ENTRIES, ...fs.readdirSync(path.join(root, 'lib')).map((f) => `lib/${f}`)];
  const edges = new Map();
  for (const f of files) {
    const text = fs.readFileSync(path.join(root, f), 'utf8');
    const specs = [...text.matchAll(/(?:from\s+|import\(\s*|require\(\s*)['"](\.[^'"]+)['"]/g)].map((m) => m[1]);
    edges.set(
      f,
      specs.map((s) => path.relative(root, path.resolve(path.dirname(path.join(root, f)), s))).filter((t) => /\.(m?js|cjs)$/.test(t)),
    );
  }
  return edges;
}

test('the root holds no hand-written JS but the entries', () => {
  const js = fs.readdirSync(root).filter((f) => /\.(m?js|cjs)$/.test(f));
  assert.deepEqual(js.sort(), ['index.js', 'wasm.js']);
});

test('imports run one way: no module reaches itself', () => {
  const edges = graph();
  const visit = (node, trail) => {
    assert.ok(!trail.includes(node), `import cycle: ${[...trail, node].join(' -> ')}`);
    for (const next of edges.get(node) ?? []) visit(next, [...trail, node]);
  };
  for (const f of edges.keys()) visit(f, []);
  // lib/ never imports an entry: the CLI takes the API it runs on.
  for (const [f, to] of edges) if (f.startsWith('lib/')) for (const t of to) assert.ok(t.startsWith('lib/'), `${f} imports ${t}`);
});

/** The project's Markdown: the root's, docs/, and the READMEs of the suites and the fuzzer. */
function markdown() {
  const inDir = (dir) =>
    fs
      .readdirSync(path.join(root, dir))
      .filter((f) => f.endsWith('.md'))
      .map((f) => path.join(dir, f));
  return [...inDir('.'), ...inDir('docs'), '__test__/e2e/README.md', 'fuzz/README.md'];
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function anchors(file) {
  const text = fs.readFileSync(path.join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} +(.+)$/gm)].map((m) => slug(m[1])));
}

test('every relative link in the docs names a file, and a heading, that exist', () => {
  const broken = [];
  for (const file of markdown()) {
    const text = fs.readFileSync(path.join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
      const [rel, anchor] = target.split('#');
      const to = rel ? path.normalize(path.join(path.dirname(file), rel.replace(/\\_/g, '_'))) : file;
      if (!fs.existsSync(path.join(root, to))) broken.push(`${file}: ${target} (no ${to})`);
      else if (anchor && to.endsWith('.md') && !anchors(to).has(anchor)) broken.push(`${file}: ${target} (no heading #${anchor} in ${to})`);
    }
  }
  assert.deepEqual(broken, []);
});

test('the README stays a front page: about 8 KB', () => {
  const bytes = fs.statSync(path.join(root, 'README.md')).size;
  assert.ok(bytes <= 8.5 * 1024, `README.md is ${bytes} bytes; move detail into docs/`);
});

test('no doc, test or source cites an issue number, which the repository cannot resolve', () => {
  const found = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (!/^(node_modules|target|\.cache|\.git)$/.test(e.name)) walk(rel);
      } else if (/\.(md|m?js|cjs|rs|ts)$/.test(e.name)) {
        const text = fs.readFileSync(path.join(root, rel), 'utf8');
        for (const m of text.matchAll(/\bissues? #?\d+\b/gi)) found.push(`${rel}: ${m[0]}`);
      }
    }
  };
  walk('.');
  assert.deepEqual(found, []);
});
