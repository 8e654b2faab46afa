#!/usr/bin/env node
// The drift check: has OpenClaw changed a function the core mirrors?
//
// The core follows many of OpenClaw's internal functions, and each mirror
// names them in backticks (`resolveUserPath`, `home-dir-*.mjs`). This script
// finds those names in every core/src/**/*.rs, keeps the ones the pinned
// package defines as a function, fingerprints each definition's source text
// and compares the fingerprints with core/src/openclaw/drift.json, written
// when the mirrors were last read against a pin.
//
//   node scripts/openclaw-drift.mjs           check: one line per drift, exit 1 on any
//   node scripts/openclaw-drift.mjs --write   record the pinned package's fingerprints
//   --dist DIR, --src DIR, --manifest FILE    another package's dist/, Rust tree or manifest
//
// What counts as a mirrored function:
// - a camelCase name in backticks anywhere in a .rs file (comments, and the
//   tool catalog's reach texts, which cite the same way). Single lower-case
//   words (`write`, `trim`, `main`) are tool names, actions and config keys,
//   never the functions the mirrors cite; a name the package doesn't define
//   as a function (`workspaceOnly`, `sessionKey`) is no citation either.
// - defined at module scope (at the start of a line, as the bundler writes
//   it) in dist/*.mjs or a bundled plugin's dist/extensions/<id>/*.js:
//   `function NAME(`, `async function NAME(`, `function* NAME(`, or
//   `const NAME = ` an arrow function or a function expression. Class
//   methods, and the bundles of dist/'s subfolders that inline copies of
//   the chunks (worker/, control-ui/), are out of scope.
// - the bundler copies a function into every chunk that needs it, and
//   unrelated modules may define the same name: the fingerprint covers every
//   definition of the name, the distinct texts sorted, so another identical
//   copy changes nothing and any changed copy is a drift. A name renamed in a
//   chunk (`resolveUserPath$1`) is another module's function, left out.
//
// The fingerprint is the sha256 (16 hex) of the definition's text, from its
// first keyword to its closing brace (or `;`), line endings normalized.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_DIST = path.join(root, '.cache/openclaw/node_modules/openclaw/dist');
export const DEFAULT_SRC = path.join(root, 'core/src');
export const DEFAULT_MANIFEST = path.join(root, 'core/src/openclaw/drift.json');
const WRITE = 'node scripts/openclaw-drift.mjs --write';

const CAMEL_CASE = /^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/;

