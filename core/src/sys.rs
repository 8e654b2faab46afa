//! What the crate needs from the operating system beyond portable std, for
//! each build: the native one (Unix: std's Unix extensions and libc) and the
//! WebAssembly one (`wasm32-wasip1-threads`, run by Node's WASI).
//!
//! WASI gives a file's identity (device, inode), size and times, and opens
//! files relative to a directory descriptor with `O_NOFOLLOW`, as Unix does.
//! It has no owner and no permission bits, and it can't create a file with a
//! mode. Those come from the host, Node's own `fs`, through [`Host`], which
//! the N-API bridge installs on the JS thread. An owner and mode from the
//! host count only for the very file WASI opened: the host's `stat` of its
//! path must name the same (device, inode), or the check fails.
//!
//! On a Windows host files have neither: there the host gives the owner and
//! DACL instead, as OpenClaw's fs-safe reads them, and the gate decides on
//! those ([`Access::Windows`], `crate::acl`).
//!
//! The WebAssembly build runs no threads of its own (its watcher runs on
//! Node's `fs.watch` and a JS timer), so every host call is made on the JS
//! thread.

use std::fs::File;
use std::io;
use std::path::Path;

pub use std::os::fd::{AsRawFd, FromRawFd};
#[cfg(unix)]
pub use std::os::unix::ffi::OsStrExt;
#[cfg(target_os = "wasi")]
pub use std::os::wasi::ffi::OsStrExt;

/// The home directory `~` stands for, as Node's `os.homedir()` (which
/// OpenClaw's `resolveUserPath` falls back to) finds it: `HOME` when it is
/// set and not empty, else the password database's entry of the effective
/// user.
pub fn home() -> Option<std::path::PathBuf> {
    match env_var("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Some(h.into()),
        None => passwd_home(),
    }
}

/// Bytes as an OS string (file names are bytes on Unix and WASI).
pub fn os_string(bytes: Vec<u8>) -> std::ffi::OsString {
    #[cfg(unix)]
    use std::os::unix::ffi::OsStringExt;
    #[cfg(target_os = "wasi")]
    use std::os::wasi::ffi::OsStringExt;
    std::ffi::OsString::from_vec(bytes)
}

/// A file's identity and what changes when it is written, replaced or
/// chmod-ed (its ctime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub is_dir: bool,
    pub is_file: bool,
}

/// Who owns a file and its permission bits (`mode & 0o7777`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub mode: u32,
}

/// Who may read and write a file, in its platform's terms. `owner_of`
/// fails with `Interrupted` when, on the WebAssembly build, the path no
/// longer names the file that was opened (a rename over it meanwhile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Unix, and the WebAssembly build on a Unix host: owner and mode bits.
    Unix(Owner),
    /// The WebAssembly build on a Windows host: the owner and DACL.
    Windows(crate::acl::Descriptor),
}

impl Access {
    /// How the gate's checks read it, for doctor.
    pub fn describe(&self) -> String {
        match self {
            Access::Unix(o) => format!("mode {:04o}, owner uid {}", o.mode, o.uid),
            Access::Windows(d) => format!(
                "owner {}, {} access entries",
                crate::acl::show(&d.owner_sid),
                d.aces.len()
            ),
        }
    }
}

fn from_libc(st: &libc::stat) -> FileStat {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    FileStat {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        size: st.st_size as u64,
        #[cfg(unix)]
        mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
        #[cfg(unix)]
        ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
        #[cfg(target_os = "wasi")]
        mtime_ns: ns(st.st_mtim.tv_sec as i64, st.st_mtim.tv_nsec as i64),
        #[cfg(target_os = "wasi")]
        ctime_ns: ns(st.st_ctim.tv_sec as i64, st.st_ctim.tv_nsec as i64),
        is_dir: st.st_mode & libc::S_IFMT == libc::S_IFDIR,
        is_file: st.st_mode & libc::S_IFMT == libc::S_IFREG,
    }
}

fn path_cstr(path: &Path) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
}

