//! The functions OpenClaw calls on every tool call of every agent: the
//! module's `beforeToolCall(event, ctx)` and, per registration of the plugin,
//! the trusted policy and the ordinary hook (`tiers()`). They are raw N-API
//! callbacks with their state as callback data: a `#[napi]` function costs
//! about 80-100 ns more per call here, and these are the budgeted paths
//! (BENCHMARKS.md). The layer they decide on is this JS thread's, the one
//! `configure` made.
//!
//! Why the ordinary hook decides only when the policy did not run
//! (docs/design.md): OpenClaw 2026.9.6 runs trusted policies on every path
//! that runs ordinary hooks, before them, but drops a plugin's policy at
//! registration when the plugin is not explicitly enabled, while its hooks
//! still register. So the hook of a registration passes at once once that
//! registration's policy has run, and decides in full otherwise.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi::sys;

use super::js::Js;
use super::layer::{JsLayer, JsOptions};
use crate::IdentityLayer;
use claw_identity_core::redact;
use claw_identity_core::redact::results::Hits;

/// Per JS thread (each worker has its own): the layer `configure` made.
#[derive(Default)]
pub struct ThreadState {
    shared: RefCell<Option<(String, Reference<IdentityLayer>)>>,
}

impl ThreadState {
    pub fn of(env: &Env) -> Result<&'static ThreadState> {
        if env.get_instance_data::<ThreadState>()?.is_none() {
            env.set_instance_data(ThreadState::default(), (), |_| {})?;
        }
        env.get_instance_data::<ThreadState>()?
            .map(|s| &*s)
            .ok_or_else(|| Error::from_reason("claw-identity: no per-thread state"))
    }

    /// The layer in force, if `configure` made one.
    pub fn current(&self) -> Option<Rc<JsLayer>> {
        self.shared.borrow().as_ref().map(|(_, l)| l.js().clone())
    }

    /// The layer in force, configured with defaults on first use.
    pub fn layer(&self, env: &Env) -> Result<Rc<JsLayer>> {
        if let Some(l) = self.current() {
            return Ok(l);
        }
        configure(env, None)?;
        self.current()
            .ok_or_else(|| Error::from_reason("claw-identity: not configured"))
    }
}

/// Options as the layer resolves them (defaults filled in, `~` expanded),
/// so that the same settings, written out or left to their defaults, are
/// one layer: OpenClaw's config snapshots differ there.
fn options_key(options: &JsOptions<'_>) -> Result<String> {
    Ok(format!("{:?}", options.options()?))
}

pub fn configure(env: &Env, options: Option<Js<'_>>) -> Result<Reference<IdentityLayer>> {
    let options = JsOptions::read(options)?;
    let key = options_key(&options)?;
    let state = ThreadState::of(env)?;
    if let Some((in_force, layer)) = &*state.shared.borrow() {
        if *in_force == key {
            if let Some(store) = options.sessions {
                layer.js().attach_sessions(env, store)?;
            }
            layer.js().use_openclaw_config(&options)?;
            return layer.clone(*env);
        }
    }
    let previous = state.current();
    let inner = JsLayer::new(env, &options, previous.as_ref().map(|p| &p.layer))?;
    #[cfg(target_os = "wasi")]
    super::poll::start(env, &inner)?;
    let next = IdentityLayer::into_reference(IdentityLayer::from_js(inner.clone()), *env)?;
    // SAFETY: a reference of this env, read back within this callback.
    let object = unsafe {
        Js::from_raw(
            env.raw(),
            ToNapiValue::to_napi_value(env.raw(), next.clone(*env)?)?,
        )
    };
    install_hook(env, object, &inner)?;
    let old = state.shared.borrow_mut().replace((key, next.clone(*env)?));
    if let Some((_, old)) = old {
        old.js().layer.close();
    }
    Ok(next)
}

/// Which function of a registration a callback is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tier {
    /// The module's `beforeToolCall`, or an `IdentityLayer`'s: decides.
    Module,
    /// The trusted policy: decides, and notes that it ran.
    Policy,
    /// The ordinary hook: decides only where its policy never ran.
    Net,
}

