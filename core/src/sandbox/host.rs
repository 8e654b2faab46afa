//! The host as the plan sees it, from the kernel: `/`, `stat`, real paths,
//! `/proc/self/mountinfo`; and the processes a sandboxed command left.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::sys;

/// What the plan needs to know of the host; [`LiveHost`] asks the kernel.
pub trait HostView {
    /// The entries of `/`.
    fn root_entries(&self) -> Vec<(OsString, Entry)>;
    /// What `path` is, following symlinks.
    fn kind(&self, path: &Path) -> Kind;
    /// `path` with every symlink resolved, where it exists.
    fn real(&self, path: &Path) -> Option<PathBuf>;
    /// The names in a directory (empty where it can't be read).
    fn list(&self, dir: &Path) -> Vec<OsString>;
    /// The hard links of the file at `path` (1 where unknown).
    fn links(&self, path: &Path) -> u64;
    /// The other paths the same directory or file is mounted at (bind
    /// mounts), from `/proc/self/mountinfo`.
    fn aliases(&self, real: &Path) -> Vec<PathBuf>;
    /// The first executable `name` in the `:`-separated `path`.
    fn program(&self, name: &str, path: &str) -> Option<PathBuf>;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    Link(PathBuf),
    /// A file, device or socket at the root (a swap file, `/.dockerenv`):
    /// left out, since none is needed and a swap file holds memory.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Missing,
    Dir,
    File,
    Other,
}

/// The live host, as one plan sees it: `/proc/self/mountinfo` is read
/// once per `LiveHost`, and each path's real path, kind and aliases are
/// asked once (a plan asks some paths dozens of times; this halved its
/// system calls and CPU time): one snapshot, so the plan's answers about
/// one path agree with each other.
#[derive(Default)]
pub struct LiveHost {
    mounts: std::sync::OnceLock<Vec<MountLine>>,
    real: RefCell<HashMap<PathBuf, Option<PathBuf>>>,
    kind: RefCell<HashMap<PathBuf, Kind>>,
    aliases: RefCell<HashMap<PathBuf, Vec<PathBuf>>>,
}

impl LiveHost {
    pub fn new() -> LiveHost {
        LiveHost::default()
    }
}

impl HostView for LiveHost {
    fn root_entries(&self) -> Vec<(OsString, Entry)> {
        let Ok(rd) = std::fs::read_dir("/") else {
            return Vec::new();
        };
        let mut out: Vec<(OsString, Entry)> = rd
            .filter_map(Result::ok)
            .map(|e| {
                let name = e.file_name();
                let path = e.path();
                let entry = match std::fs::symlink_metadata(&path) {
                    Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(&path) {
                        Ok(t) => Entry::Link(t),
                        Err(_) => Entry::Other,
                    },
                    Ok(m) if m.is_dir() => Entry::Dir,
                    _ => Entry::Other,
                };
                (name, entry)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn kind(&self, path: &Path) -> Kind {
        *self
            .kind
            .borrow_mut()
            .entry(path.to_path_buf())
            .or_insert_with(|| match std::fs::metadata(path) {
                Err(_) => Kind::Missing,
                Ok(m) if m.is_dir() => Kind::Dir,
                Ok(m) if m.is_file() => Kind::File,
                Ok(_) => Kind::Other,
            })
    }

    fn real(&self, path: &Path) -> Option<PathBuf> {
        self.real
            .borrow_mut()
            .entry(path.to_path_buf())
            .or_insert_with(|| sys::real_path(path).ok().map(|(p, _)| p))
            .clone()
    }

    fn list(&self, dir: &Path) -> Vec<OsString> {
        let mut out: Vec<OsString> = std::fs::read_dir(dir)
            .map(|rd| rd.filter_map(Result::ok).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        out.sort();
        out
    }

    fn links(&self, path: &Path) -> u64 {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(path).map(|m| m.nlink()).unwrap_or(1)
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            1
        }
    }

    fn aliases(&self, real: &Path) -> Vec<PathBuf> {
        let mounts = self.mounts.get_or_init(|| {
            parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
        });
        self.aliases
            .borrow_mut()
            .entry(real.to_path_buf())
            .or_insert_with(|| aliases_in(mounts, real))
            .clone()
    }

    fn program(&self, name: &str, path: &str) -> Option<PathBuf> {
        path.split(':')
            .filter(|d| d.starts_with('/'))
            .map(|d| Path::new(d).join(name))
            .find(|p| is_executable(p))
    }
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = p;
        false
    }
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountLine {
    /// `major:minor` of the file system.
    pub dev: String,
    /// The directory of the file system that is mounted.
    pub root: PathBuf,
    pub mount_point: PathBuf,
}

/// mountinfo escapes space, tab, newline and `\` as `\ooo`.
fn unescape(field: &str) -> PathBuf {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(oct, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    PathBuf::from(sys::os_string(out))
}

pub fn parse_mountinfo(text: &str) -> Vec<MountLine> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() >= 5).then(|| MountLine {
                dev: f[2].to_owned(),
                root: unescape(f[3]),
                mount_point: unescape(f[4]),
            })
        })
        .collect()
}

/// The other paths where the file system object at `real` shows: each
/// mount of the same file system whose root holds it (a bind mount of it
/// or of a directory above it), and each mount of a directory inside it.
pub fn aliases_in(mounts: &[MountLine], real: &Path) -> Vec<PathBuf> {
    // The mount `real` is on: the last mounted at the deepest mount point above it.
    let Some(on) = mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| real.starts_with(&m.mount_point))
        .max_by_key(|(i, m)| (m.mount_point.components().count(), *i))
        .map(|(_, m)| m)
    else {
        return Vec::new();
    };
    let Ok(rest) = real.strip_prefix(&on.mount_point) else {
        return Vec::new();
    };
    // Where `real` is inside its file system.
    let inside = on.root.join(rest);
    let mut out = Vec::new();
    for m in mounts
        .iter()
        .filter(|m| m.dev == on.dev && !std::ptr::eq(*m, on))
    {
        let alias = if let Ok(r) = inside.strip_prefix(&m.root) {
            m.mount_point.join(r)
        } else if m.root.starts_with(&inside) {
            m.mount_point.clone()
        } else {
            continue;
        };
        if alias != real && !out.contains(&alias) {
            out.push(alias);
        }
    }
    out
}

/// The host PIDs whose environment holds `marker` (`NAME=value`): the
/// processes of one sandboxed command, the bwrap that runs it first.
/// OpenClaw's own cleanup looks for them inside the sandbox
/// (`createSandboxProcessCleanup`, `fs-bridge-stat-parse-*.mjs`), where a
/// command of this backend sees only its own PID namespace.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut needle = marker.as_bytes().to_vec();
    needle.push(0);
    let me = sys::pid();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<u32> = rd
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split_inclusive(|b| *b == 0)
                    .any(|var| var == needle.as_slice())
            })
        })
        .collect();
    out.sort_unstable();
    out
}
