#!/usr/bin/env node
// `npm run demo`: claw-identity in a real OpenClaw gateway, end to end.
//
// A scripted model (standing in for a remote LLM) plays a short conversation:
// francis saves a note with a token it made up, then delegates to dali, who
// records audio. A real MCP server (`claw-os`) records what it receives. It
// sits behind claw-identity's MCP proxy: the model's tool list has no
// auth_token, the call carries a single-use handle, and the server gets the
// agent's token as `Authorization: Bearer`. The report compares what the
// model sent with what the server received, as sha256 fingerprints: no
// token is ever printed.
//
// The agents run contained, as claw-identity requires before it serves a
// token (docs/operating.md, "Containing the agents"): in the plugin's own
// bubblewrap sandbox where it can run here (the plugin's probe, as doctor
// runs it, says so), else on the host with workspaceOnly and every host tool
// denied. The configs are helpers/posture.mjs's.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import * as h from '../__test__/e2e/harness.mjs';
import { startModelServer, marker, fakeToken } from '../__test__/e2e/fixtures/model-server.mjs';
import { contained } from '../__test__/helpers/posture.mjs';

const FRANCIS = 'paco--francis';
const DALI = 'paco--dali';
const tty = process.stdout.isTTY;
const paint = (code) => (s) => (tty ? `\x1b[${code}m${s}\x1b[0m` : String(s));
const bold = paint('1');
const dim = paint('2');
const green = paint('32');
const red = paint('31');
const cyan = paint('36');
const yellow = paint('33');

const out = (line = '') => process.stdout.write(`${line}\n`);
const t0 = Date.now();
const secs = () => `${((Date.now() - t0) / 1000).toFixed(0)}s`;

/** The params the model was offered for `tool`, from the scripted model's record of its requests. */
function offeredParams(model, tool) {
  for (const r of model.requests) {
    if (!r.raw?.startsWith('{')) continue;
    for (const t of JSON.parse(r.raw).tools ?? []) {
      if ((t?.function?.name ?? t?.name) === tool) return Object.keys((t?.function?.parameters ?? t?.parameters)?.properties ?? {});
    }
  }
  return [];
}

/** Runs `work` while showing a live elapsed-time line for a slow step. */
async function step(label, work) {
  const start = Date.now();
  let timer;
  if (tty) {
    const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let i = 0;
    timer = setInterval(() => {
      process.stdout.write(`\r  ${cyan(frames[i++ % frames.length])} ${label} ${dim(`${((Date.now() - start) / 1000).toFixed(0)}s`)}   `);
    }, 120);
  } else {
    out(`  … ${label}`);
  }
  try {
    const v = await work();
    if (timer) clearInterval(timer);
    process.stdout.write(`${tty ? '\r' : ''}  ${green('✔')} ${label} ${dim(`(${((Date.now() - start) / 1000).toFixed(1)}s)`)}      \n`);
    return v;
  } catch (e) {
    if (timer) clearInterval(timer);
    process.stdout.write(`${tty ? '\r' : ''}  ${red('✘')} ${label}\n`);
    throw e;
  }
}

const fp = (t) => `sha256:${h.fingerprint(t)}`;

function verdict(value, tokens, wrong) {
  const who = h.who(value, tokens, { "the model's made-up token": wrong });
  return who;
}

/**
 * Whether the plugin's sandbox can run here: doctor's `sandbox` check (the
 * plugin's own probe) on a config whose agents select it, run by the
 * package's command under OpenClaw's Node. `{ ok, why }`.
 */
