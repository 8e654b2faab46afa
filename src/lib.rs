//! The N-API surface of claw-identity, and nothing else: every decision is
//! made by the pure modules below, which `cargo test` covers without Node.
//!
//! - `IdentityLayer`: one layer (its own map, watcher and counters), with
//!   `beforeToolCall(event, ctx)` returning OpenClaw's hook result.
//! - `configure`, `beforeToolCall`, `stats`: the same on one layer per JS
//!   thread, which the plugin wires to OpenClaw; every registration reaches
//!   the layer in force, never one a later `configure` closed.
//! - `safetyNet`: the plugin's ordinary hook, behind the trusted policy.

#![deny(clippy::all)]

mod bridge;
pub mod engine;
mod layer;
pub mod log;
pub mod options;
pub mod redact;
pub mod rules;
pub mod token_map;
pub mod watcher;

pub use layer::{Layer, Stats};

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use crate::bridge::host::{JsLogger, JsSessions};
use crate::bridge::js::{Js, Kind};
use crate::bridge::params::{copy_with, exact, present, read_fields, Unreadable};
use crate::engine::Decision;
use crate::log::Level;
use crate::options::Options;
use crate::rules::{Params, ToolCall, Verdict};

/// Sub-agent lineage look-ups allowed for one call: more means a broken store.
const MAX_LINEAGE_LOOKUPS: usize = 16;
/// Calls the trusted tier decided that the safety net has not seen yet.
const MAX_APPLIED: usize = 1024;

/// Shown when a call could not be decided (an error or a panic): it does not run.
const UNDECIDED: &str = "claw-identity could not decide this call, so it was not run; do not retry it. The operator will find the error in the gateway log.";

/// Set from the environment at load: makes a call to the tool `__panic__`
/// panic inside the decision, so a test can show that a panic fails closed.
/// No model can set a gateway's environment.
static PANIC_TEST: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `IdentityLayer.beforeToolCall`: decide.
    Plain,
    /// The trusted policy: decide, and note the result for the safety net.
    Policy,
    /// The ordinary hook: pass a call the policy already decided, as it left it.
    SafetyNet,
}

/// What the trusted tier left a call as: per param, the value it must hold
/// (`None`: absent or `undefined`). Keyed by a keyed hash of the agent, the
/// session, the tool call id and the tool: the host gives the first two, so
/// another agent's call with the same (model-chosen) id never matches, and
/// the values themselves are compared, so nothing vouches for a call that
/// does not hold exactly what was decided.
#[derive(Default)]
struct Applied {
    hasher: std::collections::hash_map::RandomState,
    calls: HashMap<u64, Vec<(String, Option<Value>)>>,
    order: VecDeque<u64>,
}

impl Applied {
    fn key(&self, call: &ToolCall<'_>, call_id: Option<&str>) -> u64 {
        self.hasher
            .hash_one((call.agent_id, call.session_key, call_id, call.tool))
    }

    fn note(&mut self, key: u64, expected: Vec<(String, Option<Value>)>) {
        if self.calls.insert(key, expected).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > MAX_APPLIED {
            if let Some(old) = self.order.pop_front() {
                self.calls.remove(&old);
            }
        }
    }

    fn take(&mut self, key: u64) -> Option<Vec<(String, Option<Value>)>> {
        let e = self.calls.remove(&key)?;
        self.order.retain(|k| *k != key);
        Some(e)
    }
}

/// The JS-facing half of one layer: the core `Layer`, and what it calls back.
struct Inner {
    layer: Layer,
    logger: JsLogger,
    pending: bridge::host::Pending,
    sessions: RefCell<Option<JsSessions>>,
    applied: RefCell<Applied>,
    warned_untrusted: Cell<bool>,
}

/// The options object split into what Rust parses and the JS objects the
/// layer calls back.
struct JsOptions {
    json: String,
    logger: Option<Js>,
    sessions: Option<Js>,
    /// OpenClaw's config (`api.config`): agents' workspaces and sandboxes.
    openclaw_config: Option<Js>,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, format!("claw-identity: {}", msg.into()))
}

