// npm run bench: per-call cost, reload latency and scale, side by side with
// the plain-JS design, and the sandbox (a command next to a bare bwrap, a
// turn on the event loop), in one process run on whichever Node runs it.
//   --quick              fewer and shorter samples (a smoke run, not for numbers)
//   --only=percall,reload,scale,sandbox (or redaction: the tool-result rows of percall alone)
//   --clock=wall|cpu     wall time (default), or process CPU time, which a
//                        busy shared machine does not inflate by preemption
//   --json=<file>        raw results, every sample
// Prints Markdown tables and a check of the targets.
import fs from 'node:fs';
import os from 'node:os';

import { clocks, fmtNs, fmtRatio, table } from './harness.mjs';
import { REDACT_KB, perCall } from './percall.mjs';
import { reloadLatency, wasmReloadLatency } from './reload.mjs';
import { sandboxBench } from './sandbox.mjs';
import { scale } from './scale.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k, v ?? true];
  }),
);
const quick = Boolean(args.quick);
const only = args.only ? new Set(String(args.only).split(',')) : null;
const want = (s) => only === null || only.has(s);
const clock = String(args.clock ?? 'wall');
if (!(clock in clocks)) throw new Error(`--clock must be one of ${Object.keys(clocks).join(', ')}`);

const LABELS = {
  'a.small': '(a) plain JS, owned tool, 5 fields',
  'a.large': '(a) plain JS, owned tool, 10 KB params',
  'a.unowned': '(a) plain JS, tool it does not own',
  'a.deployed': '(a) plain JS deployed: its hook plus its own per-call log line',
  'b.noop': '(b) empty N-API call (`noop`)',
  'm.small+log': "(m) the module's beforeToolCall (the trusted policy alone), owned, 5 fields, with logger",
  'm.unowned': "(m) the module's beforeToolCall, a tool it does not own",
  'c.small': '(c) IdentityLayer.beforeToolCall, owned, 5 fields',
  'c.large': '(c) owned, 10 KB params',
  'c.unowned': '(c) IdentityLayer.beforeToolCall, a tool it does not own',
  'c.small+log': '(c) owned, 5 fields, with logger',
  'c.large+log': '(c) owned, 10 KB params, with logger',
  'c.small.token': '(c) owned, 5 fields, token only (conversationId off)',
  'c.plugin+log': '(c) deployed: trusted policy + safety-net hook, OpenClaw ctx, with logger (vs a deployed)',
  'c.plugin.unowned': '(c) deployed: a tool it does not own, through both tiers',
  'c.send': '(c) sessions_send through the cross-user guard',
  'a.stat': '(a) one fs.statSync of the file a read names, from JS',
  'g.read': "(g) a guarded read of that file (map-access: its real path and identity, and its directory's), vs one statSync",
  'c.send+log': '(c) sessions_send, with logger',
  'w.noop': '(w) WebAssembly build: empty call (`noop`)',
  'w.small': '(w) WebAssembly build: IdentityLayer.beforeToolCall, owned, 5 fields',
  'w.unowned': '(w) WebAssembly build: a tool it does not own',
  'w.plugin+log': '(w) WebAssembly build deployed: trusted policy + safety net, with logger (vs a deployed)',
  'w.m.small+log': "(w) WebAssembly build: the module's beforeToolCall, owned, 5 fields, with logger",
};
for (const kb of REDACT_KB) {
  const size = kb >= 1024 ? `${kb / 1024} MB` : `${kb} KB`;
  LABELS[`r.${kb}k.plain`] = `(r) plain-JS regex redactor, ${size} result, no token`;
  LABELS[`r.${kb}k`] = `(r) tool-result middleware, ${size} result, no token (vs the regex)`;
}

LABELS['r.hex.plain'] = '(r) plain-JS regex redactor, 1 MB of sha256sum lines, no token';
LABELS['r.hex'] = '(r) tool-result middleware, 1 MB of sha256sum lines, no token (vs the regex)';

