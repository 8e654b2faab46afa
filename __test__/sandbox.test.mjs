// The `claw-identity` sandbox backend against real escapes: real commands,
// under the real bwrap, on a host laid out as a gateway's (the token map in
// the user's ~/.config, OpenClaw's state and config in ~/.openclaw, the
// plugin's files, start-up files, a stand-in gateway process with a loopback
// port, an abstract socket and control sockets). Everything lives under
// /var/tmp: /tmp is the sandbox's own, and a map there would prove nothing.
//
// Each escape runs as the test's user (root in CI) and again as an
// unprivileged user (a throwaway one, created with useradd and removed
// after, when the test runs as root). What must hold, checked on the host
// and on every byte the commands printed: no piece of a token, as written,
// reversed, hex or base64; the map, the config, the start-up files and the
// plugin's files unchanged; the gateway alive, and never reached.
//
// Then the refusals: no bwrap, bwrap gone after start, user namespaces
// refused (the suite runs inside a sandbox that allows none), a hard-linked
// map, the WebAssembly build. None of them runs the command anywhere.
//
// And the cost of a turn, by counts, not times: a bwrap wrapper counts the
// probe's runs over turns (once per config), and a setImmediate shows the
// event loop turning while the factory works.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { entryFile } from './helpers/subject.mjs';
import { leaks } from './helpers/leaks.mjs';
import { randomToken } from './helpers/support.mjs';
import { sandboxNode } from './helpers/sandbox-node.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const CHILD = fileURLToPath(new URL('./helpers/sandbox-child.mjs', import.meta.url));
const GATEWAY = fileURLToPath(new URL('./helpers/sandbox-gateway.mjs', import.meta.url));
const SDK = path.join(root, '.cache', 'openclaw', 'node_modules', 'openclaw', 'dist', 'plugin-sdk', 'sandbox.js');
const OPENCLAW_CODE = path.join(root, '.cache', 'openclaw', 'node_modules', 'openclaw', 'dist');
const WASM_ENTRY = path.join(root, 'wasm.js');
const AGENTS = ['paco--francis', 'paco--dali', 'pepito--atlas'];
const isRoot = process.getuid() === 0;
const bwrap = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout.trim();

/** A secret made here: a token-shaped hex string the leak guard knows. */
const secret = () => randomToken();

// ---------------------------------------------------------------------------
// A gateway's host, for one user.

/** Runs `argv` as `user` (null: this process's user) with exactly `env`. */
function asUser(user, argv, env) {
  const envArgs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return user ? ['runuser', ['-u', user, '--', '/usr/bin/env', '-i', ...envArgs, ...argv]] : [argv[0], argv.slice(1)];
}