fn js_options(options: Option<Js>) -> Result<JsOptions> {
    let mut rest = serde_json::Map::new();
    let (mut logger, mut sessions, mut openclaw_config) = (None, None, None);
    if let Some(o) = options {
        match o.kind()? {
            Kind::Undefined => {}
            Kind::Object => {
                for key in o.own_keys(false)? {
                    let name = key.host_str()?.unwrap_or_default();
                    let v = o.get_key(key)?;
                    if v.kind()? == Kind::Undefined {
                        continue;
                    }
                    match name.as_str() {
                        "logger" => logger = Some(v),
                        "sessions" => sessions = Some(v),
                        "openclawConfig" => openclaw_config = Some(v),
                        _ => match exact(v, 0)? {
                            Ok(Some(v)) => {
                                rest.insert(name, v);
                            }
                            Ok(None) => {}
                            Err(why) => {
                                return Err(invalid(format!(
                                    "options.{} holds {why}",
                                    redact::shown(&name)
                                )))
                            }
                        },
                    }
                }
            }
            _ => return Err(invalid("options must be an object")),
        }
    }
    Ok(JsOptions {
        json: Value::Object(rest).to_string(),
        logger,
        sessions,
        openclaw_config,
    })
}

/// Where OpenClaw keeps its state: `OPENCLAW_STATE_DIR`, else `~/.openclaw`.
fn openclaw_state_dir(home: Option<&std::path::Path>) -> std::path::PathBuf {
    match std::env::var_os("OPENCLAW_STATE_DIR").filter(|d| !d.is_empty()) {
        Some(d) => d.into(),
        None => home.unwrap_or(std::path::Path::new("/")).join(".openclaw"),
    }
}

impl Inner {
    fn new(env: &Env, options: &JsOptions) -> Result<Rc<Inner>> {
        let opts = Options::from_json(&options.json).map_err(invalid)?;
        let (logger, log, pending) = JsLogger::new(env, options.logger)?;
        let sessions = options
            .sessions
            .map(|s| JsSessions::new(env, s))
            .transpose()?;
        let layer = Layer::new(opts, log).map_err(|e| {
            Error::from_reason(format!("claw-identity: cannot start the map watcher: {e}"))
        })?;
        let inner = Rc::new(Inner {
            layer,
            logger,
            pending,
            sessions: RefCell::new(sessions),
            applied: RefCell::default(),
            warned_untrusted: Cell::new(false),
        });
        inner.apply_openclaw_config(options.openclaw_config)?;
        // The load line and any map warning, before the first call's line.
        inner.logger.flush(env, &inner.pending);
        Ok(inner)
    }

    /// Tells `map-access` each agent's workspace and sandbox, from OpenClaw's config.
    fn apply_openclaw_config(&self, config: Option<Js>) -> Result<()> {
        let Some(config) = config else { return Ok(()) };
        let value = match exact(config, 0)? {
            Ok(Some(v)) => v,
            _ => {
                self.layer.log().warn(format_args!(
                    "cannot read OpenClaw's config, so relative paths are checked without the agents' workspaces (map-access refuses those that name the map)"
                ));
                return Ok(());
            }
        };
        if let Some(cfg) = ops::config::OpenClawConfig::from_value(value) {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(std::path::PathBuf::from);
            let table = cfg.agent_fs(&openclaw_state_dir(home.as_deref()), home.as_deref());
            self.layer.engine().set_agent_fs(table);
        }
        Ok(())
    }