/** Every camelCase name in backticks in the .rs files under `srcDir`: name -> the files citing it (as `core/src/...`). */
export function citedNames(srcDir) {
  const cited = new Map();
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, e.name);
      if (e.isDirectory()) walk(file);
      else if (e.name.endsWith('.rs')) {
        const rel = path.posix.join('core/src', path.relative(srcDir, file).split(path.sep).join('/'));
        // `name`, `name()` or `name(args)`
        for (const [, name] of fs.readFileSync(file, 'utf8').matchAll(/`([A-Za-z_$][\w$]*)(?:\([^`\n]*\))?`/g)) {
          if (!CAMEL_CASE.test(name)) continue;
          if (!cited.has(name)) cited.set(name, new Set());
          cited.get(name).add(rel);
        }
      }
    }
  };
  walk(srcDir);
  return cited;
}

/** The files of `distDir` that may define a mirrored function, relative to it: the chunks and the bundled plugins' files. */
export function distFiles(distDir) {
  const files = fs.readdirSync(distDir).filter((f) => f.endsWith('.mjs'));
  const extensions = path.join(distDir, 'extensions');
  if (fs.existsSync(extensions)) {
    for (const id of fs.readdirSync(extensions, { withFileTypes: true })) {
      if (!id.isDirectory()) continue;
      for (const f of fs.readdirSync(path.join(extensions, id.name))) if (f.endsWith('.js')) files.push(`extensions/${id.name}/${f}`);
    }
  }
  return files.sort();
}

/**
 * A chunk's name without its content hash: `home-dir-BKwhAL2c.mjs` -> `home-dir-*.mjs`.
 * The bundled plugins' files have no hash (`extensions/onepassword/onepassword-secret-ref-resolver.js`).
 */
export function chunkPattern(file) {
  return file.startsWith('extensions/') ? file : file.replace(/-[A-Za-z0-9_-]{8}\.mjs$/, '-*.mjs');
}

// A definition at the start of a line; `const` ones are checked to be functions by isFunctionValue.
const DEFINITION = /^(?:export )?(?:(?:async )?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\(|(?:const|let|var) ([A-Za-z_$][\w$]*) = )/gm;

/** Where `text` defines a function whose name is in `names`: [{ name, start }], `start` at the definition's first keyword. */
export function findDefinitions(text, names) {
  const found = [];
  for (const m of text.matchAll(DEFINITION)) {
    const name = m[1] ?? m[2];
    if (!names.has(name)) continue;
    if (m[2] && !isFunctionValue(text, m.index + m[0].length)) continue;
    found.push({ name, start: m.index });
  }
  return found;
}

/** Whether the expression at `at` is a function: `function`, `async`, `x =>` or `(...) =>`. */
function isFunctionValue(text, at) {
  const rest = text.slice(at, at + 200);
  if (/^(?:async\s*)?function\b/.test(rest) || /^(?:async\s+)?[A-Za-z_$][\w$]*\s*=>/.test(rest)) return true;
  const open = rest.match(/^(?:async\s*)?\(/);
  if (!open) return false;
  const close = skipCode(text, at + open[0].length - 1, { stopAtEmpty: ')' });
  return close !== -1 && /^\s*=>/.test(text.slice(close, close + 20));
}

/**
 * The source text of the definition starting at `start`: a function
 * declaration to the brace that closes its body, a `const` to the `;` (or
 * the line break) that ends the statement.
 */
export function extractDefinition(text, start) {
  const declaration = /^(?:export )?(?:async )?function\b/.test(text.slice(start, start + 30));
  const end = skipCode(text, start, declaration ? { stopAtEmpty: '}' } : { stopAtStatementEnd: true });
  return text.slice(start, end === -1 ? text.length : end);
}

const KEYWORDS_BEFORE_EXPRESSION = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

/**
 * Walks JavaScript from `start`, skipping strings, template literals (and
 * the code of their `${}`), regular expression literals and comments, and
 * returns the index just past the end:
 * - stopAtEmpty: the closing bracket (`)` or `}`) that leaves no bracket open;
 * - stopAtStatementEnd: a `;` with no bracket open, or a line break with none
 *   open before a line that starts at column 0 (the next module-scope statement).
 * -1 when the text ends first. A `/` is a regular expression unless it follows
 * a name, a number or a closing bracket (then it divides).
 */
function skipCode(text, start, { stopAtEmpty, stopAtStatementEnd }) {
  const open = []; // '(', '[', '{', or '${' for a template literal's code
  let previous = ''; // the last token: a word, or a punctuation character
  let i = start;
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '\n' && stopAtStatementEnd && open.length === 0 && previous && /\S/.test(text[i + 1] ?? ' ')) return i;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '/' && next === '/') {
      i = text.indexOf('\n', i);
      if (i === -1) return -1;
    } else if (c === '/' && next === '*') {
      i = text.indexOf('*/', i + 2);
      if (i === -1) return -1;
      i += 2;
    } else if (c === '"' || c === "'") {
      i = skipString(text, i);
      previous = 'a';
    } else if (c === '`') {
      i = skipTemplate(text, i + 1, open);
      previous = text[i - 1] === '{' ? '{' : 'a'; // in a `${`, or past the literal
    } else if (c === '/' && startsExpression(previous)) {
      i = skipRegex(text, i);
      previous = 'a';
    } else if (/[\w$\\]/.test(c) || c.charCodeAt(0) > 127) {
      WORD.lastIndex = i;
      previous = WORD.exec(text)[0];
      i += previous.length;
    } else {
      i++;
      previous = c;
      if (c === '(' || c === '[' || c === '{') open.push(c);
      else if (c === ')' || c === ']' || c === '}') {
        const was = open.pop();
        if (was === '${') {
          i = skipTemplate(text, i, open);
          previous = text[i - 1] === '{' ? '{' : 'a';
        } else if (open.length === 0 && c === stopAtEmpty) return i;
      } else if (c === ';' && stopAtStatementEnd && open.length === 0) return i;
    }
    if (i === -1) return -1;
  }
  return -1;
}

