// The loopback MCP proxy (docs/design.md, "The MCP proxy"). Each server of
// the `proxy` option is served at http://127.0.0.1:<port>/<name> for
// OpenClaw's own MCP client, and reached upstream with the calling agent's
// credential. Transport only: which connection is the gateway's, what a
// handle is worth, what is forwarded with which credential and what the
// model sees of a tool list are decided in Rust (core/src/proxy/).
//
// Shape: a front (the MCP SDK's low-level `Server`, one per OpenClaw
// session, over streamable HTTP, answering in SSE so a call's progress
// streams back) and upstream `Client`s keyed by (server,
// agent, token fingerprint), opened at that agent's first call and closed
// when idle. The argument mode shares one upstream connection (the token
// is an argument); header and env modes need one per agent, and a stdio
// upstream one child per agent.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { firstMcpSdk, hostMcpSdk, ownMcpSdk } from './mcp-sdk.js';

/** An upstream connection unused this long is closed (a stdio child exits). */
const IDLE_MS = 5 * 60 * 1000;
/** Longest request body the front reads (a tool call's arguments). */
const MAX_BODY = 16 * 1024 * 1024;
const SDK_MODULES = {
  Server: 'server/index.js',
  StreamableHTTPServerTransport: 'server/streamableHttp.js',
  Client: 'client/index.js',
  StreamableHTTPClientTransport: 'client/streamableHttp.js',
  StdioClientTransport: 'client/stdio.js',
  getDefaultEnvironment: 'client/stdio.js',
  types: 'types.js',
};

/** The MCP SDK: OpenClaw's own (the gateway's entry point depends on it), else the one installed with this package. */
export function proxySdk(entry = process.argv[1]) {
  return firstMcpSdk([
    ["OpenClaw's", () => hostMcpSdk(SDK_MODULES, entry)],
    ["claw-identity's", () => ownMcpSdk(SDK_MODULES)],
  ]);
}

/** A refused call, as the model sees it: an error result, not a JSON-RPC error (three of those pause the server in OpenClaw). */
const refused = (reason) => ({ content: [{ type: 'text', text: reason }], isError: true });

/**
 * A single JSON-RPC `tools/call` request, or a cancellation (which may name
 * one): what `forward` takes. A batch, or anything else, goes to the SDK.
 */
const isToolCall = (m) =>
  m !== null &&
  typeof m === 'object' &&
  !Array.isArray(m) &&
  m.jsonrpc === '2.0' &&
  ((m.method === 'tools/call' && (typeof m.id === 'string' || typeof m.id === 'number') && typeof m.params?.name === 'string') ||
    m.method === 'notifications/cancelled');

