// Per-call cost: (a) the plain-JS design, (b) an empty N-API call, (c) this
// project's beforeToolCall, interleaved in one process.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { IdentityLayer, beforeToolCall, noop, redactToolResult } from '../index.js';
import plugin from '../index.js';
import * as wasm from '../wasm.js';
import { plainHook } from './baseline.mjs';
import { interleave, median, pairedRatio, randomToken, tempDir, writeMapAtomic } from './harness.mjs';

const AGENT = 'paco--francis';

/** Result sizes of the redaction rows, in KB. */
export const REDACT_KB = [1, 10, 100, 1024, 10240];

/** OpenClaw's hook ctx for an MCP tool call (no `requester`). */
const ctxFor = (toolName) => ({
  agentId: AGENT,
  sessionKey: `agent:${AGENT}:main`,
  sessionId: '6f1c2a4e-8d0b-4c1e-9a7f-2b3c4d5e6f70',
  runId: '0b9e8c7d-6a5f-4e3d-8c2b-1a0f9e8d7c6b',
  toolName,
  toolCallId: 'call_01',
});

const event = (toolName, params) => ({ toolName, params, runId: ctxFor(toolName).runId, toolCallId: 'call_01' });

/** Owned tool, about five fields, including the token the model made up. */
const small = () => event('claw-os__claw_notes', { action: 'search', query: 'groceries', limit: 20, tags: ['home'], auth_token: 'made-up-by-the-model' });
/** Owned tool with about 10 KB of params (a note body). */
const large = () =>
  event('claw-os__claw_notes', {
    action: 'create',
    title: 'Meeting notes',
    body: 'lorem ipsum '.repeat(854),
    tags: ['work', 'q3'],
    auth_token: 'made-up-by-the-model',
  });
const unowned = () => event('web_search', { query: 'weather in Lisbon', count: 5 });
const send = () => event('sessions_send', { sessionKey: 'agent:paco--dali:main', message: 'Can you check the calendar?', timeoutSeconds: 30 });

/** A logger as OpenClaw passes one (`api.logger`), that only counts lines. */
function countingLogger() {
  const counts = { info: 0, warn: 0, error: 0 };
  return { counts, logger: { info: () => counts.info++, warn: () => counts.warn++, error: () => counts.error++ } };
}

/** The plain-JS design deployed the same way: one hook, and its own per-call log line. */
function plainDeployed(file, logger) {
  const hook = plainHook(file);
  return (ev, ctx) => {
    const r = hook(ev, ctx);
    if (r !== undefined) logger.info(`[plain] before_tool_call tool=${ev.toolName} agent=${ctx.agentId} token-status=ok`);
    return r;
  };
}

/** The plugin as OpenClaw loads it: the trusted policy, then the safety-net hook on the policy's result (OpenClaw hands the hook a copy of the event). */
function pluginPair(tokenMapPath, logger, entry = plugin) {
  let policy;
  let hook;
  entry.register({
    pluginConfig: { tokenMapPath },
    logger,
    registrationMode: 'full',
    registerTrustedToolPolicy: (p) => (policy = p),
    on: (name, h) => {
      if (name === 'before_tool_call') hook = h;
    },
  });
  return (ev, ctx) => {
    const r = policy.evaluate(ev, ctx);
    const next = r?.params === undefined ? ev : { ...ev, params: r.params };
    return hook(next, ctx) ?? r;
  };
}

/**
 * The plain-JS redactor: one case-insensitive regex of the map's tokens,
 * over every string of the result (copied where one matched). It replaces
 * whole tokens only, where the addon replaces any hex run holding 16 digits of one.
 */
export function plainRedactor(tokens) {
  const re = new RegExp(tokens.join('|'), 'gi');
  const fp = (t) => `sha256:${crypto.createHash('sha256').update(t.toLowerCase()).digest('hex').slice(0, 12)}`;
  const walk = (v) => {
    if (typeof v === 'string') {
      re.lastIndex = 0;
      return re.test(v) ? v.replace(re, fp) : v;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const o = {};
      for (const k of Object.keys(v)) o[k] = walk(v[k]);
      return o;
    }
    return v;
  };
  return (ev) => ({ result: walk(ev.result) });
}

