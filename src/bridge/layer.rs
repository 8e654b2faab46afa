//! One layer as JS sees it: the core `Layer`, and the JS values it calls
//! back (the logger, the session store, the rewrite function). `hook` is
//! what happens to a tool call, start to end:
//!
//! 1. read `event.toolName`; a tool no route names returns `undefined` at once;
//! 2. read `ctx.agentId`, `ctx.sessionKey`, and the params the route declares;
//! 3. `pipeline::decide`, the one decision function (`core/src/pipeline.rs`);
//! 4. write the decision as OpenClaw's hook result, with its log line.
//!
//! It never throws: an error or a panic while deciding fails closed.

use std::borrow::Cow;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use napi::bindgen_prelude::*;
use serde_json::Value;

use super::host::{function_ref, HostIn, JsLogger, JsSessions, Pending};
use super::js::{Js, Keys, Kind};
use super::params::{copy_with, exact, read_fields};
use claw_identity_core::log::{Level, LineBuf};
use claw_identity_core::openclaw::config::OpenClawConfig;
use claw_identity_core::options::Options;
use claw_identity_core::pipeline;
use claw_identity_core::proxy;
use claw_identity_core::redact;
use claw_identity_core::redact::results::Hits;
use claw_identity_core::rules::{Decision, Params, Patch, Slot, ToolCall, Verdict};
use claw_identity_core::Layer;

/// Set from the environment at load: makes a call to the tool
/// `claw-os____panic__` (an owned tool under the default `toolPrefix`)
/// panic inside the decision, so a test can show that a panic fails closed.
/// No model can set a gateway's environment.
pub static PANIC_TEST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The property names every call reads, by index into `JsLayer::keys`.
const TOOL: usize = 0;
const PARAMS: usize = 1;
const AGENT: usize = 2;
const SESSION: usize = 3;
const KEY_NAMES: [&std::ffi::CStr; 4] = [c"toolName", c"params", c"agentId", c"sessionKey"];

/// The tool of a call being decided, for the fail-closed answer if the
/// decision fails: in the call's stack buffer, without a copy.
enum Seen {
    None,
    InBuf(usize),
    Heap(String),
}

/// Where a call's params object is: read (an object, or `None` for
/// anything else), or still on the event, for the result to read.
#[derive(Clone, Copy)]
enum ParamsOf<'e> {
    Read(Option<Js<'e>>),
    Unread(Js<'e>),
}

/// `v` if it is an object; and whether it is something else than an
/// object, `undefined` or `null`.
fn object_or_not(v: Js<'_>) -> Result<(Option<Js<'_>>, bool)> {
    Ok(match v.kind()? {
        Kind::Object => (Some(v), false),
        Kind::Undefined | Kind::Null => (None, false),
        _ => (None, true),
    })
}

/// What the WebAssembly build's front read of a call before it handed the
/// call to [`JsLayer::hook_read`] (`front.rs`): a field is read once per
/// call, so what it read is used, not read again. The default is nothing.
#[derive(Clone, Copy, Default)]
pub struct Read<'e> {
    /// `event.toolName` (`undefined` when the event is not an object).
    pub tool: Option<Js<'e>>,
    /// `ctx.agentId` and `ctx.sessionKey` (`undefined` when ctx is not an object).
    pub ids: Option<(Js<'e>, Js<'e>)>,
    /// `ctx.toolCallId`.
    pub call_id: Option<Js<'e>>,
    /// What the read after the last one read threw: the call is decided
    /// as one whose read threw here.
    pub thrown: Option<Js<'e>>,
}

/// Room on the stack for a tool name, an agent id and a session key: every
/// one OpenClaw makes fits, so an owned call reads them without allocating.
const ID_BUF: usize = 256;

pub struct JsLayer {
    pub layer: Layer,
    keys: Keys<4>,
    /// `rewrite.js`'s functions, made with this layer's logger.
    owned: Owned,
    pub logger: JsLogger,
    pub pending: Pending,
    sessions: RefCell<Option<JsSessions>>,
    /// Node's `url.fileURLToPath`, as OpenClaw's tools call it.
    file_url_to_path: FunctionRef<Js<'static>, Js<'static>>,
    /// The layer's number with the WebAssembly build's front (`front.rs`).
    #[cfg(target_os = "wasi")]
    front: std::cell::Cell<Option<u32>>,
}

