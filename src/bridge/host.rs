//! What the layer calls back into JS: the logger (OpenClaw's `api.logger`)
//! and the session store (`api.runtime.agent.session`, adapted by the plugin).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use parking_lot::Mutex;

use super::js::{Js, Kind};
use claw_identity_core::log::{Level, LineBuf, Log};
use claw_identity_core::paths;
use claw_identity_core::sessions::{Host, SessionEntry, SessionNow};

/// Wakes the JS thread to deliver the lines waiting in the outbox: weak, so
/// a live layer never keeps Node running. At most a few wake-ups are on their way.
type WakeFn = ThreadsafeFunction<(), (), (), Status, false, true, 4>;

/// The most lines that wait for the JS thread; past it a line is dropped
/// (and counted), so a stalled event loop never grows a queue.
const MAX_WAITING: usize = 1024;

/// The JS logger, through `write(line, level)` ([`WRITE`]): the one
/// function that hands a line to it, every line of the layer and an owned
/// call's too (`rewrite.js` calls it).
pub struct JsLogger {
    write: FunctionRef<Js<'static>, Js<'static>>,
    /// The logger takes info lines (`false`: they are not even formatted).
    info: bool,
}

/// `write(line, level)`, made with the logger's methods bound to it,
/// `[info, warn, error]`: `level` is an index into them ([`level_index`]),
/// left `undefined` for info, the level of most lines (a call's line), so
/// that one costs no N-API call to make a number. A logger that throws
/// must not fail the tool call; the throw is dropped in JS, since an owned
/// call's line is written in the same call into V8 that builds its result.
const WRITE: &str =
    "(log) => function clawIdentityWrite(line, level = 0) { try { log[level](line); } catch {} }";

pub fn level_index(level: Level) -> u32 {
    match level {
        Level::Info => 0,
        Level::Warn => 1,
        Level::Error => 2,
    }
}

/// Every line logged off the JS thread (the watcher's) or while the JS
/// thread is in a call, in the order it was logged: the JS thread takes them
/// all at once, so a line never overtakes an earlier one (a watcher's
/// warning and its recovery line, say). While the JS thread is in a call it
/// delivers them itself before returning (`hold`/`release`); otherwise a
/// line wakes it through a threadsafe function.
pub struct Outbox {
    lines: Mutex<VecDeque<(Level, String)>>,
    /// The JS thread delivers the lines itself at its next release.
    held: AtomicBool,
    /// Lines are waiting (checked without the lock on every call).
    waiting: AtomicBool,
}

impl Outbox {
    fn new() -> Outbox {
        Outbox {
            lines: Mutex::new(VecDeque::new()),
            held: AtomicBool::new(true), // until the layer is made
            waiting: AtomicBool::new(false),
        }
    }

    /// Lines logged from now on wait for the JS thread's `release`.
    pub fn hold(&self) {
        self.held.store(true, Ordering::SeqCst);
    }

    /// Ends a hold; whether lines wait, which the JS thread must deliver now.
    /// A line queued meanwhile either saw the hold gone (and woke the JS
    /// thread) or is seen waiting here.
    pub fn release(&self) -> bool {
        self.held.store(false, Ordering::SeqCst);
        self.waiting.load(Ordering::SeqCst)
    }

    /// Queues a line; true when it must wake the JS thread. None: dropped.
    fn push(&self, level: Level, line: String) -> Option<bool> {
        let mut lines = self.lines.lock();
        if lines.len() >= MAX_WAITING {
            return None;
        }
        lines.push_back((level, line));
        self.waiting.store(true, Ordering::SeqCst);
        Some(!self.held.load(Ordering::SeqCst))
    }

    /// Every waiting line, oldest first.
    fn take(&self) -> VecDeque<(Level, String)> {
        let mut lines = self.lines.lock();
        self.waiting.store(false, Ordering::SeqCst);
        std::mem::take(&mut *lines)
    }
}

pub type Pending = Arc<Outbox>;

pub fn function_ref<'e>(env: &'e Env, f: Js<'e>) -> Result<FunctionRef<Js<'static>, Js<'static>>> {
    // SAFETY: `f` is a live function of this env, checked by the caller.
    unsafe { Function::<Js<'static>, Js<'static>>::from_napi_value(env.raw(), f.raw())? }
        .create_ref()
}

