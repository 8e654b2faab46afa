//! The N-API surface of claw-identity, and nothing else: every decision is
//! made by the pure modules below, which `cargo test` covers without Node.

#![deny(clippy::all)]

pub mod engine;
mod layer;
pub mod log;
pub mod options;
pub mod redact;
pub mod rules;
pub mod token_map;
pub mod watcher;

pub use layer::{Layer, Stats};

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::Arc;

use parking_lot::RwLock;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{sys, Status};
use napi_derive::napi;

use crate::log::{Level, Log};
use crate::options::Options;
use crate::rules::{Params, ToolCall, Verdict};

/// The JS logger callback: `(level, line) => void`. Weak, so a live layer
/// never keeps Node running; bounded, so a stalled event loop drops lines
/// instead of growing a queue.
type LogFn = ThreadsafeFunction<
    FnArgs<(&'static str, String)>,
    (),
    FnArgs<(&'static str, String)>,
    Status,
    false,
    true,
    1024,
>;

thread_local! {
    /// Set by `JsThreadLog::enter` while `decide` runs on this (JS) thread.
    static JS_LOG: Cell<Option<(sys::napi_env, sys::napi_value)>> = const { Cell::new(None) };
}

/// While `decide` runs, the lines the layer logs (the per-call line) go
/// straight to the log function it was given, on the JS thread, instead of
/// through the threadsafe function: that path costs a queue push, a wake-up
/// of the event loop (an eventfd write per call) and a second native-to-JS
/// call, about 1 µs a line here, more than the rest of the call (measured,
/// see BENCHMARKS.md). Lines from the watcher thread still take the
/// threadsafe function. Only the deciding layer logs during its `decide`, so
/// its lines reach its own logger.
struct JsThreadLog(Option<(sys::napi_env, sys::napi_value)>);

impl JsThreadLog {
    /// # Safety
    /// `env` and `log` must be valid for the current callback, and the guard
    /// dropped before it returns. A `log` that is not a function leaves lines
    /// on the threadsafe function.
    unsafe fn enter(env: sys::napi_env, log: sys::napi_value) -> JsThreadLog {
        let mut t = sys::ValueType::napi_undefined;
        let f = (!log.is_null()
            && sys::napi_typeof(env, log, &mut t) == sys::Status::napi_ok
            && t == sys::ValueType::napi_function)
            .then_some((env, log));
        JsThreadLog(JS_LOG.with(|c| c.replace(f)))
    }

    /// Delivers `line` if a `decide` on this thread set a log function.
    fn write(level: Level, line: &str) -> Option<bool> {
        let (env, f) = JS_LOG.with(Cell::get)?;
        // SAFETY: set by `enter` for the duration of a callback on this thread.
        Some(unsafe { call_log(env, f, level, line) })
    }
}

impl Drop for JsThreadLog {
    fn drop(&mut self) {
        JS_LOG.with(|c| c.set(self.0));
    }
}

/// A JS string from Rust text; ASCII is valid Latin-1, which V8 takes without decoding.
unsafe fn js_string(env: sys::napi_env, s: &str) -> Option<sys::napi_value> {
    let mut out = std::ptr::null_mut();
    let st = if s.is_ascii() {
        sys::napi_create_string_latin1(env, s.as_ptr().cast(), s.len() as isize, &mut out)
    } else {
        sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out)
    };
    (st == sys::Status::napi_ok).then_some(out)
}

/// Calls `log(level, line)`. False (counted as a dropped line) if that threw:
/// the JS half's log function catches logger errors, so that is unexpected,
/// and the exception is cleared so it cannot fail the tool call.
unsafe fn call_log(env: sys::napi_env, f: sys::napi_value, level: Level, line: &str) -> bool {
    let (Some(lvl), Some(text)) = (js_string(env, level.as_str()), js_string(env, line)) else {
        return false;
    };
    let mut recv = std::ptr::null_mut();
    let mut result = std::ptr::null_mut();
    let args = [lvl, text];
    if sys::napi_get_undefined(env, &mut recv) == sys::Status::napi_ok
        && sys::napi_call_function(env, recv, f, 2, args.as_ptr(), &mut result)
            == sys::Status::napi_ok
    {
        return true;
    }
    let mut pending = false;
    if sys::napi_is_exception_pending(env, &mut pending) == sys::Status::napi_ok && pending {
        let mut e = std::ptr::null_mut();
        sys::napi_get_and_clear_last_exception(env, &mut e);
    }
    false
}

/// Live layers by handle. The hot-path function takes a handle rather than
/// being a class method: a napi-rs method call costs about 400 ns more than
/// a plain function here (measured), which is most of our budget.
static LAYERS: RwLock<Vec<Option<Arc<Layer>>>> = RwLock::new(Vec::new());

/// The native half of `IdentityLayer` (see index.js for the JS half).
#[napi]
pub struct NativeLayer {
    handle: u32,
    layer: Arc<Layer>,
}

#[napi(object)]
pub struct NativeInterest {
    /// Tool-name prefixes whose calls carry a token.
    pub prefixes: Vec<String>,
    /// Exact tool names whose params some rule reads.
    pub tools: Vec<String>,
    /// Param names of the compact rewrite form (see `decide`).
    pub slots: Vec<String>,
}

#[napi(object)]
pub struct NativeStats {
    pub agents: u32,
    pub loaded: bool,
    pub reloads: i64,
    pub reload_errors: i64,
    pub last_error: Option<String>,
    pub stale: bool,
    pub injected: i64,
    pub passed: i64,
    pub missing: i64,
    pub blocked: i64,
    pub rewritten: i64,
    pub log_dropped: i64,
    pub watcher: String,
    pub token_map_path: String,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, format!("claw-identity: {}", msg.into()))
}

