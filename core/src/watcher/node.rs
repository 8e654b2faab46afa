//! The WebAssembly build's watcher. WASI has no file-system events, and a
//! thread of ours there would be a Node worker that can't start until the
//! JS thread yields, so nothing here waits: the bridge
//! (`src/bridge/watch.js`) forwards to [`Watcher::on`], on the JS thread,
//! what Node sees:
//! - the events of Node's `fs.watch` (inotify on Linux, FSEvents on macOS,
//!   ReadDirectoryChangesW on Windows) on what [`Watcher::on`] asks it to
//!   watch, each burst once;
//! - a watch that broke, or could not be set;
//! - the heartbeat, from an unref'd timer, every heartbeat (or every
//!   `pollIntervalMs`, if that is shorter).
//!
//! What is watched is what the native watcher watches (`inotify.rs`):
//! directories, not the file alone (a watch on the file dies at the first
//! rename): the map's, that of every link of its chain and of the file it
//! ends at (each, while missing, through its nearest existing ancestor),
//! and that file itself (a write through another path to its inode shows
//! in no directory). Each is kept by identity, so a directory replaced
//! under the same name is watched again.
//!
//! What is read again is decided the same way for an event and for a
//! heartbeat: the stamps of what decides whether the map must be read again
//! (the file the map path ends at, symlinks followed; the map's directory;
//! the directory of the file it ends at, where a chmod can make a refused
//! map loadable). Any difference, or a stamp too fresh to trust, fires
//! `Changed`; the layer skips a reload whose bytes did not change. With
//! events, a rename is in force as soon as Node delivers its event; without
//! (`watcher: "poll"`, or `fs.watch` failed), within one heartbeat.

use std::path::{Path, PathBuf};

use super::chain::{dirs_of, resolve_chain};
use super::{now_ns, racy, stamp_of, Backend, Handler, OnFallback, Stamp, Trigger, WatchConfig};
use crate::options::WatchMode;

/// ENOENTs from `fs.watch` between two heartbeats past which it is taken
/// as not working here.
const MAX_VANISHED: u32 = 8;

/// What the bridge forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input<'a> {
    /// The heartbeat.
    Tick,
    /// A burst of `fs.watch` events: for each, the index of its watch in
    /// the last [`Watch::Set`] and the name it reports, if any.
    Events(&'a [(usize, Option<&'a str>)]),
    /// A watch stopped working (its `error` event): watch everything again.
    Lost,
    /// `fs.watch` could not watch a path: its error code and the path.
    Failed { code: &'a str, path: &'a str },
}

/// What the bridge should watch from now on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watch {
    /// What it watches.
    Keep,
    /// These paths (as the host names them), in place of what it watches.
    Set(Vec<String>),
}

/// A watched path, by identity.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Watched {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

pub struct Watcher {
    path: PathBuf,
    /// `fs.watch` drives the checks (until it fails, or under `watcher: "poll"`).
    events: bool,
    poll_every_ms: u128,
    watched: Vec<Watched>,
    /// Watches refused with ENOENT since the last heartbeat.
    vanished: u32,
    seen: [Option<Stamp>; 3],
    recheck: bool,
    on_trigger: Handler,
    on_fallback: OnFallback,
}

impl Watcher {
    /// Checks the map once now (`Watching`); [`Watcher::on`] then watches.
    pub fn spawn(
        cfg: WatchConfig,
        on_trigger: Handler,
        on_fallback: OnFallback,
    ) -> std::io::Result<Watcher> {
        let mut w = Watcher {
            path: cfg.path,
            events: cfg.mode == WatchMode::Auto,
            poll_every_ms: cfg.poll_interval.min(cfg.heartbeat).as_millis(),
            watched: Vec::new(),
            vanished: 0,
            seen: [None; 3],
            recheck: false,
            on_trigger,
            on_fallback,
        };
        w.fire(Trigger::Watching);
        Ok(w)
    }

    pub fn backend(&self) -> Backend {
        if self.events && !self.watched.is_empty() {
            Backend::FsWatch
        } else {
            Backend::Poll
        }
    }