const WORD = /[\w$\\\u0080-\uffff]+/y;
const FLAGS = /[a-z]*/y;

/** Whether a `/` after `previous` (a word, or a punctuation character) starts a regular expression rather than divides. */
function startsExpression(previous) {
  return previous === '' || KEYWORDS_BEFORE_EXPRESSION.has(previous) || !/[\w$)\]}]$/.test(previous);
}

/** Past the string literal opening at `i`. */
function skipString(text, i) {
  const quote = text[i];
  for (i++; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === quote) return i + 1;
  }
  return -1;
}

/** From inside a template literal at `i`: past its closing backtick, or past a `${` (pushed onto `open`). */
function skipTemplate(text, i, open) {
  for (; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '`') return i + 1;
    else if (text[i] === '$' && text[i + 1] === '{') {
      open.push('${');
      return i + 2;
    }
  }
  return -1;
}

/** Past the regular expression literal opening at `i`, and its flags. */
function skipRegex(text, i) {
  let inClass = false;
  for (i++; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') i++;
    else if (c === '[') inClass = true;
    else if (c === ']') inClass = false;
    else if (c === '/' && !inClass) {
      FLAGS.lastIndex = i + 1;
      return i + 1 + FLAGS.exec(text)[0].length;
    } else if (c === '\n') return i; // not a regular expression after all: go on after the line
  }
  return -1;
}

/** sha256 (16 hex) of the distinct definition texts, sorted. */
export function fingerprint(texts) {
  const distinct = [...new Set(texts.map((t) => t.replace(/\r\n?/g, '\n')))].sort();
  return crypto.createHash('sha256').update(distinct.join('\0')).digest('hex').slice(0, 16);
}

/** The pinned version (dist/../package.json). */
export function packageVersion(distDir) {
  return JSON.parse(fs.readFileSync(path.join(distDir, '..', 'package.json'), 'utf8')).version;
}

/**
 * The package's side now: { openclaw, functions: [{ name, chunks, fingerprint, mirrors }] }
 * for every cited name `distDir` defines, sorted by name; and `cited`, every camelCase
 * name in backticks with its files (to tell a vanished function from a dropped citation).
 */
export function scanPackage({ dist = DEFAULT_DIST, src = DEFAULT_SRC } = {}) {
  const cited = citedNames(src);
  const found = new Map(); // name -> { chunks: Set, texts: [] }
  for (const file of distFiles(dist)) {
    const text = fs.readFileSync(path.join(dist, file), 'utf8');
    for (const { name, start } of findDefinitions(text, cited)) {
      if (!found.has(name)) found.set(name, { chunks: new Set(), texts: [] });
      found.get(name).chunks.add(chunkPattern(file));
      found.get(name).texts.push(extractDefinition(text, start));
    }
  }
  const functions = [...found.keys()].sort().map((name) => ({
    name,
    chunks: [...found.get(name).chunks].sort(),
    fingerprint: fingerprint(found.get(name).texts),
    mirrors: [...cited.get(name)].sort(),
  }));
  return { openclaw: packageVersion(dist), functions, cited };
}

