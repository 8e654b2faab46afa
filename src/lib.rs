//! The N-API surface of claw-identity, and nothing else: every decision is
//! made by the core crate (`core/`), which has no napi dependency; the
//! bridge (`bridge/`) turns JS values into its inputs and its decisions into
//! JS values, and holds every `unsafe` N-API call.
//!
//! - `IdentityLayer`: one layer (its own map, watcher and counters), with
//!   `beforeToolCall(event, ctx)` returning OpenClaw's hook result.
//! - `configure`, `beforeToolCall`, `stats`: the same on one layer per JS
//!   thread, which the plugin wires to OpenClaw; every registration reaches
//!   the layer in force, never one a later `configure` closed.
//! - `tiers()`: the plugin's trusted policy and its ordinary hook, for one
//!   registration.

#![deny(clippy::all)]

mod bridge;
pub mod proxy;

use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use bridge::js::Js;
use bridge::layer::{JsLayer, JsOptions};
use bridge::tiers::ThreadState;
use claw_identity_core::{ops, redact, rules::Params};

/// Node-API 10: property keys made once (`node_api_create_property_key_*`)
/// and references to them. Node asks an addon for its API version through
/// this symbol; without it, an addon is version 8. OpenClaw runs on Node
/// 24.16+ and 26.1+, which have version 10.
#[no_mangle]
pub extern "C" fn node_api_module_get_api_version_v1() -> i32 {
    10
}

/// One identity layer: its own map, watcher and counters.
#[napi]
pub struct IdentityLayer {
    inner: Rc<JsLayer>,
}

#[napi(object)]
pub struct NativeStats {
    pub agents: u32,
    pub loaded: bool,
    pub reloads: i64,
    pub reload_errors: i64,
    pub last_error: Either<String, Null>,
    pub stale: bool,
    pub injected: i64,
    pub passed: i64,
    pub missing: i64,
    pub blocked: i64,
    pub rewritten: i64,
    pub log_dropped: i64,
    pub internal_errors: i64,
    pub redaction_hits: i64,
    pub watcher: String,
    pub token_map_path: String,
    pub posture: NativePosture,
}

/// Whether the agents are contained (`claw_identity_core::posture`).
#[napi(object)]
pub struct NativePosture {
    /// `"enforce"` or `"warn"`.
    pub mode: String,
    /// False when no OpenClaw config was given: nobody judged the agents.
    pub judged: bool,
    /// Whether tokens are served now.
    pub serves_tokens: bool,
    pub agents: Vec<NativeAgentPosture>,
}

#[napi(object)]
pub struct NativeAgentPosture {
    /// The agent id; `"*"` stands for the agents the roster doesn't list.
    pub agent_id: String,
    /// `"sandbox"`, `"host"`, or `null` when it is not contained.
    pub contained: Either<String, Null>,
    pub exposures: Vec<NativeExposure>,
    /// The config that contains it (`openclaw config set` commands).
    pub fix: Either<String, Null>,
}

#[napi(object)]
pub struct NativeExposure {
    pub what: String,
    /// The config key it comes from.
    pub key: String,
}

fn native_posture(j: &claw_identity_core::posture::Judged) -> NativePosture {
    use claw_identity_core::posture::Containment;
    let p = &j.posture;
    let text = |s: &str| redact::scrub(s);
    NativePosture {
        mode: p.mode.as_str().to_owned(),
        judged: p.judged(),
        serves_tokens: p.serves_tokens(),
        agents: p
            .agents
            .iter()
            .flatten()
            .map(|a| NativeAgentPosture {
                agent_id: text(&a.agent_id),
                contained: match a.containment {
                    Ok(Containment::Sandbox) => Either::A("sandbox".into()),
                    Ok(Containment::Host) => Either::A("host".into()),
                    Err(_) => Either::B(Null),
                },
                exposures: a
                    .containment
                    .as_ref()
                    .err()
                    .into_iter()
                    .flatten()
                    .map(|e| NativeExposure {
                        what: text(&e.what),
                        key: text(&e.key),
                    })
                    .collect(),
                fix: match &a.fix {
                    Some(f) => Either::A(text(f)),
                    None => Either::B(Null),
                },
            })
            .collect(),
    }
}