    /// The whole decision for one call, in OpenClaw's hook result shape.
    /// Never throws: an error or a panic while deciding fails closed.
    fn before_tool_call(self: &Rc<Self>, env: &Env, event: Js, ctx: Js, mode: Mode) -> Result<Js> {
        // Lines logged while deciding (by this thread or the watcher's) go
        // out on this thread, in order, before the call returns.
        self.pending.lock().get_or_insert_with(Vec::new);
        let mut tool = None;
        let r = catch_unwind(AssertUnwindSafe(|| {
            self.decide(env, event, ctx, mode, &mut tool)
        }));
        let out = match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => self.failed(env, tool.as_deref(), &e.reason),
            Err(_) => self.failed(env, tool.as_deref(), "a panic"),
        };
        self.logger.flush(env, &self.pending);
        out
    }

    fn failed(&self, env: &Env, tool: Option<&str>, why: &str) -> Result<Js> {
        self.layer.note_internal_error();
        self.layer.log().error(format_args!(
            "internal error deciding tool={}: {}",
            redact::shown(tool.unwrap_or("<none>")),
            redact::scrub(why)
        ));
        // Every call a rule concerns fails closed: passing it would skip a
        // guard, or send the model's own auth_token.
        match tool {
            Some(t)
                if self
                    .layer
                    .engine()
                    .options()
                    .tool_prefixes
                    .iter()
                    .any(|p| t.starts_with(p.as_str())) =>
            {
                block_result(env, &format!("{}: {UNDECIDED}", rules::auth_token::RULE_ID))
            }
            Some(_) => block_result(env, &format!("{}: {UNDECIDED}", engine::UNREADABLE_RULE_ID)),
            None => Js::undefined(env.raw()),
        }
    }

    fn decide(
        self: &Rc<Self>,
        env: &Env,
        event: Js,
        ctx: Js,
        mode: Mode,
        seen: &mut Option<String>,
    ) -> Result<Js> {
        let raw = env.raw();
        let engine = self.layer.engine();
        let tool = match event.get(c"toolName")? {
            Some(t) => t.host_str()?,
            None => None,
        };
        let Some(tool) = tool.filter(|t| engine.concerns(t)) else {
            self.layer.note_unowned();
            return Js::undefined(raw);
        };
        *seen = Some(tool.clone());
        if PANIC_TEST.load(Ordering::Relaxed) && tool == "__panic__" {
            panic!("the panic test tool");
        }
        let ctx_str = |name: &std::ffi::CStr| -> Result<Option<String>> {
            match ctx.get(name)? {
                Some(v) => v.host_str(),
                None => Ok(None),
            }
        };
        let agent_id = ctx_str(c"agentId")?;
        let session_key = ctx_str(c"sessionKey")?;

        let raw_params = event.get_unchecked(c"params")?;
        let (params_obj, not_object) = match raw_params.kind()? {
            Kind::Object => (Some(raw_params), false),
            Kind::Undefined | Kind::Null => (None, false),
            _ => (None, true),
        };
        let fields = engine.param_fields(&tool);
        let read = if not_object && !fields.is_empty() {
            Err(Unreadable {
                field: "(params)",
                why: "not an object",
            })
        } else {
            read_fields(params_obj, fields, engine.quoted_fields(&tool))?
        };
        let empty = Params::new();
        let mut call = ToolCall {
            tool: &tool,
            agent_id: agent_id.as_deref(),
            session_key: session_key.as_deref(),
            params: &empty,
        };
        let params = match read {
            Ok(p) => p,
            Err(u) => {
                let d = engine.unreadable(&call, u.field, u.why);
                self.layer.account(&call, &d);
                return self.result(env, &d, params_obj);
            }
        };
        call.params = &params;

        let call_id = if mode == Mode::Plain {
            None
        } else {
            match event.get_unchecked(c"toolCallId")?.host_str()? {
                Some(id) => Some(id),
                None => ctx_str(c"toolCallId")?,
            }
        };
        let key = self.applied.borrow().key(&call, call_id.as_deref());
        if mode == Mode::SafetyNet {
            let expected = self.applied.borrow_mut().take(key);
            if let Some(expected) = expected {
                if holds(params_obj, &expected)? {
                    return Js::undefined(raw);
                }
            }
            if !self.warned_untrusted.replace(true) {
                self.layer.log().error(format_args!(
                    "the trusted tool-policy tier did not run for this call, so identity is enforced only by the ordinary before_tool_call hook: another plugin's hook at a lower priority can undo the rewrite and approvals may freeze the model's params. Declare contracts.trustedToolPolicies and enable the plugin explicitly (openclaw plugins install <tgz> --force --accept-capabilities)."
                ));
            }
        }

        for _ in 0..=MAX_LINEAGE_LOOKUPS {
            let step = self.layer.decide(&call, |d| -> Result<Option<Js>> {
                if let Some(need) = &d.need_lineage {
                    let spawner = match &*self.sessions.borrow() {
                        Some(s) => s
                            .spawner_of(env, &need.agent_id, &need.session_key)
                            .unwrap_or_else(|e| {
                                self.layer.log().warn(format_args!(
                                    "cannot read the spawner of a sub-agent session: {}",
                                    redact::scrub(&e)
                                ));
                                None
                            }),
                        None => None,
                    };
                    engine.note_spawn(&need.session_key, spawner.as_deref());
                    return Ok(None);
                }
                if mode == Mode::Policy && !matches!(d.verdict, Verdict::Block(_)) {
                    let expected = expected_after(d, &params, fields);
                    self.applied.borrow_mut().note(key, expected);
                }
                self.with_session(env, d, self.result(env, d, params_obj)?)
                    .map(Some)
            })?;
            if let Some(v) = step {
                return Ok(v);
            }
        }
        Err(Error::from_reason("sub-agent lineage does not resolve"))
    }

    /// The hook result for a decision.
    fn result(&self, env: &Env, d: &Decision<'_>, params: Option<Js>) -> Result<Js> {
        let raw = env.raw();
        // Only a param the call holds needs taking out.
        let clear = present(raw, params, &d.clear)?;
        match &d.verdict {
            Verdict::Pass if clear.is_empty() => Js::undefined(raw),
            Verdict::Pass => params_result(env, copy_with(raw, params, &[], &clear)?),
            Verdict::Rewrite(patch) => params_result(env, copy_with(raw, params, patch, &clear)?),
            Verdict::Block(reason) => block_result(env, reason),
            Verdict::RequireApproval { title, description } => {
                // OpenClaw's requireApproval shape. Per call only: a standing
                // cross-user permission belongs in config grants, not in an
                // "allow-always" click.
                let a = Js::object(raw)?;
                let decisions = Js::json(raw, &serde_json::json!(["allow-once", "deny"]))?;
                a.define(&[
                    (Js::string(raw, "title")?, Js::string(raw, title)?),
                    (
                        Js::string(raw, "description")?,
                        Js::string(raw, description)?,
                    ),
                    (Js::string(raw, "severity")?, Js::string(raw, "warning")?),
                    (Js::string(raw, "allowedDecisions")?, decisions),
                ])?;
                let out = Js::object(raw)?;
                out.define(&[(Js::string(raw, "requireApproval")?, a)])?;
                if !d.approval_patch.is_empty() {
                    let p = copy_with(raw, params, &d.approval_patch, &[])?;
                    out.define(&[(Js::string(raw, "params")?, p)])?;
                }
                Ok(out)
            }
        }
    }

    /// A delegation session must exist before the send runs: returns a
    /// promise of `result` once the store created it, or of a block if it
    /// could not.
    fn with_session(self: &Rc<Self>, env: &Env, d: &Decision<'_>, result: Js) -> Result<Js> {
        let (Some(e), Some(sessions)) = (&d.ensure_session, &*self.sessions.borrow()) else {
            return Ok(result);
        };
        let raw = env.raw();
        let blocked = block_result(env, &e.failure_reason)?;
        let agent = e.session.agent_id.clone();
        let failed = move |why: &str| {
            format!(
                "cannot create delegation session agent={}: {}",
                redact::shown(&agent),
                redact::scrub(why)
            )
        };
        let started = match sessions.ensure(env, &e.session.agent_id, &e.session.session_key) {
            Ok(p) => p,
            Err(why) => {
                self.logger.write(
                    env,
                    Level::Warn,
                    &format!("{}{}", log::PREFIX, failed(&why)),
                );
                return Ok(blocked);
            }
        };
        if !started.is_promise()? {
            return Ok(result);
        }
        let ok = env
            .create_function_from_closure::<Js, Js, _>("claw_identity_session_created", |cx| {
                cx.get::<Js>(0)
            })?;
        let me = self.clone();
        let err = env.create_function_from_closure::<Js, Js, _>(
            "claw_identity_session_failed",
            move |cx| {
                let why = cx
                    .get::<Js>(1)
                    .ok()
                    .and_then(|e| e.get(c"message").ok().flatten())
                    .and_then(|m| m.host_str().ok().flatten());
                me.logger.write(
                    cx.env,
                    Level::Warn,
                    &format!(
                        "{}{}",
                        log::PREFIX,
                        failed(why.as_deref().unwrap_or("it failed"))
                    ),
                );
                cx.get::<Js>(0)
            },
        )?;
        // SAFETY: both functions are live values of this env.
        let (ok, err) = unsafe {
            (
                Js::from_raw(raw, Function::to_napi_value(raw, ok)?),
                Js::from_raw(raw, Function::to_napi_value(raw, err)?),
            )
        };
        let then = started.get_unchecked(c"then")?;
        then.call(
            started,
            &[ok.bind_args(&[result])?, err.bind_args(&[blocked])?],
        )
        .map_err(|e| Error::from_reason(format!("cannot wait for the session: {e}")))
    }

    fn attach_sessions(&self, env: &Env, store: Js) -> Result<()> {
        *self.sessions.borrow_mut() = Some(JsSessions::new(env, store)?);
        Ok(())
    }

    fn stats(&self) -> NativeStats {
        let s = self.layer.stats();
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
            watcher: s.watcher.to_owned(),
            token_map_path: s.token_map_path,
        }
    }
}

