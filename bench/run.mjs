// npm run bench: per-call cost, reload latency and scale, side by side with
// the plain-JS design, and the sandbox (a command next to a bare bwrap, a
// turn on the event loop), and the MCP proxy (a call through it next to a
// direct call to the same upstream), in one process run on whichever Node runs it.
//   --quick              fewer and shorter samples (a smoke run, not for numbers)
//   --only=percall,reload,scale,sandbox,proxy (or redaction: the tool-result rows of percall alone)
//   --clock=wall|cpu     wall time (default), or process CPU time, which a
//                        busy shared machine does not inflate by preemption
//   --json=<file>        raw results, every sample
// Prints Markdown tables and a check of the targets.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

import { clocks, fmtNs, fmtRatio, table } from './harness.mjs';
// Each section's module is loaded when the section runs: percall and reload
// load the WebAssembly build, which `--only=sandbox,proxy` does not need.

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

Object.assign(LABELS, {
  'p.direct': 'direct: an SDK client straight to the upstream, `Authorization: Bearer`',
  'p.proxy': 'through the proxy: the trusted policy (mints the handle), then the call through the proxy',
  'p.proxy.alone': 'the proxy alone: the same calls, timed from the handle in hand',
  'p.policy': 'the trusted policy alone (beforeToolCall minting the handle), the same calls',
  'p.direct.cold': 'direct, a new TCP connection per call',
  'p.proxy.cold': 'through the proxy (policy + call), a new TCP connection per call',
  'p.proxy.cold.alone': 'the proxy alone, a new TCP connection per call',
  'p.hop': 'for scale: a bare HTTP hop in the gateway (node:http, bytes piped, the bearer added; no MCP, no handle, no peer check)',
  'p.hop.cold': 'for scale: the bare hop, a new TCP connection per call',
});

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

let REDACT_KB = [];
if (want('percall') || want('redaction')) {
  const percall = await import('./percall.mjs');
  const { perCall } = percall;
  REDACT_KB = percall.REDACT_KB;
  for (const kb of REDACT_KB) {
    const size = kb >= 1024 ? `${kb / 1024} MB` : `${kb} KB`;
    LABELS[`r.${kb}k.plain`] = `(r) plain-JS regex redactor, ${size} result, no token`;
    LABELS[`r.${kb}k`] = `(r) tool-result middleware, ${size} result, no token (vs the regex)`;
  }
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
  if (!redactionOnly) await wasmRows({ samples, calls: Math.floor(calls / 4), wasmPerCall: percall.wasmPerCall });
}

/**
 * The WebAssembly build's rows on Node 24 and 26 side by side: on this Node
 * here, on the other in a child, each row next to its plain-JS anchor in
 * the same rounds.
 */