#[napi]
impl NativeLayer {
    /// `options_json`: the options minus `logger`, as JSON.
    /// `log`: called as `log(level, line)` on the JS thread; `log_info`:
    /// whether it wants info lines (false skips formatting them at all).
    #[napi(constructor)]
    pub fn new(
        options_json: String,
        log: Option<Function<'_, FnArgs<(&'static str, String)>, ()>>,
        log_info: Option<bool>,
    ) -> Result<Self> {
        let opts = Options::from_json(&options_json).map_err(invalid)?;
        // Lines logged while the layer starts (on this thread) go straight to
        // `log`, like a decision's, so they stay ahead of the first call's.
        let _log_here = log.as_ref().map(|f| {
            let v = f.value();
            // SAFETY: `f` is an argument of this callback; the guard drops before it returns.
            unsafe { JsThreadLog::enter(v.env, v.value) }
        });
        let log = match log {
            None => Log::silent(),
            Some(f) => {
                let tsfn: LogFn = f
                    .build_threadsafe_function::<FnArgs<(&'static str, String)>>()
                    .weak::<true>()
                    .callee_handled::<false>()
                    .max_queue_size::<1024>()
                    .build()?;
                let write = move |level: Level, line: String| {
                    if let Some(delivered) = JsThreadLog::write(level, &line) {
                        return delivered;
                    }
                    tsfn.call(
                        FnArgs::from((level.as_str(), line)),
                        ThreadsafeFunctionCallMode::NonBlocking,
                    ) == Status::Ok
                };
                Log::new(Some(Box::new(write)), log_info.unwrap_or(true))
            }
        };
        let layer = Arc::new(Layer::new(opts, log).map_err(|e| {
            Error::from_reason(format!("claw-identity: cannot start the map watcher: {e}"))
        })?);
        let mut layers = LAYERS.write();
        let handle = match layers.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                layers.push(None);
                layers.len() - 1
            }
        };
        layers[handle] = Some(layer.clone());
        Ok(NativeLayer {
            handle: handle as u32,
            layer,
        })
    }

    /// The handle to pass to `decide`.
    #[napi(getter)]
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// Which calls the JS side must forward to `decide`.
    #[napi]
    pub fn interest(&self) -> NativeInterest {
        let i = self.layer.engine().interest().clone();
        NativeInterest {
            prefixes: i.prefixes,
            tools: i.tools,
            slots: i.slots,
        }
    }

    #[napi]
    pub fn stats(&self) -> NativeStats {
        let s = self.layer.stats();
        NativeStats {
            agents: s.agents,
            loaded: s.loaded,
            reloads: s.reloads as i64,
            reload_errors: s.reload_errors as i64,
            last_error: s.last_error,
            stale: s.stale,
            injected: s.injected as i64,
            passed: s.passed as i64,
            missing: s.missing as i64,
            blocked: s.blocked as i64,
            rewritten: s.rewritten as i64,
            log_dropped: s.log_dropped as i64,
            watcher: s.watcher.to_owned(),
            token_map_path: s.token_map_path,
        }
    }

    /// Stops the watcher; the map in force stays in force.
    #[napi]
    pub fn close(&self) {
        self.layer.close();
    }

    /// Records who spawned the sub-agent session `child` (`spawner` absent
    /// or empty: nobody recorded), as a `{ lineage }` decision asked.
    #[napi]
    pub fn note_spawn(&self, child: String, spawner: Option<String>) {
        self.layer.engine().note_spawn(&child, spawner.as_deref());
    }
}