/// `rewrite.js`'s functions: an owned call's result with the token, the
/// conversation id, or both.
struct Owned {
    token: FunctionRef<Js<'static>, Js<'static>>,
    conversation: FunctionRef<Js<'static>, Js<'static>>,
    both: FunctionRef<Js<'static>, Js<'static>>,
}

/// The options object split into what Rust parses and the JS objects the
/// layer calls back.
pub struct JsOptions<'e> {
    pub json: String,
    pub logger: Option<Js<'e>>,
    pub sessions: Option<Js<'e>>,
    /// OpenClaw's config (`api.config`): agents' workspaces and sandboxes.
    pub openclaw_config: Option<Js<'e>>,
    /// Set by the plugin: the directories it is installed and loaded from,
    /// the file OpenClaw's package resolves to, and each configured agent's
    /// workspace, as OpenClaw's own `resolveAgentWorkspaceDir` gives it.
    pub plugin: claw_identity_core::PluginFacts,
}

/// A JS array of path strings, as host paths; anything else is none.
fn path_list(v: Js<'_>) -> Result<Vec<std::path::PathBuf>> {
    Ok(match exact(v, 1)? {
        Ok(Some(Value::Array(a))) => a
            .iter()
            .filter_map(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(claw_identity_core::paths::host_path)
            .collect(),
        _ => Vec::new(),
    })
}

pub fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, format!("claw-identity: {}", msg.into()))
}

impl<'e> JsOptions<'e> {
    pub fn read(options: Option<Js<'e>>) -> Result<JsOptions<'e>> {
        let mut rest = serde_json::Map::new();
        let (mut logger, mut sessions, mut openclaw_config) = (None, None, None);
        let mut plugin = claw_identity_core::PluginFacts::default();
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
                            "pluginDirs" => plugin.plugin_dirs = path_list(v)?,
                            "openclawFiles" => plugin.openclaw_files = path_list(v)?,
                            "workspaces" => {
                                if let Ok(Some(Value::Object(o))) = exact(v, 1)? {
                                    plugin.workspaces = o
                                        .iter()
                                        .filter_map(|(k, w)| {
                                            Some((
                                                k.clone(),
                                                claw_identity_core::paths::host_path(w.as_str()?),
                                            ))
                                        })
                                        .collect();
                                }
                            }
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
            plugin,
        })
    }

    pub fn options(&self) -> Result<Options> {
        Options::from_json(&self.json).map_err(invalid)
    }
}

/// `rewrite.js` with the layer's param names as JS string literals. A name
/// that is `__proto__` is written as a computed key, which defines an own
/// property (a literal `__proto__:` would set the prototype).
fn rewrite_source(token: &str, conversation: &str) -> String {
    let lit = |name: &str| serde_json::to_string(name).unwrap_or_default();
    let key = |name: &str| match name {
        "__proto__" => format!("[{}]:", lit(name)),
        _ => format!("{}:", lit(name)),
    };
    include_str!("rewrite.js")
        .replace("TOKEN:", &key(token))
        .replace("CONVERSATION:", &key(conversation))
}

