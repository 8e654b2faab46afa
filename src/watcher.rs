//! Keeps the token map current from a background thread, so the hot path
//! never touches the file system.
//!
//! We watch the map's *directory*, not the file: a watch on the file dies at
//! the first atomic rename. Events are filtered by name (the map itself, or a
//! Kubernetes `..data`-style entry) and every burst of events becomes one
//! reload; the layer then skips a reload whose content did not change, so a
//! rename that yields two events still swaps the map once. When the directory
//! does not exist we watch its nearest existing ancestor and move down as it
//! appears; a heartbeat re-checks which directory (by inode) we should watch,
//! which also catches a directory replaced behind our back.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use notify::event::ModifyKind;
use notify::{EventKind, PollWatcher, RecursiveMode};

use crate::options::WatchMode;

/// Why the watcher asks for a reload check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The watch is (re)established: the map may have changed while unwatched.
    Watching,
    /// File system events that concern the map.
    Changed,
    /// Periodic tick with no relevant event (no I/O expected from the handler).
    Heartbeat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Starting = 0,
    Inotify = 1,
    Poll = 2,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Starting => "starting",
            Backend::Inotify => "inotify",
            Backend::Poll => "poll",
        }
    }
}

enum Msg {
    Event(notify::Result<notify::Event>),
    Stop,
}

pub struct Watcher {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
    backend: Arc<AtomicU8>,
}

pub struct WatchConfig {
    pub path: PathBuf,
    pub mode: WatchMode,
    pub poll_interval: Duration,
    pub heartbeat: Duration,
}

type Handler = Box<dyn FnMut(Trigger) + Send>;
type OnFallback = Box<dyn FnMut(&str) + Send>;