impl Drop for NativeLayer {
    fn drop(&mut self) {
        if let Some(slot) = LAYERS.write().get_mut(self.handle as usize) {
            *slot = None;
        }
    }
}

#[napi(module_exports)]
pub fn init(mut exports: Object, env: Env) -> Result<()> {
    let mut f = std::ptr::null_mut();
    let name = "decide";
    // SAFETY: plain N-API call with a valid env and a static callback.
    let status = unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            Some(decide_raw),
            std::ptr::null_mut(),
            &mut f,
        )
    };
    if status != sys::Status::napi_ok {
        return Err(Error::from_reason("claw-identity: cannot create decide()"));
    }
    // SAFETY: `f` is a function value just created in this env.
    exports.set("decide", unsafe {
        Unknown::from_raw_unchecked(env.raw(), f)
    })
}

/// Reads a JS string without allocating when it fits on the stack.
/// Returns None for anything that is not a string.
struct JsStr {
    stack: [MaybeUninit<u8>; 512],
    heap: Vec<u8>,
}

impl JsStr {
    fn new() -> Self {
        // Uninitialised: zeroing four of these cost about 5% of a call (measured).
        JsStr {
            stack: [MaybeUninit::uninit(); 512],
            heap: Vec::new(),
        }
    }

    /// # Safety
    /// `env` and `value` must be valid for the current callback.
    unsafe fn read(&mut self, env: sys::napi_env, value: sys::napi_value) -> Option<&str> {
        if value.is_null() {
            return None;
        }
        // Tool names, agent ids and session keys are short ASCII. V8 copies a
        // string out as UTF-16 with a plain widening loop, while its UTF-8
        // writer was the largest single cost of a call (measured): read
        // UTF-16, and narrow it when every unit is ASCII (then it is UTF-8).
        let mut wide = [MaybeUninit::<u16>::uninit(); 128];
        let mut n = 0usize;
        if sys::napi_get_value_string_utf16(
            env,
            value,
            wide.as_mut_ptr().cast(),
            wide.len(),
            &mut n,
        ) != sys::Status::napi_ok
        {
            return None; // not a string
        }
        // Room left for the terminating NUL: the string was not cut.
        if n + 1 < wide.len() {
            // SAFETY: V8 wrote `n` units.
            let units = std::slice::from_raw_parts(wide.as_ptr().cast::<u16>(), n);
            // A fold rather than `all`: no early exit, so it vectorizes.
            if units.iter().fold(0, |acc, &u| acc | u) < 0x80 {
                for (dst, &u) in self.stack.iter_mut().zip(units) {
                    dst.write(u as u8);
                }
                // SAFETY: `n` bytes were just written, all ASCII, which is UTF-8.
                let bytes = std::slice::from_raw_parts(self.stack.as_ptr().cast::<u8>(), n);
                return Some(std::str::from_utf8_unchecked(bytes));
            }
        }
        self.read_utf8(env, value)
    }

    /// Any string: N-API's UTF-8 (lone surrogates become U+FFFD).
    unsafe fn read_utf8(&mut self, env: sys::napi_env, value: sys::napi_value) -> Option<&str> {
        let mut written = 0usize;
        if sys::napi_get_value_string_utf8(
            env,
            value,
            self.stack.as_mut_ptr().cast(),
            self.stack.len(),
            &mut written,
        ) != sys::Status::napi_ok
        {
            return None;
        }
        // V8 writes whole characters only: with room for one more (4-byte)
        // character left over, the string was not cut.
        let bytes = if written + 1 + 4 <= self.stack.len() {
            // SAFETY: V8 wrote `written` bytes.
            std::slice::from_raw_parts(self.stack.as_ptr().cast::<u8>(), written)
        } else {
            let mut len = 0usize;
            if sys::napi_get_value_string_utf8(env, value, std::ptr::null_mut(), 0, &mut len)
                != sys::Status::napi_ok
            {
                return None;
            }
            self.heap = vec![0u8; len + 1];
            if sys::napi_get_value_string_utf8(
                env,
                value,
                self.heap.as_mut_ptr().cast(),
                len + 1,
                &mut written,
            ) != sys::Status::napi_ok
            {
                return None;
            }
            &self.heap[..written]
        };
        std::str::from_utf8(bytes).ok()
    }
}