fn native_stats(layer: &claw_identity_core::Layer) -> NativeStats {
    let s = layer.stats();
    NativeStats {
        agents: s.agents,
        loaded: s.loaded,
        reloads: s.reloads as i64,
        reload_errors: s.reload_errors as i64,
        last_error: match s.last_error {
            Some(e) => Either::A(e),
            None => Either::B(Null),
        },
        stale: s.stale,
        injected: s.injected as i64,
        passed: s.passed as i64,
        missing: s.missing as i64,
        blocked: s.blocked as i64,
        rewritten: s.rewritten as i64,
        log_dropped: s.log_dropped as i64,
        internal_errors: s.internal_errors as i64,
        redaction_hits: s.redaction_hits as i64,
        watcher: s.watcher.to_owned(),
        token_map_path: s.token_map_path,
        posture: native_posture(&s.posture),
    }
}

#[napi]
impl IdentityLayer {
    /// Loads the map, starts its watcher. Throws on invalid options, naming them.
    ///
    /// Its `beforeToolCall(event, ctx)` is an own property of the object,
    /// not a `#[napi]` method: see `bridge::tiers::install_hook`. It returns
    /// the decision for one tool call in OpenClaw's hook result shape
    /// (`undefined`, `{ params }`, `{ block, blockReason }` or
    /// `{ requireApproval, params? }`, or a promise of one of these when a
    /// delegation session must be created first), and never throws.
    #[napi(constructor, catch_unwind)]
    pub fn new(env: Env, this: This<Js<'_>>, options: Option<Js<'_>>) -> Result<Self> {
        let options = JsOptions::read(options)?;
        let inner = JsLayer::new(&env, &options, None)?;
        #[cfg(target_os = "wasi")]
        bridge::watch::start(&env, &inner)?;
        bridge::tiers::install_hook(&env, *this, &inner)?;
        Ok(IdentityLayer { inner })
    }

    /// Counters and map state; never holds a token.
    #[napi(catch_unwind)]
    pub fn stats(&self) -> NativeStats {
        native_stats(&self.inner.layer)
    }

    /// Stops the watcher. The map in force stays in force. Idempotent.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.inner.layer.close();
    }

    /// Starts the watcher again after `close`, reading the map first.
    /// Idempotent. Throws if it can't be started.
    #[napi(catch_unwind)]
    pub fn watch(&self, #[allow(unused_variables)] env: Env) -> Result<()> {
        self.inner.layer.watch().map_err(|e| {
            Error::from_reason(format!("claw-identity: cannot start the map watcher: {e}"))
        })?;
        #[cfg(target_os = "wasi")]
        bridge::watch::start(&env, &self.inner)?;
        Ok(())
    }
}

/// Configures this thread's process-wide layer. Idempotent: the same options
/// keep the same layer (and its watcher); different options replace it,
/// starting from the map the old one had in force, and every registration
/// of the plugin then reaches the new one.
#[napi(catch_unwind, ts_return_type = "IdentityLayer")]
pub fn configure(env: Env, options: Option<Js<'_>>) -> Result<Reference<IdentityLayer>> {
    bridge::tiers::configure(&env, options)
}

/// The plugin's trusted policy and its ordinary hook, for one registration
/// of the plugin: `{ beforeToolCall, safetyNet }`. See `bridge/tiers.rs`.
#[napi(ts_return_type = "{ beforeToolCall: ToolCallHook; safetyNet: ToolCallHook }")]
pub fn tiers(env: &Env) -> Result<Js<'_>> {
    bridge::tiers::pair(env)
}

// `redactToolResult(event)`, the plugin's tool-result middleware, is a raw
// callback (`bridge::tiers::redactor`): it runs on every tool result.