const results = {
  node: process.version,
  v8: process.versions.v8,
  cpu: os.cpus()[0]?.model,
  cores: os.cpus().length,
  loadBefore: os.loadavg(),
  clock,
  date: new Date().toISOString(),
};
const load = (l) => l.map((x) => x.toFixed(2)).join(' ');
console.log(
  `# claw-identity bench: Node ${process.version} (V8 ${process.versions.v8}), ${results.cpu} x${results.cores}, ${clock} clock, load ${load(os.loadavg())}\n`,
);
const checks = [];
const check = (what, ok, detail) => checks.push(`- [${ok ? 'x' : ' '}] ${what}: ${detail}`);

if (want('percall') || want('redaction')) {
  const samples = quick ? 5 : 15;
  const calls = quick ? 50_000 : 200_000;
  const redactionOnly = !want('percall');
  const r = await perCall({ samples, calls, clock, redactionOnly });
  results.perCall = r;
  console.log(`## Per call: median of ${samples} interleaved samples of ${calls.toLocaleString('en')} calls; c/a and c/b are medians of per-round ratios\n`);
  console.log(
    table(
      ['variant', 'ns/call', 'c/a', 'c/b'],
      r.rows.map((x) => [LABELS[x.id] ?? x.id, fmtNs(x.ns), x.vsPlain === null ? '' : fmtRatio(x.vsPlain), x.vsNoop === null ? '' : fmtRatio(x.vsNoop)]),
    ),
  );
  const row = Object.fromEntries(r.rows.map((x) => [x.id, x]));
  if (!redactionOnly) perCallChecks(r, row);
  redactionChecks(row);
}

/** The targets of the per-call rows. */
function perCallChecks(r, row) {
  console.log(
    `\n"with logger": a logger that takes info lines (OpenClaw always passes one), so each owned call also logs its line; without, info lines are off, as the plain-JS design has no logging. Info lines delivered: ${r.logLines.delivered.toLocaleString('en')}, dropped: ${r.logLines.dropped}. sessions_send rule: ${r.guardsSend ? 'present' : 'absent (no row)'}.\n`,
  );
  for (const id of ['m.small+log', 'c.small', 'c.small.token']) {
    if (row[id]) check(`one beforeToolCall at most 0.3x the plain-JS design (${LABELS[id].slice(4)})`, row[id].vsPlain <= 0.3, `${fmtRatio(row[id].vsPlain)}x`);
  }
  check(
    'the deployed path at most 0.5x the plain-JS design deployed the same way',
    row['c.plugin+log'].vsPlain <= 0.5,
    `${fmtRatio(row['c.plugin+log'].vsPlain)}x`,
  );
  check(
    "a tool it does not own at most 3x the N-API floor (the module's beforeToolCall)",
    row['m.unowned'].vsNoop <= 3,
    `${fmtRatio(row['m.unowned'].vsNoop)}x`,
  );
  check('a guarded file tool at most 2x one fs.statSync of the same path', row['g.read'].vsPlain <= 2, `${fmtRatio(row['g.read'].vsPlain)}x`);
  for (const id of ['w.small', 'w.m.small+log']) {
    check(`the WebAssembly build at most 3x the plain-JS design (${LABELS[id].slice(4)})`, row[id].vsPlain <= 3, `${fmtRatio(row[id].vsPlain)}x`);
  }
}

/** The targets of the tool-result rows. */
function redactionChecks(row) {
  const gbs = (kb) => (kb * 1024) / row[`r.${kb}k`].ns;
  console.log(
    `Tool-result redaction, GB/s: ${REDACT_KB.map((kb) => `${LABELS[`r.${kb}k`].match(/, (\S+ \S+) result/)[1]} ${gbs(kb).toFixed(2)} (regex ${((kb * 1024) / row[`r.${kb}k.plain`].ns).toFixed(2)})`).join('; ')}; 1 MB of sha256sum lines ${((1024 * 1024) / row['r.hex'].ns).toFixed(2)} (regex ${((1024 * 1024) / row['r.hex.plain'].ns).toFixed(2)}).\n`,
  );
  const big = REDACT_KB.filter((kb) => kb >= 1024);
  check(
    'redaction at least 1 GB/s on results of 1 MB and more',
    big.every((kb) => gbs(kb) >= 1),
    big.map((kb) => `${gbs(kb).toFixed(2)} GB/s`).join(', '),
  );
  check(
    'redaction at most 0.1x the plain-JS regex redactor, 1 KB to 10 MB',
    REDACT_KB.every((kb) => row[`r.${kb}k`].vsPlain <= 0.1),
    REDACT_KB.map((kb) => `${fmtRatio(row[`r.${kb}k`].vsPlain)}x`).join(', '),
  );
}