function layout(user) {
  const base = fs.mkdtempSync('/var/tmp/claw-sandbox-test-');
  fs.chmodSync(base, 0o700);
  const home = path.join(base, 'home');
  const L = {
    base,
    home,
    mapDir: path.join(home, '.config', 'micelclaw'),
    state: path.join(home, '.openclaw'),
    plugin: path.join(base, 'plugins', 'claw-identity'),
    ws: path.join(base, 'workspaces', 'paco--francis'),
    // Other agents' workspaces: one beside it, one inside it
    // (agents.defaults.workspace puts the others' inside the owner's).
    otherWs: path.join(base, 'workspaces', 'pepito--atlas'),
    alias: path.join(base, 'alias'),
    runDir: path.join('/run', `claw-sandbox-test-${crypto.randomBytes(4).toString('hex')}`),
    // The test's own files (specs, the stand-in's token and record): under
    // /tmp, which no sandbox sees.
    priv: fs.mkdtempSync(path.join(os.tmpdir(), 'claw-sandbox-test-')),
    secrets: {},
  };
  L.map = path.join(L.mapDir, 'agent-tokens.json');
  L.config = path.join(L.state, 'openclaw.json');
  L.nestedWs = path.join(L.ws, 'paco--dali');
  for (const d of [home, L.mapDir, L.state, path.join(L.state, 'credentials'), path.join(home, '.ssh'), L.plugin, L.ws, L.otherWs, L.nestedWs]) {
    fs.mkdirSync(d, { recursive: true, mode: 0o700 });
  }
  const tokens = Object.fromEntries(AGENTS.map((a) => [a, secret()]));
  Object.assign(L.secrets, tokens);
  fs.writeFileSync(L.map, JSON.stringify(tokens, null, 2), { mode: 0o600 });
  L.secrets.gateway = secret();
  fs.writeFileSync(L.config, JSON.stringify({ gateway: { auth: { mode: 'token', token: L.secrets.gateway } } }), { mode: 0o600 });
  L.secrets.oauth = secret();
  fs.writeFileSync(path.join(L.state, 'credentials', 'oauth.json'), JSON.stringify({ refresh: L.secrets.oauth }), { mode: 0o600 });
  fs.writeFileSync(path.join(L.state, '.env'), 'OPENAI_API_KEY=sk-e2e\n', { mode: 0o600 });
  L.secrets.ssh = secret();
  fs.writeFileSync(path.join(home, '.ssh', 'id_ed25519'), L.secrets.ssh, { mode: 0o600 });
  fs.writeFileSync(path.join(home, '.bashrc'), '# start-up\n');
  L.secrets.atlasNotes = secret();
  fs.writeFileSync(path.join(L.otherWs, 'notes.md'), L.secrets.atlasNotes);
  L.secrets.daliNotes = secret();
  fs.writeFileSync(path.join(L.nestedWs, 'notes.md'), L.secrets.daliNotes);
  // OpenClaw's config as the gateway hands it to the plugin: the agents and their workspaces.
  L.openclawConfig = {
    agents: {
      entries: {
        'paco--francis': { workspace: L.ws, sandbox: { mode: 'all', backend: 'claw-identity' } },
        'paco--dali': { workspace: L.nestedWs },
        'pepito--atlas': { workspace: L.otherWs },
      },
    },
  };
  fs.writeFileSync(path.join(L.plugin, 'index.js'), 'export default {};\n');
  // Other ways to name the map: links in the workspace.
  fs.symlinkSync(L.map, path.join(L.ws, 'map-link'));
  fs.symlinkSync(L.mapDir, path.join(L.ws, 'dir-link'));
  fs.mkdirSync(L.runDir, { mode: 0o700 });
  if (user) {
    for (const p of [base, L.runDir, L.priv]) spawnSync('chown', ['-R', `${user}:${user}`, p]);
  }
  return L;
}

/** A snapshot of the host files no command may change. */
function hostState(L) {
  const read = (p) => (fs.existsSync(p) ? crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex') : 'absent');
  return {
    map: read(L.map),
    mapIno: fs.statSync(L.map).ino,
    mapDir: fs.readdirSync(L.mapDir).sort().join(','),
    config: read(L.config),
    env: read(path.join(L.state, '.env')),
    bashrc: read(path.join(L.home, '.bashrc')),
    profile: read(path.join(L.home, '.profile')),
    systemd: read(path.join(L.home, '.config', 'systemd', 'user', 'evil.service')),
    authorizedKeys: read(path.join(L.home, '.ssh', 'authorized_keys')),
    plugin: fs.readdirSync(L.plugin).sort().join(',') + read(path.join(L.plugin, 'index.js')),
    workspacePlugins: read(path.join(L.ws, '.openclaw', 'extensions', 'evil', 'index.js')),
    otherWorkspaces:
      read(path.join(L.otherWs, 'notes.md')) +
      read(path.join(L.nestedWs, 'notes.md')) +
      read(path.join(L.ws, 'moved-dali', 'notes.md')) +
      read(path.join(L.otherWs, 'evil')),
    etc: read('/etc/claw-sandbox-evil'),
    openclawCode: read(path.join(OPENCLAW_CODE, 'claw-sandbox-evil.mjs')),
  };
}

async function startGateway(user, L) {
  const tokenFile = path.join(L.priv, 'gateway-token');
  fs.writeFileSync(tokenFile, L.secrets.gateway, { mode: 0o600 });
  if (user) spawnSync('chown', [`${user}:${user}`, tokenFile]);
  const [cmd, args] = asUser(user, [process.execPath, GATEWAY, path.join(L.priv, 'gateway.jsonl'), tokenFile, L.state, L.runDir], { PATH: process.env.PATH });
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (c) => {
      buf += c;
      if (buf.includes('\n')) resolve(buf.split('\n')[0]);
    });
    child.once('exit', (code) => reject(new Error(`the stand-in gateway exited ${code}`)));
  });
  const gw = { child, ...JSON.parse(line) };
  // Stopped by its own PID (under runuser, the child is runuser).
  gw.stop = () => {
    for (const pid of [gw.pid, child.pid]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  };
  return gw;
}

