//! The WebAssembly build's [`Host`]: Node's own `fs`, through `host_fs.js`,
//! for the owners, modes, private files and real paths WASI lacks. Every
//! call is made on the JS thread (the WebAssembly build runs no threads of
//! its own), from within an N-API callback.

use std::io;
use std::path::{Path, PathBuf};
use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;

use super::js::{Js, Kind};
use claw_identity_core::sys::{Host, HostStat};

pub struct NodeFs {
    env: sys::napi_env,
    /// The object `host_fs.js` makes, held for the env's lifetime.
    host: sys::napi_ref,
}

impl NodeFs {
    pub fn new(env: &Env) -> Result<NodeFs> {
        let host: Js = env.run_script(include_str!("host_fs.js"))?;
        let mut r = ptr::null_mut();
        // SAFETY: `host` is a live object of this env; the reference keeps it.
        let status = unsafe { sys::napi_create_reference(env.raw(), host.raw(), 1, &mut r) };
        if status != sys::Status::napi_ok {
            return Err(Error::from_reason(
                "claw-identity: can't hold the host file system",
            ));
        }
        Ok(NodeFs {
            env: env.raw(),
            host: r,
        })
    }

    /// Calls `host.<name>(arg)`: the array it returns, as strings, or the
    /// error code it returns, as an io::Error.
    fn call(&self, name: &std::ffi::CStr, arg: Option<&Path>) -> io::Result<Vec<String>> {
        let fail = |e: Error| io::Error::other(format!("host file system: {e}"));
        let mut raw = ptr::null_mut();
        // SAFETY: the reference is live for the env's lifetime.
        let status = unsafe { sys::napi_get_reference_value(self.env, self.host, &mut raw) };
        if status != sys::Status::napi_ok {
            return Err(io::Error::other("host file system: its object is gone"));
        }
        // SAFETY: a live value of this env, within the current callback.
        let host = unsafe { Js::from_raw(self.env, raw) };
        let f = host.get_unchecked(name).map_err(fail)?;
        let args = match arg {
            Some(p) => vec![Js::string(self.env, &p.to_string_lossy()).map_err(fail)?],
            None => Vec::new(),
        };
        let out = f.call(host, &args).map_err(io::Error::other)?;
        match out.kind().map_err(fail)? {
            Kind::String => Err(os_error(&out.host_str().map_err(fail)?.unwrap_or_default())),
            Kind::Array => (0..out.array_len().map_err(fail)?)
                .map(|i| {
                    let v = out.get_index(i).map_err(fail)?;
                    Ok(v.host_str().map_err(fail)?.unwrap_or_default())
                })
                .collect(),
            _ => Err(io::Error::other("host file system: unexpected result")),
        }
    }
}

/// An error code from Node (`ENOENT`, ...) as the io::Error std would give.
fn os_error(code: &str) -> io::Error {
    let kind = match code {
        "ENOENT" | "ENOTDIR" => io::ErrorKind::NotFound,
        "EACCES" | "EPERM" => io::ErrorKind::PermissionDenied,
        "EEXIST" => io::ErrorKind::AlreadyExists,
        "ENOSYS" => io::ErrorKind::Unsupported,
        _ => io::ErrorKind::Other,
    };
    let text = match code {
        "ENOSYS" => "this platform has no file owners or permission bits (Windows)".to_owned(),
        _ => code.to_owned(),
    };
    io::Error::new(kind, text)
}

fn number<T: std::str::FromStr>(v: &[String], i: usize) -> io::Result<T> {
    v.get(i)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other("host file system: malformed stat"))
}

fn host_stat(v: &[String]) -> io::Result<HostStat> {
    Ok(HostStat {
        dev: number(v, 0)?,
        ino: number(v, 1)?,
        uid: number(v, 2)?,
        mode: number(v, 3)?,
    })
}

impl Host for NodeFs {
    fn stat(&self, path: &Path) -> io::Result<HostStat> {
        host_stat(&self.call(c"stat", Some(path))?)
    }

    fn euid(&self) -> io::Result<u32> {
        number(&self.call(c"euid", None)?, 0)
    }

    fn pid(&self) -> io::Result<u32> {
        number(&self.call(c"pid", None)?, 0)
    }

    fn env_var(&self, name: &str) -> io::Result<Option<String>> {
        Ok(self.call(c"env", Some(Path::new(name)))?.into_iter().next())
    }

    fn create_private(&self, path: &Path) -> io::Result<HostStat> {
        host_stat(&self.call(c"createPrivate", Some(path))?)
    }

    fn mkdir_private(&self, dir: &Path) -> io::Result<()> {
        self.call(c"mkdirPrivate", Some(dir)).map(drop)
    }

    fn realpath(&self, path: &Path) -> io::Result<PathBuf> {
        let v = self.call(c"realpath", Some(path))?;
        v.into_iter()
            .next()
            .map(PathBuf::from)
            .ok_or_else(|| io::Error::other("host file system: malformed realpath"))
    }
}

/// Moves WASI's working directory ("/" at start) to the host's, so a
/// relative path means the same file to both.
pub fn chdir_to_host_cwd(fs: &NodeFs) {
    let cwd = fs
        .call(c"cwd", None)
        .ok()
        .and_then(|v| v.into_iter().next());
    if let Some(cwd) = cwd {
        let _ = std::env::set_current_dir(cwd);
    }
}