/** A map of ten agents, the one the calls come from among them, in `dir`. */
function tenAgents(dir) {
  const file = path.join(dir, 'agent-tokens.json');
  const map = {};
  for (let i = 0; i < 9; i++) map[`agent-${i}`] = randomToken();
  map[AGENT] = randomToken();
  writeMapAtomic(file, map);
  return { file, map };
}

export async function perCall({ samples, calls, clock = 'wall', redactionOnly = false }) {
  const tmp = tempDir();
  const work = tempDir();
  try {
    const { file, map } = tenAgents(tmp.dir);

    const plain = plainHook(file);
    const quiet = new IdentityLayer({ tokenMapPath: file });
    const info = countingLogger();
    const logged = new IdentityLayer({ tokenMapPath: file, logger: info.logger });
    const pluginLog = countingLogger();
    const both = pluginPair(file, pluginLog.logger);
    // The token alone, as the plain-JS design does it (no conversation id), when the rule can be switched off.
    let tokenOnly;
    try {
      tokenOnly = new IdentityLayer({ tokenMapPath: file, rules: { conversationId: { enabled: false } } });
    } catch {
      tokenOnly = undefined;
    }

    const plainLog = countingLogger();
    const plainBoth = plainDeployed(file, plainLog.logger);
    // The cross-user guard reads sessions_send (every rule is on by default).
    const guardsSend = quiet.beforeToolCall(send(), ctxFor('sessions_send')) !== undefined;

    const ev = { small: small(), large: large(), unowned: unowned(), send: send() };
    const cx = { owned: ctxFor('claw-os__claw_notes'), unowned: ctxFor('web_search'), send: ctxFor('sessions_send') };

    // Every measured path must do the real work: check the rewrite before timing it.
    const hooks = [
      ['plain', plain],
      ['plain deployed', plainBoth],
      ['layer', (e, c) => quiet.beforeToolCall(e, c)],
      ['logged', (e, c) => logged.beforeToolCall(e, c)],
      ['plugin', both],
    ];
    if (tokenOnly) hooks.push(['token only', (e, c) => tokenOnly.beforeToolCall(e, c)]);
    for (const [name, hook] of hooks) {
      for (const e of [ev.small, ev.large]) {
        const r = hook(e, cx.owned);
        if (r?.params?.auth_token !== map[AGENT] || r.params.action !== e.params.action) {
          throw new Error(`bench: ${name} did not rewrite the token`);
        }
      }
      if (hook(ev.unowned, cx.unowned) !== undefined) throw new Error(`bench: ${name} touched an unowned tool`);
    }

    // `vs`: the plain-JS variant doing the same job, for the c/a ratio.
    const variants = [
      { id: 'a.small', run: () => plain(ev.small, cx.owned) },
      { id: 'a.large', run: () => plain(ev.large, cx.owned) },
      { id: 'a.unowned', run: () => plain(ev.unowned, cx.unowned) },
      { id: 'a.deployed', run: () => plainBoth(ev.small, cx.owned) },
      { id: 'b.noop', run: () => noop() },
      { id: 'c.small', vs: 'a.small', run: () => quiet.beforeToolCall(ev.small, cx.owned) },
      { id: 'c.large', vs: 'a.large', run: () => quiet.beforeToolCall(ev.large, cx.owned) },
      { id: 'c.unowned', vs: 'a.unowned', run: () => quiet.beforeToolCall(ev.unowned, cx.unowned) },
      { id: 'c.small+log', vs: 'a.small', run: () => logged.beforeToolCall(ev.small, cx.owned) },
      { id: 'c.large+log', vs: 'a.large', run: () => logged.beforeToolCall(ev.large, cx.owned) },
      { id: 'c.plugin+log', vs: 'a.deployed', run: () => both(ev.small, cx.owned) },
      { id: 'c.plugin.unowned', vs: 'a.unowned', run: () => both(ev.unowned, cx.unowned) },
      // The module's own beforeToolCall, as OpenClaw calls it (the trusted policy, with the plugin's logger).
      { id: 'm.small+log', vs: 'a.small', run: () => beforeToolCall(ev.small, cx.owned) },
      { id: 'm.unowned', vs: 'a.unowned', run: () => beforeToolCall(ev.unowned, cx.unowned) },
    ];
    // A guarded file tool (map-access): a read outside the map's directory,
    // next to one fs.statSync of the same file from JS.
    const notes = path.join(work.dir, 'notes.md');
    fs.writeFileSync(notes, 'groceries');
    const readEv = event('read', { path: notes });
    if (quiet.beforeToolCall(readEv, ctxFor('read')) !== undefined) throw new Error('bench: the guard refused a plain read');
    variants.push({ id: 'a.stat', run: () => void fs.statSync(notes) });
    variants.push({ id: 'g.read', vs: 'a.stat', run: () => quiet.beforeToolCall(readEv, ctxFor('read')) });

    // The tool-result middleware: every string of a result scanned for the map's tokens.
    const text = (kb, token) => {
      const filler = 'drwxr-xr-x 2 paco paco 4096 Dec  1 notes-2026-12-01.md\n';
      const body = filler.repeat(Math.ceil((kb * 1024) / filler.length)).slice(0, kb * 1024 - (token ? 64 : 0));
      return token ? body.slice(0, 512) + token + body.slice(512) : body;
    };
    const result = (t) => ({ toolName: 'exec', result: { content: [{ type: 'text', text: t }], details: { status: 'completed', exitCode: 0 } } });
    const plainRedact = plainRedactor(Object.values(map));
    const k1t = result(text(1, map[AGENT]));
    for (const redact of [redactToolResult, plainRedact]) {
      if (redact(k1t)?.result?.content?.[0]?.text?.includes(map[AGENT]) !== false) throw new Error('bench: a redactor did not redact');
    }
    // Each size in rounds of its own, calls scaled to about the same bytes
    // per sample, each next to the plain-JS redactor.
    const redaction = [];
    for (const kb of REDACT_KB) {
      const r = result(text(kb));
      redaction.push({
        kb,
        calls: Math.max(20, Math.floor(calls / (20 * kb))),
        variants: [
          { id: `r.${kb}k.plain`, run: () => plainRedact(r) },
          { id: `r.${kb}k`, vs: `r.${kb}k.plain`, run: () => redactToolResult(r) },
        ],
      });
    }
    // Hex-heavy text with no token (`sha256sum` output, 1 MB): every line
    // is a run of 64 hex digits the redactor must search.
    const sums = Array.from({ length: Math.ceil((1024 * 1024) / 80) }, (_, i) => `${randomToken()}  file-${String(i).padStart(6, '0')}.bin\n`)
      .join('')
      .slice(0, 1024 * 1024);
    const hex = result(sums);
    redaction.push({
      kb: 1024,
      calls: Math.max(20, Math.floor(calls / (20 * 1024))),
      variants: [
        { id: 'r.hex.plain', run: () => plainRedact(hex) },
        { id: 'r.hex', vs: 'r.hex.plain', run: () => redactToolResult(hex) },
      ],
    });
    if (tokenOnly) variants.push({ id: 'c.small.token', vs: 'a.small', run: () => tokenOnly.beforeToolCall(ev.small, cx.owned) });
    if (guardsSend) {
      variants.push({ id: 'c.send', run: () => quiet.beforeToolCall(ev.send, cx.send) });
      variants.push({ id: 'c.send+log', run: () => logged.beforeToolCall(ev.send, cx.send) });
    }
    // `redactionOnly` (`--only=redaction`): the tool-result rows alone.
    const rounds = redactionOnly ? null : await interleave(variants, { samples, calls, clock });
    const roundsById = {};
    for (const v of variants) roundsById[v.id] = rounds;
    for (const size of redaction) {
      const rs = await interleave(size.variants, { samples, calls: size.calls, chunk: Math.min(500, size.calls), warmup: size.calls, clock });
      for (const v of size.variants) roundsById[v.id] = rs;
    }

    const measured = redactionOnly ? [] : variants;
    const all = [...measured, ...redaction.flatMap((s) => s.variants)];
    const rows = all.map(({ id, vs }) => {
      const rs = roundsById[id];
      const floor = 'b.noop';
      return {
        id,
        ns: median(rs.map((r) => r[id])),
        vsPlain: vs ? pairedRatio(rs, id, vs) : null,
        // Against each build's own empty call, where it ran in the same rounds.
        vsNoop: id.endsWith('noop') || !(floor in rs[0]) ? null : pairedRatio(rs, id, floor),
      };
    });
    const quietStats = quiet.stats();
    const loggedStats = logged.stats();
    quiet.close();
    logged.close();
    tokenOnly?.close();
    return {
      rows,
      rounds,
      guardsSend,
      logLines: { delivered: info.counts.info, dropped: loggedStats.logDropped },
      counters: { injected: quietStats.injected + loggedStats.injected },
    };
  } finally {
    tmp.cleanup();
    work.cleanup();
  }
}

