//! What the layer calls back into JS: the logger (OpenClaw's `api.logger`)
//! and the session store (`api.runtime.agent.session`, adapted by index.js).

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use parking_lot::Mutex;

use super::js::{Js, Kind};
use crate::log::{Level, Log};

/// A logger method for lines from the watcher thread: weak, so a live layer
/// never keeps Node running; bounded, so a stalled event loop drops lines
/// instead of growing a queue.
type LineFn = ThreadsafeFunction<String, (), String, Status, false, true, 1024>;

/// The JS logger, for lines logged on the JS thread (the per-call line, the
/// load line): called directly, in order, before the call returns.
pub struct JsLogger {
    /// `None`: the logger discards info lines, so they are not even formatted.
    info: Option<FunctionRef<Js, Js>>,
    warn: FunctionRef<Js, Js>,
    error: FunctionRef<Js, Js>,
}

/// Lines logged while `Layer::new` runs wait here, then go out in order on
/// the JS thread; after that, watcher lines take the threadsafe functions.
pub type Pending = Arc<Mutex<Option<Vec<(Level, String)>>>>;

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

        let tsfn = |f: Js| -> Result<LineFn> {
            // SAFETY: `f` is a live function of this env.
            let f = unsafe { Function::<String, ()>::from_napi_value(env.raw(), f.raw())? };
            f.build_threadsafe_function::<String>()
                .weak::<true>()
                .callee_handled::<false>()
                .max_queue_size::<1024>()
                .build()
        };
        let lines = (info.map(tsfn).transpose()?, tsfn(warn)?, tsfn(error)?);
        let pending: Pending = Arc::new(Mutex::new(Some(Vec::new())));
        let queued = pending.clone();
        let write = move |level: Level, line: String| {
            if let Some(buf) = queued.lock().as_mut() {
                buf.push((level, line));
                return true;
            }
            let f = match level {
                Level::Info => match &lines.0 {
                    Some(f) => f,
                    None => return true,
                },
                Level::Warn => &lines.1,
                Level::Error => &lines.2,
            };
            f.call(line, ThreadsafeFunctionCallMode::NonBlocking) == Status::Ok
        };
        let log = Log::new(Some(Box::new(write)), with_info);
        let func_ref = |f: Js| -> Result<FunctionRef<Js, Js>> {
            // SAFETY: `f` is a live function of this env.
            unsafe { Function::<Js, Js>::from_napi_value(env.raw(), f.raw())? }.create_ref()
        };
        let logger = JsLogger {
            info: info.map(func_ref).transpose()?,
            warn: func_ref(warn)?,
            error: func_ref(error)?,
        };
        Ok((logger, log, pending))
    }

    /// Sends the lines queued while the layer started, then lets later lines
    /// from other threads take the threadsafe functions.
    pub fn flush(&self, env: &Env, pending: &Pending) {
        let lines = pending.lock().take().unwrap_or_default();
        for (level, line) in lines {
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