impl JsLayer {
    /// A layer for `options`; after `previous`, whose map in force and
    /// rotation grace it starts from.
    pub fn new(
        env: &Env,
        options: &JsOptions<'_>,
        previous: Option<&Layer>,
    ) -> Result<Rc<JsLayer>> {
        let opts = options.options()?;
        let (logger, log, pending) = JsLogger::new(env, options.logger)?;
        let sessions = options
            .sessions
            .map(|s| JsSessions::new(env, s))
            .transpose()?;
        let source = rewrite_source(&opts.token_param, &opts.rules.conversation_id.param);
        let layer = Layer::load_after(opts, log, previous);
        layer.watch().map_err(|e| {
            Error::from_reason(format!("claw-identity: cannot start the map watcher: {e}"))
        })?;
        let factory: Js<'_> = env.run_script(source)?;
        let owned_fns = factory
            .call(Js::undefined_in(env)?, &[logger.write_fn(env)?])
            .map_err(Error::from_reason)?;
        let owned = Owned {
            token: function_ref(env, owned_fns.get_index(0)?)?,
            conversation: function_ref(env, owned_fns.get_index(1)?)?,
            both: function_ref(env, owned_fns.get_index(2)?)?,
        };
        let url: Js<'_> = env.run_script("process.getBuiltinModule('node:url').fileURLToPath")?;
        let js = Rc::new(JsLayer {
            file_url_to_path: function_ref(env, url)?,
            layer,
            keys: Keys::new(env, KEY_NAMES)?,
            owned,
            logger,
            pending,
            sessions: RefCell::new(sessions),
            #[cfg(target_os = "wasi")]
            front: Default::default(),
        });
        #[cfg(target_os = "wasi")]
        if let Some(front) = &*super::tiers::ThreadState::of(env)?.front.borrow() {
            let write = js.logger.write_fn(env)?;
            js.front
                .set(Some(front.add_layer(env, &js, owned_fns, write)?));
        }
        js.use_openclaw_config(options)?;
        if options.openclaw_config.is_none() {
            js.layer.say_unjudged();
        }
        // The load line and any map warning, before the first call's line.
        js.logger.release(env, &js.pending);
        Ok(js)
    }

    /// Tells the rules each agent's workspace and sandbox, and OpenClaw's
    /// files, from OpenClaw's config, and what the plugin knows; without a
    /// config, the protected locations are still the environment's, the
    /// plugin's and this process's (`claw_identity_core::protected`).
    pub fn use_openclaw_config(&self, options: &JsOptions<'_>) -> Result<()> {
        let config = match options.openclaw_config {
            None => None,
            Some(config) => {
                let cfg = exact(config, 0)?
                    .ok()
                    .flatten()
                    .and_then(OpenClawConfig::from_value);
                if cfg.is_none() {
                    claw_identity_core::log_warn!(
                        self.layer.log(),
                        "cannot read OpenClaw's config, so relative paths are checked without the agents' workspaces (map-access refuses those that name the map)"
                    );
                    // Given, but unreadable: nobody can tell the agents are
                    // contained, so under "enforce" no token is served.
                    self.layer
                        .set_posture(claw_identity_core::posture::unreadable(
                            self.layer.engine().options().posture,
                        ));
                }
                cfg
            }
        };
        self.layer
            .use_openclaw_config(config.as_ref(), &options.plugin);
        Ok(())
    }

    /// The layer's number with the WebAssembly build's front, once it has one.
    #[cfg(target_os = "wasi")]
    pub fn front(&self) -> Option<u32> {
        self.front.get()
    }

    pub fn attach_sessions(&self, env: &Env, store: Js<'_>) -> Result<()> {
        *self.sessions.borrow_mut() = Some(JsSessions::new(env, store)?);
        Ok(())
    }