impl JsLogger {
    /// The `logger` option (`{ info, warn, error }`), or `console.warn` and
    /// `console.error` without info lines when it is absent. Returns the
    /// logger and the layer's `Log`, whose lines from other threads reach the
    /// same methods through a threadsafe function.
    pub fn new(env: &Env, logger: Option<Js<'_>>) -> Result<(JsLogger, Log, Pending)> {
        let (target, with_info) = match logger {
            Some(l) => (l, true),
            None => (Js::global(env)?.get_unchecked(c"console")?, false),
        };
        let method = |name: &std::ffi::CStr| -> Result<Js<'_>> {
            let f = target
                .get(name)?
                .filter(|f| f.kind().ok() == Some(Kind::Function));
            let f = f.ok_or_else(|| {
                Error::new(
                    Status::InvalidArg,
                    format!(
                        "claw-identity: options.logger must have info, warn and error functions (missing {})",
                        name.to_string_lossy()
                    ),
                )
            })?;
            // Bound, so a method that uses `this` works.
            f.bind_this(target)
        };
        let methods = Js::array(env.raw(), 3)?;
        if with_info {
            methods.set_index(level_index(Level::Info), method(c"info")?)?;
        }
        methods.set_index(level_index(Level::Warn), method(c"warn")?)?;
        methods.set_index(level_index(Level::Error), method(c"error")?)?;
        let factory: Js<'_> = env.run_script(WRITE)?;
        let write = factory
            .call(Js::undefined_in(env)?, &[methods])
            .map_err(Error::from_reason)?;
        let outbox: Pending = Arc::new(Outbox::new());
        // The wake-up delivers what waits, on the JS thread, through its own
        // reference to `write`.
        let deliver = JsLogger {
            write: function_ref(env, write)?,
            info: with_info,
        };
        let waiting = outbox.clone();
        let wake: WakeFn = env
            // A no-op: the callback delivers the lines. (A Rust closure as a
            // JS function is not available on the WebAssembly build.)
            .run_script::<_, Function<(), ()>>("(function clawIdentityLogWake() {})")?
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .callee_handled::<false>()
            .max_queue_size::<4>()
            .build_callback(move |ctx: ThreadsafeCallContext<()>| {
                for (level, line) in waiting.take() {
                    deliver.write(&ctx.env, level, &line);
                }
                Ok(())
            })?;
        let queued = outbox.clone();
        let write_line = move |level: Level, line: String| match queued.push(level, line) {
            None => false,
            Some(false) => true,
            Some(true) => {
                // Not Ok: the queue is full (a wake-up is already on its way)
                // or the function is closing; either way the line waits.
                let _ = wake.call((), ThreadsafeFunctionCallMode::NonBlocking);
                true
            }
        };
        let log = Log::new(Some(Box::new(write_line)), with_info);
        let logger = JsLogger {
            write: function_ref(env, write)?,
            info: with_info,
        };
        Ok((logger, log, outbox))
    }

    /// Whether the logger takes lines of `level` (info lines only from a
    /// logger that has `info`).
    pub fn takes(&self, level: Level) -> bool {
        level != Level::Info || self.info
    }

    /// `write(level, line)`, for `rewrite.js`.
    pub fn write_fn<'e>(&self, env: &'e Env) -> Result<Js<'e>> {
        Js::of(env, self.write.borrow_back(env)?)
    }

    /// Delivers every waiting line, in order, on the JS thread.
    pub fn flush(&self, env: &Env, pending: &Pending) {
        for (level, line) in pending.take() {
            self.write(env, level, &line);
        }
    }

    /// Delivers what waits, if anything does (one atomic load otherwise).
    pub fn flush_waiting(&self, env: &Env, pending: &Pending) {
        if pending.waiting.load(Ordering::SeqCst) {
            self.flush(env, pending);
        }
    }

    /// Ends a call's hold: delivers what waits.
    pub fn release(&self, env: &Env, pending: &Pending) {
        if pending.release() {
            self.flush(env, pending);
        }
    }

    /// A line as `write` takes it, `[line, level]`, or `None` when the
    /// logger does not take its level. `undefined` is the callback's.
    fn args<'e>(
        &self,
        env: &'e Env,
        level: Level,
        line: &str,
        undefined: Js<'e>,
    ) -> Result<Option<[Js<'e>; 2]>> {
        if !self.takes(level) {
            return Ok(None);
        }
        let raw = env.raw();
        let level = match level {
            Level::Info => undefined,
            _ => Js::from_u32(raw, level_index(level))?,
        };
        Ok(Some([Js::string(raw, line)?, level]))
    }

    /// A call's line as `write` takes it, once the lines logged before it
    /// are delivered; `None` when the call has no line.
    pub fn call_line<'e>(
        &self,
        env: &'e Env,
        pending: &Pending,
        line: Option<&LineBuf>,
        undefined: Js<'e>,
    ) -> Result<Option<[Js<'e>; 2]>> {
        let Some(line) = line else { return Ok(None) };
        self.flush_waiting(env, pending);
        self.args(env, line.level(), line.as_str(), undefined)
    }

    /// Delivers a call's line now, after the lines logged before it.
    pub fn write_call_line(&self, env: &Env, pending: &Pending, line: Option<&LineBuf>) {
        let Ok(undefined) = Js::undefined_in(env) else {
            return;
        };
        if let Ok(Some(args)) = self.call_line(env, pending, line, undefined) {
            self.call(env, args);
        }
    }

    /// Delivers one line now, on the JS thread.
    pub fn write(&self, env: &Env, level: Level, line: &str) {
        let Ok(undefined) = Js::undefined_in(env) else {
            return;
        };
        if let Ok(Some(args)) = self.args(env, level, line, undefined) {
            self.call(env, args);
        }
    }

    /// `write` never throws, and a line that can't be made is dropped.
    fn call(&self, env: &Env, args: [Js<'_>; 2]) {
        let _ = (|| -> Result<()> {
            let this = Js::undefined_in(env)?;
            self.write_fn(env)?
                .call(this, &args)
                .map_err(Error::from_reason)?;
            Ok(())
        })();
    }
}

