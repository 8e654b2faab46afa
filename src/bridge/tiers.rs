//! The functions OpenClaw calls on every tool call of every agent: the
//! module's `beforeToolCall(event, ctx)` and, per registration of the plugin,
//! the trusted policy and the ordinary hook (`tiers()`), and the tool-result
//! middleware. They are raw N-API callbacks (`callback.rs`) with their state
//! as callback data. The layer they decide on is this JS thread's, the one
//! `configure` made.
//!
//! Why the ordinary hook decides only when the policy did not run
//! (docs/design.md): OpenClaw 2026.9.6 runs trusted policies on every path
//! that runs ordinary hooks, before them, but drops a plugin's policy at
//! registration when the plugin is not explicitly enabled, while its hooks
//! still register. So the hook of a registration passes at once once that
//! registration's policy has run, and decides in full otherwise.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use napi::bindgen_prelude::*;

use super::callback::{make, Callback};
use super::js::Js;
use super::layer::{JsLayer, JsOptions};
use crate::IdentityLayer;
use claw_identity_core::redact::results::Hits;

/// Per JS thread (each worker has its own): the layer `configure` made,
/// and on the WebAssembly build the front that makes its hooks.
#[derive(Default)]
pub struct ThreadState {
    shared: RefCell<Option<(String, Reference<IdentityLayer>)>>,
    #[cfg(target_os = "wasi")]
    pub front: RefCell<Option<super::front::FrontFns>>,
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
    super::watch::start(env, &inner)?;
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
pub struct TierData {
    tier: Tier,
    source: Source,
    /// Shared by one registration's policy and hook.
    policy_ran: Rc<Cell<bool>>,
    warned: Rc<Cell<bool>>,
}

/// How a call of a tier starts, before any N-API call.
pub enum Enter {
    /// `undefined` at once: the trusted tier decided this call already.
    Skip,
    /// What comes next needs N-API: the ordinary hook's warning (its policy
    /// never ran), or a first use that must configure a layer.
    WithEnv,
    /// Decide it on this layer.
    Go(Rc<JsLayer>),
}

impl TierData {
    /// The tier's part of a call, with no N-API call: the callback below
    /// and the WebAssembly build's front (`front.rs`) both start here.
    pub fn enter(&self) -> Enter {
        match self.tier {
            Tier::Policy => self.policy_ran.set(true),
            Tier::Net if self.policy_ran.get() => return Enter::Skip,
            Tier::Net => return Enter::WithEnv,
            Tier::Module => {}
        }
        let layer = match &self.source {
            Source::Layer(l) => Some(l.clone()),
            Source::Thread(state) => state.current(),
        };
        layer.map_or(Enter::WithEnv, Enter::Go)
    }

    /// The layer this tier decides on, configured with defaults on first use.
    fn layer(&self, env: &Env) -> Result<Rc<JsLayer>> {
        match &self.source {
            Source::Layer(l) => Ok(l.clone()),
            Source::Thread(state) => state.layer(env),
        }
    }
}

impl Callback for TierData {
    const WHAT: &'static str = "the hook's arguments";

    fn call<'e>(&self, env: &'e Env, args: &[Js<'e>]) -> Result<Option<Js<'e>>> {
        let (event, ctx) = (args[0], args[1]);
        let layer = match self.enter() {
            // The trusted tier decided this call already: `undefined`.
            Enter::Skip => return Ok(None),
            Enter::Go(layer) => layer,
            Enter::WithEnv => self.layer(env)?,
        };
        if self.tier == Tier::Net && !self.warned.replace(true) {
            claw_identity_core::log_error!(
                layer.layer.log(),
                "the trusted tool-policy tier did not run for this call, so identity is enforced only by the ordinary before_tool_call hook: another plugin's hook at a lower priority can undo the rewrite and approvals may freeze the model's params. Declare contracts.trustedToolPolicies and enable the plugin explicitly (openclaw plugins install <tgz> --force --accept-capabilities)."
            );
        }
        layer.hook(env, event, ctx)
    }
}

/// A hook `name` for `data`: on the WebAssembly build, the front's
/// function (`front.rs`), once `lib/wasi.cjs` gave the front.
fn hook<'e>(env: &'e Env, name: &str, data: TierData) -> Result<Js<'e>> {
    #[cfg(target_os = "wasi")]
    if let Some(front) = &*ThreadState::of(env)?.front.borrow() {
        return front.hook(env, name, data);
    }
    make(env, name, data)
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
    hook(
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
    let f = hook(
        env,
        "beforeToolCall",
        TierData {
            tier: Tier::Module,
            source: Source::Layer(layer.clone()),
            policy_ran: ran,
            warned,
        },
    )?;
    object.define_fixed(Js::string(env.raw(), "beforeToolCall")?, f)
}

/// Takes the front `lib/wasi.cjs` made (`front.rs`): every hook made from
/// now on is the front's. Returns the module's `beforeToolCall`, made
/// again as the front's.
#[cfg(target_os = "wasi")]
pub fn use_front<'e>(env: &'e Env, front: Js<'_>) -> Result<Js<'e>> {
    let state = ThreadState::of(env)?;
    let fns = super::front::FrontFns::new(env, front)?;
    *state.front.borrow_mut() = Some(fns);
    module_hook(env)
}

/// `{ beforeToolCall, safetyNet }` for one registration.
pub fn pair(env: &Env) -> Result<Js<'_>> {
    let (ran, warned): (Rc<Cell<bool>>, Rc<Cell<bool>>) = Default::default();
    let policy = hook(
        env,
        "beforeToolCall",
        data(env, Tier::Policy, &ran, &warned)?,
    )?;
    let net = hook(env, "safetyNet", data(env, Tier::Net, &ran, &warned)?)?;
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
    make(env, "redactToolResult", Redact(ThreadState::of(env)?))
}

/// `redactToolResult`'s data: the layer in force on this JS thread.
struct Redact(&'static ThreadState);

impl Callback for Redact {
    const WHAT: &'static str = "the middleware's arguments";

    fn call<'e>(&self, env: &'e Env, args: &[Js<'e>]) -> Result<Option<Js<'e>>> {
        let (event, ctx) = (args[0], args[1]);
        let raw = env.raw();
        let layer = self.0.layer(env)?;
        let redactor = layer.layer.redactor();
        let Some(result) = event.get(c"result")? else {
            return Ok(None);
        };
        let mut hits = Hits::default();
        let clean = super::params::redact(raw, result, &redactor, 0, &mut hits)?;
        if !hits.is_empty() {
            // The middleware's ctx names the agent, its event the tool
            // (`createAgentToolResultMiddlewareRunner`, `tool-result-middleware-*.mjs`).
            let (agent, tool) = (ctx.get(c"agentId")?, event.get(c"toolName")?);
            layer.note_redaction(env, agent, tool, "tool result", &hits)?;
        }
        let Some(clean) = clean else {
            return Ok(None);
        };
        let out = Js::object(raw)?;
        out.define(&[(Js::string(raw, "result")?, clean)])?;
        Ok(Some(out))
    }
}