/// `decide(handle, tool, agentId, sessionKey, paramsJson, quiet, log)`, a raw
/// N-API callback because this is the hot path (every owned tool call).
///
/// Returns `undefined` to pass. A rewrite that sets only the layer's
/// `interest().slots` to non-empty strings (the common case: the token and
/// the conversation id) comes back as one string, the slot values joined by
/// NUL in slot order with an empty value for a slot left alone: building a
/// JS object through N-API costs about 1 µs here (measured), a string about
/// 50 ns. Anything else is an object (see `decision_object`): `{ patch }`,
/// `{ block }` or `{ approval, patch? }`, with `ensureSession` when a session
/// must exist before the call runs, or `{ lineage }` when the decision needs
/// a sub-agent's spawner first.
/// `paramsJson` is given only for tools listed in `interest().tools`;
/// `quiet` decides without logging or counting; `log`, the function the
/// layer was built with, takes the lines logged during the call (see
/// `JsThreadLog`).
unsafe extern "C" fn decide_raw(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    match decide_args(env, info) {
        Ok(v) => v,
        Err(msg) => {
            let msg = std::ffi::CString::new(msg).unwrap_or_default();
            sys::napi_throw_error(env, std::ptr::null(), msg.as_ptr());
            std::ptr::null_mut()
        }
    }
}

unsafe fn decide_args(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> std::result::Result<sys::napi_value, String> {
    let mut argc = 7usize;
    let mut argv = [std::ptr::null_mut(); 7];
    if sys::napi_get_cb_info(
        env,
        info,
        &mut argc,
        argv.as_mut_ptr(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    ) != sys::Status::napi_ok
    {
        return Err("claw-identity: decide(): cannot read arguments".into());
    }
    let mut handle = 0u32;
    if argc < 2 || sys::napi_get_value_uint32(env, argv[0], &mut handle) != sys::Status::napi_ok {
        return Err("claw-identity: decide(handle, tool, ...) needs a layer handle".into());
    }
    let (mut tool_buf, mut agent_buf, mut session_buf, mut params_buf) =
        (JsStr::new(), JsStr::new(), JsStr::new(), JsStr::new());
    let Some(tool) = tool_buf.read(env, argv[1]) else {
        return Err("claw-identity: decide(): tool must be a string".into());
    };
    let agent_id = agent_buf.read(env, argv[2]);
    let session_key = session_buf.read(env, argv[3]);
    let params: Params = match params_buf.read_utf8(env, argv[4]) {
        Some(json) => match serde_json::from_str(json) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => Params::new(),
        },
        None => Params::new(),
    };
    let mut quiet = false;
    if argc > 5 {
        let _ = sys::napi_get_value_bool(env, argv[5], &mut quiet);
    }
    // A clone, so the registry is not locked while a logger runs (it may call in again).
    let Some(Some(layer)) = LAYERS.read().get(handle as usize).cloned() else {
        return Err("claw-identity: decide(): unknown layer handle".into());
    };
    let _log_here = JsThreadLog::enter(
        env,
        if argc > 6 {
            argv[6]
        } else {
            std::ptr::null_mut()
        },
    );
    let call = ToolCall {
        tool,
        agent_id,
        session_key,
        params: &params,
    };
    let slots = &layer.engine().interest().slots;
    let to_js = |d: &engine::Decision<'_>| decision_to_js(env, d, slots);
    if quiet {
        layer.explain(&call, to_js)
    } else {
        layer.decide(&call, to_js)
    }
}

/// The compact form of a rewrite (see `decide_raw`), when it has one.
fn slot_patch(patch: &[(String, serde_json::Value)], slots: &[String]) -> Option<String> {
    let mut values: [Option<&str>; 8] = [None; 8];
    if slots.len() > values.len() {
        return None;
    }
    for (key, value) in patch {
        let serde_json::Value::String(v) = value else {
            return None;
        };
        let i = slots.iter().position(|s| s == key)?;
        if v.is_empty() || v.contains('\0') {
            return None;
        }
        values[i] = Some(v);
    }
    let mut out = String::with_capacity(80 * slots.len());
    for (i, v) in values[..slots.len()].iter().enumerate() {
        if i > 0 {
            out.push('\0');
        }
        out.push_str(v.unwrap_or(""));
    }
    Some(out)
}

unsafe fn decision_to_js(
    env: sys::napi_env,
    d: &engine::Decision<'_>,
    slots: &[String],
) -> std::result::Result<sys::napi_value, String> {
    let verdict = &d.verdict;
    let mut out = std::ptr::null_mut();
    let plain = d.need_lineage.is_none() && d.ensure_session.is_none();
    if let (Verdict::Pass, true) = (verdict, plain) {
        sys::napi_get_undefined(env, &mut out);
        return Ok(out);
    }
    if let (Verdict::Rewrite(patch), true) = (verdict, plain) {
        if let Some(s) = slot_patch(patch, slots) {
            // ASCII (always, for hex tokens) is valid Latin-1, which V8 takes without decoding.
            let st = if s.is_ascii() {
                sys::napi_create_string_latin1(env, s.as_ptr().cast(), s.len() as isize, &mut out)
            } else {
                sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out)
            };
            if st != sys::Status::napi_ok {
                return Err("claw-identity: cannot create the result string".into());
            }
            return Ok(out);
        }
    }
    let env = Env::from_raw(env);
    decision_object(&env, d).map_err(|e| format!("claw-identity: cannot build the decision: {e}"))
}