/// `stat(2)` of a path, following symlinks.
pub fn stat(path: &Path) -> io::Result<FileStat> {
    let c = path_cstr(path)?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: NUL-terminated path and a buffer the size of `stat`.
    if unsafe { libc::stat(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        let e = io::Error::last_os_error();
        #[cfg(target_os = "wasi")]
        if on_share(path) {
            return imp::share_stat(path);
        }
        return Err(e);
    }
    // SAFETY: stat succeeded, so it filled the buffer.
    Ok(from_libc(unsafe { &st.assume_init() }))
}

/// A Windows path on a share (`\\server\share\a`, the guest path
/// `/UNC:/server/share/a`, `paths::win32`): WASI has no preopen for it.
#[cfg(target_os = "wasi")]
fn on_share(path: &Path) -> bool {
    path.starts_with("/UNC:") && is_windows()
}

/// What the kernel opens for `path`: its real path (every symlink resolved)
/// and its identity. On Linux, one `open(O_PATH)` and a `readlink` of its
/// `/proc/self/fd` entry, whatever the path's depth: four system calls where
/// `realpath(3)` makes one per component (the map guard runs on every file
/// tool call, BENCHMARKS.md). Elsewhere, `canonicalize` and `stat`.
pub fn real_path(path: &Path) -> io::Result<(std::path::PathBuf, FileStat)> {
    #[cfg(target_os = "linux")]
    {
        let c = path_cstr(path)?;
        // SAFETY: a NUL-terminated path; the descriptor is closed below.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let file = unsafe { File::from_raw_fd(fd) };
        let st = fstat(&file)?;
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{fd}")) {
            if real.is_absolute() {
                return Ok((real, st));
            }
        }
        // No /proc (a container without it): the slow way, then check it is
        // still the same file.
        let real = canonicalize(path)?;
        let again = stat(&real)?;
        if (again.dev, again.ino) != (st.dev, st.ino) {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "it changed while it was resolved",
            ));
        }
        Ok((real, st))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let real = canonicalize(path)?;
        let st = stat(&real)?;
        Ok((real, st))
    }
}

/// Opens `path` to read, without blocking on a FIFO someone planted there.
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
    }
    #[cfg(not(unix))]
    {
        File::open(path)
    }
}

/// The target of `path` when it is a symlink (dangling or not).
pub fn link_target(path: &Path) -> Option<std::path::PathBuf> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.file_type().is_symlink())
        .and_then(|_| std::fs::read_link(path).ok())
}