/** The check's findings, one line each, comparing the manifest with `now` (scanPackage's result); none when in step. */
export function compare(manifest, now) {
  const lines = [];
  const before = new Map(manifest.functions.map((f) => [f.name, f]));
  const current = new Map(now.functions.map((f) => [f.name, f]));
  const where = (f) => f.chunks.map((c) => `dist/${c}`).join(', ');
  for (const f of now.functions) {
    const old = before.get(f.name);
    if (!old) {
      lines.push(`\`${f.name}\` (${where(f)}) is cited by ${f.mirrors.join(', ')} but not in the manifest: check the mirror against it, then run \`${WRITE}\``);
    } else if (old.fingerprint !== f.fingerprint) {
      lines.push(`OpenClaw's \`${f.name}\` (${where(f)}) changed since the mirror was written: re-read ${f.mirrors.join(', ')}, then run \`${WRITE}\``);
    } else if (old.mirrors.join() !== f.mirrors.join()) {
      lines.push(`\`${f.name}\` is cited by ${f.mirrors.join(', ')} now, by ${old.mirrors.join(', ')} in the manifest: run \`${WRITE}\``);
    }
  }
  for (const old of manifest.functions) {
    if (current.has(old.name)) continue;
    const citing = now.cited.get(old.name);
    if (citing) {
      lines.push(`OpenClaw's \`${old.name}\` (${where(old)}) is gone from the pinned package: re-read ${[...citing].sort().join(', ')}, then run \`${WRITE}\``);
    } else lines.push(`\`${old.name}\` is in the manifest but no file of core/src cites it any more: run \`${WRITE}\``);
  }
  if (manifest.openclaw !== now.openclaw) {
    lines.push(`the manifest was written for OpenClaw ${manifest.openclaw}, the pinned one is ${now.openclaw}: settle any drift above, then run \`${WRITE}\``);
  }
  return lines;
}

/** The manifest's text: sorted, one function a line, so a change diffs and merges as one line. */
export function manifestText({ openclaw, functions }) {
  const entries = functions.map((f) => `    ${JSON.stringify({ name: f.name, chunks: f.chunks, fingerprint: f.fingerprint, mirrors: f.mirrors })}`);
  return `{\n  "openclaw": ${JSON.stringify(openclaw)},\n  "functions": [\n${entries.join(',\n')}\n  ]\n}\n`;
}

function main(argv) {
  const opt = { dist: DEFAULT_DIST, src: DEFAULT_SRC, manifest: DEFAULT_MANIFEST, write: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--write') opt.write = true;
    else if (a === '--dist' || a === '--src' || a === '--manifest') opt[a.slice(2)] = path.resolve(argv[++i] ?? '');
    else {
      process.stderr.write(`openclaw-drift: unknown argument ${a} (--write, --dist DIR, --src DIR, --manifest FILE)\n`);
      return 2;
    }
  }
  if (!fs.existsSync(opt.dist)) {
    process.stderr.write(`openclaw-drift: no ${opt.dist} (node scripts/ensure-openclaw.mjs installs the pinned OpenClaw)\n`);
    return 2;
  }
  const t0 = Date.now();
  const now = scanPackage(opt);
  const files = new Set(now.functions.flatMap((f) => f.mirrors));
  const summary = `${now.functions.length} OpenClaw functions mirrored in ${files.size} Rust files, OpenClaw ${now.openclaw}, in ${Date.now() - t0} ms`;
  if (opt.write) {
    fs.writeFileSync(opt.manifest, manifestText(now));
    process.stdout.write(`openclaw-drift: wrote ${path.relative(process.cwd(), opt.manifest)}: ${summary}\n`);
    return 0;
  }
  const manifest = JSON.parse(fs.readFileSync(opt.manifest, 'utf8'));
  const lines = compare(manifest, now);
  for (const line of lines) process.stdout.write(`${line}\n`);
  process.stdout.write(`openclaw-drift: ${lines.length ? `${lines.length} to settle` : 'no drift'}: ${summary}\n`);
  return lines.length ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
