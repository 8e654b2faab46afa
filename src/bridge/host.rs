//! What the layer calls back into JS: the logger (OpenClaw's `api.logger`)
//! and the session store (`api.runtime.agent.session`, adapted by index.js).

use std::collections::VecDeque;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use parking_lot::Mutex;

use super::js::{Js, Kind};
use claw_identity_core::log::{Level, Log};

/// Wakes the JS thread to deliver the lines waiting in the outbox: weak, so
/// a live layer never keeps Node running. At most one wake-up is on its way.
type WakeFn = ThreadsafeFunction<(), (), (), Status, false, true, 4>;

/// The most lines that wait for the JS thread; past it a line is dropped
/// (and counted), so a stalled event loop never grows a queue.
const MAX_WAITING: usize = 1024;

/// The JS logger, for lines logged on the JS thread (the per-call line, the
/// load line): called directly, in order, before the call returns.
pub struct JsLogger {
    /// `None`: the logger discards info lines, so they are not even formatted.
    info: Option<FunctionRef<Js, Js>>,
    warn: FunctionRef<Js, Js>,
    error: FunctionRef<Js, Js>,
}

/// Every line on its way to the JS logger, of every level, in the order it
/// was logged: the JS thread takes them all at once, so a line never
/// overtakes an earlier one (a watcher's warning and its recovery line, say).
/// While the JS thread is in `Layer::new` or a call, it delivers them itself
/// before returning (`hold`, then `JsLogger::flush`); otherwise a line wakes
/// it through a threadsafe function.
pub struct Outbox {
    state: Mutex<OutboxState>,
}

struct OutboxState {
    lines: VecDeque<(Level, String)>,
    /// The JS thread delivers the lines itself at its next flush.
    held: bool,
    /// A wake-up is on its way to the JS thread.
    woken: bool,
}

pub type Pending = Arc<Outbox>;

impl Outbox {
    /// Lines wait for the JS thread's next `JsLogger::flush` (it is in a call).
    pub fn hold(&self) {
        self.state.lock().held = true;
    }

    /// Queues a line; true when it must wake the JS thread. None: dropped.
    fn push(&self, level: Level, line: String) -> Option<bool> {
        let mut s = self.state.lock();
        if s.lines.len() >= MAX_WAITING {
            return None;
        }
        s.lines.push_back((level, line));
        let wake = !s.held && !s.woken;
        s.woken |= wake;
        Some(wake)
    }

    /// Every waiting line, oldest first; `release` ends a hold.
    fn take(&self, release: bool) -> VecDeque<(Level, String)> {
        let mut s = self.state.lock();
        if release {
            s.held = false;
        } else {
            s.woken = false;
        }
        std::mem::take(&mut s.lines)
    }
}