function gatewayRecord(L) {
  const f = path.join(L.priv, 'gateway.jsonl');
  return fs.existsSync(f)
    ? fs
        .readFileSync(f, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs the child as `user` with `spec`; its JSON result. */
function runChild(user, L, spec, { env = {}, wrap = [] } = {}) {
  const file = path.join(L.priv, `spec-${crypto.randomBytes(4).toString('hex')}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify({ entry: entryFile, sdk: SDK, map: L.map, pluginDirs: [L.plugin], workspace: L.ws, openclawConfig: L.openclawConfig, ...spec }),
  );
  if (user) spawnSync('chown', [`${user}:${user}`, file]);
  const childEnv = { PATH: process.env.PATH, HOME: L.home, ...env };
  const [cmd, args] = asUser(user, [...wrap, process.execPath, CHILD, file], childEnv);
  const r = spawnSync(cmd, args, { env: user ? undefined : childEnv, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.status, 0, `the child failed (exit ${r.status}): ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout);
}

/** The escapes, by name: each a shell command run in the sandbox. */
function escapes(L, gw) {
  const MAP = L.map;
  const node = (js, ...args) => `${sandboxNode()} -e '${js}' ${args.join(' ')}`;
  return {
    'sanity: a command runs in the workspace, and writes there': `echo sandbox-ok; pwd; echo made > made-inside && cat made-inside`,
    'cat of the map': `cat ${MAP}`,
    'base64 of the map': `base64 ${MAP}`,
    'rev of the map': `rev ${MAP}`,
    'hex of the map (od, xxd)': `od -An -tx1 ${MAP}; xxd -p ${MAP}`,
    "the map's directory listed": `ls -la ${L.mapDir}/`,
    'the map through a symlink in the workspace': `cat map-link; ls -la dir-link/`,
    ...(isRoot ? { 'the map through a bind mount of its directory': `cat ${L.alias}/agent-tokens.json; ls ${L.alias}` } : {}),
    'every file under the host layout': `find ${L.base} -type f -exec cat {} + 2>&1; grep -rs paco-- ${L.base} 2>&1 | head -200`,
    '/proc/$PPID/root': `cat /proc/$PPID/root${MAP}; ls /proc/$PPID/root${L.mapDir}`,
    '/proc/1/root and every process': `cat /proc/1/root${MAP}; for p in /proc/[0-9]*; do cat $p/root${MAP} $p/environ; done 2>&1; ls /proc`,
    "the gateway's /proc": `cat /proc/${gw.pid}/environ /proc/${gw.pid}/cmdline; ls /proc/${gw.pid}/root${L.mapDir}; cat /proc/${gw.pid}/mem | head -c 100`,
    'umount of the mask': `umount ${L.mapDir}; umount -l ${L.mapDir}; cat ${MAP}`,
    'mount: remount rw, bind, a fresh proc': `mount -o remount,rw /; mount --bind / /tmp; mkdir -p /tmp/p && mount -t proc proc /tmp/p && cat /tmp/p/1/root${MAP}; cat ${MAP}`,
    'nsenter into the host and the gateway': `nsenter -t 1 -m cat ${MAP}; nsenter -t ${gw.pid} -a cat ${MAP}; nsenter --mount=/proc/1/ns/mnt cat ${MAP}`,
    'unshare: a new user and mount namespace': `unshare -Urm sh -c "umount ${L.mapDir}; cat ${MAP}"; unshare -m sh -c "umount ${L.mapDir}; cat ${MAP}"; unshare -Ur cat ${MAP}`,
    'writing the config and the .env': `echo '{}' > ${L.config}; echo X=1 >> ${L.state}/.env; cat ${L.config} ${L.state}/.env`,
    'writing start-up files': `echo evil >> ${L.home}/.bashrc; echo evil >> ${L.home}/.profile; mkdir -p ${L.home}/.config/systemd/user && echo evil > ${L.home}/.config/systemd/user/evil.service; echo evil >> ${L.home}/.ssh/authorized_keys`,
    "writing the plugin's files": `echo evil >> ${L.plugin}/index.js; echo evil > ${L.plugin}/evil.js`,
    'planting a plugin in the workspace': `mkdir -p .openclaw/extensions/evil && echo evil > .openclaw/extensions/evil/index.js`,
    'planting one after renaming what holds the plugin folder away': `mv .openclaw moved; rm -rf .openclaw; mkdir -p .openclaw/extensions/evil && echo evil > .openclaw/extensions/evil/index.js`,
    "writing /etc and OpenClaw's code": `echo evil > /etc/claw-sandbox-evil; echo evil > ${OPENCLAW_CODE}/claw-sandbox-evil.mjs`,
    "other agents' workspaces, beside and inside": `cat ${L.otherWs}/notes.md ${L.nestedWs}/notes.md; ls -la ${L.nestedWs}; mv ${L.nestedWs} moved-dali; rm -rf ${L.nestedWs}; echo evil > ${L.otherWs}/evil`,
    'credentials: the state dir, the ssh key': `cat ${L.state}/credentials/oauth.json ${L.home}/.ssh/id_ed25519; ls -la ${L.state} ${L.home}/.ssh`,
    'the environment': `env; cat /proc/self/environ`,
    'kill of the gateway': `kill -9 ${gw.pid}; kill -TERM ${gw.pid}; echo kill-rc=$?`,
    'kill of everything visible': `(kill -9 -1); echo after-kill`,
    'connecting to the gateway with its token': `TOKEN=$(sed -n 's/.*"token":"\\([0-9a-f]*\\)".*/\\1/p' ${L.config} 2>/dev/null); ${node('fetch("http://127.0.0.1:" + process.argv[1] + "/", {headers: {authorization: "Bearer " + process.argv[2]}}).then((r) => console.log("status", r.status), (e) => console.log("refused", e.cause?.code))', gw.port, '"$TOKEN"')}`,
    'the abstract socket and the control sockets': [gw.abstract, ...gw.sockets]
      .map((p, i) =>
        node(
          `require("net").connect({path: ${i === 0 ? '"\\0" + ' : ''}process.argv[1]}).on("connect", () => console.log("connected")).on("error", (e) => console.log("refused", e.code))`,
          p,
        ),
      )
      .join('; '),
  };
}

function escapeSuite(label, user) {
  describe(`escapes, ${label}`, () => {
    const s = {};
    before(async () => {
      assert.ok(bwrap, 'bwrap is not installed: apt-get install bubblewrap (CI installs it)');
      assert.ok(fs.existsSync(SDK), `OpenClaw's SDK is missing (${SDK}): run npm test, which fetches it`);
      s.L = layout(user);
      if (isRoot && !user) {
        // A second path to the map's directory: a bind mount of it.
        fs.mkdirSync(s.L.alias);
        const m = spawnSync('mount', ['--bind', s.L.mapDir, s.L.alias], { encoding: 'utf8' });
        assert.equal(m.status, 0, `mount --bind: ${m.stderr}`);
        s.mounted = true;
      }
      s.gw = await startGateway(user, s.L);
      s.before = hostState(s.L);
      s.commands = escapes(s.L, s.gw);
      s.out = runChild(user, s.L, {
        commands: Object.entries(s.commands).map(([name, command]) => ({
          name,
          command,
          // A variable holding a token, and the gateway's own, passed in as exec's env.
          env: { MY_TOKEN: s.L.secrets['paco--francis'], OPENCLAW_GATEWAY_TOKEN: s.L.secrets.gateway },
        })),
      });
      s.byName = Object.fromEntries(s.out.results.map((r) => [r.name, r]));
      // CLAW_SANDBOX_REPORT=<file>: what each escape got (exit code, output
      // with every run of 16+ hex digits and every base64 run taken out).
      if (process.env.CLAW_SANDBOX_REPORT) {
        const clean = (t) =>
          String(t)
            .replace(/[0-9a-fA-F]{16,}/g, '<hex>')
            .replace(/[A-Za-z0-9+/=]{24,}/g, '<b64>')
            .trim()
            .slice(0, 600);
        const lines = s.out.results.map((r) => `## ${label}: ${r.name}\nexit ${r.code}\n${clean(r.stdout)}\n${clean(r.stderr)}\n`);
        fs.appendFileSync(process.env.CLAW_SANDBOX_REPORT, lines.join('\n'));
      }
    });
    after(() => {
      s.gw?.stop();
      if (s.mounted) spawnSync('umount', [s.L.alias]);
      if (s.L) {
        for (const d of [s.L.base, s.L.runDir, s.L.priv]) fs.rmSync(d, { recursive: true, force: true });
      }
    });

    test('the sandbox starts, and a command runs in the writable workspace', () => {
      assert.equal(s.out.probe.ok, true, `${s.out.probe.reason} ${s.out.probe.fix}`);
      assert.equal(s.out.factoryError, undefined);
      const r = s.byName['sanity: a command runs in the workspace, and writes there'];
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(r.stdout.trim().split('\n'), ['sandbox-ok', fs.realpathSync(s.L.ws), 'made']);
      assert.equal(fs.readFileSync(path.join(s.L.ws, 'made-inside'), 'utf8'), 'made\n');
      assert.equal(s.out.results.length, Object.keys(s.commands).length);
    });

    test('no command printed a piece of any token or secret, as written, reversed, hex or base64', () => {
      const found = [];
      for (const r of s.out.results) {
        const owners = leaks(`${r.stdout}\n${r.stderr}`, s.L.secrets);
        if (owners.length) found.push(`${r.name}: ${owners.join(', ')}`);
        assert.equal(r.specError, undefined, `${r.name}: ${r.specError}`);
      }
      assert.deepEqual(found, []);
    });

    test("the map's directory is empty inside, however it is reached", () => {
      for (const name of ["the map's directory listed", 'the map through a symlink in the workspace', '/proc/$PPID/root']) {
        assert.doesNotMatch(s.byName[name].stdout, /agent-tokens\.json/, name);
      }
      if (isRoot && !user) assert.doesNotMatch(s.byName['the map through a bind mount of its directory'].stdout, /agent-tokens/);
    });

    test('mount, umount, nsenter and unshare are refused', () => {
      for (const name of [
        'umount of the mask',
        'mount: remount rw, bind, a fresh proc',
        'nsenter into the host and the gateway',
        'unshare: a new user and mount namespace',
      ]) {
        const r = s.byName[name];
        assert.match(
          r.stderr,
          /(Operation not permitted|Permission denied|No space left on device|must be superuser|not mounted|No such file)/,
          `${name}: no refusal in its stderr`,
        );
      }
    });

    test("the map, the config, start-up files, the plugin's files and OpenClaw's code are unchanged on the host", () => {
      assert.deepEqual(hostState(s.L), s.before);
    });

    test('the gateway is alive, and nothing reached its port or its sockets', () => {
      assert.equal(alive(s.gw.pid), true);
      assert.match(s.byName['connecting to the gateway with its token'].stdout, /refused/);
      assert.deepEqual(gatewayRecord(s.L), []);
      assert.doesNotMatch(s.byName['/proc/1/root and every process'].stdout, new RegExp(`(^|\\s)${s.gw.pid}(\\s|$)`));
    });

    test("the environment holds neither a token nor the gateway's credentials", () => {
      const r = s.byName['the environment'];
      assert.doesNotMatch(r.stdout, /MY_TOKEN=|OPENCLAW_GATEWAY_TOKEN=/);
      assert.match(r.stdout, /^PATH=/m);
    });
  });
}

describe('the leak detector (so the escape suite can fail)', () => {
  test('a base64, rev or hex dump of the map outside the sandbox is a leak', () => {
    const dir = fs.mkdtempSync('/var/tmp/claw-sandbox-control-');
    try {
      const tokens = { a: secret() };
      const map = path.join(dir, 'm.json');
      fs.writeFileSync(map, JSON.stringify(tokens));
      for (const cmd of ['base64', 'rev', 'od -An -tx1', 'xxd -p', 'cat']) {
        const r = spawnSync('sh', ['-c', `${cmd} ${map}`], { encoding: 'latin1' });
        assert.deepEqual(leaks(r.stdout, tokens), ['a'], cmd);
      }
      assert.deepEqual(leaks('nothing here', tokens), []);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

escapeSuite(`as this process's user (uid ${process.getuid()})`, null);

// As an unprivileged user: a throwaway one when the suite runs as root.
// Not as root, the suite's own user is the unprivileged one, and the first
// run above is that case.
if (isRoot) {
  const user = `clawsbx${crypto.randomBytes(3).toString('hex')}`;
  describe('a throwaway unprivileged user', () => {
    test('useradd makes it', () => {
      const r = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user], { encoding: 'utf8' });
      assert.equal(r.status, 0, `useradd failed, so the unprivileged case can't run: ${r.stderr}`);
    });
  });
  escapeSuite(`as the unprivileged user ${user}`, user);
  after(() => {
    spawnSync('userdel', [user]);
    assert.notEqual(spawnSync('id', [user]).status, 0, `userdel left ${user}`);
  });
} else {
  test('the suite runs unprivileged: the first escape run is the unprivileged case', () => {
    assert.notEqual(process.getuid(), 0);
  });
}

describe('with sandbox.network "host"', () => {
  test('the gateway is reachable, but its token is not readable', async () => {
    const L = layout(null);
    const gw = await startGateway(null, L);
    try {
      const out = runChild(null, L, {
        options: { sandbox: { network: 'host' } },
        commands: [{ name: 'connect', command: escapes(L, gw)['connecting to the gateway with its token'] }],
      });
      assert.match(out.results[0].stdout, /status 401/);
      assert.deepEqual(gatewayRecord(L), [{ kind: 'http', authorized: false }]);
    } finally {
      gw.stop();
      for (const d of [L.base, L.runDir, L.priv]) fs.rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('the probe runs once per config, not per turn, and off the event loop', () => {
  const s = {};
  before(() => {
    assert.ok(bwrap, 'bwrap is not installed');
    s.L = layout(null);
    // sandbox.bwrap is a wrapper that logs each run, and fails while `fail` exists.
    const runLog = path.join(s.L.priv, 'bwrap-runs');
    const fail = path.join(s.L.priv, 'fail');
    const wrapper = path.join(s.L.priv, 'bwrap');
    fs.writeFileSync(
      wrapper,
      `#!/bin/sh\necho run >> '${runLog}'\n[ -e '${fail}' ] && { echo 'bwrap: No permissions to create new namespace' >&2; exit 1; }\nexec '${bwrap}' "$@"\n`,
      { mode: 0o700 },
    );
    fs.writeFileSync(fail, '');
    const sandbox = { bwrap: wrapper };
    s.out = runChild(null, s.L, {
      options: { sandbox },
      runLog,
      turns: [
        {}, // the probe fails
        { rm: fail }, // a failed probe is not kept: it runs again, and passes
        {},
        {},
        { options: { sandbox: { ...sandbox, hide: [path.join(s.L.home, 'notes')] } } }, // another config
        {},
        { append: [wrapper, '# upgraded\n'] }, // the same bwrap path, another file
        {},
        {},
      ],
    });
  });
  after(() => {
    for (const d of [s.L.base, s.L.runDir, s.L.priv]) fs.rmSync(d, { recursive: true, force: true });
  });

  test('bwrap runs for the first turn, again after a failed probe, a config change or a changed bwrap, and never for the turns between', () => {
    const { turns } = s.out;
    assert.deepEqual(
      turns.map((t) => t.ok),
      [false, true, true, true, true, true, true, true, true],
      JSON.stringify(turns.map((t) => t.error)),
    );
    assert.match(turns[0].error, /refuses user namespaces/);
    assert.deepEqual(
      turns.map((t) => t.runs),
      [1, 2, 2, 2, 3, 3, 4, 4, 4],
    );
  });

  test('the event loop turns while the factory works, whether the probe runs or not', () => {
    assert.deepEqual(
      s.out.turns.map((t) => t.turned),
      s.out.turns.map(() => true),
    );
  });
});

describe('registration', () => {
  test('the plugin registers the backend in its full registration only, and takes it back when disabled', async () => {
    const { registerSandbox, BACKEND_ID } = await import(new URL('../lib/sandbox.js', import.meta.url));
    const registered = [];
    const sdk = {
      registerSandboxBackend: (id, registration) => {
        registered.push({ id, registration, live: true });
        return () => (registered.at(-1).live = false);
      },
    };
    const api = (mode) => {
      const lifecycles = [];
      return { registrationMode: mode, logger: { warn() {}, error() {} }, lifecycle: { registerRuntimeLifecycle: (l) => lifecycles.push(l) }, lifecycles };
    };
    const discovery = api('discovery');
    await registerSandbox(discovery, {}, async () => sdk);
    assert.deepEqual(registered, []);
    const full = api('full');
    await registerSandbox(full, {}, async () => sdk);
    assert.equal(registered.length, 1);
    assert.equal(registered[0].id, BACKEND_ID);
    assert.equal(typeof registered[0].registration.factory, 'function');
    assert.equal(typeof registered[0].registration.manager.describeRuntime, 'function');
    full.lifecycles[0].cleanup({ reason: 'disable' });
    assert.equal(registered[0].live, false);
  });
});

// ---------------------------------------------------------------------------
// Refusals: the backend says why and what to do, and nothing runs, in the
// sandbox or on the host.

describe('refusals', () => {
  const s = {};
  before(() => {
    s.L = layout(null);
    s.marker = path.join(s.L.ws, 'ran-on-the-host');
    s.commands = [{ name: 'marker', command: `touch ${s.marker}` }];
    s.empty = fs.mkdtempSync('/var/tmp/claw-sandbox-nobwrap-');
  });
  after(() => {
    for (const d of [s.L.base, s.L.runDir, s.L.priv, s.empty]) fs.rmSync(d, { recursive: true, force: true });
  });
  const nothingRan = () => assert.equal(fs.existsSync(s.marker), false, 'the command ran');

  test('no bwrap on the PATH: the backend refuses to start and says how to install it', () => {
    const out = runChild(null, s.L, { commands: s.commands }, { env: { PATH: s.empty } });
    assert.equal(out.probe.ok, false);
    assert.match(out.probe.reason, /bubblewrap \(bwrap\) is not installed/);
    assert.match(out.probe.fix, /apt-get install bubblewrap/);
    assert.match(
      out.factoryError,
      /^claw-identity sandbox: bubblewrap \(bwrap\) is not installed.*Fix: install bubblewrap.*did not run, in the sandbox or on the host/s,
    );
    assert.deepEqual(out.results, []);
    nothingRan();
  });

  test('bwrap gone after the sandbox started: the command is refused, not run on the host', () => {
    const out = runChild(null, s.L, { commands: s.commands, pathAfterFactory: s.empty });
    assert.equal(out.factoryError, undefined);
    assert.match(out.results[0].specError, /bubblewrap \(bwrap\) is not installed/);
    nothingRan();
  });

  test('sandbox.bwrap naming no file is refused', () => {
    const out = runChild(null, s.L, { commands: s.commands, options: { sandbox: { bwrap: '/nonexistent/bwrap' } } });
    assert.match(out.factoryError, /sandbox\.bwrap is \/nonexistent\/bwrap/);
    nothingRan();
  });

  test('user namespaces refused (inside a sandbox that allows none): the backend says so, with the fix', () => {
    assert.ok(bwrap, 'bwrap is not installed');
    const wrap = [bwrap, '--dev-bind', '/', '/', '--unshare-user', '--disable-userns', '--'];
    const out = runChild(null, s.L, { commands: s.commands }, { wrap });
    assert.equal(out.probe.ok, false);
    assert.match(out.probe.reason, /refuses user namespaces/);
    assert.match(out.probe.fix, /max_user_namespaces/);
    assert.match(out.factoryError, /did not run/);
    nothingRan();
  });

  test('a hard-linked map is refused: a link outside its directory would show', () => {
    const link = path.join(s.L.base, 'map-hardlink.json');
    fs.linkSync(s.L.map, link);
    try {
      const out = runChild(null, s.L, { commands: s.commands });
      assert.match(out.factoryError, /has 2 hard links/);
      nothingRan();
    } finally {
      fs.rmSync(link);
    }
  });

  test('a workspace that holds the home directory is refused at the start of the session', () => {
    const out = runChild(null, s.L, { commands: s.commands, workspace: s.L.base });
    assert.match(out.factoryError, /holds a home directory of the gateway's user.*did not run/s);
    assert.deepEqual(out.results, []);
    nothingRan();
  });

  test("the WebAssembly build refuses: it can't start processes", () => {
    const out = runChild(null, s.L, { commands: s.commands, entry: WASM_ENTRY });
    assert.equal(out.probe.ok, false);
    assert.match(out.probe.reason, /WebAssembly build/);
    nothingRan();
  });
});

// ---------------------------------------------------------------------------
// Doctor, where bubblewrap works (the cli suite runs it with no bwrap on its
// PATH, so that its expectations hold on any machine).

describe('doctor', () => {
  test("where bubblewrap works, doctor names claw-identity's sandbox first for an agent with a shell on the host", () => {
    assert.ok(bwrap, 'bwrap is not installed: apt-get install bubblewrap (npm test installs it as root)');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claw-sandbox-doctor-'));
    try {
      fs.chmodSync(dir, 0o700);
      const map = path.join(dir, 'agent-tokens.json');
      fs.writeFileSync(map, JSON.stringify({ main: secret() }), { mode: 0o600 });
      const cfg = path.join(dir, 'openclaw.json');
      fs.writeFileSync(cfg, JSON.stringify({ plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMapPath: map } } } } }));
      const bin = path.join(root, 'bin', 'claw-identity.js');
      const r = spawnSync(process.execPath, [bin, 'doctor', '--config', cfg], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: dir } });
      // OpenClaw's defaults contain no agent, so (posture "enforce") no token
      // is served and doctor fails; where bubblewrap runs, the fix it names
      // is this plugin's sandbox, with the owned tools allowed in it.
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stdout, /^FAIL {2}posture: agent main is not contained: /m);
      assert.match(
        r.stdout,
        /^ {6}fix: openclaw config set agents\.defaults\.sandbox '\{"backend":"claw-identity","mode":"all"\}' --strict-json && .*openclaw config set tools\.sandbox\.tools\.alsoAllow '\["claw-os__\*"\]' --strict-json/m,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