/// What the params must hold after the decision `d`: its rewrite, its
/// cleared params, and every other field the rules read, unchanged.
fn expected_after(
    d: &Decision<'_>,
    params: &Params,
    fields: &[&str],
) -> Vec<(String, Option<Value>)> {
    let patch: &[(String, Value)] = match &d.verdict {
        Verdict::Rewrite(p) => p,
        Verdict::RequireApproval { .. } => &d.approval_patch,
        _ => &[],
    };
    let mut out: Vec<(String, Option<Value>)> = patch
        .iter()
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect();
    out.extend(d.clear.iter().map(|k| (k.clone(), None)));
    for f in fields {
        if !out.iter().any(|(k, _)| k == f) {
            out.push(((*f).to_owned(), params.get(*f).cloned()));
        }
    }
    out
}

/// Whether `params` holds exactly `expected`.
fn holds(params: Option<Js>, expected: &[(String, Option<Value>)]) -> Result<bool> {
    for (k, want) in expected {
        let have = match params {
            Some(p) => match exact(p.get_str_key(k)?, 0)? {
                Ok(v) => v,
                Err(_) => return Ok(false),
            },
            None => None,
        };
        if &have != want {
            return Ok(false);
        }
    }
    Ok(true)
}

fn params_result(env: &Env, params: Js) -> Result<Js> {
    let raw = env.raw();
    let out = Js::object(raw)?;
    out.define(&[(Js::string(raw, "params")?, params)])?;
    Ok(out)
}