impl JsLogger {
    /// The `logger` option (`{ info, warn, error }`), or `console.warn` and
    /// `console.error` without info lines when it is absent. Returns the
    /// logger and the layer's `Log`, whose lines from other threads reach the
    /// same methods through threadsafe functions.
    pub fn new(env: &Env, logger: Option<Js>) -> Result<(JsLogger, Log, Pending)> {
        let (target, with_info) = match logger {
            Some(l) => (l, true),
            None => {
                // SAFETY: `get_global` returns a live value of this env.
                let global = unsafe {
                    Js::from_raw(
                        env.raw(),
                        napi::JsGlobal::to_napi_value(env.raw(), env.get_global()?)?,
                    )
                };
                (global.get_unchecked(c"console")?, false)
            }
        };
        let method = |name: &std::ffi::CStr| -> Result<Js> {
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
            // Bound, so a method that uses `this` works from the watcher thread too.
            f.bind_this(target)
        };
        let info = if with_info {
            Some(method(c"info")?)
        } else {
            None
        };
        let (warn, error) = (method(c"warn")?, method(c"error")?);
        let func_ref = |f: Js| -> Result<FunctionRef<Js, Js>> {
            // SAFETY: `f` is a live function of this env.
            unsafe { Function::<Js, Js>::from_napi_value(env.raw(), f.raw())? }.create_ref()
        };
        let refs = || -> Result<JsLogger> {
            Ok(JsLogger {
                info: info.map(func_ref).transpose()?,
                warn: func_ref(warn)?,
                error: func_ref(error)?,
            })
        };
        let outbox: Pending = Arc::new(Outbox {
            state: Mutex::new(OutboxState {
                lines: VecDeque::new(),
                held: true, // until `Layer::new` is done
                woken: false,
            }),
        });
        // The wake-up delivers what waits, on the JS thread, through its own
        // references to the logger's methods.
        let deliver = refs()?;
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
                for (level, line) in waiting.take(false) {
                    deliver.write(&ctx.env, level, &line);
                }
                Ok(())
            })?;
        let queued = outbox.clone();
        let write = move |level: Level, line: String| match queued.push(level, line) {
            None => false,
            Some(false) => true,
            Some(true) => {
                // Not Ok: the queue is full (a wake-up is already on its way)
                // or the function is closing; either way the line waits.
                let _ = wake.call((), ThreadsafeFunctionCallMode::NonBlocking);
                true
            }
        };
        let log = Log::new(Some(Box::new(write)), with_info);
        Ok((refs()?, log, outbox))
    }

    /// Delivers every waiting line, in order, on the JS thread, and ends the
    /// hold: later lines wake the JS thread themselves.
    pub fn flush(&self, env: &Env, pending: &Pending) {
        for (level, line) in pending.take(true) {
            self.write(env, level, &line);
        }
    }

    /// Delivers one line now, on the JS thread. A logger that throws is ignored.
    pub fn write(&self, env: &Env, level: Level, line: &str) {
        let f = match level {
            Level::Info => match &self.info {
                Some(f) => f,
                None => return,
            },
            Level::Warn => &self.warn,
            Level::Error => &self.error,
        };
        let _ = (|| -> std::result::Result<(), String> {
            let f = f.borrow_back(env).map_err(|e| e.to_string())?;
            // SAFETY: the function and the string are live values of this env.
            let f = unsafe {
                Js::from_raw(
                    env.raw(),
                    Function::to_napi_value(env.raw(), f).map_err(|e| e.to_string())?,
                )
            };
            let text = Js::string(env.raw(), line).map_err(|e| e.to_string())?;
            f.call(
                Js::undefined(env.raw()).map_err(|e| e.to_string())?,
                &[text],
            )
            .map(drop)
        })();
    }
}

/// OpenClaw's session store as the rules need it: `ensure(agentId,
/// sessionKey)` creates a session if it is missing; `spawnerOf(agentId,
/// sessionKey)` returns the session that spawned a sub-agent session.
pub struct JsSessions {
    ensure: FunctionRef<Js, Js>,
    spawner_of: FunctionRef<Js, Js>,
}

impl JsSessions {
    pub fn new(env: &Env, store: Js) -> Result<JsSessions> {
        let method = |name: &std::ffi::CStr| -> Result<FunctionRef<Js, Js>> {
            let f = store
                .get(name)?
                .filter(|f| f.kind().ok() == Some(Kind::Function))
                .ok_or_else(|| {
                    Error::new(
                        Status::InvalidArg,
                        "claw-identity: options.sessions must have ensure and spawnerOf functions",
                    )
                })?;
            let f = f.bind_this(store)?;
            // SAFETY: `f` is a live function of this env.
            unsafe { Function::<Js, Js>::from_napi_value(env.raw(), f.raw())? }.create_ref()
        };
        Ok(JsSessions {
            ensure: method(c"ensure")?,
            spawner_of: method(c"spawnerOf")?,
        })
    }

    fn call(
        env: &Env,
        f: &FunctionRef<Js, Js>,
        agent_id: &str,
        session_key: &str,
    ) -> std::result::Result<Js, String> {
        let raw = env.raw();
        let f = f.borrow_back(env).map_err(|e| e.to_string())?;
        // SAFETY: live values of this env.
        let f = unsafe {
            Js::from_raw(
                raw,
                Function::to_napi_value(raw, f).map_err(|e| e.to_string())?,
            )
        };
        let args = [
            Js::string(raw, agent_id).map_err(|e| e.to_string())?,
            Js::string(raw, session_key).map_err(|e| e.to_string())?,
        ];
        f.call(Js::undefined(raw).map_err(|e| e.to_string())?, &args)
    }

    /// The session that spawned `session_key`, if the store knows one.
    pub fn spawner_of(
        &self,
        env: &Env,
        agent_id: &str,
        session_key: &str,
    ) -> std::result::Result<Option<String>, String> {
        let v = Self::call(env, &self.spawner_of, agent_id, session_key)?;
        v.host_str().map_err(|e| e.to_string())
    }

    /// Starts creating the session; the promise (or value) `ensure` returned.
    pub fn ensure(
        &self,
        env: &Env,
        agent_id: &str,
        session_key: &str,
    ) -> std::result::Result<Js, String> {
        Self::call(env, &self.ensure, agent_id, session_key)
    }
}