    /// Text on its way to a model held pieces of tokens (`hits`), found on
    /// `surface`: counted and logged (`Layer::note_redaction`), the line
    /// delivered before this returns. `agent` and `tool` are read from
    /// OpenClaw's event and ctx only now, off the common path.
    pub fn note_redaction(
        &self,
        env: &Env,
        agent: Option<Js<'_>>,
        tool: Option<Js<'_>>,
        surface: &str,
        hits: &Hits,
    ) -> Result<()> {
        if hits.is_empty() {
            return Ok(());
        }
        let text = |v: Option<Js<'_>>| -> Result<Option<String>> {
            match v {
                Some(v) if v.kind()? == Kind::String => v.host_str(),
                _ => Ok(None),
            }
        };
        let (agent, tool) = (text(agent)?, text(tool)?);
        self.pending.hold();
        self.layer
            .note_redaction(agent.as_deref(), tool.as_deref(), surface, hits);
        self.logger.release(env, &self.pending);
        Ok(())
    }

    /// OpenClaw's hook result for one call, `None` for `undefined` (a call no
    /// rule concerns: the callback returns no value, one N-API call less).
    /// Never throws: an error or a panic while deciding fails closed.
    pub fn hook<'e>(
        self: &Rc<Self>,
        env: &'e Env,
        event: Js<'e>,
        ctx: Js<'e>,
    ) -> Result<Option<Js<'e>>> {
        self.hook_read(env, event, ctx, Read::default())
    }

    /// [`JsLayer::hook`] for a call some of whose fields were read already
    /// (`read`, by the WebAssembly build's front): those are not read again.
    pub fn hook_read<'e>(
        self: &Rc<Self>,
        env: &'e Env,
        event: Js<'e>,
        ctx: Js<'e>,
        read: Read<'e>,
    ) -> Result<Option<Js<'e>>> {
        let mut tool_buf = [0u8; ID_BUF];
        let mut seen = Seen::None;
        let mut held = false;
        let r = catch_unwind(AssertUnwindSafe(|| {
            self.decide(env, event, ctx, read, &mut tool_buf, &mut seen, &mut held)
        }));
        let tool = match &seen {
            Seen::None => None,
            Seen::InBuf(n) => std::str::from_utf8(&tool_buf[..*n]).ok(),
            Seen::Heap(t) => Some(t.as_str()),
        };
        let out = match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => self.failed(env, tool, &e.reason).map(Some),
            Err(_) => self.failed(env, tool, "a panic").map(Some),
        };
        if held {
            self.logger.release(env, &self.pending);
        }
        out
    }

    /// A call the WebAssembly build's front decided, whose result could not
    /// be built (a getter of its params threw `thrown`): blocked, as `hook`
    /// blocks a call it can't finish.
    #[cfg(target_os = "wasi")]
    pub fn failed_result<'e>(&self, env: &'e Env, tool: Js<'e>, thrown: Js<'e>) -> Result<Js<'e>> {
        let mut buf = [0u8; ID_BUF];
        let tool = tool.str_in(&mut buf)?;
        self.pending.hold();
        let out = self.failed(env, tool.as_deref(), &thrown.thrown_message());
        self.logger.release(env, &self.pending);
        out
    }

    fn failed<'e>(&self, env: &'e Env, tool: Option<&str>, why: &str) -> Result<Js<'e>> {
        let Some(tool) = tool else {
            return Js::undefined_in(env);
        };
        let d = pipeline::undecided(&self.layer, tool, why);
        match &d.verdict {
            Verdict::Block(reason) => block_result(env, reason),
            _ => Js::undefined_in(env),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn decide<'e>(
        self: &Rc<Self>,
        env: &'e Env,
        event: Js<'e>,
        ctx: Js<'e>,
        read: Read<'e>,
        tool_buf: &mut [u8; ID_BUF],
        seen: &mut Seen,
        held: &mut bool,
    ) -> Result<Option<Js<'e>>> {
        let engine = self.layer.engine();
        let thrown = |e: Js<'_>| Error::from_reason(e.thrown_message());
        let tool = match read.tool {
            Some(t) => t.str_in(tool_buf)?,
            None => match read.thrown {
                // Reading the tool's name threw: as if it threw here.
                Some(e) => return Err(thrown(e)),
                None if event.is_object()? => self.keys.read(env, event, TOOL)?.str_in(tool_buf)?,
                None => None,
            },
        };
        let Some((tool, route)) = tool.and_then(|t| engine.route(&t).map(|r| (t, r))) else {
            self.layer.note_unowned();
            return Ok(None);
        };
        // Lines logged from here on (by this thread or the watcher's) go out
        // on this thread, in order, before the call returns.
        self.pending.hold();
        *held = true;
        *seen = match &tool {
            Cow::Borrowed(t) => Seen::InBuf(t.len()),
            Cow::Owned(t) => Seen::Heap(t.clone()),
        };
        if PANIC_TEST.load(std::sync::atomic::Ordering::Relaxed) && tool == "claw-os____panic__" {
            panic!("the panic test tool");
        }
        if let Some(e) = read.thrown {
            return Err(thrown(e));
        }
        let (mut agent_buf, mut session_buf) = ([0u8; ID_BUF], [0u8; ID_BUF]);
        let (agent, session_js) = match read.ids {
            Some((agent, session)) => (agent, Some(session)),
            None if ctx.is_object()? => (
                self.keys.read(env, ctx, AGENT)?,
                Some(self.keys.read(env, ctx, SESSION)?),
            ),
            None => (Js::undefined_in(env)?, None),
        };
        let agent = agent.str_in(&mut agent_buf)?;
        let session = match session_js {
            Some(s) => s.str_in(&mut session_buf)?,
            None => None,
        };

        // A call to a proxied server: its handle is bound to OpenClaw's call id.
        let mut call_buf = [0u8; ID_BUF];
        let call_id = match (proxy::server_of(engine.options(), &tool), read.call_id) {
            (Some(_), Some(v)) => v.str_in(&mut call_buf)?,
            (Some(_), None) if ctx.is_object()? => match ctx.get(c"toolCallId")? {
                Some(v) => v.str_in(&mut call_buf)?,
                None => None,
            },
            _ => None,
        };
        let empty = Params::new();
        let mut call = ToolCall {
            tool: &tool,
            agent_id: agent.as_deref(),
            session_key: session.as_deref(),
            params: &empty,
            derived_paths: &[],
            call_id: call_id.as_deref(),
        };
        // `event.params` is read once per call: here when a rule reads the
        // params, or else only when the result copies them.
        let needs_params = !route.reads.is_empty() || !route.scans.is_empty();
        let mut params = Params::new();
        let params_js = if needs_params {
            let raw_params = self.keys.read(env, event, PARAMS)?;
            let (obj, not_object) = object_or_not(raw_params)?;
            let read = if not_object && !route.reads.is_empty() {
                Err(("(params)", "not an object"))
            } else {
                read_fields(obj, route.reads, route.scans)?.map_err(|u| (u.field, u.why))
            };
            match read {
                Ok(p) => params = p,
                Err((field, why)) => {
                    let d = engine.unreadable(&call, field, why);
                    let line = self.layer.account(&call, &d);
                    let from = ParamsOf::Read(obj);
                    return self
                        .result(env, &d, from, (session_js, call.session_key), line.as_ref())
                        .map(Some);
                }
            }
            ParamsOf::Read(obj)
        } else {
            ParamsOf::Unread(event)
        };
        let derived = if route.derived {
            self.derived_paths(env, event)?
        } else {
            Vec::new()
        };
        call.derived_paths = &derived;
        call.params = &params;

        let store = self.sessions.borrow();
        let host = HostIn {
            sessions: store.as_ref(),
            file_url_to_path: &self.file_url_to_path,
            env,
        };
        let (result, ensure) = pipeline::decide(&self.layer, route, &call, &host, |d, line| {
            (
                self.result(env, d, params_js, (session_js, call.session_key), line),
                d.ensure_session.clone(),
            )
        });
        let result = result?;
        match (ensure, &*store) {
            (Some(e), Some(s)) => self.with_session(env, s, &e, result).map(Some),
            _ => Ok(Some(result)),
        }
    }

    /// A warning from the JS thread, delivered now (after the lines waiting
    /// before it), so it is in the log when the call's promise settles.
    fn warn_now(&self, env: &Env, text: &str) {
        self.logger.flush_waiting(env, &self.pending);
        self.logger.write(
            env,
            Level::Warn,
            &format!("{}{text}", claw_identity_core::log::PREFIX),
        );
    }

    /// `event.derivedPaths`: the absolute paths OpenClaw derived from the
    /// params for the policy tier. A non-string entry is dropped (the
    /// call's own params are checked anyway).
    fn derived_paths(&self, env: &Env, event: Js<'_>) -> Result<Vec<String>> {
        let Some(v) = event.get(c"derivedPaths")? else {
            return Ok(Vec::new());
        };
        let _ = env;
        match exact(v, 1)? {
            Ok(Some(Value::Array(a))) => Ok(a
                .into_iter()
                .filter_map(|p| p.as_str().map(str::to_owned))
                .collect()),
            _ => Ok(Vec::new()),
        }
    }

    /// Delivers a per-call line now, after the lines waiting before it.
    fn deliver(&self, env: &Env, line: Option<&LineBuf>) {
        self.logger.write_call_line(env, &self.pending, line);
    }

    /// The hook result for a decision.
    fn result<'e>(
        &self,
        env: &'e Env,
        d: &Decision<'_>,
        params: ParamsOf<'e>,
        (session, session_key): (Option<Js<'e>>, Option<&str>),
        line: Option<&LineBuf>,
    ) -> Result<Js<'e>> {
        let raw = env.raw();
        match &d.verdict {
            Verdict::Rewrite(p) if p.params.is_empty() => {
                self.owned(env, p, params, session, session_key, line)
            }
            Verdict::Pass => {
                self.deliver(env, line);
                Js::undefined_in(env)
            }
            Verdict::Rewrite(patch) => {
                self.deliver(env, line);
                let copy = self.copy(env, self.params(env, params)?, patch)?;
                let out = Js::object(raw)?;
                out.define(&[(Js::string(raw, "params")?, copy)])?;
                Ok(out)
            }
            Verdict::Block(reason) => {
                self.deliver(env, line);
                block_result(env, reason)
            }
            Verdict::RequireApproval {
                title,
                description,
                then,
            } => {
                self.deliver(env, line);
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
                if !then.is_empty() {
                    let copy = self.copy(env, self.params(env, params)?, then)?;
                    out.define(&[(Js::string(raw, "params")?, copy)])?;
                }
                Ok(out)
            }
        }
    }

    /// The call's params object, read now if no rule read it.
    fn params<'e>(&self, env: &'e Env, params: ParamsOf<'e>) -> Result<Option<Js<'e>>> {
        match params {
            ParamsOf::Read(p) => Ok(p),
            ParamsOf::Unread(event) => {
                let p = self.keys.read(env, event, PARAMS)?;
                Ok(object_or_not(p)?.0)
            }
        }
    }

    /// An owned call's result (a patch of the token and conversation slots
    /// alone) and its log line, in one call into V8 (`rewrite.js`), which
    /// also reads `event.params` when nothing read them yet.
    fn owned<'e>(
        &self,
        env: &'e Env,
        p: &Patch<'_>,
        params: ParamsOf<'e>,
        session: Option<Js<'e>>,
        session_key: Option<&str>,
        line: Option<&LineBuf>,
    ) -> Result<Js<'e>> {
        let raw = env.raw();
        let opts = self.layer.engine().options();
        // A param taken out needs the params object: is it the call's?
        let params = match params {
            ParamsOf::Unread(_)
                if matches!(p.token, Slot::Clear) || matches!(p.conversation, Slot::Clear) =>
            {
                ParamsOf::Read(self.params(env, params)?)
            }
            params => params,
        };
        let read = match params {
            ParamsOf::Read(p) => p,
            ParamsOf::Unread(_) => None,
        };
        let token = slot_value(env, &p.token, &opts.token_param, read, |t| {
            Js::string(raw, p.handle.as_deref().unwrap_or(t.expose()))
        })?;
        let conversation_param = &opts.rules.conversation_id.param;
        let conversation = slot_value(env, &p.conversation, conversation_param, read, |c| {
            match session {
                // The conversation is the caller's own session key: hand back its value.
                Some(s) if Some(c.as_ref()) == session_key => Ok(s),
                _ => Js::string(raw, c),
            }
        })?;
        let f = match (token.is_some(), conversation.is_some()) {
            (true, false) => &self.owned.token,
            (false, true) => &self.owned.conversation,
            (true, true) => &self.owned.both,
            (false, false) => {
                self.deliver(env, line);
                return Js::undefined_in(env);
            }
        };
        let undefined = Js::undefined_in(env)?;
        let [text, level] = self
            .logger
            .call_line(env, &self.pending, line, undefined)?
            .unwrap_or([undefined; 2]);
        let (event, params) = match params {
            ParamsOf::Unread(event) => (event, undefined),
            ParamsOf::Read(p) => (undefined, p.unwrap_or(undefined)),
        };
        let (token, conversation) = (
            token.unwrap_or(undefined),
            conversation.unwrap_or(undefined),
        );
        Js::of(env, f.borrow_back(env)?)?
            .call(
                undefined,
                &[event, params, token, conversation, text, level],
            )
            .map_err(Error::from_reason)
    }

    /// `params` with `patch` applied, through N-API (every rewrite but an
    /// owned call's).
    fn copy<'e>(&self, env: &'e Env, params: Option<Js<'e>>, patch: &Patch<'_>) -> Result<Js<'e>> {
        let raw = env.raw();
        let opts = self.layer.engine().options();
        let mut set: Vec<(&str, Js<'e>)> = Vec::new();
        let token = &opts.token_param;
        if let Some(v) = slot_value(env, &patch.token, token, params, |t| {
            Js::string(raw, patch.handle.as_deref().unwrap_or(t.expose()))
        })? {
            set.push((token, v));
        }
        let conversation = &opts.rules.conversation_id.param;
        if let Some(v) = slot_value(env, &patch.conversation, conversation, params, |c| {
            Js::string(raw, c)
        })? {
            set.push((conversation, v));
        }
        for (k, v) in &patch.params {
            set.push((k, Js::json(raw, v)?));
        }
        copy_with(raw, params, &set)
    }

    /// A delegation session must exist before the send runs: returns a
    /// promise of `result` once the store created it, or of a block if it
    /// could not.
    fn with_session<'e>(
        self: &Rc<Self>,
        env: &'e Env,
        sessions: &JsSessions,
        e: &claw_identity_core::rules::EnsureSession,
        result: Js<'e>,
    ) -> Result<Js<'e>> {
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
                self.warn_now(env, &failed(&why));
                return Ok(blocked);
            }
        };
        // Calls made in the session carry its conversation (conversation-id).
        let key = e.session.session_key.clone();
        if !started.is_promise()? {
            self.layer.engine().note_delegation(&key);
            return Ok(result);
        }
        let made = self.clone();
        let ok = Js::of(
            env,
            env.create_function_from_closure::<Js, Js, _>(
                "claw_identity_session_created",
                move |cx| {
                    made.layer.engine().note_delegation(&key);
                    cx.get::<Js>(0)
                },
            )?,
        )?;
        let me = self.clone();
        let err = Js::of(
            env,
            env.create_function_from_closure::<Js, Js, _>(
                "claw_identity_session_failed",
                move |cx| {
                    let why = cx
                        .get::<Js>(1)
                        .ok()
                        .and_then(|e| e.get(c"message").ok().flatten())
                        .and_then(|m| m.host_str().ok().flatten());
                    me.warn_now(cx.env, &failed(why.as_deref().unwrap_or("it failed")));
                    cx.get::<Js>(0)
                },
            )?,
        )?;
        let then = started.get_unchecked(c"then")?;
        then.call(
            started,
            &[ok.bind_args(&[result])?, err.bind_args(&[blocked])?],
        )
        .map_err(|e| Error::from_reason(format!("cannot wait for the session: {e}")))
    }
}

