//! The WebAssembly build's watcher. WASI has no inotify, and a thread of
//! ours there would be a Node worker that can't start until the JS thread
//! yields, so nothing waits on one: the bridge calls [`Watcher::tick`] from
//! an unref'd JS timer, on the JS thread, every heartbeat (or every
//! `pollIntervalMs`, if that is shorter).
//!
//! Each tick stats what decides whether the map must be read again: the file
//! the map path ends at (symlinks followed: a re-pointed link or a rotated
//! file is another inode), the map's directory, and the directory that holds
//! the file it ends at (a chmod there can make a refused map loadable). Any
//! difference, or a stamp too fresh to trust, fires `Changed`; the layer
//! skips a reload whose bytes did not change. Latency: one tick.

use std::path::{Path, PathBuf};

use super::{now_ns, racy, stamp_of, Backend, Handler, OnFallback, Stamp, Trigger, WatchConfig};

pub struct Watcher {
    path: PathBuf,
    seen: [Option<Stamp>; 3],
    recheck: bool,
    on_trigger: Handler,
}

impl Watcher {
    /// Checks the map once now (`Watching`); [`Watcher::tick`] then polls.
    pub fn spawn(
        cfg: WatchConfig,
        on_trigger: Handler,
        _on_fallback: OnFallback,
    ) -> std::io::Result<Watcher> {
        let mut w = Watcher {
            path: cfg.path,
            seen: [None; 3],
            recheck: false,
            on_trigger,
        };
        w.fire(Trigger::Watching);
        Ok(w)
    }

    pub fn backend(&self) -> Backend {
        Backend::Poll
    }

    /// One heartbeat: a reload check if anything moved, then the heartbeat.
    pub fn tick(&mut self) {
        if self.recheck || self.stamps() != self.seen {
            self.fire(Trigger::Changed);
        }
        (self.on_trigger)(Trigger::Heartbeat);
    }

    fn stamps(&self) -> [Option<Stamp>; 3] {
        let dir = |p: &Path| p.parent().and_then(stamp_of);
        let real = crate::sys::canonicalize(&self.path).ok();
        [
            stamp_of(&self.path),
            dir(&self.path),
            real.as_deref().and_then(dir),
        ]
    }

    /// Stamps first, so a change after the stamp differs at the next tick.
    fn fire(&mut self, t: Trigger) {
        self.seen = self.stamps();
        self.recheck = racy(self.seen[0], now_ns());
        (self.on_trigger)(t);
    }
}
