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
