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

#[cfg(target_os = "wasi")]
use claw_identity_core::sys;
use claw_identity_core::{engine, log, ops, redact, rules, Layer};

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
use claw_identity_core::engine::Decision;
use claw_identity_core::log::Level;
use claw_identity_core::options::Options;
use claw_identity_core::rules::{Params, ToolCall, Verdict};

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
    /// The property names every call reads, as internalized JS strings: a
    /// name given as C text is looked up in V8's string table on every read
    /// (about a quarter of a call, measured).
    keys: Keys,
    /// `bridge/copy.js`, compiled in this layer's env.
    copy: FunctionRef<Js, Js>,
    logger: JsLogger,
    pending: bridge::host::Pending,
    sessions: RefCell<Option<JsSessions>>,
    applied: RefCell<Applied>,
    warned_untrusted: Cell<bool>,
}

/// The property names `Keys` holds, by index.
#[derive(Clone, Copy)]
enum Prop {
    Tool = 0,
    Params = 1,
    Agent = 2,
    Session = 3,
    CallId = 4,
}

/// A JS array of the property names every call reads, kept alive by a
/// reference (a string itself can't be referenced in Node-API 8).
struct Keys {
    env: napi::sys::napi_env,
    array: napi::sys::napi_ref,
}

impl Keys {
    fn new(env: &Env) -> Result<Keys> {
        let array: Js =
            env.run_script(r#"["toolName", "params", "agentId", "sessionKey", "toolCallId"]"#)?;
        let mut r = std::ptr::null_mut();
        // SAFETY: a plain N-API call on a live array of this env.
        let status = unsafe { napi::sys::napi_create_reference(env.raw(), array.raw(), 1, &mut r) };
        if status != napi::sys::Status::napi_ok {
            return Err(Error::from_reason(
                "claw-identity: cannot keep the property names",
            ));
        }
        Ok(Keys {
            env: env.raw(),
            array: r,
        })
    }

    fn get(&self, env: &Env) -> Result<Js> {
        let mut v = std::ptr::null_mut();
        // SAFETY: the reference is live until `drop`.
        let status = unsafe { napi::sys::napi_get_reference_value(env.raw(), self.array, &mut v) };
        if status != napi::sys::Status::napi_ok || v.is_null() {
            return Err(Error::from_reason(
                "claw-identity: the property names are gone",
            ));
        }
        // SAFETY: `v` is a live value of this env.
        Ok(unsafe { Js::from_raw(env.raw(), v) })
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        // A layer is dropped on its JS thread (by a finalizer or the env's
        // teardown), where its env is still valid.
        // SAFETY: the reference was made in `env` and is deleted once.
        unsafe { napi::sys::napi_delete_reference(self.env, self.array) };
    }
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
    match claw_identity_core::sys::env_var("OPENCLAW_STATE_DIR").filter(|d| !d.is_empty()) {
        Some(d) => d.into(),
        None => home.unwrap_or(std::path::Path::new("/")).join(".openclaw"),
    }
}

/// Options as the layer resolves them (defaults filled in, `~` expanded),
/// so that the same settings, written out or left to their defaults, are
/// one layer: OpenClaw's config snapshots differ there.
fn options_key(options: &JsOptions) -> Result<String> {
    let opts = Options::from_json(&options.json).map_err(invalid)?;
    Ok(format!("{opts:?}"))
}

impl Inner {
    fn new(env: &Env, options: &JsOptions) -> Result<Rc<Inner>> {
        let opts = Options::from_json(&options.json).map_err(invalid)?;
        let (logger, log, pending) = JsLogger::new(env, options.logger)?;
        let sessions = options
            .sessions
            .map(|s| JsSessions::new(env, s))
            .transpose()?;
        let layer = Layer::load(opts, log);
        watch(&layer)?;
        let copy = env
            .run_script::<_, Function<Js, Js>>(copy_source(&layer.engine().interest().slots))?
            .create_ref()?;
        let keys = Keys::new(env)?;
        let inner = Rc::new(Inner {
            layer,
            keys,
            copy,
            logger,
            pending,
            sessions: RefCell::new(sessions),
            applied: RefCell::default(),
            warned_untrusted: Cell::new(false),
        });
        inner.apply_openclaw_config(options.openclaw_config)?;
        #[cfg(target_os = "wasi")]
        start_poll_timer(env, &inner)?;
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
            let home = claw_identity_core::sys::env_var("HOME")
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
        self.pending.hold();
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
        let keys = self.keys.get(env)?;
        let key = |k: Prop| keys.get_index(k as u32);
        let tool = match event.get_by(key(Prop::Tool)?)? {
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
        let ctx_str = |name: Prop| -> Result<Option<String>> {
            match ctx.get_by(key(name)?)? {
                Some(v) => v.host_str(),
                None => Ok(None),
            }
        };
        let agent_id = ctx_str(Prop::Agent)?;
        let session_key = ctx_str(Prop::Session)?;

        let raw_params = event.get_key(key(Prop::Params)?)?;
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
            match event.get_key(key(Prop::CallId)?)?.host_str()? {
                Some(id) => Some(id),
                None => ctx_str(Prop::CallId)?,
            }
        };
        // Only the plugin's two tiers note and check decisions: no hash for `Plain`.
        let key =
            (mode != Mode::Plain).then(|| self.applied.borrow().key(&call, call_id.as_deref()));
        if let (Mode::SafetyNet, Some(key)) = (mode, key) {
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
                if let (Mode::Policy, Some(key)) = (mode, key) {
                    if !matches!(d.verdict, Verdict::Block(_)) {
                        let expected = expected_after(d, &params, fields);
                        self.applied.borrow_mut().note(key, expected);
                    }
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
            Verdict::Pass => self.params_result(env, params, &[], &clear),
            Verdict::Rewrite(patch) => self.params_result(env, params, patch, &clear),
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

    /// `{ params }`: a copy of `params` with `set` defined and `clear` set to
    /// `undefined` (OpenClaw spreads hook params over the original, so an
    /// absent key would let the model's value back in).
    fn params_result(
        &self,
        env: &Env,
        params: Option<Js>,
        set: &[(String, Value)],
        clear: &[String],
    ) -> Result<Js> {
        let raw = env.raw();
        let n = set.len() + clear.len();
        if n > 3 {
            return params_result(env, copy_with(raw, params, set, clear)?);
        }
        let undefined = Js::undefined(raw)?;
        let mut pairs: Vec<(&str, Js)> = Vec::with_capacity(n);
        for (k, v) in set {
            pairs.push((k, Js::json(raw, v)?));
        }
        for k in clear {
            pairs.push((k, undefined));
        }
        // The layer's slots (the token, the conversation id), in slot order,
        // take the copy's constant-key cases.
        let slots = &self.layer.engine().interest().slots;
        let slot = |i: usize| {
            slots
                .get(i)
                .map(String::as_str)
                .filter(|s| *s != "__proto__")
        };
        let value = |name: Option<&str>| {
            pairs
                .iter()
                .find(|(k, _)| Some(*k) == name)
                .map(|(_, v)| *v)
        };
        let (t, c) = (value(slot(0)), value(slot(1)));
        let fast = match (t, c) {
            (Some(t), None) if n == 1 => Some((-1.0, t, undefined)),
            (None, Some(c)) if n == 1 => Some((-2.0, c, undefined)),
            (Some(t), Some(c)) if n == 2 => Some((-3.0, t, c)),
            _ => None,
        };
        let args = match fast {
            Some((case, a, b)) => vec![
                params.unwrap_or(undefined),
                Js::from_f64(raw, case)?,
                undefined,
                a,
                undefined,
                b,
            ],
            None => {
                let mut args = vec![params.unwrap_or(undefined), Js::from_f64(raw, n as f64)?];
                for (k, v) in pairs {
                    args.push(Js::string(raw, k)?);
                    args.push(v);
                }
                args
            }
        };
        let f = self.copy.borrow_back(env)?;
        // SAFETY: a live function of this env.
        let f = unsafe { Js::from_raw(raw, Function::to_napi_value(raw, f)?) };
        f.call(undefined, &args).map_err(Error::from_reason)
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

/// `bridge/copy.js` with the slot names as JS string literals. A slot named
/// `__proto__` would set the prototype as a literal key: it is written as a
/// key no call has (its rewrites then take the computed-key cases).
fn copy_source(slots: &[String]) -> String {
    let literal = |i: usize| match slots.get(i) {
        Some(s) if s != "__proto__" => serde_json::to_string(s).unwrap_or_default(),
        _ => "\"\\u0000claw-identity-unused\"".to_owned(),
    };
    include_str!("bridge/copy.js")
        .replace("TOKEN:", &format!("{}:", literal(0)))
        .replace("CONVERSATION:", &format!("{}:", literal(1)))
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

    /// Starts the watcher again after `close`, reading the map first.
    /// Idempotent. Throws if it can't be started.
    #[napi(catch_unwind)]
    pub fn watch(&self, #[allow(unused_variables)] env: Env) -> Result<()> {
        watch(&self.inner.layer)?;
        #[cfg(target_os = "wasi")]
        start_poll_timer(&env, &self.inner)?;
        Ok(())
    }
}

/// The WebAssembly build's watcher (watcher/poll.rs): an unref'd JS timer
/// that ticks the layer's watcher on the JS thread. It stops itself once
/// that watcher is closed or replaced, or the layer is gone.
#[cfg(target_os = "wasi")]
fn start_poll_timer(env: &Env, inner: &Rc<Inner>) -> Result<()> {
    let Some(generation) = inner.layer.watching() else {
        return Ok(());
    };
    let global = global(env)?;
    let weak = Rc::downgrade(inner);
    let tick: Function<(), ()> =
        env.create_function_from_closure("clawIdentityPoll", move |ctx| {
            let ticked = weak
                .upgrade()
                .is_some_and(|inner| inner.layer.poll(generation));
            if !ticked {
                // Node calls a timer's callback with the timer as `this`.
                let timer: Js = ctx.this()?;
                let clear = global_of(timer)?.get_unchecked(c"clearInterval")?;
                clear.call(timer, &[timer]).map_err(Error::from_reason)?;
            }
            Ok(())
        })?;
    // SAFETY: a live function of this env.
    let tick = unsafe { Js::from_raw(env.raw(), ToNapiValue::to_napi_value(env.raw(), tick)?) };
    let every = Js::from_f64(env.raw(), inner.layer.poll_every().as_millis() as f64)?;
    let timer = global
        .get_unchecked(c"setInterval")?
        .call(global, &[tick, every])
        .map_err(Error::from_reason)?;
    // A watching layer never keeps Node running, as on the native build.
    timer
        .get_unchecked(c"unref")?
        .call(timer, &[])
        .map_err(Error::from_reason)?;
    Ok(())
}

#[cfg(target_os = "wasi")]
fn global(env: &Env) -> Result<Js> {
    // SAFETY: `get_global` returns a live value of this env.
    Ok(unsafe {
        Js::from_raw(
            env.raw(),
            napi::JsGlobal::to_napi_value(env.raw(), env.get_global()?)?,
        )
    })
}

#[cfg(target_os = "wasi")]
fn global_of(v: Js) -> Result<Js> {
    global(&Env::from_raw(v.env()))
}

fn watch(layer: &Layer) -> Result<()> {
    layer.watch().map_err(|e| {
        Error::from_reason(format!("claw-identity: cannot start the map watcher: {e}"))
    })
}

/// Per JS thread (each worker has its own): the layer `configure` made.
#[derive(Default)]
struct ThreadState {
    shared: RefCell<Option<(String, Reference<IdentityLayer>)>>,
}

impl ThreadState {
    /// The layer in force, configured with defaults on first use.
    fn layer(&self, env: &Env) -> Result<Rc<Inner>> {
        if self.shared.borrow().is_none() {
            configure(*env, None)?;
        }
        let shared = self.shared.borrow();
        let (_, layer) = shared
            .as_ref()
            .ok_or_else(|| Error::from_reason("claw-identity: not configured"))?;
        Ok(layer.inner.clone())
    }
}

fn thread_state(env: &Env) -> Result<&'static ThreadState> {
    if env.get_instance_data::<ThreadState>()?.is_none() {
        env.set_instance_data(ThreadState::default(), (), |_| {})?;
    }
    env.get_instance_data::<ThreadState>()?
        .map(|s| &*s)
        .ok_or_else(|| Error::from_reason("claw-identity: no per-thread state"))
}

/// Configures this thread's process-wide layer. Idempotent: the same options
/// keep the same layer (and its watcher); different options replace it, and
/// every registration of the plugin then reaches the new one.
#[napi(catch_unwind, ts_return_type = "IdentityLayer")]
pub fn configure(env: Env, options: Option<Js>) -> Result<Reference<IdentityLayer>> {
    let options = js_options(options)?;
    let key = options_key(&options)?;
    let state = thread_state(&env)?;
    if let Some((in_force, layer)) = &*state.shared.borrow() {
        if *in_force == key {
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
    let old = state.shared.borrow_mut().replace((key, next.clone(env)?));
    if let Some((_, old)) = old {
        old.inner.layer.close();
    }
    Ok(next)
}

/// `beforeToolCall(event, ctx)` and `safetyNet(event, ctx)` of the module:
/// the plugin's trusted policy and its ordinary hook, on every tool call of
/// every agent. Raw N-API callbacks, with this thread's state as their data:
/// a `#[napi]` function costs about 80-100 ns more per call here, and these
/// are the budgeted paths (BENCHMARKS.md).
unsafe extern "C" fn raw_before_tool_call(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
) -> napi::sys::napi_value {
    raw_hook(env, info, Mode::Policy)
}

unsafe extern "C" fn raw_safety_net(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
) -> napi::sys::napi_value {
    raw_hook(env, info, Mode::SafetyNet)
}

/// # Safety
/// Called by N-API only, with the `ThreadState` the function was made with.
unsafe fn raw_hook(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
    mode: Mode,
) -> napi::sys::napi_value {
    use napi::sys;
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<Js> {
        let (mut argc, mut argv, mut data) =
            (2usize, [std::ptr::null_mut(); 2], std::ptr::null_mut());
        // SAFETY: `info` is this callback's; N-API fills missing args with undefined.
        let status = unsafe {
            sys::napi_get_cb_info(
                env,
                info,
                &mut argc,
                argv.as_mut_ptr(),
                std::ptr::null_mut(),
                &mut data,
            )
        };
        if status != sys::Status::napi_ok || data.is_null() {
            return Err(Error::from_reason(
                "claw-identity: cannot read the hook's arguments",
            ));
        }
        // SAFETY: `data` is the thread's `ThreadState`, which lives as long as the env.
        let state = unsafe { &*(data as *const ThreadState) };
        let env = Env::from_raw(env);
        // SAFETY: the arguments are live for this callback.
        let (event, ctx) = unsafe {
            (
                Js::from_raw(env.raw(), argv[0]),
                Js::from_raw(env.raw(), argv[1]),
            )
        };
        state.layer(&env)?.before_tool_call(&env, event, ctx, mode)
    }));
    let msg = match r {
        Ok(Ok(v)) => return v.raw(),
        Ok(Err(e)) => e.reason,
        Err(_) => "a panic".to_owned(),
    };
    // Only when not even the fail-closed answer could be built: OpenClaw
    // blocks a call whose hook throws.
    let msg = std::ffi::CString::new(format!("claw-identity: {}", redact::scrub(&msg)))
        .unwrap_or_default();
    // SAFETY: plain N-API call on this callback's env.
    unsafe { sys::napi_throw_error(env, std::ptr::null(), msg.as_ptr()) };
    std::ptr::null_mut()
}

/// A raw function for `exports[name]`, with `state` as its data.
fn raw_function(
    env: &Env,
    name: &str,
    cb: unsafe extern "C" fn(
        napi::sys::napi_env,
        napi::sys::napi_callback_info,
    ) -> napi::sys::napi_value,
    state: &'static ThreadState,
) -> Result<Js> {
    let mut f = std::ptr::null_mut();
    // SAFETY: a plain N-API call; `state` outlives every call of the function.
    let status = unsafe {
        napi::sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            Some(cb),
            state as *const ThreadState as *mut std::ffi::c_void,
            &mut f,
        )
    };
    if status != napi::sys::Status::napi_ok {
        return Err(Error::from_reason(format!(
            "claw-identity: cannot create {name}()"
        )));
    }
    // SAFETY: `f` is a function just created in this env.
    Ok(unsafe { Js::from_raw(env.raw(), f) })
}

fn shared(env: &Env) -> Result<Rc<Inner>> {
    thread_state(env)?.layer(env)
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
    Ok(match &*thread_state(&env)?.shared.borrow() {
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
    Ok(match &*thread_state(&env)?.shared.borrow() {
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
pub fn init(mut exports: Object, env: Env) -> Result<()> {
    if std::env::var_os("CLAW_IDENTITY_PANIC_TEST").is_some_and(|v| v == "1") {
        PANIC_TEST.store(true, Ordering::Relaxed);
    }
    #[cfg(target_os = "wasi")]
    {
        let fs = bridge::host_fs::NodeFs::new(&env)?;
        bridge::host_fs::chdir_to_host_cwd(&fs);
        sys::set_host(Box::new(fs));
    }
    let state = thread_state(&env)?;
    exports.set(
        "beforeToolCall",
        raw_function(&env, "beforeToolCall", raw_before_tool_call, state)?,
    )?;
    exports.set(
        "safetyNet",
        raw_function(&env, "safetyNet", raw_safety_net, state)?,
    )?;
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