if (want('reload')) {
  const rotations = quick ? 200 : 1000;
  const r = await reloadLatency({ rotations });
  results.reload = r;
  const us = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
  console.log(
    `## Reload latency: rename of a new map to the first call returning the new token (${rotations.toLocaleString('en')} rotations, ${r.agents} agents, µs)\n`,
  );
  console.log(
    table(
      ['design', 'median', 'p99', 'max'],
      [
        ['claw-identity (inotify watcher thread; the caller spins on beforeToolCall)', us(r.ours.median), us(r.ours.p99), us(r.ours.max)],
        ['plain JS (its next call: stat, read, parse, on the calling thread)', us(r.plain.median), us(r.plain.p99), us(r.plain.max)],
      ],
    ),
  );
  console.log(`\nreloads counted: ${r.reloads}; rotations not seen within 2 s: ${r.timeouts}\n`);
  const w = await wasmReloadLatency({ rotations: quick ? 10 : 40 });
  results.wasmReload = w;
  console.log(
    `The WebAssembly build polls from a JS timer every 500 ms: ${w.rotations} rotations, each started at a random point of the cycle, the caller yielding to the event loop between calls (ms)\n`,
  );
  console.log(
    table(['design', 'median', 'p99', 'max'], [['claw-identity WebAssembly build', w.ms.median.toFixed(0), w.ms.p99.toFixed(0), w.ms.max.toFixed(0)]]),
  );
  console.log(`\nrotations not seen within 6 s: ${w.timeouts}\n`);
  check('reload p99 at most 5 ms', r.ours.p99 <= 5000 && r.timeouts === 0, `${us(r.ours.p99)} µs, ${r.timeouts} timeouts`);
}

if (want('scale')) {
  const rows = scale({ samples: quick ? 3 : 9, clock });
  results.scale = rows;
  const mib = (b) => (b / 2 ** 20).toFixed(b < 2 ** 20 ? 3 : 1);
  console.log('## Scale: one fresh process per map; per-call cost cycles over 1,024 agents of the map\n');
  console.log(
    table(
      ['agents', 'file MiB', 'load ms', 'reload ms', 'RSS added MiB', 'peak RSS added MiB', 'owned ns/call', 'c/b', 'plain JS re-read ms'],
      rows.map((r) => [
        `${r.agents.toLocaleString('en')}${r.atCap ? ' (at the 16 MiB cap)' : ''}`,
        mib(r.bytes),
        r.loadMs.toFixed(2),
        r.reloadMs.toFixed(1),
        r.rssMiB.toFixed(1),
        r.peakMiB.toFixed(1),
        fmtNs(r.ns),
        fmtRatio(r.vsNoop),
        r.plainParseMs.toFixed(2),
      ]),
    ),
  );
  console.log(
    '\n"load ms": reading, checking and parsing the map when the layer starts. "reload ms": rename of a changed map to the new map in force (the same work, on the watcher thread, while calls go on with the old map). "RSS added": after the load; "peak": the process\'s peak RSS over its RSS before the layer, which includes a reload (old and new map side by side). "plain JS re-read": what the plain-JS design pays on the calling thread for the first call after every change.\n',
  );
  const ratios = rows.filter((r) => !r.atCap).map((r) => r.vsNoop);
  const spread = Math.max(...ratios) / Math.min(...ratios);
  check('per-call cost flat from 10 to 100,000 agents (c/b within 1.5x)', spread <= 1.5, `c/b ${ratios.map(fmtRatio).join(' / ')}`);
  const cap = rows.find((r) => r.atCap);
  if (cap) check('a map at the size cap loads in under a second', cap.loadMs < 1000, `${cap.loadMs.toFixed(0)} ms, ${cap.rssMiB.toFixed(0)} MiB`);
}