fn block_result(env: &Env, reason: &str) -> Result<Js> {
    let raw = env.raw();
    let out = Js::object(raw)?;
    out.define(&[
        (Js::string(raw, "block")?, Js::boolean(raw, true)?),
        (Js::string(raw, "blockReason")?, Js::string(raw, reason)?),
    ])?;
    Ok(out)
}

/// One identity layer: its own map, watcher and counters.
#[napi]
pub struct IdentityLayer {
    inner: Rc<Inner>,
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
    pub watcher: String,
    pub token_map_path: String,
}

#[napi]
impl IdentityLayer {
    /// Loads the map, starts its watcher. Throws on invalid options, naming them.
    #[napi(constructor, catch_unwind)]
    pub fn new(env: Env, options: Option<Js>) -> Result<Self> {
        let options = js_options(options)?;
        Ok(IdentityLayer {
            inner: Inner::new(&env, &options)?,
        })
    }

    /// The decision for one tool call, in OpenClaw's hook result shape:
    /// `undefined`, `{ params }`, `{ block, blockReason }` or
    /// `{ requireApproval, params? }` (a promise of one of these when a
    /// delegation session must be created first). Never throws.
    #[napi(
        catch_unwind,
        ts_args_type = "event: ToolCallEvent, ctx?: ToolCallContext"
    )]
    pub fn before_tool_call(&self, env: Env, event: Js, ctx: Js) -> Result<Js> {
        self.inner.before_tool_call(&env, event, ctx, Mode::Plain)
    }

    /// Counters and map state; never holds a token.
    #[napi(catch_unwind)]
    pub fn stats(&self) -> NativeStats {
        self.inner.stats()
    }

    /// Stops the watcher. The map in force stays in force. Idempotent.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.inner.layer.close();
    }
}