/// The plugin's `tool_result_persist` and `before_message_write` handler:
/// `{ message }` with every token the layer knows redacted in
/// `event.message` (content, `details`, tool-call arguments, every string),
/// or `undefined` when it holds none. Never throws: OpenClaw would log it
/// and store the message unchanged. A message too deeply nested to check
/// has the parts it can't check withheld (`bridge::persist`); one that
/// can't be checked at all is stored unchanged, with an error logged.
///
/// A token found is a hit (`stats().redactionHits`, a log line naming
/// `ctx.agentId` and the tool: `event.toolName` in `tool_result_persist`,
/// the message's own `toolName` in `before_message_write`).
#[napi(
    ts_args_type = "event: { message?: unknown; toolName?: string }, ctx?: { agentId?: string; toolName?: string }"
)]
pub fn redact_persisted<'e>(env: &'e Env, event: Js<'e>, ctx: Option<Js<'e>>) -> Result<Js<'e>> {
    let layer = match ThreadState::of(env).and_then(|s| s.layer(env)) {
        Ok(l) => l,
        Err(_) => return Js::undefined_in(env),
    };
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || -> Result<Option<Js<'e>>> {
            if event.kind()? != bridge::js::Kind::Object {
                return Ok(None);
            }
            let Some(message) = event.get(c"message")? else {
                return Ok(None);
            };
            let mut hits = redact::results::Hits::default();
            let clean = bridge::persist::redact_message(
                env.raw(),
                message,
                &layer.layer.redactor(),
                &mut hits,
            )?;
            if !hits.is_empty() {
                // `runToolResultPersist` and `runBeforeMessageWrite` (hooks-*.mjs).
                let agent = ctx.map(|c| c.get(c"agentId")).transpose()?.flatten();
                let tool = match event.get(c"toolName")? {
                    Some(t) if t.kind()? == bridge::js::Kind::String => Some(t),
                    _ => message.get(c"toolName")?,
                };
                layer.note_redaction(env, agent, tool, "transcript", &hits)?;
            }
            Ok(clean)
        },
    ));
    let clean = match checked {
        Ok(Ok(clean)) => clean,
        _ => {
            claw_identity_core::log_error!(
                layer.layer.log(),
                "could not check a message for tokens before OpenClaw stored it (internal error); it was stored as it is"
            );
            None
        }
    };
    match clean.map(|m| -> Result<Js<'e>> {
        let out = Js::object(env.raw())?;
        out.define(&[(Js::string(env.raw(), "message")?, m)])?;
        Ok(out)
    }) {
        Some(Ok(out)) => Ok(out),
        _ => Js::undefined_in(env),
    }
}

/// Stats of the process-wide layer, or `undefined` before `configure`.
#[napi(catch_unwind)]
pub fn stats(env: Env) -> Result<Either<NativeStats, ()>> {
    Ok(match ThreadState::of(&env)?.current() {
        Some(l) => Either::A(native_stats(&l.layer)),
        None => Either::B(()),
    })
}

/// An agent of the map in force, by its token's fingerprint.
#[napi(object)]
pub struct AgentFingerprint {
    pub agent_id: String,
    pub fingerprint: String,
}

/// The agents of the process-wide layer's map in force, sorted, with their
/// tokens' fingerprints (never a token); `undefined` before `configure`.
#[napi(catch_unwind)]
pub fn map_fingerprints(env: Env) -> Result<Either<Vec<AgentFingerprint>, ()>> {
    Ok(match ThreadState::of(&env)?.current() {
        Some(l) => Either::A(
            l.layer
                .fingerprints()
                .into_iter()
                .map(|(agent_id, fingerprint)| AgentFingerprint {
                    agent_id,
                    fingerprint,
                })
                .collect(),
        ),
        None => Either::B(()),
    })
}