    /// Acts on what the bridge saw, and says what it should watch now. The
    /// bridge checks once more after it set new watches (`Events`): the map
    /// may have changed before they were in place.
    pub fn on(&mut self, input: Input<'_>) -> Watch {
        match input {
            Input::Tick => {
                self.vanished = 0;
                let w = self.retarget();
                self.check();
                (self.on_trigger)(Trigger::Heartbeat);
                w
            }
            Input::Events(events) => {
                // A watched directory deleted or moved away is reported under
                // its own name (Linux's inotify); its watch is dead, and a
                // directory made again under that name may even get its
                // inode number back: watch everything again.
                if events.iter().any(|&(i, name)| self.names_itself(i, name)) {
                    self.watched.clear();
                }
                let w = self.retarget();
                self.check();
                w
            }
            Input::Lost => {
                self.watched.clear();
                let w = self.retarget();
                self.check();
                w
            }
            // It vanished between the look and the watch: look again (the
            // bridge tells this a turn later). A path `fs.watch` keeps
            // refusing though it is there falls through to polling below.
            Input::Failed { code: "ENOENT", .. } if self.vanished < MAX_VANISHED => {
                self.vanished += 1;
                self.watched.clear();
                let w = self.retarget();
                self.check();
                w
            }
            Input::Failed { code, path } => {
                self.events = false;
                self.watched.clear();
                (self.on_fallback)(&format!(
                    "fs.watch on {path} failed ({code}); polling every {} ms instead",
                    self.poll_every_ms
                ));
                Watch::Set(Vec::new())
            }
        }
    }

    fn names_itself(&self, i: usize, name: Option<&str>) -> bool {
        let Some(w) = self.watched.get(i) else {
            return false;
        };
        name.is_some_and(|n| w.path.file_name().is_some_and(|own| own == n))
    }

    /// A reload check if anything moved since the last one.
    fn check(&mut self) {
        if self.recheck || self.stamps() != self.seen {
            self.fire(Trigger::Changed);
        }
    }