/// Per JS thread (each worker has its own): the layer `configure` made.
#[derive(Default)]
struct ThreadState {
    shared: Option<(String, Reference<IdentityLayer>)>,
}

fn thread_state(env: &Env) -> Result<&'static mut ThreadState> {
    if env.get_instance_data::<ThreadState>()?.is_none() {
        env.set_instance_data(ThreadState::default(), (), |_| {})?;
    }
    env.get_instance_data::<ThreadState>()?
        .ok_or_else(|| Error::from_reason("claw-identity: no per-thread state"))
}

/// Configures this thread's process-wide layer. Idempotent: the same options
/// keep the same layer (and its watcher); different options replace it, and
/// every registration of the plugin then reaches the new one.
#[napi(catch_unwind, ts_return_type = "IdentityLayer")]
pub fn configure(env: Env, options: Option<Js>) -> Result<Reference<IdentityLayer>> {
    let options = js_options(options)?;
    let state = thread_state(&env)?;
    if let Some((key, layer)) = &state.shared {
        if *key == options.json {
            if let Some(store) = options.sessions {
                layer.inner.attach_sessions(&env, store)?;
            }
            layer.inner.apply_openclaw_config(options.openclaw_config)?;
            return layer.clone(env);
        }
    }
    let next = IdentityLayer {
        inner: Inner::new(&env, &options)?,
    };
    let next = IdentityLayer::into_reference(next, env)?;
    if let Some((_, old)) = state.shared.replace((options.json, next.clone(env)?)) {
        old.inner.layer.close();
    }
    Ok(next)
}

fn shared(env: &Env) -> Result<Rc<Inner>> {
    let state = thread_state(env)?;
    if state.shared.is_none() {
        configure(*env, None)?;
    }
    let (_, layer) = thread_state(env)?
        .shared
        .as_ref()
        .ok_or_else(|| Error::from_reason("claw-identity: not configured"))?;
    Ok(layer.inner.clone())
}

/// `beforeToolCall` of this thread's process-wide layer (configured with
/// defaults if `configure` was never called). This is the plugin's trusted
/// tool policy.
#[napi(
    catch_unwind,
    ts_args_type = "event: ToolCallEvent, ctx?: ToolCallContext"
)]
pub fn before_tool_call(env: Env, event: Js, ctx: Js) -> Result<Js> {
    shared(&env)?.before_tool_call(&env, event, ctx, Mode::Policy)
}

/// The plugin's ordinary `before_tool_call` hook: passes a call the trusted
/// policy already decided when the call holds exactly what it decided, and
/// decides (and warns once) otherwise.
#[napi(
    catch_unwind,
    ts_args_type = "event: ToolCallEvent, ctx?: ToolCallContext"
)]
pub fn safety_net(env: Env, event: Js, ctx: Js) -> Result<Js> {
    shared(&env)?.before_tool_call(&env, event, ctx, Mode::SafetyNet)
}

/// The plugin's tool-result middleware: `{ result }` with every token of the
/// map in force (and of the previous map, shortly after a rotation) replaced
/// by `sha256:<fingerprint>` in every string of `event.result`, or
/// `undefined` when it holds none. Throws only if the result can't be walked,
/// and OpenClaw then replaces it with an error: no token gets through.
#[napi(catch_unwind, ts_args_type = "event: { result?: unknown }")]
pub fn redact_tool_result(env: Env, event: Js) -> Result<Js> {
    let raw = env.raw();
    let r = shared(&env)?.layer.redactor();
    let Some(result) = event.get(c"result")? else {
        return Js::undefined(raw);
    };
    match bridge::params::redact(raw, result, &r, 0)? {
        None => Js::undefined(raw),
        Some(clean) => {
            let out = Js::object(raw)?;
            out.define(&[(Js::string(raw, "result")?, clean)])?;
            Ok(out)
        }
    }
}