/** Reads a JSON body (the SDK's transport takes it parsed). */
function body(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error('request body too large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      try {
        resolve(chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new Error('request body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

function reply(res, status, message) {
  if (res.headersSent) return res.end();
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

/** One proxied server: its upstream connections, and the front sessions OpenClaw opened. */
class Proxied {
  constructor(plan, sdk, native, logger) {
    Object.assign(this, { plan, sdk, native, logger });
    this.name = plan.name;
    /** Upstream clients by connection key (agent and token fingerprint; '' for none). */
    this.upstreams = new Map();
    /** Front transports by MCP session id. */
    this.sessions = new Map();
    /** Forwarded calls by (front session, request id): the upstream session a cancellation goes to. */
    this.inflight = new Map();
    /** An HTTP upstream's calls are forwarded as bytes on kept-alive connections (`forward`). */
    if (plan.upstream.url !== undefined) {
      const url = new URL(plan.upstream.url);
      const mod = url.protocol === 'https:' ? https : http;
      this.direct = { url, request: mod.request, agent: new mod.Agent({ keepAlive: true }) };
    }
  }

  /** The upstream client for `identity` (a redemption), opened on first use. */
  upstream(identity) {
    const key = identity.key;
    let u = this.upstreams.get(key);
    if (u === undefined) {
      u = { client: this.connect(identity), timer: undefined };
      this.upstreams.set(key, u);
      u.client.catch(() => this.upstreams.delete(key));
    }
    clearTimeout(u.timer);
    u.timer = setTimeout(() => this.close(key), IDLE_MS).unref();
    return u.client;
  }

  async connect(identity) {
    const { Client, StreamableHTTPClientTransport, StdioClientTransport, getDefaultEnvironment, types } = this.sdk;
    const up = this.plan.upstream;
    const transport =
      up.url !== undefined
        ? new StreamableHTTPClientTransport(new URL(up.url), { requestInit: { headers: { ...up.headers, ...identity.headers } } })
        : new StdioClientTransport({
            command: up.command,
            args: up.args,
            cwd: up.cwd ?? undefined,
            env: { ...getDefaultEnvironment(), ...up.env, ...identity.env },
            stderr: 'ignore',
          });
    const client = new Client({ name: 'claw-identity-proxy', version: '1' }, { capabilities: {} });
    // The upstream's list changes reach every OpenClaw session of this server.
    const relay = (method) => () => {
      for (const s of this.sessions.values()) s.server.notification({ method }).catch(() => {});
    };
    client.setNotificationHandler(types.ToolListChangedNotificationSchema, relay('notifications/tools/list_changed'));
    client.setNotificationHandler(types.ResourceListChangedNotificationSchema, relay('notifications/resources/list_changed'));
    client.setNotificationHandler(types.PromptListChangedNotificationSchema, relay('notifications/prompts/list_changed'));
    await client.connect(transport);
    return client;
  }

  async close(key) {
    const u = this.upstreams.get(key);
    if (u === undefined) return;
    this.upstreams.delete(key);
    clearTimeout(u.timer);
    try {
      const client = await u.client;
      await client.transport?.terminateSession?.().catch(() => {});
      await client.close();
    } catch {
      // a connection that never opened has nothing to close
    }
  }

  /** The connection for requests that carry no handle (`listAs`, or none). */
  async lister() {
    const id = this.native.proxyListIdentity(this.name);
    if (!id.ok) throw new this.sdk.types.McpError(-32603, id.reason);
    return this.upstream(id);
  }

  /** A front `Server` for one OpenClaw session, with the upstream's capabilities. */
  async front() {
    const { Server, types } = this.sdk;
    const lister = await this.lister();
    const caps = lister.getServerCapabilities() ?? {};
    const capabilities = {};
    for (const k of ['tools', 'resources', 'prompts']) if (caps[k]) capabilities[k] = caps[k];
    capabilities.tools ??= {};
    const server = new Server(lister.getServerVersion() ?? { name: this.name, version: '0' }, {
      capabilities,
      instructions: lister.getInstructions?.(),
    });
    const list = async (fn) => fn(await this.lister());
    server.setRequestHandler(types.ListToolsRequestSchema, (req, extra) =>
      list((c) => c.listTools(req.params, { signal: extra.signal })).then((r) => this.native.proxyTools(r)),
    );
    server.setRequestHandler(types.CallToolRequestSchema, (req, extra) => this.call(req, extra));
    if (capabilities.resources) {
      server.setRequestHandler(types.ListResourcesRequestSchema, (req, extra) => list((c) => c.listResources(req.params, { signal: extra.signal })));
      server.setRequestHandler(types.ListResourceTemplatesRequestSchema, (req, extra) =>
        list((c) => c.listResourceTemplates(req.params, { signal: extra.signal })),
      );
      server.setRequestHandler(types.ReadResourceRequestSchema, (req, extra) => list((c) => c.readResource(req.params, { signal: extra.signal })));
    }
    if (capabilities.prompts) {
      server.setRequestHandler(types.ListPromptsRequestSchema, (req, extra) => list((c) => c.listPrompts(req.params, { signal: extra.signal })));
      server.setRequestHandler(types.GetPromptRequestSchema, (req, extra) => list((c) => c.getPrompt(req.params, { signal: extra.signal })));
    }
    return server;
  }

  /** A `tools/call`: Rust redeems its handle; the call goes upstream with the agent's credential, or not at all. */
  async call(req, extra) {
    const { name, arguments: args } = req.params;
    const r = this.native.proxyRedeem(this.name, name, args ?? {});
    if (!r.ok) return refused(r.reason);
    let client;
    try {
      client = await this.upstream(r);
    } catch (e) {
      return refused(`proxy: ${this.name} could not be reached (${e?.message ?? e}); try again later`);
    }
    const progressToken = req.params._meta?.progressToken;
    const onprogress =
      progressToken === undefined
        ? undefined
        : (p) => extra.sendNotification({ method: 'notifications/progress', params: { ...p, progressToken } }).catch(() => {});
    // Cancellation: the front aborts `extra.signal`, and the SDK client
    // sends notifications/cancelled upstream.
    try {
      return await client.callTool({ name, arguments: r.arguments }, undefined, { signal: extra.signal, onprogress, resetTimeoutOnProgress: true });
    } catch (e) {
      // The upstream's own JSON-RPC errors go back as they came; a broken
      // connection (a transport error, an HTTP status) is an error result,
      // and the connection is opened afresh for the next call.
      if (e instanceof this.sdk.types.McpError || extra.signal.aborted) throw e;
      this.close(r.key);
      return refused(`proxy: ${this.name} failed (${e?.message ?? e}); try again later`);
    }
  }

  /**
   * A `tools/call` to an HTTP upstream, forwarded as bytes: Rust redeems
   * the handle and gives the arguments and the credential, the request goes
   * up on the agent's upstream session (the SDK client opened it), and the
   * upstream's answer (JSON, or SSE with the call's progress) comes back as
   * it is: the JSON-RPC id and any progress token are the caller's own.
   * The SDK server and client each side cost more than the hop itself
   * (BENCHMARKS.md, "MCP proxy"). Cancellation reaches the upstream too:
   * the caller's `notifications/cancelled` names the same request id, and
   * goes up on the same session (`inflight`).
   */
  async forward(sessionId, session, msg, req, res) {
    const answer = (result) => {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sessionId });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    };
    if (msg.method === 'notifications/cancelled') {
      const up = this.inflight.get(`${sessionId}\u0000${msg.params?.requestId}`);
      // Not a forwarded call's: the SDK's (a list, say).
      if (up === undefined) return session.transport.handleRequest(req, res, msg);
      this.post(up, req)
        .on('response', (r) => r.resume())
        .on('error', () => {})
        .end(JSON.stringify(msg));
      res.writeHead(202).end();
      return;
    }
    const r = this.native.proxyRedeem(this.name, String(msg.params?.name), msg.params?.arguments ?? {});
    if (!r.ok) return answer(refused(r.reason));
    let client;
    try {
      client = await this.upstream(r);
    } catch (e) {
      return answer(refused(`proxy: ${this.name} could not be reached (${e?.message ?? e}); try again later`));
    }
    const up = { key: r.key, headers: r.headers ?? {}, session: client.transport.sessionId, version: client.transport.protocolVersion };
    const key = `${sessionId}\u0000${msg.id}`;
    this.inflight.set(key, up);
    const done = () => this.inflight.delete(key);
    const body = JSON.stringify({ ...msg, params: { ...msg.params, arguments: r.arguments } });
    const out = this.post(up, req);
    out.on('response', (upRes) => {
      if (upRes.statusCode !== 200) {
        upRes.resume();
        done();
        // A session the upstream dropped (404) or refused: opened afresh next time.
        this.close(up.key);
        return answer(refused(`proxy: ${this.name} answered HTTP ${upRes.statusCode}; try again`));
      }
      res.writeHead(200, { 'content-type': upRes.headers['content-type'] ?? 'application/json', 'mcp-session-id': sessionId });
      upRes.pipe(res);
      upRes.on('end', done);
      upRes.on('error', done);
    });
    out.on('error', (e) => {
      done();
      this.close(up.key);
      if (!res.headersSent) answer(refused(`proxy: ${this.name} failed (${e?.message ?? e}); try again later`));
      else res.destroy();
    });
    // The caller gave up: so does the upstream request.
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    out.end(body);
  }

  /** A POST of one JSON-RPC message on an upstream session. */
  post(up, req) {
    const headers = {
      ...this.plan.upstream.headers,
      ...up.headers,
      'content-type': 'application/json',
      accept: req.headers.accept ?? 'application/json, text/event-stream',
    };
    if (up.session !== undefined) headers['mcp-session-id'] = up.session;
    if (up.version !== undefined) headers['mcp-protocol-version'] = up.version;
    return this.direct.request(this.direct.url, { method: 'POST', headers, agent: this.direct.agent });
  }

  /** One HTTP request to this server's path. */
  async handle(req, res) {
    const id = req.headers['mcp-session-id'];
    const parsed = req.method === 'POST' ? await body(req) : undefined;
    if (typeof id === 'string') {
      const s = this.sessions.get(id);
      if (s === undefined) return reply(res, 404, 'unknown MCP session');
      if (this.direct !== undefined && isToolCall(parsed)) return this.forward(id, s, parsed, req, res);
      return s.transport.handleRequest(req, res, parsed);
    }
    if (req.method !== 'POST' || !this.sdk.types.isInitializeRequest(parsed)) return reply(res, 400, 'no MCP session: initialize first');
    const transport = new this.sdk.StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (sid) => this.sessions.set(sid, { transport, server }),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) this.sessions.delete(transport.sessionId);
    };
    const server = await this.front();
    await server.connect(transport);
    return transport.handleRequest(req, res, parsed);
  }

  async stop() {
    this.direct?.agent.destroy();
    for (const s of this.sessions.values()) await s.server.close().catch(() => {});
    this.sessions.clear();
    await Promise.all([...this.upstreams.keys()].map((k) => this.close(k)));
  }
}

/**
 * Starts the proxy the layer in force plans (`native.proxyPlan()`), or
 * returns null when it plans none. Every request must come from a socket
 * this process opened (`native.proxyPeer`, read from /proc); where the
 * platform can't tell, the single-use handles are the only gate, and the
 * start line says so.
 */
export async function startProxy({ native, logger = console, sdk }) {
  const plan = native.proxyPlan();
  if (plan === null) return null;
  sdk ??= await proxySdk();
  const servers = new Map(plan.servers.map((s) => [`/${s.name}`, new Proxied(s, sdk, native, logger)]));
  const peers = new WeakMap();
  let peerUnknown = false;
  const own = (socket) => {
    let p = peers.get(socket);
    if (p === undefined) {
      p = Promise.resolve(native.proxyPeer(socket.remotePort, socket.localPort)).then((ok) => {
        if (ok === null) peerUnknown = true;
        return ok !== false;
      });
      peers.set(socket, p);
    }
    return p;
  };
  const server = http.createServer(async (req, res) => {
    try {
      if (!(await own(req.socket))) return reply(res, 403, 'claw-identity proxy: only the OpenClaw gateway may use this endpoint');
      const p = servers.get(new URL(req.url, 'http://x').pathname);
      if (p === undefined) return reply(res, 404, 'claw-identity proxy: no such server');
      await p.handle(req, res);
    } catch (e) {
      logger.warn?.(`[claw-identity] proxy: ${req.method} ${req.url} failed: ${e?.message ?? e}`);
      reply(res, 500, 'claw-identity proxy: internal error');
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(plan.port, '127.0.0.1', resolve);
  });
  const port = server.address().port;
  const urls = Object.fromEntries(plan.servers.map((s) => [s.name, `http://127.0.0.1:${port}/${s.name}`]));
  const peerNote = native.proxyPeer(0, 0);
  const checks =
    (await peerNote) === null ? 'single-use handles only (this platform cannot tell which process connects)' : "the gateway process's own sockets only";
  logger.info?.(
    `[claw-identity] MCP proxy on 127.0.0.1:${port}: ${plan.servers.map((s) => `${s.name} → ${s.upstream.url ?? s.upstream.command} (credential in ${s.credential.in})`).join(', ')}; answers ${checks}`,
  );
  return {
    port,
    urls,
    sdk,
    get peerUnknown() {
      return peerUnknown;
    },
    async stop() {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(() => r()));
      await Promise.all([...servers.values()].map((p) => p.stop()));
    },
  };
}

const SLOT = Symbol.for('claw-identity.mcp-proxy');

/**
 * Each proxied server's tool list through the proxy running in this
 * process, as OpenClaw's client gets it: `[{ server, tools } | { server,
 * error }]`. No tool is called, no handle is made.
 */
export async function listThroughProxy(native) {
  const g = globalThis[SLOT];
  const running = g?.running;
  if (!running) {
    // Planned but not running (it failed to start: its port taken, say): each server's tools are missing.
    const why = `the MCP proxy is not running in this gateway${g?.lastError ? ` (${g.lastError})` : ''}`;
    return (native.proxyPlan()?.servers ?? []).map((s) => ({ server: s.name, error: why }));
  }
  const { Client, StreamableHTTPClientTransport } = running.sdk;
  return Promise.all(
    Object.entries(running.urls).map(async ([server, url]) => {
      const client = new Client({ name: 'claw-identity-doctor', version: '1' });
      try {
        await client.connect(new StreamableHTTPClientTransport(new URL(url)));
        const tools = [];
        let cursor;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor });
          tools.push(...page.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })));
          cursor = page.nextCursor;
        } while (cursor !== undefined && tools.length < 10_000);
        return { server, tools };
      } catch (e) {
        return { server, error: String(e?.message ?? e) };
      } finally {
        await client.close().catch(() => {});
      }
    }),
  );
}