/// OpenClaw's session store as the rules need it: `ensure(agentId,
/// sessionKey)` creates a session if it is missing; `entryOf(agentId,
/// sessionKey)` returns the fields of its entry the rules read
/// (`{ spawnedBy, spawnedCwd, spawnedWorkspaceDir }`), or, from a store
/// without it, `spawnerOf(agentId, sessionKey)` its `spawnedBy` alone.
pub struct JsSessions {
    ensure: FunctionRef<Js<'static>, Js<'static>>,
    entry_of: Entry,
    /// `now(agentId, sessionKey)`: `{ sandboxed, execHost, execNode,
    /// elevatedLevel, permissionMode }` as OpenClaw says them now (the
    /// posture's per-chat check); a store without it knows no override.
    now: Option<FunctionRef<Js<'static>, Js<'static>>>,
}

enum Entry {
    Of(FunctionRef<Js<'static>, Js<'static>>),
    SpawnerOf(FunctionRef<Js<'static>, Js<'static>>),
}

impl JsSessions {
    pub fn new(env: &Env, store: Js<'_>) -> Result<JsSessions> {
        let method =
            |name: &std::ffi::CStr| -> Result<Option<FunctionRef<Js<'static>, Js<'static>>>> {
                match store
                    .get(name)?
                    .filter(|f| f.kind().ok() == Some(Kind::Function))
                {
                    Some(f) => Ok(Some(function_ref(env, f.bind_this(store)?)?)),
                    None => Ok(None),
                }
            };
        let missing = || {
            Error::new(
                Status::InvalidArg,
                "claw-identity: options.sessions must have ensure and entryOf (or spawnerOf) functions",
            )
        };
        let entry_of = match (method(c"entryOf")?, method(c"spawnerOf")?) {
            (Some(f), _) => Entry::Of(f),
            (None, Some(f)) => Entry::SpawnerOf(f),
            (None, None) => return Err(missing()),
        };
        Ok(JsSessions {
            ensure: method(c"ensure")?.ok_or_else(missing)?,
            entry_of,
            now: method(c"now")?,
        })
    }

    fn call<'e>(
        env: &'e Env,
        f: &FunctionRef<Js<'static>, Js<'static>>,
        agent_id: &str,
        session_key: &str,
    ) -> std::result::Result<Js<'e>, String> {
        let e = |e: Error| e.to_string();
        let f = Js::of(env, f.borrow_back(env).map_err(e)?).map_err(e)?;
        let args = [
            Js::string(env.raw(), agent_id).map_err(e)?,
            Js::string(env.raw(), session_key).map_err(e)?,
        ];
        f.call(Js::undefined_in(env).map_err(e)?, &args)
    }

    /// Starts creating the session; the promise (or value) `ensure` returned.
    pub fn ensure<'e>(
        &self,
        env: &'e Env,
        agent_id: &str,
        session_key: &str,
    ) -> std::result::Result<Js<'e>, String> {
        Self::call(env, &self.ensure, agent_id, session_key)
    }

    /// `session_key`'s entry, as the rules read it.
    fn entry(
        &self,
        env: &Env,
        agent_id: &str,
        session_key: &str,
    ) -> std::result::Result<Option<SessionEntry>, String> {
        let e = |e: Error| e.to_string();
        let text = |v: Option<Js<'_>>| -> std::result::Result<Option<String>, String> {
            match v {
                Some(v) => v.host_str().map_err(e).map(|s| s.filter(|s| !s.is_empty())),
                None => Ok(None),
            }
        };
        match &self.entry_of {
            Entry::SpawnerOf(f) => Ok(Some(SessionEntry {
                spawned_by: text(Some(Self::call(env, f, agent_id, session_key)?))?,
                ..SessionEntry::default()
            })),
            Entry::Of(f) => {
                let v = Self::call(env, f, agent_id, session_key)?;
                if !v.is_object().map_err(e)? {
                    return Ok(None);
                }
                Ok(Some(SessionEntry {
                    spawned_by: text(v.get(c"spawnedBy").map_err(e)?)?,
                    spawned_cwd: text(v.get(c"spawnedCwd").map_err(e)?)?
                        .map(|p| paths::host_path(&p)),
                    spawned_workspace: text(v.get(c"spawnedWorkspaceDir").map_err(e)?)?
                        .map(|p| paths::host_path(&p)),
                }))
            }
        }
    }
}

