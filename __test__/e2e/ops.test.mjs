// The operator tools in a real OpenClaw: `openclaw claw-identity ...` (lazy, listed in
// `openclaw --help`, the same report as the standalone command), the
// `claw-identity.status` gateway method behind `openclaw claw-identity
// status`. One gateway; the commands that need none run before it starts.

import { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as h from './harness.mjs';

// How long a change takes to show in `openclaw health`: OpenClaw refreshes
// the snapshot it serves every 60 s (HEALTH_REFRESH_INTERVAL_MS,
// dist/server-constants-*.mjs), and one `openclaw health` takes about 10 s
// on a busy CI machine, so 90 s could leave 20 s to spare.
const HEALTH_WAIT_MS = 150_000;

/** `openclaw claw-identity ...`, with the gateway's token in the environment as an operator would have it. */
const oc = (run, args) => h.openclaw(run, ['claw-identity', ...args], { env: { OPENCLAW_GATEWAY_TOKEN: run.gatewayToken }, label: `ci-${args[0]}` });

/** The lines of claw-identity's own report: OpenClaw may log around it on stdout. */
const report = (stdout) => stdout.slice(stdout.indexOf('claw-identity '));

describe('operating claw-identity from OpenClaw', () => {
  const s = {};
  const it = h.gatewayIt(() => s.run);
  before(async () => {
    await h.openclawRuntime();
    s.run = await h.createRun('ops');
    s.tokens = h.makeTokens();
    h.writeTokenMap(s.run, s.tokens);
    await h.writeConfig(s.run, {
      gateway: true,
      // No turn is run here: the model is never asked.
      modelBaseUrl: 'http://127.0.0.1:9/v1',
      plugin: { path: h.stagePlugin(s.run, h.pluginDir()), config: { tokenMapPath: s.run.tokenMapPath } },
    });
  });
  after(async () => {
    if (s.run) await h.finishRun(s.run);
  });

  /** Fails the test if any output names a token. */
  const noTokens = (text) => {
    for (const [agent, t] of Object.entries(s.tokens)) assert.ok(!text.includes(t), `${agent}'s token was printed`);
  };

  it('`openclaw --help` lists claw-identity (from its descriptor)', async () => {
    const r = await h.openclaw(s.run, ['--help'], { label: 'help' });
    assert.equal(r.code, 0, h.tail(r));
    assert.match(r.stdout, /^\s+claw-identity\s+.*Per-agent MCP identity/m, h.tail(r));
  });

  it("`openclaw claw-identity doctor` prints the standalone command's report for the gateway's config", async () => {
    const native = await oc(s.run, ['doctor']);
    const standalone = await h.claw(s.run, ['doctor', '--config', s.run.configPath]);
    noTokens(native.stdout + native.stderr);
    assert.equal(standalone.code, 0, standalone.stderr);
    assert.equal(native.code, standalone.code, h.tail(native));
    assert.match(standalone.stdout, new RegExp(`config  ${s.run.configPath}`));
    assert.equal(report(native.stdout), standalone.stdout);
    for (const [agent, t] of Object.entries(s.tokens)) assert.match(standalone.stdout, new RegExp(`${agent}\\s+${h.fingerprint(t)}`));
  });

  it('explain and write-map run the same way under both', async () => {
    const args = ['explain', '--agent', 'paco--francis', '--tool', 'claw-os__claw_notes', '--params', '{"note":"x"}'];
    const native = await oc(s.run, args);
    const standalone = await h.claw(s.run, [...args, '--config', s.run.configPath]);
    assert.equal(native.code, 0, h.tail(native));
    assert.equal(report(native.stdout), standalone.stdout);
    noTokens(native.stdout);

    const from = path.join(s.run.tmp, 'map-in.json');
    fs.writeFileSync(from, JSON.stringify(s.tokens), { mode: 0o600 });
    const first = await oc(s.run, ['write-map', '--from', from]);
    assert.equal(first.code, 0, h.tail(first));
    assert.match(first.stdout, new RegExp(`^wrote ${s.run.tokenMapPath} \\(3 agents\\)$`, 'm'));
    const again = await h.claw(s.run, ['write-map', '--from', from, '--config', s.run.configPath]);
    assert.equal(again.stdout, `unchanged: ${s.run.tokenMapPath} already holds this map (3 agents); not rewritten\n`);
  });

  it("`openclaw claw-identity audit` prints the security-audit findings; `openclaw security audit` flags the manifest's dangerous options", async () => {
    // A weakened config: a group-readable map accepted.
    const entry = (v) => ({ plugins: { entries: { 'claw-identity': { config: { allowGroupReadable: v } } } } });
    h.patchConfig(s.run, entry(true));
    try {
      const native = await oc(s.run, ['audit']);
      const standalone = await h.claw(s.run, ['audit', '--config', s.run.configPath]);
      noTokens(native.stdout + native.stderr + standalone.stdout);
      assert.equal(standalone.code, 1, standalone.stderr);
      assert.equal(native.code, 1, h.tail(native));
      assert.equal(report(native.stdout), standalone.stdout);
      assert.match(standalone.stdout, /^WARN {6}claw-identity\.allow_group_readable: /m);
      const json = await h.claw(s.run, ['audit', '--config', s.run.configPath, '--json']);
      const ids = JSON.parse(json.stdout).map((f) => f.checkId);
      assert.ok(ids.includes('claw-identity.allow_group_readable'), ids.join(', '));
      // Every finding carries its fix.
      for (const f of JSON.parse(json.stdout)) assert.ok(f.remediation, `${f.checkId} has no fix`);

      const audit = await h.openclaw(s.run, ['security', 'audit', '--json'], { label: 'security-audit' });
      noTokens(audit.stdout + audit.stderr);
      assert.equal(audit.code, 0, h.tail(audit));
      const flags = audit.json?.findings?.find((f) => f.checkId === 'config.insecure_or_dangerous_flags');
      assert.ok(flags, `no dangerous-flags finding: ${(audit.json?.findings ?? []).map((f) => f.checkId).join(', ')}`);
      assert.match(flags.detail, /plugins\.entries\.claw-identity\.config\.allowGroupReadable=true/);
    } finally {
      h.patchConfig(s.run, entry(false));
    }
    const clean = await h.claw(s.run, ['audit', '--config', s.run.configPath, '--json']);
    assert.ok(!JSON.parse(clean.stdout).some((f) => f.checkId === 'claw-identity.allow_group_readable'));
  });

  it('`openclaw claw-identity status` without a gateway says none runs (exit 1)', async () => {
    const r = await oc(s.run, ['status']);
    assert.equal(r.code, 1, h.tail(r));
    assert.match(r.stderr, /no gateway is running/, h.tail(r));
    const standalone = await h.claw(s.run, ['status']);
    assert.equal(standalone.code, 1);
    assert.match(standalone.stderr, /run openclaw claw-identity status/);
  });

  it('`openclaw claw-identity status` asks the running gateway: map in force, agents by fingerprint, reloads, counters', async () => {
    s.gateway = await h.startGateway(s.run);
    const r = await oc(s.run, ['status']);
    noTokens(r.stdout + r.stderr);
    assert.equal(r.code, 0, h.tail(r));
    const out = report(r.stdout);
    assert.match(out, /^claw-identity status \(gateway pid \d+, plugin \d+\.\d+\.\d+\)$/m);
    assert.match(out, new RegExp(`^  map         ${s.run.tokenMapPath} \\(loaded\\)$`, 'm'));
    assert.match(out, /^ {2}agents {6}3$/m);
    assert.match(out, /^ {2}last error {2}none$/m);
    for (const [agent, t] of Object.entries(s.tokens)) assert.match(out, new RegExp(`^${agent}\\s+${h.fingerprint(t)}$`, 'm'));

    // A rotation shows in the live layer: new fingerprints, one more reload.
    const before = (await oc(s.run, ['status', '--json'])).json;
    assert.equal(before.stats.agents, 3);
    const fresh = h.makeTokens();
    h.writeTokenMap(s.run, fresh);
    const after = await h.waitFor(
      async () => {
        const j = (await oc(s.run, ['status', '--json'])).json;
        return j?.stats?.reloads > before.stats.reloads ? j : null;
      },
      { timeoutMs: 60_000, what: 'the rotated map in claw-identity.status' },
    );
    s.tokens = { ...s.tokens, ...Object.fromEntries(Object.entries(fresh).map(([a, t]) => [`${a} (rotated)`, t])) };
    assert.deepEqual(
      after.agents,
      Object.entries(fresh)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([agentId, t]) => ({ agentId, fingerprint: h.fingerprint(t) })),
    );
    assert.equal(after.stats.lastError, null);
    noTokens(JSON.stringify(after));
  });

  it("an unusable map shows in OpenClaw's own health (`openclaw health`) until the map is good again", async () => {
    assert.ok(s.gateway, 'the gateway of the test above is not running');
    const ours = async () => {
      const r = await h.openclaw(s.run, ['health', '--json'], { env: { OPENCLAW_GATEWAY_TOKEN: s.run.gatewayToken }, label: 'health' });
      noTokens(r.stdout + r.stderr);
      const errors = r.json?.plugins?.errors;
      return Array.isArray(errors) ? errors.filter((e) => e.id === 'claw-identity') : undefined;
    };
    assert.deepEqual(await ours(), []);

    // A rotation that goes wrong: the writer leaves a map that isn't JSON.
    const tmp = path.join(s.run.secrets, '.broken.tmp');
    fs.writeFileSync(tmp, '{ "paco--francis": ', { mode: 0o600 });
    fs.renameSync(tmp, s.run.tokenMapPath);
    // OpenClaw serves health from a snapshot it refreshes in the background.
    const failing = await h.waitFor(
      async () => {
        const errors = await ours();
        return errors?.length ? errors : null;
      },
      {
        timeoutMs: HEALTH_WAIT_MS,
        intervalMs: 2000,
        what: "claw-identity's service failure in openclaw health",
      },
    );
    assert.equal(failing.length, 1);
    assert.equal(failing[0].failurePhase, 'service');
    assert.match(
      failing[0].error,
      /^service claw-identity: claw-identity: .*token-map\.json is not in force: .*not a valid token map.*The last good map \(3 agents\) stays in force until the file is fixed/,
    );

    const fresh = h.makeTokens();
    for (const [a, t] of Object.entries(fresh)) s.tokens[`${a} (after the broken map)`] = t;
    h.writeTokenMap(s.run, fresh);
    await h.waitFor(async () => ((await ours())?.length === 0 ? true : null), {
      timeoutMs: HEALTH_WAIT_MS,
      intervalMs: 2000,
      what: 'the failure cleared from openclaw health once the map is good again',
    });
  });
});