/**
 * The proxy as part of the plugin's gateway service, once per process:
 * OpenClaw may start a new registry's service before it stops the old
 * one's, and both would bind the same port. The proxy runs while any
 * service runs, and restarts when the plan (port, servers) changes.
 */
export function proxyService(native, logger) {
  globalThis[SLOT] ??= { users: 0, plan: 'null', running: null, queue: Promise.resolve() };
  const g = globalThis[SLOT];
  const serially = (f) => {
    g.queue = g.queue.then(f).catch((e) => {
      g.lastError = String(e?.message ?? e);
      logger.error?.(`[claw-identity] MCP proxy did not start: ${g.lastError}; the proxied servers' calls fail until it does`);
    });
    return g.queue;
  };
  const settle = async () => {
    const plan = g.users > 0 ? JSON.stringify(native.proxyPlan()) : 'null';
    if (plan === g.plan && (g.running !== null || plan === 'null')) return;
    const old = g.running;
    g.running = null;
    g.plan = 'null';
    await old?.stop();
    if (plan !== 'null') {
      g.running = await startProxy({ native, logger });
      g.plan = plan;
      g.lastError = undefined;
    }
  };
  return {
    start: () => {
      g.users += 1;
      return serially(settle);
    },
    stop: () => {
      g.users = Math.max(0, g.users - 1);
      return serially(settle);
    },
  };
}