/// The layer a callback decides on.
enum Source {
    /// The one `configure` made for this JS thread, whichever is in force.
    Thread(&'static ThreadState),
    /// One `IdentityLayer`'s own.
    Layer(Rc<JsLayer>),
}

/// A callback's data: which function it is, its layer, and its
/// registration's state.
struct TierData {
    tier: Tier,
    source: Source,
    /// Shared by one registration's policy and hook.
    policy_ran: Rc<Cell<bool>>,
    warned: Rc<Cell<bool>>,
}

unsafe extern "C" fn tier_callback(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (mut argc, mut argv, mut data) = (2usize, [std::ptr::null_mut(); 2], std::ptr::null_mut());
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
        return throw(env, "cannot read the hook's arguments");
    }
    // SAFETY: `data` is the `TierData` this function was made with (`make`),
    // freed only by the function's finalizer.
    let data = unsafe { &*(data as *const TierData) };
    let env = Env::from_raw(env);
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<sys::napi_value> {
        match data.tier {
            Tier::Policy => data.policy_ran.set(true),
            Tier::Net if data.policy_ran.get() => {
                // The trusted tier decided this call already: `undefined`.
                return Ok(std::ptr::null_mut());
            }
            Tier::Net | Tier::Module => {}
        }
        let thread;
        let layer = match &data.source {
            Source::Layer(l) => l,
            Source::Thread(state) => {
                thread = state.layer(&env)?;
                &thread
            }
        };
        if data.tier == Tier::Net && !data.warned.replace(true) {
            claw_identity_core::log_error!(
                layer.layer.log(),
                "the trusted tool-policy tier did not run for this call, so identity is enforced only by the ordinary before_tool_call hook: another plugin's hook at a lower priority can undo the rewrite and approvals may freeze the model's params. Declare contracts.trustedToolPolicies and enable the plugin explicitly (openclaw plugins install <tgz> --force --accept-capabilities)."
            );
        }
        // SAFETY: the arguments are live for this callback.
        let (event, ctx) = unsafe {
            (
                Js::from_raw(env.raw(), argv[0]),
                Js::from_raw(env.raw(), argv[1]),
            )
        };
        // No value is `undefined` to the caller, as N-API defines it.
        Ok(layer
            .hook(&env, event, ctx)?
            .map_or(std::ptr::null_mut(), |v| v.raw()))
    }));
    match r {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => throw(env.raw(), &e.reason),
        Err(_) => throw(env.raw(), "a panic"),
    }
}

/// Only when not even the fail-closed answer could be built: OpenClaw
/// blocks a call whose hook throws.
fn throw(env: sys::napi_env, why: &str) -> sys::napi_value {
    let msg = std::ffi::CString::new(format!("claw-identity: {}", redact::scrub(why)))
        .unwrap_or_default();
    // SAFETY: a plain N-API call on this callback's env.
    unsafe { sys::napi_throw_error(env, std::ptr::null(), msg.as_ptr()) };
    std::ptr::null_mut()
}

unsafe extern "C" fn free_tier_data(
    _env: sys::napi_env,
    data: *mut std::ffi::c_void,
    _hint: *mut std::ffi::c_void,
) {
    // SAFETY: `data` is the `Box<TierData>` `make` leaked for this function;
    // its finalizer runs once.
    drop(unsafe { Box::from_raw(data as *mut TierData) });
}

/// A raw function `name` with `data`, which the function's finalizer frees.
fn make<'e>(env: &'e Env, name: &str, data: TierData) -> Result<Js<'e>> {
    let data = Box::into_raw(Box::new(data));
    let mut f = std::ptr::null_mut();
    // SAFETY: a plain N-API call; `data` lives until the finalizer below.
    let status = unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            Some(tier_callback),
            data.cast(),
            &mut f,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: never handed to N-API.
        drop(unsafe { Box::from_raw(data) });
        return Err(Error::from_reason(format!(
            "claw-identity: cannot create {name}()"
        )));
    }
    // SAFETY: `f` is a live function of this env; the finalizer owns `data`.
    let status = unsafe {
        sys::napi_add_finalizer(
            env.raw(),
            f,
            data.cast(),
            Some(free_tier_data),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok {
        return Err(Error::from_reason(format!(
            "claw-identity: cannot create {name}()"
        )));
    }
    // SAFETY: `f` was just made in this env.
    Ok(unsafe { Js::from_raw(env.raw(), f) })
}

fn data(
    env: &Env,
    tier: Tier,
    policy_ran: &Rc<Cell<bool>>,
    warned: &Rc<Cell<bool>>,
) -> Result<TierData> {
    Ok(TierData {
        tier,
        source: Source::Thread(ThreadState::of(env)?),
        policy_ran: policy_ran.clone(),
        warned: warned.clone(),
    })
}

/// The module's `beforeToolCall(event, ctx)`.
pub fn module_hook(env: &Env) -> Result<Js<'_>> {
    let (ran, warned) = Default::default();
    make(
        env,
        "beforeToolCall",
        data(env, Tier::Module, &ran, &warned)?,
    )
}