#[napi(module_exports)]
pub fn init(mut exports: Object, env: Env) -> Result<()> {
    if std::env::var_os("CLAW_IDENTITY_PANIC_TEST").is_some_and(|v| v == "1") {
        bridge::layer::PANIC_TEST.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    #[cfg(target_os = "wasi")]
    bridge::host_fs::install(&env)?;
    bridge::host::note_process(&env);
    exports.set("beforeToolCall", bridge::tiers::module_hook(&env)?)?;
    exports.set("redactToolResult", bridge::tiers::redactor(&env)?)?;
    Ok(())
}

/// The WebAssembly build's front (`bridge/front.rs`), given once by
/// `lib/wasi.cjs` as the module loads: returns the module's
/// `beforeToolCall`, made again as the front's.
#[cfg(target_os = "wasi")]
#[napi(js_name = "__useFront", catch_unwind)]
pub fn use_front<'e>(env: &'e Env, front: Js<'e>) -> Result<Js<'e>> {
    bridge::tiers::use_front(env, front)
}

/// Does nothing: the cost floor of a native call, for the benchmark.
#[napi]
pub fn noop() {}

/// The first 12 hex digits of the sha256 of `secret`: how tokens are shown.
#[napi(catch_unwind)]
pub fn fingerprint(secret: String) -> String {
    redact::fingerprint(&secret)
}

// ---- operator tools ----
// `claw-identity doctor`, `explain`, `audit` and the atomic map writer, for
// the CLI and the `writeTokenMap` export. The work is done in `ops` (pure
// Rust); these wrappers only convert.

/// A report of `doctor` or `explain`: the verdict, the text for a terminal,
/// and the same report as data (for `--json`).
#[napi(object)]
pub struct OpsReport {
    /// doctor: nothing found stops token injection; explain: the call runs,
    /// with its agent's token when it needs one.
    pub ok: bool,
    pub text: String,
    pub report: serde_json::Value,
}

/// A report of doctor or explain, every string of it shown by
/// `ops::shown_report` (no token pasted into what they echo is printed).
fn ops_report<T: serde::Serialize>(ok: bool, text: String, report: &T) -> Result<OpsReport> {
    let (text, report) = ops::shown_report(&text, report)
        .map_err(|e| Error::from_reason(format!("claw-identity: {e:#}")))?;
    Ok(OpsReport { ok, text, report })
}

/// An operator tool's error: it may quote a config value.
fn invalid(msg: String) -> Error {
    bridge::layer::invalid(redact::scrub(&msg))
}

/// An operator tool's error (the core's `anyhow::Error`) as [`invalid`],
/// with its whole chain: "<what it was doing>: <cause>".
fn operator(e: impl std::fmt::Display) -> Error {
    invalid(format!("{e:#}"))
}

/// What `--mcp` gathered (lib/probe.js), as the core reads it.
fn live_of(live: Option<serde_json::Value>) -> Result<Option<ops::Live>> {
    live.map(|v| {
        serde_json::from_value(v).map_err(|e| invalid(format!("live: not what --mcp gathers: {e}")))
    })
    .transpose()
}

/// `claw-identity doctor [--map PATH] [--config openclaw.json] [--mcp]`.
#[napi]
pub fn ops_doctor(
    map: Option<String>,
    config: Option<String>,
    live: Option<serde_json::Value>,
) -> Result<OpsReport> {
    let config = config.map(|c| claw_identity_core::paths::host_path(&c));
    let live = live_of(live)?;
    let r = ops::doctor::run(&ops::doctor::DoctorArgs {
        map: map.as_deref(),
        config: config.as_deref(),
        live: live.as_ref(),
    })
    .map_err(operator)?;
    ops_report(r.ok, r.render(), &r)
}

/// `claw-identity audit` for the gateway config at `config`: `report` is
/// the findings `openclaw security audit` gets
/// (`[{checkId, severity, title, detail, remediation?}]`), `text` how the
/// CLI prints them, `ok` that none is above info; with `live`, those of
/// `audit --mcp` too.
#[napi]
pub fn ops_audit(config: String, live: Option<serde_json::Value>) -> Result<OpsReport> {
    let live = live_of(live)?;
    let all = ops::audit::run(
        &claw_identity_core::paths::host_path(&config),
        live.as_ref(),
    );
    let findings = ops::render::audit_findings(&all);
    let ok = findings.iter().all(|f| f.severity == "info");
    ops_report(ok, ops::render::audit_text(&findings, &config), &findings)
}

/// How OpenClaw would launch each `mcp.servers` entry whose tools the layer
/// owns (for lib/probe.js to list their tools): `[]` when the config can't
/// be read, which doctor then reports.
#[napi(ts_return_type = "McpServerLaunch[]")]
pub fn ops_mcp_plan(config: String) -> Result<serde_json::Value> {
    let Ok(c) = claw_identity_core::openclaw::config::OpenClawConfig::load(
        &claw_identity_core::paths::host_path(&config),
    ) else {
        return Ok(serde_json::Value::Array(Vec::new()));
    };
    let opts = claw_identity_core::openclaw::config::plugin_options(Some(&c), None)
        .or_else(|_| claw_identity_core::openclaw::config::plugin_options(None, None))
        .map_err(operator)?;
    serde_json::to_value(ops::mcp::plan(&c, &opts).launches)
        .map_err(|e| Error::from_reason(format!("claw-identity: cannot encode the plan: {e}")))
}

#[napi(object)]
pub struct OpsExplainArgs {
    pub map: Option<String>,
    pub config: Option<String>,
    pub agent: Option<String>,
    pub tool: String,
    pub session_key: Option<String>,
    /// The call's params, as a JSON object.
    pub params: Option<serde_json::Value>,
}

/// `claw-identity explain --agent A --tool T [--params JSON]`.
#[napi]
pub fn ops_explain(args: OpsExplainArgs) -> Result<OpsReport> {
    let params: Params = match args.params {
        None => Params::new(),
        Some(serde_json::Value::Object(m)) => m,
        Some(_) => return Err(invalid("params must be a JSON object".into())),
    };
    let config = args
        .config
        .map(|c| claw_identity_core::paths::host_path(&c));
    let e = ops::explain::run(&ops::explain::ExplainArgs {
        map: args.map.as_deref(),
        config: config.as_deref(),
        agent: args.agent.as_deref(),
        tool: &args.tool,
        session_key: args.session_key.as_deref(),
        params: &params,
    })
    .map_err(|e| {
        Error::from_reason(redact::scrub(&format!(
            "claw-identity: cannot explain: {e:#}"
        )))
    })?;
    ops_report(e.ok, e.render(), &e)
}

/// The map path the plugin reads: `map` if given, else the config's
/// `tokenMapPath`, else the default; `~` expanded as the plugin does.
#[napi]
pub fn ops_map_path(map: Option<String>, config: Option<String>) -> Result<String> {
    let config = config
        .map(|c| {
            claw_identity_core::openclaw::config::OpenClawConfig::load(
                &claw_identity_core::paths::host_path(&c),
            )
        })
        .transpose()
        .map_err(operator)?;
    let opts =
        claw_identity_core::openclaw::config::plugin_options(config.as_ref(), map.as_deref())
            .map_err(operator)?;
    Ok(opts.token_map_path.display().to_string())
}

#[napi(object)]
pub struct WrittenMap {
    pub path: String,
    /// Agents in the map now.
    pub agents: u32,
    /// False when the map already held exactly this content (nothing written).
    pub changed: bool,
}

fn write_error(e: ops::writer::WriteError) -> Error {
    let status = match e.kind {
        ops::writer::WriteErrorKind::Invalid => Status::InvalidArg,
        _ => Status::GenericFailure,
    };
    Error::new(status, format!("claw-identity: {}", e.message))
}

fn written(w: ops::writer::Written) -> WrittenMap {
    WrittenMap {
        path: w.path.display().to_string(),
        agents: w.agents as u32,
        changed: w.changed,
    }
}

/// Validates map JSON and writes it atomically (see `ops::writer`).
#[napi]
pub fn ops_write_map_sync(path: String, json: Buffer) -> Result<WrittenMap> {
    ops::writer::write_map(&claw_identity_core::paths::host_path(&path), &json)
        .map(written)
        .map_err(write_error)
}

#[cfg(not(target_os = "wasi"))]
pub struct WriteMapTask {
    path: std::path::PathBuf,
    json: Vec<u8>,
}

#[cfg(not(target_os = "wasi"))]
#[napi]
impl Task for WriteMapTask {
    type Output = ops::writer::Written;
    type JsValue = WrittenMap;

    fn compute(&mut self) -> Result<Self::Output> {
        ops::writer::write_map(&self.path, &self.json).map_err(write_error)
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(written(output))
    }
}

/// `ops_write_map_sync` on the libuv thread pool (fsync can take a while).
/// The WebAssembly build has only the sync one: it runs no threads.
#[cfg(not(target_os = "wasi"))]
#[napi]
pub fn ops_write_map(path: String, json: Buffer) -> AsyncTask<WriteMapTask> {
    AsyncTask::new(WriteMapTask {
        path: path.into(),
        json: json.to_vec(),
    })
}

impl IdentityLayer {
    /// The layer behind this object.
    pub(crate) fn js(&self) -> &Rc<JsLayer> {
        &self.inner
    }

    pub(crate) fn from_js(inner: Rc<JsLayer>) -> IdentityLayer {
        IdentityLayer { inner }
    }
}

// ---- the `claw-identity` sandbox backend ----
// What the plugin's backend (lib/sandbox.js) asks of the layer in force:
// every path, mask and flag of the bwrap command line is decided in
// `claw_identity_core::sandbox`, on the same protected locations the
// layer's file-tool guard uses.

fn sandboxed_layer(env: &Env) -> Result<Rc<JsLayer>> {
    ThreadState::of(env)?.current().ok_or_else(|| {
        Error::from_reason(
            "claw-identity: the sandbox needs the layer's protected locations, and no layer is configured",
        )
    })
}

/// Whether the sandbox can run here.
#[napi(object)]
pub struct SandboxStatus {
    pub ok: bool,
    /// The bwrap found, where one was.
    pub bwrap: Option<String>,
    /// Why it can't run, and what the operator does.
    pub reason: Option<String>,
    pub fix: Option<String>,
}

fn sandbox_status(p: claw_identity_core::sandbox::Probe) -> SandboxStatus {
    let (reason, fix) = match p.result {
        Ok(()) => (None, None),
        Err(r) => (Some(r.why), Some(r.fix)),
    };
    SandboxStatus {
        ok: reason.is_none(),
        bwrap: p.bwrap.map(|b| b.display().to_string()),
        reason,
        fix,
    }
}

/// Whether the sandbox can run here: one sandboxed command with every mask
/// and flag, checked to see no token map, run once per config
/// (`sandbox::probe_cached`): `{ ok, bwrap, reason, fix }`. Blocks the
/// calling thread while bwrap runs; `sandboxProbe` does not.
#[napi(catch_unwind)]
pub fn sandbox_probe_sync(env: Env) -> Result<SandboxStatus> {
    Ok(sandbox_status(
        sandboxed_layer(&env)?.layer.sandbox().probe(),
    ))
}

fn sandbox_request(request: serde_json::Value) -> Result<claw_identity_core::sandbox::Request> {
    serde_json::from_value(request).map_err(|e| invalid(format!("sandbox request: {e}")))
}

/// What the plugin spawns for one sandboxed command.
#[napi(object)]
pub struct SandboxSpawn {
    pub argv: Vec<String>,
    pub env: std::collections::BTreeMap<String, String>,
    /// It runs in a terminal: its stdin stays open.
    pub pty: bool,
}

fn sandbox_spawned(
    spawn: std::result::Result<
        claw_identity_core::sandbox::Spawn,
        claw_identity_core::sandbox::Refusal,
    >,
) -> Result<SandboxSpawn> {
    let s = spawn.map_err(|r| Error::from_reason(format!("claw-identity sandbox: {r}")))?;
    Ok(SandboxSpawn {
        argv: s.argv,
        env: s.env,
        pty: s.pty,
    })
}

/// The bwrap command line and environment for one command:
/// `{ argv, env, pty }`. Throws with why and what to do where it can't run.
#[napi(catch_unwind)]
pub fn sandbox_spawn_sync(env: Env, request: serde_json::Value) -> Result<SandboxSpawn> {
    let req = sandbox_request(request)?;
    sandbox_spawned(sandboxed_layer(&env)?.layer.sandbox().spawn(&req))
}

// The same two on the libuv thread pool, off the gateway's event loop: the
// backend's factory runs at every turn, and a probe is a bwrap run (10 to
// 50 ms), a plan some 230 system calls (0.2 to 0.4 ms). What they need of
// the layer is taken on the JS thread (`Layer::sandbox`). The WebAssembly
// build has only the sync ones: it runs no threads, and refuses at once.

/// `f` on a thread-pool thread, where a panic would abort the gateway: a
/// rejected promise instead.
#[cfg(not(target_os = "wasi"))]
fn off_loop<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(Error::from_reason(
            "claw-identity sandbox: internal error (a panic while planning)",
        ))
    })
}