impl JsSessions {
    /// What OpenClaw says of `session_key` now; `None` from a store that
    /// can't tell. A throw is an error (the call is then refused).
    fn now(
        &self,
        env: &Env,
        agent_id: &str,
        session_key: &str,
    ) -> std::result::Result<Option<SessionNow>, String> {
        let Some(f) = &self.now else {
            return Ok(None);
        };
        let e = |e: Error| e.to_string();
        let v = Self::call(env, f, agent_id, session_key)?;
        if !v.is_object().map_err(e)? {
            return Err("the session store's now() returned no object".into());
        }
        let text = |name: &std::ffi::CStr| -> std::result::Result<Option<String>, String> {
            match v.get(name).map_err(e)? {
                Some(v) => v.host_str().map_err(e).map(|s| s.filter(|s| !s.is_empty())),
                None => Ok(None),
            }
        };
        let sandboxed = match v.get(c"sandboxed").map_err(e)? {
            Some(b) if b.kind().map_err(e)? == Kind::Boolean => b.bool().map_err(e)?,
            _ => return Err("OpenClaw gave no sandboxed flag for the session".into()),
        };
        Ok(Some(SessionNow {
            sandboxed,
            exec_host: text(c"execHost")?,
            exec_node: text(c"execNode")?,
            elevated: text(c"elevatedLevel")?,
            permission_mode: text(c"permissionMode")?,
        }))
    }
}

/// What the pipeline asks of OpenClaw and Node within one callback on the
/// JS thread: the session store (if the plugin has one) and Node's
/// `url.fileURLToPath`, which OpenClaw's tools call.
pub struct HostIn<'s> {
    pub sessions: Option<&'s JsSessions>,
    pub file_url_to_path: &'s FunctionRef<Js<'static>, Js<'static>>,
    pub env: &'s Env,
}

impl Host for HostIn<'_> {
    fn session(
        &self,
        agent_id: &str,
        session_key: &str,
    ) -> std::result::Result<Option<SessionEntry>, String> {
        match self.sessions {
            Some(s) => s.entry(self.env, agent_id, session_key),
            None => Ok(None),
        }
    }

    fn session_now(
        &self,
        agent_id: &str,
        session_key: &str,
    ) -> std::result::Result<Option<SessionNow>, String> {
        match self.sessions {
            Some(s) => s.now(self.env, agent_id, session_key),
            None => Ok(None),
        }
    }

    fn file_url_to_path(&self, url: &str) -> Option<std::path::PathBuf> {
        let env = self.env;
        let f = Js::of(env, self.file_url_to_path.borrow_back(env).ok()?).ok()?;
        let arg = Js::string(env.raw(), url).ok()?;
        // Node throws where OpenClaw then keeps the text as a path.
        let out = f.call(Js::undefined_in(env).ok()?, &[arg]).ok()?;
        out.host_str().ok().flatten().map(|p| paths::host_path(&p))
    }
}

/// Records what this process knows of itself, for the protected locations
/// (`claw_identity_core::protected::Process`): the addon's own file, as Node
/// loaded it (`node_api_get_module_file_name`, a `file:` URL), the Node
/// binary and the script it runs. Once per process; a failure leaves a fact
/// out and is no error (the plugin passes its own directories too).
pub fn note_process(env: &Env) {
    let read = || -> Result<claw_identity_core::protected::Process> {
        let url = env.get_module_file_name().unwrap_or_default();
        let f: Js<'_> = env.run_script(
            "(u) => { const p = (x) => (typeof x === 'string' ? x : ''); let a = ''; try { a = process.getBuiltinModule('node:url').fileURLToPath(u); } catch {} return [a, p(process.execPath), p(process.argv[1])]; }",
        )?;
        let out = f
            .call(Js::undefined_in(env)?, &[Js::string(env.raw(), &url)?])
            .map_err(Error::from_reason)?;
        let at = |i: u32| -> Result<Option<std::path::PathBuf>> {
            Ok(out
                .get_index(i)?
                .host_str()?
                .filter(|s| !s.is_empty())
                .map(|s| claw_identity_core::paths::host_path(&s)))
        };
        Ok(claw_identity_core::protected::Process {
            addon: at(0)?,
            exec_path: at(1)?,
            argv1: at(2)?,
        })
    };
    if let Ok(p) = read() {
        claw_identity_core::protected::Process::set(p);
    }
}
