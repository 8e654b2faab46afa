//! Keeps the token map current, so the hot path never touches the file
//! system. The native build watches from a background thread with inotify
//! (`inotify.rs`); the WebAssembly build, which runs no threads of its own,
//! is driven from the JS thread by Node's `fs.watch` and a heartbeat timer
//! (`node.rs`). Both watch the same things (`chain.rs`) and hand the layer
//! the same triggers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::options::WatchMode;
use crate::sys;

mod chain;
#[cfg(not(target_os = "wasi"))]
mod inotify;
#[cfg(not(target_os = "wasi"))]
pub use inotify::Watcher;
// Built everywhere, so `cargo test` covers it; used by the WebAssembly build.
#[cfg_attr(not(target_os = "wasi"), allow(dead_code))]
mod node;
#[cfg(target_os = "wasi")]
pub use node::{Input, Watch, Watcher};

/// Why the watcher asks for a reload check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The watch is (re)established: the map may have changed while unwatched.
    Watching,
    /// File system events that concern the map, or the heartbeat found its
    /// file's identity or metadata changed.
    Changed,
    /// Periodic tick, on a fixed cadence (no I/O expected from the handler).
    Heartbeat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Starting = 0,
    Inotify = 1,
    Poll = 2,
    /// Node's `fs.watch` (the WebAssembly build).
    FsWatch = 3,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Starting => "starting",
            Backend::Inotify => "inotify",
            Backend::Poll => "poll",
            Backend::FsWatch => "fs.watch",
        }
    }
}

pub struct WatchConfig {
    pub path: PathBuf,
    pub mode: WatchMode,
    pub poll_interval: Duration,
    pub heartbeat: Duration,
}

pub(crate) type Handler = Box<dyn FnMut(Trigger) + Send>;
pub(crate) type OnFallback = Box<dyn FnMut(&str) + Send>;
/// What the heartbeat compares: the file the map path ends at, by identity
/// and metadata. It catches writers no watch sees (another host on a
/// network file system).
pub(crate) type Stamp = sys::FileStat;

pub(crate) fn stamp_of(path: &Path) -> Option<Stamp> {
    sys::stat(path).ok()
}

/// File times advance in coarse ticks: a file stamped within this long of
/// its last change may change again, same size, within the same tick and
/// compare equal. Such a stamp is looked at once more (git's "racily clean").
const RACY: Duration = Duration::from_millis(100);

pub(crate) fn racy(stamp: Option<Stamp>, now_ns: i128) -> bool {
    stamp.is_some_and(|s| now_ns - s.mtime_ns.max(s.ctime_ns) < RACY.as_nanos() as i128)
}

pub(crate) fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}