async function sandboxHere() {
  const { node } = await h.openclawRuntime();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claw-identity-demo-probe-'));
  try {
    const config = path.join(dir, 'openclaw.json');
    fs.writeFileSync(config, JSON.stringify(contained({ agents: { entries: { [FRANCIS]: {} } } }, 'sandbox')));
    const bin = path.join(h.REPO_ROOT, 'bin', 'claw-identity.js');
    const r = spawnSync(node, [bin, 'doctor', '--config', config, '--json'], { encoding: 'utf8', env: { ...process.env, HOME: dir } });
    let check;
    try {
      check = JSON.parse(r.stdout).checks?.find((c) => c.check === 'sandbox');
    } catch {
      return { ok: false, why: `doctor gave no report (exit ${r.status}): ${h.scrub(r.stderr).slice(0, 300)}` };
    }
    return { ok: check?.status === 'ok', why: check?.message ?? 'doctor has no sandbox check' };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  out(bold('claw-identity demo: the model never handles the secret'));
  out(dim('A real OpenClaw gateway, a scripted model on 127.0.0.1, and a real MCP server named claw-os.'));
  out();

  h.setLog(() => {}); // the steps below report progress themselves
  const sandbox = await step('checking whether the claw-identity sandbox (bubblewrap) runs here', sandboxHere);
  // A sandbox has a /tmp of its own: the run lives under /var/tmp, as in the sandbox suite.
  const run = await step('preparing an isolated OpenClaw home', () => h.createRun('demo', sandbox.ok ? { base: '/var/tmp' } : {}));
  let model;
  try {
    const tokens = h.makeTokens([FRANCIS, DALI]);
    h.writeTokenMap(run, tokens);
    const mode = (fs.statSync(run.tokenMapPath).mode & 0o777).toString(8);
    const dirMode = (fs.statSync(path.dirname(run.tokenMapPath)).mode & 0o777).toString(8);
    out(`  ${green('✔')} token map ${dim(run.tokenMapPath)} ${dim(`(file 0${mode}, directory 0${dirMode})`)}`);
    for (const [agent, token] of Object.entries(tokens)) out(`      ${agent.padEnd(14)} ${dim(fp(token))}`);

    model = await startModelServer();
    // claw-os over streamable HTTP, taking each call's token from its
    // Authorization header, behind the plugin's MCP proxy: OpenClaw's
    // mcp.servers.claw-os points at the proxy, which sends the agent's
    // token as that header. The call itself carries only a handle.
    const clawOs = await h.startFixtureServer(run, 'claw-os-server.mjs', {
      args: ['--http'],
      env: { CLAW_OS_CALL_LOG: run.callLog, CLAW_OS_TOKEN_FROM: 'bearer' },
      label: 'claw-os-http',
    });
    const proxyPort = await h.freePort();
    await h.writeConfig(run, {
      gateway: true,
      modelBaseUrl: model.baseUrl,
      agents: [FRANCIS, DALI],
      contain: sandbox.ok ? 'sandbox' : 'host',
      // The model is offered the MCP tools themselves, so their schemas show.
      toolSearch: false,
      plugin: {
        path: h.stagePlugin(run),
        config: {
          tokenMapPath: run.tokenMapPath,
          proxy: { port: proxyPort, servers: { 'claw-os': { upstream: { url: clawOs.url }, credential: { in: 'bearer' } } } },
        },
      },
      extra: {
        mcp: {
          servers: {
            'claw-os': { command: undefined, args: undefined, env: undefined, url: `http://127.0.0.1:${proxyPort}/claw-os`, transport: 'streamable-http' },
          },
        },
        // A sandboxed session's session tools reach only the sessions it
        // spawned (OpenClaw's clamp, resolveEffectiveSessionToolsVisibility in
        // session-visibility-*.mjs): francis's sessions_send to dali, which
        // rule spawn-redirect asks for, needs this. It lets no tool out of the sandbox.
        ...(sandbox.ok ? { agents: { defaults: { sandbox: { sessionToolsVisibility: 'all' } } } } : {}),
      },
    });
    out(
      sandbox.ok
        ? `  ${green('✔')} the agents run in the claw-identity sandbox ${dim('(bubblewrap: their commands see no map, no OpenClaw config, no gateway)')}`
        : `  ${green('✔')} the agents run on the host, confined to their workspaces ${dim(`(tools.fs.workspaceOnly, host tools denied; no sandbox here: ${sandbox.why})`)}`,
    );
    await step('starting the gateway with the claw-identity plugin (OpenClaw takes 10-20 s to boot)', () => h.startGateway(run));
    // The layer judges the posture at start: it serves tokens only while every agent is contained.
    const posture = h.logMessages(run).find((l) => l.includes('[claw-identity] posture: '));
    if (!posture?.includes('posture: every agent is contained'))
      throw new Error(`the agents are not contained, so no token is served: ${h.scrub(String(posture))}`);
    out(`  ${green('✔')} ${posture.slice(posture.indexOf('posture: '))}`);
    const proxyLine = h.logMessages(run).find((l) => l.includes('[claw-identity] MCP proxy on '));
    if (!proxyLine) throw new Error("the gateway log has no line of claw-identity's MCP proxy");
    out(`  ${green('✔')} ${proxyLine.slice(proxyLine.indexOf('MCP proxy on '))}`);
    out();

    // Turn 1: francis saves a note, with a token the model made up.
    out(bold('1. francis saves a note, passing a token the model made up'));
    // Short seeds: a 16+ hex run in a prompt is redacted as a possible secret (by OpenClaw and by us).
    const seed1 = `notes-${run.runId.slice(0, 8)}`;
    const conv1 = `conv-${run.runId.slice(0, 8)}`;
    const wrong1 = fakeToken(seed1);
    const r1 = await step('francis: claw_notes', () =>
      h.agentViaGateway(run, { agent: FRANCIS, message: `Please save a note. ${marker('notes', { wrong: seed1, conv: conv1 })}` }),
    );
    if (r1.code !== 0) throw new Error(`openclaw agent exited ${r1.code}: ${h.tail(r1)}`);
    const notes = h.readCalls(run).find((c) => c.tool === 'claw_notes');
    out(
      `     the model's tools  claw-os__claw_notes(${offeredParams(model, 'claw-os__claw_notes').join(', ')})  ${dim('(no auth_token: the proxy takes it out of the schema)')}`,
    );
    out(`     the model sent     auth_token = ${yellow(fp(wrong1))}  ${dim('(42 characters it made up anyway)')}`);
    out(
      `     OpenClaw's hooks   auth_token = ${cyan('clh1_…')}  ${dim('(a single-use handle, not the token: later hooks, OTEL and stored calls see only this)')}`,
    );
    out(`     claw-os received   Authorization: Bearer ${green(fp(notes.bearer))}  → ${bold(verdict(notes.bearer, tokens, wrong1))}`);
    out();

    // Turn 2: francis delegates to dali.
    out(bold('2. francis delegates to dali, who records audio'));
    const seed2 = `spawn-${run.runId.slice(0, 8)}`;
    const wrong2 = fakeToken(seed2);
    const r2 = await step('francis: delegate to paco--dali', () =>
      h.agentViaGateway(run, { agent: FRANCIS, message: `Ask dali to record it. ${marker('spawn', { agent: DALI, child: 'audio', wrong: seed2 })}` }),
    );
    if (r2.code !== 0) throw new Error(`openclaw agent exited ${r2.code}: ${h.tail(r2)}`);
    const spawnResult = model.toolResultsFor('spawn', { wrong: seed2 });
    const redirected = spawnResult.some((r) => /spawn-redirect/.test(r.result ?? ''));
    if (redirected) {
      out(`     sessions_spawn was redirected by the ${cyan('spawn-redirect')} rule: a spawned child would not have dali's tools;`);
      out(`     the model retried with the sessions_send the block reason spelled out.`);
    }
    const audio = await step("dali: claw_audio (in dali's own session)", () =>
      h.waitFor(() => h.readCalls(run).find((c) => c.tool === 'claw_audio'), { timeoutMs: 180_000, what: "dali's claw_audio call", progressMs: 1e9 }),
    ).catch((err) => {
      for (const r of spawnResult) out(dim(`     ${r.name}: ${h.scrub(String(r.result ?? '')).slice(0, 700)}`));
      throw err;
    });
    out(`     the model sent     auth_token = ${yellow(fp(wrong2))}  ${dim('(made up again)')}`);
    out(`     claw-os received   Authorization: Bearer ${green(fp(audio.bearer))}  → ${bold(verdict(audio.bearer, tokens, wrong2))}`);
    out();

    // The proof in the gateway's own log.
    out(bold("3. the gateway's log"));
    for (const line of h
      .logMessages(run)
      .filter((l) => l.includes('[claw-identity]'))
      .slice(0, 12))
      out(`     ${dim(line)}`);
    out();

    // No token anywhere but the map and the server's record.
    const leaks = h.grepForTokens(run.root, tokens, { exclude: [run.secrets, run.mcp] });
    const handlesOnly = [notes, audio].every((c) => c.args.auth_token === undefined);
    const ok =
      verdict(notes.bearer, tokens, wrong1) === FRANCIS &&
      verdict(audio.bearer, tokens, wrong2) === DALI &&
      offeredParams(model, 'claw-os__claw_notes').length > 0 &&
      !offeredParams(model, 'claw-os__claw_notes').includes('auth_token') &&
      handlesOnly &&
      leaks.length === 0;
    out(
      leaks.length === 0
        ? `${green('✔')} no token from the map appears in OpenClaw's state, logs, transcripts or model requests`
        : `${red('✘')} a token leaked into ${leaks.map((l) => l.file).join(', ')}`,
    );
    out(ok ? green(bold(`✔ every call carried its own agent's token (${secs()})`)) : red(bold('✘ something went wrong: see above')));
    return ok ? 0 : 1;
  } finally {
    await step('stopping the gateway and cleaning up', async () => {
      await model?.close();
      await h.finishRun(run);
    });
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${red('demo failed:')} ${h.scrub(err?.stack ?? err)}\n`);
    process.exit(1);
  },
);