impl Watcher {
    /// Starts the watcher thread. `on_trigger` runs on that thread;
    /// `on_fallback` is told (once) why polling replaced inotify.
    pub fn spawn(
        cfg: WatchConfig,
        on_trigger: Handler,
        on_fallback: OnFallback,
    ) -> std::io::Result<Watcher> {
        let (tx, rx) = mpsc::channel();
        let backend = Arc::new(AtomicU8::new(Backend::Starting as u8));
        let state = Loop {
            dir: cfg
                .path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("/")),
            name: cfg
                .path
                .file_name()
                .map(|n| n.to_os_string())
                .unwrap_or_default(),
            mode: cfg.mode,
            poll_interval: cfg.poll_interval,
            tx: tx.clone(),
            backend: backend.clone(),
            watcher: None,
            watched: None,
            on_trigger,
            on_fallback,
        };
        let heartbeat = cfg.heartbeat;
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("claw-identity-watch".into())
            .spawn(move || state.run(rx, heartbeat, ready_tx))?;
        // Return once the first watch is in place, so a change made right
        // after construction is seen and `backend()` says what is in use.
        let _ = ready_rx.recv_timeout(Duration::from_secs(5));
        Ok(Watcher {
            tx,
            thread: Some(thread),
            backend,
        })
    }

    pub fn backend(&self) -> Backend {
        match self.backend.load(Ordering::Relaxed) {
            1 => Backend::Inotify,
            2 => Backend::Poll,
            _ => Backend::Starting,
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Identity of a directory: path plus (device, inode), so a directory that
/// was replaced under the same name is noticed.
type DirId = (PathBuf, u64, u64);

fn dir_id(path: &Path) -> Option<DirId> {
    let m = std::fs::metadata(path).ok()?;
    m.is_dir().then(|| (path.to_path_buf(), m.dev(), m.ino()))
}

struct Loop {
    dir: PathBuf,
    name: std::ffi::OsString,
    mode: WatchMode,
    poll_interval: Duration,
    tx: Sender<Msg>,
    backend: Arc<AtomicU8>,
    watcher: Option<Box<dyn notify::Watcher + Send>>,
    watched: Option<DirId>,
    on_trigger: Handler,
    on_fallback: OnFallback,
}

impl Loop {
    fn run(mut self, rx: mpsc::Receiver<Msg>, heartbeat: Duration, ready: mpsc::SyncSender<()>) {
        if self.retarget() {
            (self.on_trigger)(Trigger::Watching);
        }
        let _ = ready.send(());
        loop {
            match rx.recv_timeout(heartbeat) {
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    if self.retarget() {
                        (self.on_trigger)(Trigger::Watching);
                    }
                    (self.on_trigger)(Trigger::Heartbeat);
                }
                Ok(Msg::Event(first)) => {
                    // Coalesce the burst: one reload per change, not per event.
                    let (mut changed, mut moved) = self.classify(&first);
                    while let Ok(msg) = rx.try_recv() {
                        match msg {
                            Msg::Stop => return,
                            Msg::Event(ev) => {
                                let (c, m) = self.classify(&ev);
                                changed |= c;
                                moved |= m;
                            }
                        }
                    }
                    // A directory deleted and recreated may get the same inode
                    // number back: when an event says the map's directory went
                    // away, re-watch even if it looks the same.
                    let on_map_dir = self.watched.as_ref().is_some_and(|w| w.0 == self.dir);
                    let rewatched = moved
                        && if on_map_dir {
                            self.retarget_forced()
                        } else {
                            self.retarget()
                        };
                    if rewatched {
                        (self.on_trigger)(Trigger::Watching);
                    } else if changed {
                        (self.on_trigger)(Trigger::Changed);
                    }
                }
            }
        }
    }

    /// (the map may have changed, the watch target may have moved)
    fn classify(&self, ev: &notify::Result<notify::Event>) -> (bool, bool) {
        let ev = match ev {
            Ok(ev) => ev,
            // Errors (e.g. a queue overflow reported as an error) mean we may have missed something.
            Err(_) => return (true, true),
        };
        if ev.need_rescan() {
            return (true, true);
        }
        if matches!(ev.kind, EventKind::Access(_)) {
            // Our own reads produce these.
            return (false, false);
        }
        let watching_dir = self.watched.as_ref().is_some_and(|w| w.0 == self.dir);
        if !watching_dir {
            // Watching an ancestor: anything there may be the directory appearing.
            return (false, true);
        }
        let mut changed = false;
        let mut moved = false;
        for p in &ev.paths {
            if p == &self.dir {
                // A chmod or chown of the directory itself can make a refused
                // map loadable (the gate checks the directory too): re-read.
                if matches!(ev.kind, EventKind::Modify(ModifyKind::Metadata(_))) {
                    changed = true;
                } else {
                    moved = true;
                }
            } else if let Some(name) = p.file_name() {
                // `..data` and its siblings are Kubernetes' atomic-writer links.
                if name == self.name.as_os_str() || name.as_encoded_bytes().starts_with(b"..") {
                    changed = true;
                }
            }
        }
        (changed, moved)
    }

    /// Points the watch at the map's directory, or its nearest existing
    /// ancestor. Returns true when the map must be re-read: the watch reached
    /// the map's directory (the map may have changed while unwatched), or left
    /// it (the map is gone: the failed reload is what starts the
    /// `maxStaleSeconds` clock).
    fn retarget(&mut self) -> bool {
        self.retarget_from(self.watched.clone(), false)
    }

    /// `retarget`, but the current watch is treated as dead.
    fn retarget_forced(&mut self) -> bool {
        let before = self.watched.take();
        self.retarget_from(before, true)
    }

    fn retarget_from(&mut self, before: Option<DirId>, forced: bool) -> bool {
        // Directories can appear while we move down: loop until stable.
        for _ in 0..64 {
            let target = self.dir.ancestors().find_map(dir_id);
            if target.is_none() || target == self.watched {
                break;
            }
            let target = target.expect("checked");
            // A fresh backend, not unwatch + watch: after a watched directory
            // is deleted, notify keeps its path registered, and watching the
            // recreated directory under that path silently adds nothing.
            self.watcher = None;
            if let Err(e) = self.watch(&target.0) {
                if matches!(e.kind, notify::ErrorKind::PathNotFound) {
                    // The directory vanished between the check and the watch: try again.
                    self.watched = None;
                    continue;
                }
                if self.backend.load(Ordering::Relaxed) != Backend::Poll as u8 {
                    (self.on_fallback)(&format!(
                        "inotify watch on {} failed ({e}); polling every {:?} instead",
                        target.0.display(),
                        self.poll_interval
                    ));
                    self.watcher = None;
                    self.backend.store(Backend::Poll as u8, Ordering::Relaxed);
                    if self.watch(&target.0).is_err() {
                        self.watched = None;
                        break;
                    }
                } else {
                    self.watched = None;
                    break;
                }
            }
            self.watched = Some(target);
        }
        let on_dir = |w: &Option<DirId>| w.as_ref().is_some_and(|w| w.0 == self.dir);
        (forced || self.watched != before) && (on_dir(&self.watched) || on_dir(&before))
    }

    fn watch(&mut self, path: &Path) -> notify::Result<()> {
        if self.watcher.is_none() {
            self.watcher = Some(self.make_backend()?);
        }
        self.watcher
            .as_mut()
            .expect("just set")
            .watch(path, RecursiveMode::NonRecursive)
    }

    fn make_backend(&mut self) -> notify::Result<Box<dyn notify::Watcher + Send>> {
        let tx = self.tx.clone();
        let handler = move |res| {
            let _ = tx.send(Msg::Event(res));
        };
        let use_poll = self.mode == WatchMode::Poll
            || self.backend.load(Ordering::Relaxed) == Backend::Poll as u8;
        if !use_poll {
            match notify::recommended_watcher(handler.clone()) {
                Ok(w) => {
                    self.backend
                        .store(Backend::Inotify as u8, Ordering::Relaxed);
                    return Ok(Box::new(w));
                }
                Err(e) => (self.on_fallback)(&format!(
                    "inotify is unavailable ({e}); polling every {:?} instead",
                    self.poll_interval
                )),
            }
        }
        let cfg = notify::Config::default()
            .with_poll_interval(self.poll_interval)
            .with_compare_contents(true);
        let w = PollWatcher::new(handler, cfg)?;
        self.backend.store(Backend::Poll as u8, Ordering::Relaxed);
        Ok(Box::new(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, CreateKind, Flag, ModifyKind, RemoveKind, RenameMode};
    use notify::Event;

    fn watching(dir: &str) -> Loop {
        let (tx, _rx) = mpsc::channel();
        Loop {
            dir: PathBuf::from(dir),
            name: "m.json".into(),
            mode: WatchMode::Auto,
            poll_interval: Duration::from_secs(1),
            tx,
            backend: Arc::new(AtomicU8::new(0)),
            watcher: None,
            watched: Some((PathBuf::from(dir), 1, 1)),
            on_trigger: Box::new(|_| {}),
            on_fallback: Box::new(|_| {}),
        }
    }

    fn ev(kind: EventKind, paths: &[&str]) -> notify::Result<Event> {
        let mut e = Event::new(kind);
        for p in paths {
            e = e.add_path(PathBuf::from(p));
        }
        Ok(e)
    }

    #[test]
    fn a_rename_onto_the_map_is_a_change() {
        let l = watching("/d");
        let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert_eq!(
            l.classify(&ev(both, &["/d/m.json.tmp", "/d/m.json"])),
            (true, false)
        );
    }

    #[test]
    fn other_files_and_our_own_reads_are_ignored() {
        let l = watching("/d");
        let create = EventKind::Create(CreateKind::File);
        assert_eq!(
            l.classify(&ev(create, &["/d/m.json.tmp-1"])),
            (false, false)
        );
        assert_eq!(l.classify(&ev(create, &["/d/4913"])), (false, false));
        let access = EventKind::Access(AccessKind::Any);
        assert_eq!(l.classify(&ev(access, &["/d/m.json"])), (false, false));
    }

    #[test]
    fn kubernetes_data_links_are_changes() {
        let l = watching("/d");
        let create = EventKind::Create(CreateKind::Any);
        assert_eq!(l.classify(&ev(create, &["/d/..data_tmp"])), (true, false));
    }

    #[test]
    fn the_directory_itself_going_away_moves_the_watch() {
        let l = watching("/d");
        let remove = EventKind::Remove(RemoveKind::Folder);
        assert_eq!(l.classify(&ev(remove, &["/d"])), (false, true));
    }

    #[test]
    fn a_chmod_of_the_directory_itself_is_a_change() {
        let l = watching("/d");
        let attrib = EventKind::Modify(ModifyKind::Metadata(notify::event::MetadataKind::Any));
        assert_eq!(l.classify(&ev(attrib, &["/d"])), (true, false));
    }

    #[test]
    fn a_queue_overflow_means_rescan_everything() {
        let l = watching("/d");
        let overflow = Event::new(EventKind::Other).set_flag(Flag::Rescan);
        assert_eq!(l.classify(&Ok(overflow)), (true, true));
        assert_eq!(
            l.classify(&Err(notify::Error::generic("queue overflow"))),
            (true, true)
        );
    }

    #[test]
    fn while_watching_an_ancestor_any_event_may_be_the_directory_appearing() {
        let mut l = watching("/d/sub");
        l.watched = Some((PathBuf::from("/d"), 1, 1));
        let create = EventKind::Create(CreateKind::Folder);
        assert_eq!(l.classify(&ev(create, &["/d/sub"])), (false, true));
    }
}