/// `fstat(2)` of an open file.
pub fn fstat(file: &File) -> io::Result<FileStat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: a valid descriptor and a buffer the size of `stat`.
    if unsafe { libc::fstat(file.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstat succeeded, so it filled the buffer.
    Ok(from_libc(unsafe { &st.assume_init() }))
}

/// Opens a directory for reading, following symlinks.
pub fn open_dir(path: &Path) -> io::Result<File> {
    let c = path_cstr(path)?;
    // SAFETY: NUL-terminated path; the result is checked.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Fills `buf` from the system's random source; false if it can't.
pub fn random_bytes(buf: &mut [u8]) -> bool {
    #[cfg(unix)]
    // SAFETY: getrandom writes at most `buf.len()` bytes into `buf`.
    let ok =
        unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) } == buf.len() as isize;
    #[cfg(target_os = "wasi")]
    // SAFETY: getentropy writes at most `buf.len()` (<= 256) bytes into `buf`.
    let ok =
        buf.len() <= 256 && unsafe { libc::getentropy(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    ok
}

#[cfg(unix)]
mod imp {
    use super::*;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};

    pub fn euid() -> io::Result<u32> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        Ok(unsafe { libc::geteuid() })
    }

    pub fn pid() -> u32 {
        std::process::id()
    }

    pub fn env_var(name: &str) -> Option<std::ffi::OsString> {
        std::env::var_os(name)
    }

    /// The password database's home of the effective user, as libuv's
    /// `uv_os_homedir` falls back to when `HOME` is unset.
    pub fn passwd_home() -> Option<std::path::PathBuf> {
        let mut buf = vec![0u8; 4096];
        // SAFETY: a zeroed passwd is a valid out-parameter; getpwuid_r writes
        // at most `buf.len()` bytes into `buf`, which outlives `pw`'s strings.
        unsafe {
            let mut pw: libc::passwd = std::mem::zeroed();
            let mut out: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwuid_r(
                libc::geteuid(),
                &mut pw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut out,
            );
            if rc != 0 || out.is_null() || pw.pw_dir.is_null() {
                return None;
            }
            let dir = std::ffi::CStr::from_ptr(pw.pw_dir);
            Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(
                dir.to_bytes(),
            )))
        }
    }

    /// Unix files have owners and mode bits; only the WebAssembly build runs on Windows.
    pub fn is_windows() -> bool {
        false
    }

    pub fn owner_of(file: &File, _path: &Path) -> io::Result<Access> {
        let m = file.metadata()?;
        Ok(Access::Unix(Owner {
            uid: m.uid(),
            mode: m.mode() & 0o7777,
        }))
    }

    pub fn owner_at(path: &Path) -> io::Result<Access> {
        let m = std::fs::metadata(path)?;
        Ok(Access::Unix(Owner {
            uid: m.uid(),
            mode: m.mode() & 0o7777,
        }))
    }

    pub fn canonicalize(path: &Path) -> io::Result<std::path::PathBuf> {
        std::fs::canonicalize(path)
    }

    pub fn create_private(path: &Path) -> io::Result<File> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(path)
    }

    pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
}

#[cfg(target_os = "wasi")]
mod imp {
    use super::*;
    use std::cell::RefCell;

    thread_local! {
        static HOST: RefCell<Option<Box<dyn Host>>> = const { RefCell::new(None) };
    }

    /// Installs the host for this thread; the first one stays.
    pub fn set_host(host: Box<dyn Host>) {
        HOST.with(|h| {
            let mut h = h.borrow_mut();
            if h.is_none() {
                *h = Some(host);
            }
        });
    }