fn patch_object(env: &Env, patch: &[(String, serde_json::Value)]) -> Result<Object<'static>> {
    let mut p = Object::new(env)?;
    for (key, value) in patch {
        p.set(key, value.clone())?;
    }
    Ok(p)
}

fn session_object(env: &Env, s: &engine::SessionRef) -> Result<Object<'static>> {
    let mut o = Object::new(env)?;
    o.set("agentId", s.agent_id.as_str())?;
    o.set("sessionKey", s.session_key.as_str())?;
    Ok(o)
}

/// `{ patch }`, `{ block }`, `{ approval, patch? }`, each with an optional
/// `ensureSession: { agentId, sessionKey, failureReason }`; or
/// `{ lineage: { agentId, sessionKey } }` when the decision needs the
/// spawner of that sub-agent session first (see `noteSpawn`).
fn decision_object(env: &Env, d: &engine::Decision<'_>) -> Result<sys::napi_value> {
    let mut out = Object::new(env)?;
    if let Some(need) = &d.need_lineage {
        out.set("lineage", session_object(env, need)?)?;
        // SAFETY: `out` belongs to `env`, which is live for this callback.
        return unsafe { Object::to_napi_value(env.raw(), out) };
    }
    match &d.verdict {
        Verdict::Pass => {}
        Verdict::Rewrite(patch) => out.set("patch", patch_object(env, patch)?)?,
        Verdict::Block(reason) => out.set("block", reason.as_str())?,
        Verdict::RequireApproval { title, description } => {
            // OpenClaw's requireApproval shape. Per call only: a standing
            // cross-user permission belongs in config grants, not in an
            // "allow-always" click.
            let mut a = Object::new(env)?;
            a.set("title", title.as_str())?;
            a.set("description", description.as_str())?;
            a.set("severity", "warning")?;
            a.set("allowedDecisions", vec!["allow-once", "deny"])?;
            out.set("approval", a)?;
            if !d.approval_patch.is_empty() {
                out.set("patch", patch_object(env, &d.approval_patch)?)?;
            }
        }
    }
    if let Some(e) = &d.ensure_session {
        let mut o = session_object(env, &e.session)?;
        o.set("failureReason", e.failure_reason.as_str())?;
        out.set("ensureSession", o)?;
    }
    // SAFETY: `out` belongs to `env`, which is live for this callback.
    unsafe { Object::to_napi_value(env.raw(), out) }
}

/// Does nothing: the cost floor of a native call, for the benchmark.
#[napi]
pub fn noop() {}

/// The first 12 hex digits of the sha256 of `secret`: how tokens are shown.
#[napi]
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