    fn retarget(&mut self) -> Watch {
        if !self.events {
            return Watch::Keep;
        }
        let wanted = targets(&self.path);
        if wanted == self.watched {
            return Watch::Keep;
        }
        let paths = wanted
            .iter()
            .map(|w| crate::paths::shown(&w.path).to_string())
            .collect();
        self.watched = wanted;
        Watch::Set(paths)
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

    /// Stamps first, so a change after the stamp differs at the next check.
    fn fire(&mut self, t: Trigger) {
        self.seen = self.stamps();
        self.recheck = racy(self.seen[0], now_ns());
        (self.on_trigger)(t);
    }
}

/// What to watch for `path`: each directory the map depends on (or its
/// nearest existing ancestor), once per inode, then the file it ends at.
fn targets(path: &Path) -> Vec<Watched> {
    let chain = resolve_chain(path);
    let mut out: Vec<Watched> = Vec::new();
    let mut add = |p: &Path, s: Stamp| {
        if !out.iter().any(|w| (w.dev, w.ino) == (s.dev, s.ino)) {
            out.push(Watched {
                path: p.to_path_buf(),
                dev: s.dev,
                ino: s.ino,
            });
        }
    };
    for dir in dirs_of(path, &chain) {
        let found = dir
            .ancestors()
            .find_map(|a| stamp_of(a).filter(|s| s.is_dir).map(|s| (a, s)));
        if let Some((a, s)) = found {
            add(a, s);
        }
    }
    if let Some(s) = stamp_of(&chain.target).filter(|s| s.is_file) {
        add(&chain.target, s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::chain::tests::{linked_map, tmpdir};
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    type Log = Arc<Mutex<Vec<String>>>;

    fn watcher(path: &Path, mode: WatchMode) -> (Watcher, Log) {
        let log: Log = Default::default();
        let (l1, l2) = (log.clone(), log.clone());
        let w = Watcher::spawn(
            WatchConfig {
                path: path.to_path_buf(),
                mode,
                poll_interval: Duration::from_millis(1000),
                heartbeat: Duration::from_millis(500),
            },
            Box::new(move |t| l1.lock().unwrap().push(format!("{t:?}"))),
            Box::new(move |why| l2.lock().unwrap().push(why.to_owned())),
        )
        .unwrap();
        (w, log)
    }

    fn set(w: Watch) -> Vec<String> {
        match w {
            Watch::Set(p) => p,
            Watch::Keep => panic!("expected a new watch set"),
        }
    }

    fn take(log: &Log) -> Vec<String> {
        std::mem::take(&mut *log.lock().unwrap())
    }

    #[test]
    fn watches_the_chain_s_directories_once_each_and_the_file() {
        let (_t, d) = linked_map("node-targets");
        let (mut w, _) = watcher(&d.join("links/m.json"), WatchMode::Auto);
        let s = |p: &str| d.join(p).display().to_string();
        assert_eq!(
            set(w.on(Input::Events(&[]))),
            vec![s("links"), s("real"), s("real/m.json")]
        );
        assert_eq!(w.backend(), Backend::FsWatch);
        assert_eq!(w.on(Input::Events(&[])), Watch::Keep);
        assert_eq!(w.on(Input::Tick), Watch::Keep);
    }

    #[test]
    fn a_missing_directory_is_watched_through_its_ancestor_until_it_appears() {
        let (_t, d) = tmpdir("poll-missing");
        let map = d.join("a/b/m.json");
        let (mut w, log) = watcher(&map, WatchMode::Auto);
        assert_eq!(set(w.on(Input::Events(&[]))), vec![d.display().to_string()]);
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        assert_eq!(
            set(w.on(Input::Events(&[]))),
            vec![d.join("a/b").display().to_string()]
        );
        take(&log);
        std::fs::write(&map, "{}").unwrap();
        assert_eq!(
            set(w.on(Input::Events(&[]))),
            vec![
                d.join("a/b").display().to_string(),
                map.display().to_string()
            ]
        );
        assert_eq!(take(&log), vec!["Changed"], "the new map is read once");
    }

    #[test]
    fn a_rename_fires_one_reload_and_moves_the_file_watch() {
        let (_t, d) = tmpdir("poll-rename");
        let map = d.join("m.json");
        std::fs::write(&map, "{}").unwrap();
        let (mut w, log) = watcher(&map, WatchMode::Auto);
        w.on(Input::Events(&[]));
        take(&log);
        std::fs::write(d.join("m.json.tmp"), "{\"a\": 1}").unwrap();
        std::fs::rename(d.join("m.json.tmp"), &map).unwrap();
        // The new inode is another file to watch.
        assert_eq!(
            set(w.on(Input::Events(&[]))),
            vec![d.display().to_string(), map.display().to_string()]
        );
        let fired = take(&log);
        assert_eq!(
            fired.iter().filter(|t| *t == "Changed").count(),
            1,
            "{fired:?}"
        );
    }

    #[test]
    fn a_replaced_directory_is_watched_again_and_a_lost_watch_rewatches() {
        let (_t, d) = tmpdir("poll-replaced");
        std::fs::create_dir(d.join("m")).unwrap();
        let map = d.join("m/m.json");
        let (mut w, _) = watcher(&map, WatchMode::Auto);
        let first = set(w.on(Input::Events(&[])));
        std::fs::rename(d.join("m"), d.join("old")).unwrap();
        std::fs::create_dir(d.join("m")).unwrap();
        assert_eq!(set(w.on(Input::Tick)), first, "same path, another inode");
        assert_eq!(set(w.on(Input::Lost)), first);
        // The directory's own name on an event of its watch: watched again,
        // though it is the same inode; a file's name in it changes nothing.
        assert_eq!(w.on(Input::Events(&[(0, Some("m.json"))])), Watch::Keep);
        assert_eq!(set(w.on(Input::Events(&[(0, Some("m"))]))), first);
        assert_eq!(w.on(Input::Events(&[(7, Some("m"))])), Watch::Keep);
    }

    #[test]
    fn a_failed_watch_falls_back_to_polling_and_says_so_once() {
        let (_t, d) = tmpdir("poll-failed");
        let (mut w, log) = watcher(&d.join("m.json"), WatchMode::Auto);
        set(w.on(Input::Events(&[])));
        take(&log);
        let failed = Input::Failed {
            code: "ENOSPC",
            path: "/x",
        };
        assert_eq!(w.on(failed), Watch::Set(vec![]));
        assert_eq!(w.backend(), Backend::Poll);
        assert_eq!(
            take(&log),
            vec!["fs.watch on /x failed (ENOSPC); polling every 500 ms instead"]
        );
        assert_eq!(w.on(Input::Events(&[])), Watch::Keep);
        assert_eq!(w.on(Input::Tick), Watch::Keep);
        // A path that vanished before its watch: what to watch is looked at again.
        let (mut w, log) = watcher(&d.join("m.json"), WatchMode::Auto);
        let first = set(w.on(Input::Events(&[])));
        let gone = Input::Failed {
            code: "ENOENT",
            path: "/x",
        };
        assert_eq!(set(w.on(gone)), first);
        assert_eq!(w.on(Input::Tick), Watch::Keep);
        assert!(!take(&log).iter().any(|l| l.contains("fs.watch")));
        // One that `fs.watch` keeps refusing, though it is there, is not
        // tried once a turn forever: polling takes over.
        for _ in 0..MAX_VANISHED {
            assert_eq!(set(w.on(gone)), first);
        }
        assert_eq!(w.on(gone), Watch::Set(vec![]));
        assert_eq!(w.backend(), Backend::Poll);
        assert_eq!(
            take(&log),
            vec!["fs.watch on /x failed (ENOENT); polling every 500 ms instead"]
        );
    }

    #[test]
    fn poll_mode_watches_nothing_and_the_heartbeat_finds_changes() {
        let (_t, d) = tmpdir("poll-mode");
        let map = d.join("m.json");
        let (mut w, log) = watcher(&map, WatchMode::Poll);
        assert_eq!(w.on(Input::Tick), Watch::Keep);
        assert_eq!(w.backend(), Backend::Poll);
        take(&log);
        std::fs::write(&map, "{}").unwrap();
        w.on(Input::Tick);
        assert_eq!(take(&log), vec!["Changed", "Heartbeat"]);
    }
}