#[cfg(not(target_os = "wasi"))]
pub struct SandboxProbeTask(claw_identity_core::sandbox::Context);

#[cfg(not(target_os = "wasi"))]
#[napi]
impl Task for SandboxProbeTask {
    type Output = claw_identity_core::sandbox::Probe;
    type JsValue = SandboxStatus;

    fn compute(&mut self) -> Result<Self::Output> {
        off_loop(|| Ok(self.0.probe()))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(sandbox_status(output))
    }
}

/// `sandboxProbeSync` on the libuv thread pool: a promise of `{ ok, bwrap, reason, fix }`.
#[cfg(not(target_os = "wasi"))]
#[napi(catch_unwind)]
pub fn sandbox_probe(env: Env) -> Result<AsyncTask<SandboxProbeTask>> {
    Ok(AsyncTask::new(SandboxProbeTask(
        sandboxed_layer(&env)?.layer.sandbox(),
    )))
}

#[cfg(not(target_os = "wasi"))]
pub struct SandboxSpawnTask {
    sandbox: claw_identity_core::sandbox::Context,
    request: claw_identity_core::sandbox::Request,
}

#[cfg(not(target_os = "wasi"))]
#[napi]
impl Task for SandboxSpawnTask {
    type Output = SandboxSpawn;
    type JsValue = SandboxSpawn;

