//! The WebAssembly build's [`Host`]: Node's own `fs`, through `host_fs.js`,
//! for the owners, modes, private files and real paths WASI lacks, and on
//! Windows the owner and DACL, through OpenClaw's fs-safe. Every
//! call is made on the JS thread (the WebAssembly build runs no threads of
//! its own), from within an N-API callback.

use std::io;
use std::path::{Path, PathBuf};

use napi::bindgen_prelude::*;

use super::host::function_ref;
use super::js::{Js, Kind};
use claw_identity_core::acl::Descriptor;
use claw_identity_core::paths::win32;
use claw_identity_core::sys::{Host, HostStat};

/// `host_fs.js`'s functions, by name.
pub struct NodeFs {
    env: Env,
    /// Node's `process.platform` is `win32` (read once, at install).
    windows: bool,
    methods: Vec<(
        &'static std::ffi::CStr,
        FunctionRef<Js<'static>, Js<'static>>,
    )>,
}

const METHODS: [&std::ffi::CStr; 12] = [
    c"stat",
    c"platform",
    c"windowsSecurity",
    c"euid",
    c"createPrivate",
    c"mkdirPrivate",
    c"realpath",
    c"cwd",
    c"pid",
    c"env",
    c"homedir",
    c"fileUrlToPath",
];

impl NodeFs {
    pub fn new(env: &Env) -> Result<NodeFs> {
        let host: Js<'_> = env.run_script(include_str!("host_fs.js"))?;
        let mut methods = Vec::new();
        for name in METHODS {
            // `host_fs.js` makes every one of these a function.
            methods.push((name, function_ref(env, host.get_unchecked(name)?)?));
        }
        let mut fs = NodeFs {
            env: *env,
            windows: false,
            methods,
        };
        fs.windows = fs
            .call(c"platform", None)
            .is_ok_and(|v| v.first().is_some_and(|p| p == "win32"));
        Ok(fs)
    }

    /// A path from Node as the Rust code names it: on Windows, the guest
    /// path WASI opens it by (`C:\a` is `/C:/a`, `paths::win32`).
    fn guest(&self, host: &str) -> PathBuf {
        if self.windows {
            win32::resolve(Path::new("/"), host)
        } else {
            PathBuf::from(host)
        }
    }

    /// Calls `host.<name>(arg)`: the array it returns, as strings, or the
    /// error code it returns, as an io::Error.
    fn call(&self, name: &std::ffi::CStr, arg: Option<&Path>) -> io::Result<Vec<String>> {
        let fail = |e: Error| io::Error::other(format!("host file system: {e}"));
        let env = &self.env;
        let f = self
            .methods
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| io::Error::other("host file system: no such function"))?;
        let f = Js::of(env, f.1.borrow_back(env).map_err(fail)?).map_err(fail)?;
        // On Windows, a path goes to Node as Windows names it (`/C:/a` is `C:\a`).
        let text = |p: &Path| {
            if self.windows && name != c"env" {
                win32::to_host(p)
            } else {
                p.to_string_lossy().into_owned()
            }
        };
        let args = match arg {
            Some(p) => vec![Js::string(env.raw(), &text(p)).map_err(fail)?],
            None => Vec::new(),
        };
        let out = f
            .call(Js::undefined_in(env).map_err(fail)?, &args)
            .map_err(io::Error::other)?;
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

/// Installs Node's `fs` as this thread's host file system (`sys::set_host`),
/// and moves WASI's working directory to Node's.
pub fn install(env: &Env) -> Result<()> {
    let fs = NodeFs::new(env)?;
    chdir_to_host_cwd(&fs);
    claw_identity_core::sys::set_host(Box::new(fs));
    Ok(())
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

    fn is_windows(&self) -> bool {
        self.windows
    }

    fn windows_security(&self, path: &Path) -> io::Result<Descriptor> {
        let v = self.call(c"windowsSecurity", Some(path))?;
        let json = v
            .first()
            .ok_or_else(|| io::Error::other("host file system: malformed ACL"))?;
        serde_json::from_str(json).map_err(|e| {
            io::Error::other(format!(
                "OpenClaw's fs-safe gave an owner and DACL of an unexpected shape ({e})"
            ))
        })
    }

    fn pid(&self) -> io::Result<u32> {
        number(&self.call(c"pid", None)?, 0)
    }

    fn env_var(&self, name: &str) -> io::Result<Option<String>> {
        Ok(self.call(c"env", Some(Path::new(name)))?.into_iter().next())
    }

    fn homedir(&self) -> io::Result<Option<String>> {
        Ok(self.call(c"homedir", None)?.into_iter().next())
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
            .map(|p| self.guest(&p))
            .ok_or_else(|| io::Error::other("host file system: malformed realpath"))
    }
}

/// Moves WASI's working directory ("/" at start) to the host's, so a
/// relative path means the same file to both.
fn chdir_to_host_cwd(fs: &NodeFs) {
    let cwd = fs
        .call(c"cwd", None)
        .ok()
        .and_then(|v| v.into_iter().next());
    if let Some(cwd) = cwd {
        let _ = std::env::set_current_dir(fs.guest(&cwd));
    }
}