async function wasmRows({ samples, calls, wasmPerCall }) {
  const here = await wasmPerCall({ samples, calls, clock });
  const { ensureNode } = await import('../scripts/ensure-openclaw.mjs');
  const other = Number(process.versions.node.split('.')[0]) === 26 ? 24 : 26;
  const child = spawnSync(await ensureNode(other), [new URL('./percall.mjs', import.meta.url).pathname, '--wasm', String(samples), String(calls), clock], {
    encoding: 'utf8',
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
  });
  if (child.status !== 0) throw new Error(`bench: the WebAssembly rows on Node ${other} failed: ${child.stderr}`);
  const sides = [here, JSON.parse(child.stdout.trim().split('\n').at(-1))].sort((a, b) => a.node.localeCompare(b.node, 'en', { numeric: true }));
  results.wasmPerCall = sides;
  console.log(
    `\n## The WebAssembly build per call, Node ${sides.map((x) => x.node).join(' and ')}: median of ${samples} interleaved samples of ${calls.toLocaleString('en')} calls; vs a: against its plain-JS anchor, vs noop: against the build's empty call\n`,
  );
  const by = sides.map((x) => Object.fromEntries(x.rows.map((r) => [r.id, r])));
  const ids = sides[0].rows.map((r) => r.id);
  console.log(
    table(
      ['variant', ...sides.flatMap((x) => [`Node ${x.node.split('.')[0]} ns`, 'vs a', 'vs noop'])],
      ids.map((id) => [
        LABELS[id] ?? id,
        ...by.flatMap((b) => [fmtNs(b[id].ns), b[id].vsAnchor === null ? '' : fmtRatio(b[id].vsAnchor), b[id].vsNoop === null ? '' : fmtRatio(b[id].vsNoop)]),
      ]),
    ),
  );
  for (const id of ['w.small', 'w.plugin+log', 'w.m.small+log']) {
    check(
      `the WebAssembly build at most 3x the plain-JS design (${LABELS[id].slice(4)})`,
      by.every((b) => b[id].vsAnchor <= 3),
      sides.map((x, i) => `Node ${x.node.split('.')[0]} ${fmtRatio(by[i][id].vsAnchor)}x`).join(', '),
    );
  }
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
  const { reloadLatency, buildsReloadLatency } = await import('./reload.mjs');
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
  // Native next to WebAssembly, on Node 24 here and on Node 26 in a child.
  const n = quick ? 40 : 400;
  const sideBySide = [await buildsReloadLatency({ rotations: n })];
  const { ensureNode } = await import('../scripts/ensure-openclaw.mjs');
  const other = Number(process.versions.node.split('.')[0]) === 26 ? 24 : 26;
  const child = spawnSync(await ensureNode(other), [new URL('./reload.mjs', import.meta.url).pathname, '--builds', String(n)], {
    encoding: 'utf8',
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
  });
  if (child.status !== 0) throw new Error(`bench: the reload rows on Node ${other} failed: ${child.stderr}`);
  sideBySide.push(JSON.parse(child.stdout.trim().split('\n').at(-1)));
  results.buildsReload = sideBySide;
  console.log(
    `Native and WebAssembly builds side by side: ${n} rotations each, taking turns; the caller yields to the event loop between calls, as a gateway does (µs)\n`,
  );
  const rows = sideBySide.flatMap((r) =>
    ['native', 'wasm'].map((b) => [
      `Node ${r.node}, ${b === 'native' ? 'native' : 'WebAssembly'} (${r[b].watcher})`,
      us(r[b].median),
      us(r[b].p99),
      us(r[b].max),
      r[b].timeouts,
    ]),
  );
  console.log(table(['build', 'median', 'p99', 'max', 'not seen in 2 s'], rows));
  console.log('');
  for (const r of sideBySide) {
    const gap = (r.wasm.p99 - r.native.p99) / 1000;
    check(
      `Node ${r.node}: WebAssembly reload p99 within 10 ms of the native build's`,
      gap <= 10 && r.wasm.timeouts === 0,
      `${us(r.wasm.p99)} µs vs ${us(r.native.p99)} µs (${gap.toFixed(2)} ms apart), ${r.wasm.timeouts} not seen`,
    );
  }
  check('reload p99 at most 5 ms', r.ours.p99 <= 5000 && r.timeouts === 0, `${us(r.ours.p99)} µs, ${r.timeouts} timeouts`);
}