/// What `slot` defines for the param `name` in a call's rewritten params
/// (`params`, the call's): its value; `undefined` where it is taken out and
/// the call holds it (OpenClaw spreads hook params over the original, so
/// the key must be there to take the model's value out, and JSON drops it);
/// or nothing (`None`), where it is kept or taken out of a call that does
/// not hold it. The one place that says where a param is cleared.
fn slot_value<'e, T>(
    env: &'e Env,
    slot: &Slot<T>,
    name: &str,
    params: Option<Js<'e>>,
    value: impl FnOnce(&T) -> Result<Js<'e>>,
) -> Result<Option<Js<'e>>> {
    match slot {
        Slot::Set(v) => value(v).map(Some),
        Slot::Keep => Ok(None),
        Slot::Clear => match params {
            Some(p) if p.has_own(Js::string(env.raw(), name)?)? => Js::undefined_in(env).map(Some),
            _ => Ok(None),
        },
    }
}

pub fn block_result<'e>(env: &'e Env, reason: &str) -> Result<Js<'e>> {
    let raw = env.raw();
    let out = Js::object(raw)?;
    out.define(&[
        (Js::string(raw, "block")?, Js::boolean(raw, true)?),
        (Js::string(raw, "blockReason")?, Js::string(raw, reason)?),
    ])?;
    Ok(out)
}

impl JsLayer {
    /// `f` on the layer, with the lines it logs delivered before this
    /// returns (as a hook's are).
    pub fn logged<R>(&self, env: &Env, f: impl FnOnce(&Layer) -> R) -> R {
        self.pending.hold();
        let out = f(&self.layer);
        self.logger.release(env, &self.pending);
        out
    }
}