    fn compute(&mut self) -> Result<Self::Output> {
        off_loop(|| sandbox_spawned(self.sandbox.spawn(&self.request)))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// `sandboxSpawnSync` on the libuv thread pool: a promise of
/// `{ argv, env, pty }`, rejected with why and what to do where it can't run.
#[cfg(not(target_os = "wasi"))]
#[napi(catch_unwind)]
pub fn sandbox_spawn(env: Env, request: serde_json::Value) -> Result<AsyncTask<SandboxSpawnTask>> {
    Ok(AsyncTask::new(SandboxSpawnTask {
        request: sandbox_request(request)?,
        sandbox: sandboxed_layer(&env)?.layer.sandbox(),
    }))
}

/// Where a workspace shows in the sandbox: its real path.
#[napi(catch_unwind)]
pub fn sandbox_workdir(workspace_dir: String) -> Result<String> {
    claw_identity_core::sys::canonicalize(std::path::Path::new(&workspace_dir))
        .map(|p| p.display().to_string())
        .map_err(|e| {
            Error::from_reason(format!(
                "claw-identity: sandbox workspace {workspace_dir}: {e}"
            ))
        })
}

/// The host PIDs whose environment holds `marker` (`NAME=value`).
#[napi(catch_unwind)]
pub fn sandbox_processes(marker: String) -> Vec<u32> {
    claw_identity_core::sandbox::processes_with(&marker)
}