if (want('scale')) {
  const { scale } = await import('./scale.mjs');
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
  const { sandboxBench } = await import('./sandbox.mjs');
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

if (want('proxy')) {
  const { proxyBench } = await import('./proxy.mjs');
  const r = await proxyBench({ quick });
  results.proxy = r;
  if (r.skipped) {
    console.log(`## MCP proxy: skipped, ${r.skipped}\n`);
  } else {
    const ms = (x) => (x === null ? '' : Math.abs(x) >= 10 ? x.toFixed(1) : Math.abs(x) >= 1 ? x.toFixed(2) : x.toFixed(3));
    const sign = (x) => (x === null ? '' : `${x >= 0 ? '+' : ''}${ms(x)}`);
    console.log(`## MCP proxy: one call at a time (${r.rounds.toLocaleString('en')} interleaved rounds, ${r.agents} agents in turn, ms, wall clock)\n`);
    const seqRow = (id) => {
      const x = r.seq[id];
      return [
        LABELS[`p.${id}`],
        ms(x.p50),
        ms(x.p99),
        sign(x.overP50),
        sign(x.overP99),
        sign(x.pairedOver),
        x.pairedRatio === null ? '' : fmtRatio(x.pairedRatio),
      ];
    };
    console.log(
      table(
        ['path', 'p50', 'p99', 'p50 over direct', 'p99 over direct', 'paired over', 'paired ratio'],
        ['direct', 'proxy', 'proxy.alone', 'policy', 'hop', 'direct.cold', 'proxy.cold', 'proxy.cold.alone', 'hop.cold'].map(seqRow),
      ),
    );
    console.log(
      `\n"over direct": the row's percentile less the direct row's (a new connection: less the direct row with a new connection). "paired": the median over rounds of the difference and of the ratio with the direct call of the same round. "A new TCP connection per call" is how OpenClaw's MCP client connects (buildMcpHttpFetch: fetchWithSsrFGuard makes an undici Agent per request and closes it after), so each of its calls is one new connection to the proxy, and one peer check. The upstream (an SDK server, stateful sessions, in a child process) received the arguments: ${r.forwarded.join(', ')}; the proxy's tools/list shows the properties: ${r.listedProperties.join(', ') || 'none'}. Failed calls while timing: ${r.failures}. Log lines: info ${r.logs.info.toLocaleString('en')}, warn ${r.logs.warn}, error ${r.logs.error}.\n`,
    );
    if (r.peer.length > 0) {
      console.log(
        `The peer check of a new connection alone (native.proxyPeer, on the thread pool; ${r.peer[0].n} checks in turn for each size of /proc/net/tcp, another process holding the extra connections, this process holding ${r.peer[0].fds} descriptors; ms):\n`,
      );
      console.log(
        table(
          ['/proc/net/tcp lines', 'extra connections held elsewhere', 'p50', 'p99'],
          r.peer.map((p) =>
            p.error
              ? [String(p.tcpLines ?? ''), String(p.extra), p.error, '']
              : [p.tcpLines.toLocaleString('en'), p.extra.toLocaleString('en'), ms(p.p50), ms(p.p99)],
          ),
        ),
      );
      console.log(
        `\n/proc/net/tcp lines (every IPv4 socket of the network namespace, TIME_WAIT included): ${r.tcp.start.toLocaleString('en')} before the rows, ${r.tcp.afterOneByOne.toLocaleString('en')} after one call at a time, ${r.tcp.afterConcurrent.toLocaleString('en')} after 8 agents at once, ${r.tcp.afterLoop.toLocaleString('en')} after the event-loop rows: each call on a new connection leaves a TIME_WAIT socket for 60 s.\n`,
      );
    }
    const c = r.conc;
    console.log(`## MCP proxy: ${r.agents} agents at once (each its own client, ${r.calls} calls after one another, ${r.concRounds} interleaved rounds)\n`);
    const concRow = (id) => [
      LABELS[`p.${id}`],
      Math.round(c[id].callsPerSec).toLocaleString('en'),
      c[id].vsDirect === undefined ? '1' : fmtRatio(c[id].vsDirect),
      ms(c[id].lat.p50),
      ms(c[id].lat.p99),
      ms(c[id].activeMsPerCall),
      ms(c[id].busyMsPerCall),
      ms(c[id].cpuMsPerCall),
    ];
    console.log(
      table(
        ['path', 'calls/s', 'vs direct', 'p50 ms', 'p99 ms', 'loop active ms/call', 'loop busy ms/call', 'process CPU ms/call'],
        ['direct', 'proxy', 'direct.cold', 'proxy.cold'].map(concRow),
      ),
    );
    console.log(
      `\n"vs direct": the median over rounds of the proxy's throughput over the direct one's (with a new connection per call: over the direct one's with a new connection per call). "loop active": the time the gateway's event loop did not wait for events (eventLoopUtilization), per call; "loop busy": that less the loop thread's run-queue wait; "process CPU": the gateway process's CPU time (all its threads; the kernel counts it in ticks, so over many calls only), per call. The client's own work is in all three, on both rows.\n`,
    );
    const l = r.loop;
    console.log(
      `## MCP proxy: the event loop during ${r.agents} agents' calls at once (${r.loopCalls} calls each, ${r.loopRounds} rounds; every task the loop ran, from async_hooks; ms)\n`,
    );
    const loopRow = (id) => [
      LABELS[`p.${id}`],
      String(l[id].tasks),
      l[id].tasksPerCall.toFixed(1),
      ms(l[id].busy.p50),
      ms(l[id].busy.p99),
      ms(l[id].busy.max),
      ms(l[id].wall.max),
      ms(l[id].busyNoGcMax),
      ms(l[id].notClientNoGcMax),
      l[id].gcMax.kind === null ? 'none' : `${ms(l[id].gcMax.duration)} (${l[id].gcMax.kind}${l[id].gcMax.inTask ? '' : ', between tasks'})`,
      `${(100 * l[id].coverage).toFixed(0)} %`,
    ];
    console.log(
      table(
        [
          'path',
          'tasks',
          'per call',
          'task busy p50',
          'p99',
          'max',
          'max wall',
          'max, no GC in it',
          'max, no GC, not begun by the client',
          'longest GC pause',
          'coverage',
        ],
        ['direct', 'proxy', 'direct.cold', 'proxy.cold'].map(loopRow),
      ),
    );
    console.log(
      `\nA task: one callback the loop ran (I/O, a timer, a threadsafe function's call) with the microtasks and ticks after it: JS nothing interrupts. Its "wall" time errs high (the thread preempted counts), its "busy" time (less the thread's run-queue wait until the next task) errs low. The bench's clients run in this process too: "not begun by the client" leaves out the tasks that a read on a client socket began (the client's work, and on the proxy rows the trusted policy for its next call); what is left is the proxy's (its HTTP server, its upstream connections, the peer check's completion) and the timers and immediates of either side, so an upper bound of the proxy's. "longest GC pause": from PerformanceObserver, in the rounds of that row; V8 runs some collections as tasks of its own, outside any callback. "coverage": the tasks' time over the loop's active time (the rest: libuv and V8's own tasks). Promise hooks are on while tasks are recorded, which slows every task.\n`,
    );
    for (const [id, how] of [
      ['proxy', 'kept-alive connections'],
      ['proxy.cold', "a new connection per call, as OpenClaw's MCP client connects"],
    ]) {
      const x = r.seq[id];
      const vs = r.seq[x.vs];
      check(
        `the proxy p50 overhead at most 0.3 ms (trusted policy + call through the proxy, vs a direct call; ${how})`,
        x.overP50 <= 0.3,
        `${ms(x.overP50)} ms (p50 ${ms(x.p50)} vs ${ms(vs.p50)}; paired ${ms(x.pairedOver)}; the proxy alone ${ms(r.seq[`${id}.alone`].overP50)}; a bare hop ${ms(r.seq[id.replace('proxy', 'hop')].overP50)})`,
      );
    }
    const longest = (id) => {
      const [by, o] = Object.entries(l[id].byOrigin)
        .filter(([k]) => k !== 'client')
        .reduce((a, b) => (b[1].maxNoGc > a[1].maxNoGc ? b : a), ['none', { maxNoGc: 0 }]);
      return `${ms(o.maxNoGc)} (${by})`;
    };
    console.log(
      `Longest task by what began it, GC excluded, client's reads left out: kept-alive ${longest('proxy')}; new connections ${longest('proxy.cold')}.\n`,
    );
    const worst = Math.max(l.proxy.notClientNoGcMax, l['proxy.cold'].notClientNoGcMax);
    check(
      "no task over 1 ms on the event loop in the proxy runs (longest task's busy time, GC and the client's socket reads left out)",
      worst <= 1,
      `${ms(worst)} ms (kept-alive ${ms(l.proxy.notClientNoGcMax)}, new connections ${ms(l['proxy.cold'].notClientNoGcMax)}; every task, GC included: ${ms(Math.max(l.proxy.busy.max, l['proxy.cold'].busy.max))}, wall ${ms(Math.max(l.proxy.wall.max, l['proxy.cold'].wall.max))}; the direct runs, every task: ${ms(Math.max(l.direct.busy.max, l['direct.cold'].busy.max))})`,
    );
    check('no failed call while timing', r.failures === 0, `${r.failures}`);
  }
}

results.loadAfter = os.loadavg();
console.log(`## Targets (load after the run: ${load(results.loadAfter)})\n`);
console.log(checks.join('\n'));
console.log('- zero file-system syscalls per call: `node --test __test__/syscalls.test.mjs` (strace over 100,000 calls)\n');
if (args.json) fs.writeFileSync(String(args.json), JSON.stringify(results, null, 2));
