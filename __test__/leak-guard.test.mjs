// The leak guard itself must be able to fail. Each case runs a small suite
// in a child `node --test` that leaks one way; the child must fail, naming
// where the leak was, by fingerprint only. A clean suite must pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { IdentityLayer, entryUrl } from './helpers/subject.mjs';
import { assertNoTokenIn, captureLogger, randomToken, tempDir, writeMap } from './helpers/support.mjs';

const supportUrl = new URL('./helpers/support.mjs', import.meta.url).href;
const indexUrl = entryUrl;

/** Runs `body` as a one-test suite in a child test runner. Its output is not echoed: it may hold a token. */
function runSuite(body) {
  const dir = tempDir();
  const file = path.join(dir, 'case.test.mjs');
  fs.writeFileSync(
    file,
    `import { test } from 'node:test';
     import path from 'node:path';
     import * as h from ${JSON.stringify(supportUrl)};
     import { IdentityLayer, fingerprint } from ${JSON.stringify(indexUrl)};
     test('case', async () => { ${body} });`,
  );
  // Without the parent runner's NODE_TEST_CONTEXT, the child runs as a runner of its own.
  const { NODE_TEST_CONTEXT, ...env } = process.env;
  const r = spawnSync(process.execPath, ['--test', file], { encoding: 'utf8', timeout: 60_000, env });
  const out = `${r.stdout}\n${r.stderr}`;
  return { status: r.status, guard: out.match(/leak guard: [^'"\n]*/)?.[0] };
}

const cases = [
  [
    'a log line holding 16 characters of a token, in upper case',
    `h.recordEmitted('log.warn', 'x ' + h.randomToken().slice(20, 36).toUpperCase())`,
    /leak guard: log\.warn holds 16 characters of a token \(sha256:[0-9a-f]{12}\)/,
  ],
  [
    'a token written through writeMap, printed on stdout',
    `const t = 'c'.repeat(64); h.writeMap(path.join(h.tempDir(), 'm.json'), { a: t }); console.log('oops ' + t.slice(0, 16));`,
    /leak guard: stdout holds/,
  ],
  [
    'stats() holding a token (here, in the map path)',
    `const t = h.randomToken(); const d = h.tempDir(); const l = new IdentityLayer({ tokenMapPath: path.join(d, t + '.json'), logger: { info() {}, warn() {}, error() {} } }); l.stats(); l.close();`,
    /leak guard: IdentityLayer\.stats holds/,
  ],
];

for (const [what, body, expected] of cases) {
  test(`the leak guard fails a suite that leaks ${what}`, () => {
    const r = runSuite(body);
    assert.notEqual(r.status, 0, 'the leaking suite passed');
    assert.match(r.guard ?? '', expected);
  });
}

test('the leak guard passes a suite that shows only fingerprints and short hex', () => {
  const r = runSuite(
    `const t = h.randomToken(); h.recordEmitted('log.info', 'token sha256:' + fingerprint(t) + ' abc123 ' + 'f'.repeat(15)); console.log(h.fingerprint(t));`,
  );
  assert.equal(r.guard, undefined);
  assert.equal(r.status, 0);
});

// What the model writes is not ours either: a token it pastes into the params
// of a guarded tool (another agent's real token, or any 64 hex) must not come
// back in a block reason, an approval, a log line or stats.
test('a token the model pastes into guarded params is never echoed', async () => {
  const FRANCIS = 'paco--francis';
  const ctx = { agentId: FRANCIS, sessionKey: `agent:${FRANCIS}:main` };
  const atlasToken = randomToken();
  const file = path.join(tempDir(), 'agent-tokens.json');
  writeMap(file, { [FRANCIS]: randomToken(), 'pepito--atlas': atlasToken });
  const log = captureLogger();
  // The session store fails, quoting the key: the failure reason and its log line are echoed too.
  const sessions = {
    async ensure(_agent, key) {
      throw new Error(`cannot create ${key}`);
    },
    spawnerOf: () => undefined,
  };
  const layers = [
    new IdentityLayer({ tokenMapPath: file, logger: log.logger, sessions }),
    new IdentityLayer({ tokenMapPath: file, logger: log.logger, sessions, rules: { crossUserSend: { grants: { 'paco--*': { 'pepito--*': 'ask' } } } } }),
  ];
  const calls = (v) => [
    ['sessions_send', { agentId: v, message: 'm' }],
    ['sessions_send', { agentId: `pepito--${v}`, message: 'm' }],
    ['sessions_send', { agentId: `paco--${v.toUpperCase()}`, message: 'm' }],
    ['sessions_send', { sessionKey: `agent:${v}:main`, message: 'm' }],
    ['sessions_send', { sessionKey: `agent:paco--dali:${v}`, message: 'm' }],
    ['sessions_send', { sessionKey: v, message: 'm' }],
    ['sessions_send', { sessionKey: 'agent:paco--dali:main', agentId: `pepito--${v}`, message: 'm' }],
    ['sessions_send', { agentId: 'paco--dali', label: v, message: 'm' }],
    ['sessions_send', { label: v, message: 'm' }],
    ['sessions_spawn', { agentId: v, task: 't' }],
    ['sessions_spawn', { agentId: `paco--${v}`, task: `use ${v}` }],
    ['sessions_spawn', { agentId: `pepito--${v}`, task: 't' }],
    ['sessions_spawn', { agentId: 'paco--dali', task: `use ${v} please` }],
    ['workboard_create', { title: 't', boardId: v }],
    ['workboard_decompose', { children: [{ title: 't', boardId: v }] }],
  ];
  let echoed = 0;
  for (const pasted of [atlasToken, randomToken()]) {
    for (const layer of layers) {
      for (const [toolName, params] of calls(pasted)) {
        const r = await layer.beforeToolCall({ toolName, params }, ctx);
        const said = { blockReason: r?.blockReason, requireApproval: r?.requireApproval };
        if (said.blockReason !== undefined || said.requireApproval !== undefined) echoed++;
        assertNoTokenIn(said, `${toolName} ${Object.keys(params).join(',')}`);
      }
    }
  }
  for (const layer of layers) {
    assertNoTokenIn(layer.stats(), 'stats');
    layer.close();
  }
  for (const { level, line } of log.lines) assertNoTokenIn(line, `log.${level}`);
  // The calls did reach the rules: most were refused or asked about, with their reasons.
  assert.ok(echoed >= 20, `only ${echoed} calls said anything`);
  assert.ok(log.has(/<redacted sha256:[0-9a-f]{12}>/), log.text());
});