/// Gives an `IdentityLayer` object its `beforeToolCall(event, ctx)`: an own
/// property (read-only, not enumerable), the raw callback on `layer`. A
/// `#[napi]` method would pay napi-rs's borrow tracking, about 300 ns a
/// call here (BENCHMARKS.md).
pub fn install_hook(env: &Env, object: Js<'_>, layer: &Rc<JsLayer>) -> Result<()> {
    let (ran, warned): (Rc<Cell<bool>>, Rc<Cell<bool>>) = Default::default();
    let hook = make(
        env,
        "beforeToolCall",
        TierData {
            tier: Tier::Module,
            source: Source::Layer(layer.clone()),
            policy_ran: ran,
            warned,
        },
    )?;
    object.define_fixed(Js::string(env.raw(), "beforeToolCall")?, hook)
}

/// `{ beforeToolCall, safetyNet }` for one registration.
pub fn pair(env: &Env) -> Result<Js<'_>> {
    let (ran, warned): (Rc<Cell<bool>>, Rc<Cell<bool>>) = Default::default();
    let policy = make(
        env,
        "beforeToolCall",
        data(env, Tier::Policy, &ran, &warned)?,
    )?;
    let net = make(env, "safetyNet", data(env, Tier::Net, &ran, &warned)?)?;
    let raw = env.raw();
    let out = Js::object(raw)?;
    out.define(&[
        (Js::string(raw, "beforeToolCall")?, policy),
        (Js::string(raw, "safetyNet")?, net),
    ])?;
    Ok(out)
}

/// The plugin's tool-result middleware, `redactToolResult(event)`: `{ result }`
/// with every token of the map in force (and of the maps in force in the last
/// five minutes) replaced by `sha256:<fingerprint>` in every string of
/// `event.result`, or `undefined` when it holds none. Throws only if the
/// result can't be walked, and OpenClaw then replaces it with an error: no
/// token gets through. A raw callback, as it runs on every tool result.
pub fn redactor(env: &Env) -> Result<Js<'_>> {
    let state: *const ThreadState = ThreadState::of(env)?;
    let name = "redactToolResult";
    let mut f = std::ptr::null_mut();
    // SAFETY: a plain N-API call; `state` lives in this env's instance data,
    // as long as any function of the env.
    let status = unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            Some(redact_callback),
            state as *mut std::ffi::c_void,
            &mut f,
        )
    };
    if status != sys::Status::napi_ok {
        return Err(Error::from_reason(
            "claw-identity: cannot create redactToolResult()",
        ));
    }
    // SAFETY: `f` was just made in this env.
    Ok(unsafe { Js::from_raw(env.raw(), f) })
}

unsafe extern "C" fn redact_callback(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (mut argc, mut argv, mut data) = (2usize, [std::ptr::null_mut(); 2], std::ptr::null_mut());
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
        return throw(env, "cannot read the middleware's arguments");
    }
    // SAFETY: `data` is the env's `ThreadState` (`redactor`).
    let state = unsafe { &*(data as *const ThreadState) };
    let env = Env::from_raw(env);
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<sys::napi_value> {
        let raw = env.raw();
        let layer = state.layer(&env)?;
        let redactor = layer.layer.redactor();
        // SAFETY: the arguments are live for this callback.
        let (event, ctx) = unsafe { (Js::from_raw(raw, argv[0]), Js::from_raw(raw, argv[1])) };
        let Some(result) = event.get(c"result")? else {
            return Ok(Js::undefined_in(&env)?.raw());
        };
        let mut hits = Hits::default();
        let clean = super::params::redact(raw, result, &redactor, 0, &mut hits)?;
        if !hits.is_empty() {
            // The middleware's ctx names the agent, its event the tool
            // (`createAgentToolResultMiddlewareRunner`, `tool-result-middleware-*.mjs`).
            let (agent, tool) = (ctx.get(c"agentId")?, event.get(c"toolName")?);
            layer.note_redaction(&env, agent, tool, "tool result", &hits)?;
        }
        Ok(match clean {
            None => Js::undefined_in(&env)?.raw(),
            Some(clean) => {
                let out = Js::object(raw)?;
                out.define(&[(Js::string(raw, "result")?, clean)])?;
                out.raw()
            }
        })
    }));
    match r {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => throw(env.raw(), &e.reason),
        Err(_) => throw(env.raw(), "a panic"),
    }
}