    fn host<R>(f: impl FnOnce(&dyn Host) -> io::Result<R>) -> io::Result<R> {
        HOST.with(|h| match h.borrow().as_deref() {
            Some(host) => f(host),
            None => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "no host file system on this thread (the WebAssembly build checks owners and modes through Node, on the JS thread)",
            )),
        })
    }

    pub fn euid() -> io::Result<u32> {
        host(|h| h.euid())
    }

    /// WASI has no process id (std panics); the host's, or 0.
    pub fn pid() -> u32 {
        host(|h| h.pid()).unwrap_or(0)
    }

    /// WASI's environment is a copy made at load; the host's is live
    /// (`process.env.HOME = ...` shows, as it does to the native build).
    pub fn env_var(name: &str) -> Option<std::ffi::OsString> {
        host(|h| h.env_var(name)).ok().flatten().map(Into::into)
    }

    /// Node's `os.homedir()` with `HOME` unset: the password database's.
    pub fn passwd_home() -> Option<std::path::PathBuf> {
        host(|h| h.homedir()).ok().flatten().map(Into::into)
    }

    /// The host is Windows (Node's `process.platform` is `win32`): files
    /// have an owner and a DACL there, not a uid and mode bits.
    pub fn is_windows() -> bool {
        host(|h| Ok(h.is_windows())).unwrap_or(false)
    }

    fn replaced() -> io::Error {
        // Interrupted: the gate opens it again.
        io::Error::new(
            io::ErrorKind::Interrupted,
            "it was replaced while it was checked",
        )
    }

    pub fn owner_of(file: &File, path: &Path) -> io::Result<Access> {
        let id = fstat(file)?;
        let same = |st: &HostStat| (st.dev, st.ino) == (id.dev, id.ino);
        let st = host(|h| h.stat(path))?;
        if !same(&st) {
            return Err(replaced());
        }
        if !is_windows() {
            return Ok(Access::Unix(Owner {
                uid: st.uid,
                mode: st.mode & 0o7777,
            }));
        }
        // The DACL is read by path: it counts only if the path still names
        // the file that was opened once it has been read.
        let acl = host(|h| h.windows_security(path))?;
        if !same(&host(|h| h.stat(path))?) {
            return Err(replaced());
        }
        Ok(Access::Windows(acl))
    }

    pub fn owner_at(path: &Path) -> io::Result<Access> {
        if is_windows() {
            return host(|h| h.windows_security(path)).map(Access::Windows);
        }
        let st = host(|h| h.stat(path))?;
        Ok(Access::Unix(Owner {
            uid: st.uid,
            mode: st.mode & 0o7777,
        }))
    }

    /// WASI has no realpath; the host's is Node's `fs.realpathSync`.
    pub fn canonicalize(path: &Path) -> io::Result<std::path::PathBuf> {
        host(|h| h.realpath(path))
    }

    pub fn create_private(path: &Path) -> io::Result<File> {
        // The host creates it 0600 (O_EXCL, O_NOFOLLOW); WASI then opens the
        // same file, which must still be the one the host made.
        let made = host(|h| h.create_private(path))?;
        let c = path_cstr(path)?;
        // SAFETY: NUL-terminated path; the result is checked.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let file = unsafe { File::from_raw_fd(fd) };
        let id = fstat(&file)?;
        if (id.dev, id.ino) != (made.dev, made.ino) {
            return Err(io::Error::other(
                "the temporary file was replaced right after it was created",
            ));
        }
        Ok(file)
    }

    pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
        host(|h| h.mkdir_private(dir))
    }

    /// A file on a share, which WASI can't open: its identity and type from
    /// the host's `stat` (the same libuv fields WASI gives for a drive's
    /// files); its size and times are not known (0).
    pub fn share_stat(path: &Path) -> io::Result<FileStat> {
        let st = host(|h| h.stat(path))?;
        let kind = st.mode & libc::S_IFMT;
        Ok(FileStat {
            dev: st.dev,
            ino: st.ino,
            size: 0,
            mtime_ns: 0,
            ctime_ns: 0,
            is_dir: kind == libc::S_IFDIR,
            is_file: kind == libc::S_IFREG,
        })
    }
}

pub use imp::*;

/// The host's `stat` of a path (following symlinks).
#[cfg(target_os = "wasi")]
#[derive(Debug, Clone, Copy)]
pub struct HostStat {
    pub dev: u64,
    pub ino: u64,
    pub uid: u32,
    pub mode: u32,
}

/// What the WebAssembly build asks of Node's `fs`. Errors carry the OS
/// error (`ENOENT` is `NotFound`, and so on).
#[cfg(target_os = "wasi")]
pub trait Host {
    fn stat(&self, path: &Path) -> io::Result<HostStat>;
    /// The effective uid; an error where the platform has none (Windows).
    fn euid(&self) -> io::Result<u32>;
    /// Node's `process.platform` is `win32`.
    fn is_windows(&self) -> bool;
    /// Windows: the owner and DACL of `path` (following symlinks), as
    /// OpenClaw's fs-safe reads them (`readOwnerAndDacl`).
    fn windows_security(&self, path: &Path) -> io::Result<crate::acl::Descriptor>;
    fn pid(&self) -> io::Result<u32>;
    fn env_var(&self, name: &str) -> io::Result<Option<String>>;
    /// Creates `path` exclusively, mode 0600, without following a symlink,
    /// and closes it; returns its identity.
    fn create_private(&self, path: &Path) -> io::Result<HostStat>;
    /// Creates `dir` and its missing parents, mode 0700.
    fn mkdir_private(&self, dir: &Path) -> io::Result<()>;
    /// The path with every symlink resolved, as realpath(3).
    fn realpath(&self, path: &Path) -> io::Result<std::path::PathBuf>;
    /// Node's `os.homedir()`.
    fn homedir(&self) -> io::Result<Option<String>>;
}