/**
 * The WebAssembly build's rows, each next to its plain-JS anchor in the
 * same rounds: owned (`IdentityLayer.beforeToolCall`), a tool it does not
 * own, deployed (the plugin's two tiers, with a logger) and the module's
 * `beforeToolCall`. Run on this Node, and by `run.mjs` on the other one in
 * a child (`node bench/percall.mjs --wasm <samples> <calls> <clock>`).
 */
export async function wasmPerCall({ samples, calls, clock = 'wall' }) {
  const tmp = tempDir();
  try {
    const { file, map } = tenAgents(tmp.dir);
    const plain = plainHook(file);
    const plainBoth = plainDeployed(file, countingLogger().logger);
    const quiet = new wasm.IdentityLayer({ tokenMapPath: file });
    const both = pluginPair(file, countingLogger().logger, wasm.default);
    const ev = { small: small(), unowned: unowned() };
    const cx = { owned: ctxFor('claw-os__claw_notes'), unowned: ctxFor('web_search') };
    for (const [name, hook] of [
      ['layer', (e, c) => quiet.beforeToolCall(e, c)],
      ['plugin', both],
      ['module', (e, c) => wasm.beforeToolCall(e, c)],
    ]) {
      if (hook(ev.small, cx.owned)?.params?.auth_token !== map[AGENT]) throw new Error(`bench: the WebAssembly ${name} did not rewrite the token`);
      if (hook(ev.unowned, cx.unowned) !== undefined) throw new Error(`bench: the WebAssembly ${name} touched an unowned tool`);
    }
    const variants = [
      { id: 'a.small', run: () => plain(ev.small, cx.owned) },
      { id: 'a.unowned', run: () => plain(ev.unowned, cx.unowned) },
      { id: 'a.deployed', run: () => plainBoth(ev.small, cx.owned) },
      { id: 'w.noop', run: () => wasm.noop() },
      { id: 'w.small', vs: 'a.small', run: () => quiet.beforeToolCall(ev.small, cx.owned) },
      { id: 'w.unowned', vs: 'a.unowned', run: () => quiet.beforeToolCall(ev.unowned, cx.unowned) },
      { id: 'w.plugin+log', vs: 'a.deployed', run: () => both(ev.small, cx.owned) },
      { id: 'w.m.small+log', vs: 'a.small', run: () => wasm.beforeToolCall(ev.small, cx.owned) },
    ];
    const rounds = await interleave(variants, { samples, calls, clock });
    quiet.close();
    return {
      node: process.versions.node,
      rows: variants.map(({ id, vs }) => ({
        id,
        ns: median(rounds.map((r) => r[id])),
        vsAnchor: vs ? pairedRatio(rounds, id, vs) : null,
        vsNoop: id.startsWith('w.') && id !== 'w.noop' ? pairedRatio(rounds, id, 'w.noop') : null,
      })),
    };
  } finally {
    tmp.cleanup();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--wasm') {
  const [samples, calls, clock] = process.argv.slice(3);
  console.log(JSON.stringify(await wasmPerCall({ samples: Number(samples), calls: Number(calls), clock })));
}