if (want('sandbox')) {
  const r = await sandboxBench({ rounds: quick ? 30 : 200, turns: quick ? 100 : 500, coldTurns: quick ? 10 : 40 });
  results.sandbox = r;
  if (r.skipped) {
    console.log(`## Sandbox: skipped, ${r.skipped}\n`);
  } else {
    const ms = (x) => (x >= 10 ? x.toFixed(1) : x.toFixed(2));
    const sp = r.spawn;
    console.log(`## Sandbox: one command, spawned and waited for (${sp['host.sh'].n} interleaved rounds, ms, wall clock)\n`);
    console.log(
      table(
        ['command', 'p50', 'p99', 'vs bare bwrap'],
        [
          ['`sh -c true` on the host', ms(sp['host.sh'].p50), ms(sp['host.sh'].p99), fmtRatio(1 / r.ratio.bareVsSh)],
          [`bare \`bwrap ${r.flags.join(' ')} --ro-bind / / true\``, ms(sp['bwrap.bare'].p50), ms(sp['bwrap.bare'].p99), '1'],
          [
            `the backend's bwrap command line for \`true\` alone (${r.mounts} mounts, \`sh -c\`)`,
            ms(sp['bwrap.plan'].p50),
            ms(sp['bwrap.plan'].p99),
            fmtRatio(r.ratio.planVsBare),
          ],
          [
            "sandboxed `exec` of `true`: the backend's buildExecSpec, then spawn",
            ms(sp['backend.exec'].p50),
            ms(sp['backend.exec'].p99),
            fmtRatio(r.ratio.execVsBare),
          ],
        ],
      ),
    );
    const t = r.turn;
    console.log(
      `\n"vs bare bwrap": median of the per-round ratios.\n\n## Sandbox: each turn on the gateway's event loop (ms; "loop active": the time the loop did not wait for events, from eventLoopUtilization, which counts its thread being preempted too; "loop busy": that time less the thread's run-queue wait from the scheduler, so what the loop itself spent, running or blocked; "wall": until the promise settles)\n`,
    );
    const row = (label, x) => [label, ms(x.busy.p50), ms(x.busy.p99), ms(x.active.p50), ms(x.active.p99), ms(x.wall.p50), ms(x.wall.p99), String(x.busy.n)];
    console.log(
      table(
        ['work', 'loop busy p50', 'p99', 'loop active p50', 'p99', 'wall p50', 'p99', 'samples'],
        [
          row("the backend's factory (one per turn), the probe passed already for this config", t['factory.cached']),
          row("the backend's factory, a config the probe has not seen (the probe runs, off the loop)", t['factory.cold']),
          row('buildExecSpec (one per command)', t['exec.spec']),
          row('an empty turn of the loop (setImmediate): the floor', t['loop.empty']),
          row('before: the probe run blocking on the loop (sandboxProbeSync), as every turn ran it', t['probe.sync.cold']),
        ],
      ),
    );
    console.log('');
    for (const [id, what] of [
      ['factory.cached', 'probe passed'],
      ['factory.cold', 'probe run'],
    ]) {
      check(
        `per-turn work on the event loop at most 1 ms (the factory, ${what}: loop busy p99)`,
        t[id].busy.p99 <= 1,
        `${ms(t[id].busy.p99)} ms (active p99 ${ms(t[id].active.p99)} ms)`,
      );
    }
    check('a sandboxed exec of `true` at most 2x a bare bwrap of `true`', r.ratio.execVsBare <= 2, `${fmtRatio(r.ratio.execVsBare)}x`);
  }
}

results.loadAfter = os.loadavg();
console.log(`## Targets (load after the run: ${load(results.loadAfter)})\n`);
console.log(checks.join('\n'));
console.log('- zero file-system syscalls per call: `node --test __test__/syscalls.test.mjs` (strace over 100,000 calls)\n');
if (args.json) fs.writeFileSync(String(args.json), JSON.stringify(results, null, 2));