/// Stats of the process-wide layer, or `undefined` before `configure`.
#[napi(catch_unwind)]
pub fn stats(env: Env) -> Result<Either<NativeStats, ()>> {
    Ok(match thread_state(&env)?.shared.as_ref() {
        Some((_, l)) => Either::A(l.inner.stats()),
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
    Ok(match thread_state(&env)?.shared.as_ref() {
        Some((_, l)) => Either::A(
            l.inner
                .layer
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
pub fn init(_exports: Object) -> Result<()> {
    if std::env::var_os("CLAW_IDENTITY_PANIC_TEST").is_some_and(|v| v == "1") {
        PANIC_TEST.store(true, Ordering::Relaxed);
    }
    Ok(())
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
// `claw-identity doctor`, `explain` and the atomic map writer, for
// bin/claw-identity.js and the `writeTokenMap` export of index.js. The work
// is done in `ops` (pure Rust); these wrappers only convert.

pub mod ops;

/// A report of `doctor` or `explain`: the verdict, the text for a terminal,
/// and the same report as JSON (for `--json`).
#[napi(object)]
pub struct OpsReport {
    /// doctor: nothing found stops token injection; explain: the call runs,
    /// with its agent's token when it needs one.
    pub ok: bool,
    pub text: String,
    pub json: String,
}

fn ops_report<T: serde::Serialize>(ok: bool, text: String, report: &T) -> Result<OpsReport> {
    let json = serde_json::to_string(report)
        .map_err(|e| Error::from_reason(format!("claw-identity: cannot encode the report: {e}")))?;
    Ok(OpsReport { ok, text, json })
}

/// `claw-identity doctor [--map PATH] [--config openclaw.json]`.
#[napi]
pub fn ops_doctor(map: Option<String>, config: Option<String>) -> Result<OpsReport> {
    let config = config.map(std::path::PathBuf::from);
    let r = ops::doctor::run(&ops::doctor::DoctorArgs {
        map: map.as_deref(),
        config: config.as_deref(),
    })
    .map_err(invalid)?;
    ops_report(r.ok, r.render(), &r)
}

/// `openclaw security audit`'s findings for the gateway config at `config`,
/// as a JSON array of `{checkId, severity, title, detail, remediation?}`.
#[napi]
pub fn ops_audit(config: String) -> Result<String> {
    serde_json::to_string(&ops::audit::run(std::path::Path::new(&config)))
        .map_err(|e| Error::from_reason(format!("claw-identity: cannot encode the findings: {e}")))
}

#[napi(object)]
pub struct OpsExplainArgs {
    pub map: Option<String>,
    pub config: Option<String>,
    pub agent: Option<String>,
    pub tool: String,
    pub session_key: Option<String>,
    /// The call's params as a JSON object.
    pub params_json: Option<String>,
}

/// `claw-identity explain --agent A --tool T [--params JSON]`.
#[napi]
pub fn ops_explain(args: OpsExplainArgs) -> Result<OpsReport> {
    let params: Params = match args.params_json.as_deref() {
        None => Params::new(),
        Some(json) => match serde_json::from_str(json) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => return Err(invalid("params must be a JSON object")),
        },
    };
    let config = args.config.map(std::path::PathBuf::from);
    let e = ops::explain::run(&ops::explain::ExplainArgs {
        map: args.map.as_deref(),
        config: config.as_deref(),
        agent: args.agent.as_deref(),
        tool: &args.tool,
        session_key: args.session_key.as_deref(),
        params: &params,
    })
    .map_err(|e| Error::from_reason(format!("claw-identity: cannot explain: {e}")))?;
    ops_report(e.ok, e.render(), &e)
}

/// The map path the plugin reads: `map` if given, else the config's
/// `tokenMapPath`, else the default; `~` expanded as the plugin does.
#[napi]
pub fn ops_map_path(map: Option<String>, config: Option<String>) -> Result<String> {
    let config = config
        .map(|c| ops::config::OpenClawConfig::load(std::path::Path::new(&c)))
        .transpose()
        .map_err(invalid)?;
    let opts = ops::config::plugin_options(config.as_ref(), map.as_deref()).map_err(invalid)?;
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
    ops::writer::write_map(std::path::Path::new(&path), &json)
        .map(written)
        .map_err(write_error)
}

pub struct WriteMapTask {
    path: std::path::PathBuf,
    json: Vec<u8>,
}

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
#[napi]
pub fn ops_write_map(path: String, json: Buffer) -> AsyncTask<WriteMapTask> {
    AsyncTask::new(WriteMapTask {
        path: path.into(),
        json: json.to_vec(),
    })
}
