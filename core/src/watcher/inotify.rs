//! Keeps the token map current from a background thread, so the hot path
//! never touches the file system.
//!
//! We watch *directories*, not the file alone: a watch on the file dies at
//! the first atomic rename. The map's directory, and when the map path goes
//! through symlinks, the directory of every link and of the file it ends at,
//! resolved again whenever one of them changes. Events are filtered by name
//! (the map, a link of its chain, the file it ends at, or a Kubernetes
//! `..data`-style entry) and every burst of events becomes one reload; the
//! layer then skips a reload whose content did not change, so a rename that
//! yields two events still swaps the map once. The file it ends at is
//! watched as well: a write that reaches its inode through another path (a
//! single-file bind mount, a hard link) shows in no directory. When a
//! directory does not exist we watch its nearest existing ancestor and move
//! down as it appears. A heartbeat re-checks what we should watch (by inode),
//! which also catches a directory replaced behind our back, and compares the
//! file's identity and metadata, for writers no watch sees.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::ModifyKind;
use notify::{EventKind, PollWatcher, RecursiveMode};

use super::chain::{dirs_of, resolve_chain};
use super::{now_ns, racy, stamp_of, Backend, Handler, OnFallback, Stamp, Trigger, WatchConfig};
use crate::options::WatchMode;

enum Msg {
    Event(notify::Result<notify::Event>),
    Stop,
}

pub struct Watcher {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
    backend: Arc<AtomicU8>,
}

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
            path: cfg.path,
            mode: cfg.mode,
            poll_interval: cfg.poll_interval,
            tx: tx.clone(),
            backend: backend.clone(),
            watcher: None,
            watched: Vec::new(),
            entries: Vec::new(),
            stamp: None,
            recheck: false,
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

/// One watched path, by identity, so a directory replaced under the same
/// name, or a file rotated, is noticed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Watch {
    path: PathBuf,
    dev: u64,
    ino: u64,
    is_dir: bool,
    /// A directory we need (its events are filtered by name).
    exact: bool,
    /// Stands in for a needed directory that does not exist (yet): any event
    /// in it may be that directory appearing.
    ancestor: bool,
}

/// The watch for directory `dir`: on it, or on its nearest existing ancestor.
fn dir_watch(dir: &Path) -> Option<Watch> {
    dir.ancestors().find_map(|p| {
        let m = std::fs::metadata(p).ok()?;
        m.is_dir().then(|| Watch {
            path: p.to_path_buf(),
            dev: m.dev(),
            ino: m.ino(),
            is_dir: true,
            exact: p == dir,
            ancestor: p != dir,
        })
    })
}

fn dirs(ws: &[Watch]) -> Vec<Watch> {
    ws.iter().filter(|w| w.is_dir).cloned().collect()
}

fn files(ws: &[Watch]) -> Vec<Watch> {
    ws.iter().filter(|w| !w.is_dir).cloned().collect()
}

/// What `retarget` changed, when the map must be re-read because of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rewatch {
    None,
    /// Only the file's watch (the file was rotated).
    File,
    /// The directories' watches.
    All,
}

/// What a burst of events asks for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Seen {
    /// The map, or a link on its way, may have changed: re-read it.
    changed: bool,
    /// What we should watch may have changed: resolve it again.
    moved: bool,
    /// A watched directory itself went away: rebuild the watch even if it
    /// looks the same (a recreated directory may get its inode number back).
    gone: bool,
}

impl std::ops::BitOrAssign for Seen {
    fn bitor_assign(&mut self, o: Seen) {
        self.changed |= o.changed;
        self.moved |= o.moved;
        self.gone |= o.gone;
    }
}

const EVERYTHING: Seen = Seen {
    changed: true,
    moved: true,
    gone: true,
};

struct Loop {
    /// The map path as configured, and its directory.
    path: PathBuf,
    dir: PathBuf,
    mode: WatchMode,
    poll_interval: Duration,
    tx: Sender<Msg>,
    backend: Arc<AtomicU8>,
    watcher: Option<Box<dyn notify::Watcher + Send>>,
    watched: Vec<Watch>,
    /// Paths whose events concern the map: the path itself, each link of
    /// its chain, and the file it ends at.
    entries: Vec<PathBuf>,
    /// The map's file as last handed to a reload, and whether to look again
    /// at the next heartbeat even if it compares equal.
    stamp: Option<Stamp>,
    recheck: bool,
    on_trigger: Handler,
    on_fallback: OnFallback,
}

impl Loop {
    fn run(mut self, rx: mpsc::Receiver<Msg>, heartbeat: Duration, ready: mpsc::SyncSender<()>) {
        if self.retarget(false) != Rewatch::None {
            self.fire(Trigger::Watching);
        }
        let _ = ready.send(());
        let mut beat = Instant::now() + heartbeat;
        loop {
            match rx.recv_timeout(beat.saturating_duration_since(Instant::now())) {
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Msg::Event(first)) => {
                    // Coalesce the burst: one reload per change, not per event.
                    let mut seen = self.classify(&first);
                    while let Ok(msg) = rx.try_recv() {
                        match msg {
                            Msg::Stop => return,
                            Msg::Event(ev) => seen |= self.classify(&ev),
                        }
                    }
                    if seen.changed || seen.moved {
                        self.settle(seen);
                    }
                }
            }
            // On a fixed cadence: a stream of unrelated events (a busy
            // directory) must not hold off the heartbeat.
            if Instant::now() >= beat {
                beat = Instant::now() + heartbeat;
                if self.retarget(false) != Rewatch::None {
                    self.fire(Trigger::Watching);
                } else if self.recheck || stamp_of(&self.path) != self.stamp {
                    self.fire(Trigger::Changed);
                }
                (self.on_trigger)(Trigger::Heartbeat);
            }
        }
    }

    /// Acts on a burst of events. Resolves again on every change: a link of
    /// the chain may be what changed, and the file is watched by inode.
    fn settle(&mut self, seen: Seen) {
        // A rotation puts the new map in force first: moving the file's
        // watch to the new inode waits on notify's thread, and on a busy
        // machine every hand-off can cost a scheduler tick.
        let early = seen.changed && !seen.gone;
        if early {
            self.fire(Trigger::Changed);
        }
        match self.retarget(seen.gone) {
            Rewatch::None if seen.changed && !early => self.fire(Trigger::Changed),
            Rewatch::None => {}
            // Only the file's watch moved: a write since the stamp differs.
            Rewatch::File if early => {
                if stamp_of(&self.path) != self.stamp {
                    self.fire(Trigger::Changed);
                }
            }
            Rewatch::File | Rewatch::All => self.fire(Trigger::Watching),
        }
    }

    /// Asks for a reload check, stamping the file first: a change after the
    /// stamp differs at the next heartbeat, so at worst it is read twice.
    fn fire(&mut self, t: Trigger) {
        self.stamp = stamp_of(&self.path);
        self.recheck = racy(self.stamp, now_ns());
        (self.on_trigger)(t);
    }

    fn classify(&self, ev: &notify::Result<notify::Event>) -> Seen {
        let ev = match ev {
            Ok(ev) => ev,
            // Errors (e.g. a queue overflow reported as an error) mean we may have missed something.
            Err(_) => return EVERYTHING,
        };
        if ev.need_rescan() {
            return EVERYTHING;
        }
        if matches!(ev.kind, EventKind::Access(_)) {
            // Our own reads produce these.
            return Seen::default();
        }
        let mut seen = Seen::default();
        for p in &ev.paths {
            if let Some(w) = self.watched.iter().find(|w| w.is_dir && &w.path == p) {
                if matches!(ev.kind, EventKind::Modify(ModifyKind::Metadata(_))) {
                    // A chmod or chown of a directory can make a refused map
                    // loadable (the gate checks the directories too): re-read.
                    seen.changed |= w.exact;
                    seen.moved |= w.ancestor;
                } else {
                    seen.moved = true;
                    seen.gone = true;
                }
                continue;
            }
            if self.entries.contains(p) {
                seen.changed = true;
            }
            let parent = p.parent();
            if self
                .watched
                .iter()
                .any(|w| w.ancestor && parent == Some(w.path.as_path()))
            {
                seen.moved = true;
            }
            // `..data` and its siblings are Kubernetes' atomic-writer links.
            if parent == Some(self.dir.as_path())
                && p.file_name()
                    .is_some_and(|n| n.as_encoded_bytes().starts_with(b".."))
            {
                seen.changed = true;
            }
        }
        seen
    }

    /// What to watch: the map's directory, the directory of every link of
    /// its chain and of the file it ends at (each, while missing, through its
    /// nearest existing ancestor), and that file itself.
    fn targets(&self) -> (Vec<Watch>, Vec<PathBuf>) {
        let chain = resolve_chain(&self.path);
        let mut watches: Vec<Watch> = Vec::new();
        for w in dirs_of(&self.path, &chain).filter_map(dir_watch) {
            // One inode, one watch: inotify would merge them and report
            // events under the last path given.
            match watches
                .iter_mut()
                .find(|x| (x.dev, x.ino) == (w.dev, w.ino))
            {
                Some(x) => {
                    x.exact |= w.exact;
                    x.ancestor |= w.ancestor;
                }
                None => watches.push(w),
            }
        }
        // A write that reaches the file's inode through another path (a
        // single-file bind mount, a hard link) shows in none of these
        // directories, only on the file.
        if let Ok(m) = std::fs::metadata(&chain.target) {
            if m.is_file() {
                watches.push(Watch {
                    path: chain.target.clone(),
                    dev: m.dev(),
                    ino: m.ino(),
                    is_dir: false,
                    exact: true,
                    ancestor: false,
                });
            }
        }
        let mut entries = vec![self.path.clone()];
        entries.extend(chain.links);
        entries.push(chain.target);
        entries.dedup(); // a plain file is its own target
        (watches, entries)
    }

    /// Points the watches at what `targets` says, `forced` treating the
    /// current ones as dead. Says whether the map must be re-read: the
    /// watches changed while on the map's directory (the map may have
    /// changed while unwatched, or its chain now leads elsewhere), or they
    /// left it (the map is gone: the failed reload is what starts the
    /// `maxStaleSeconds` clock).
    fn retarget(&mut self, forced: bool) -> Rewatch {
        let before = if forced {
            std::mem::take(&mut self.watched)
        } else {
            self.watched.clone()
        };
        // Directories can appear while we move down: loop until stable.
        for _ in 0..64 {
            let (wanted, entries) = self.targets();
            self.entries = entries;
            if wanted == self.watched {
                break;
            }
            match self.install(&wanted) {
                Ok(()) => self.watched = wanted,
                // It vanished between the check and the watch: try again.
                Err(e) if matches!(e.kind, notify::ErrorKind::PathNotFound) => {
                    self.watched.clear();
                }
                Err(e) => {
                    self.watched.clear();
                    if self.backend.load(Ordering::Relaxed) == Backend::Poll as u8 {
                        break;
                    }
                    (self.on_fallback)(&format!(
                        "inotify watch on {} failed ({e}); polling every {:?} instead",
                        e.paths
                            .first()
                            .map_or_else(|| self.dir.display(), |p| p.display()),
                        self.poll_interval
                    ));
                    self.backend.store(Backend::Poll as u8, Ordering::Relaxed);
                    if self.install(&wanted).is_err() {
                        break;
                    }
                    self.watched = wanted;
                }
            }
        }
        let on_dir = |ws: &[Watch]| ws.iter().any(|w| w.exact && w.path == self.dir);
        if !((forced || self.watched != before) && (on_dir(&self.watched) || on_dir(&before))) {
            Rewatch::None
        } else if !forced && dirs(&self.watched) == dirs(&before) {
            Rewatch::File
        } else {
            Rewatch::All
        }
    }

    /// Watches `wanted`. When only the file changed (it was rotated), its
    /// watch is swapped on the live backend: the directories stay watched
    /// throughout and a rotation costs no new backend. Otherwise a fresh
    /// backend, not unwatch + watch: after a watched directory is deleted,
    /// notify keeps its path registered, and watching the recreated directory
    /// under that path silently adds nothing.
    fn install(&mut self, wanted: &[Watch]) -> notify::Result<()> {
        let keep_dirs = !self.watched.is_empty() && dirs(wanted) == dirs(&self.watched);
        if let (true, Some(backend)) = (keep_dirs, self.watcher.as_mut()) {
            // Unwatch first, so a late event for the old file cannot remove
            // the new watch (notify keys its watches by path). It may already
            // be gone with its file.
            for w in files(&self.watched) {
                let _ = backend.unwatch(&w.path);
            }
        } else {
            self.watcher = None;
            for w in dirs(wanted) {
                self.watch(&w.path)?;
            }
        }
        for w in files(wanted) {
            self.watch(&w.path)?;
        }
        Ok(())
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
    use super::super::chain::tests::linked_map;
    use super::*;
    use notify::event::{AccessKind, CreateKind, Flag, ModifyKind, RemoveKind, RenameMode};
    use notify::Event;

    fn dir(path: &str, exact: bool) -> Watch {
        Watch {
            path: PathBuf::from(path),
            dev: 1,
            ino: path.len() as u64,
            is_dir: true,
            exact,
            ancestor: !exact,
        }
    }

    /// A loop watching `/d` for the map `/d/m.json`, with `watched` and `entries`.
    fn watching(path: &str, watched: Vec<Watch>, entries: &[&str]) -> Loop {
        let (tx, _rx) = mpsc::channel();
        let path = PathBuf::from(path);
        Loop {
            dir: path.parent().unwrap().to_path_buf(),
            path,
            mode: WatchMode::Auto,
            poll_interval: Duration::from_secs(1),
            tx,
            backend: Arc::new(AtomicU8::new(0)),
            watcher: None,
            watched,
            entries: entries.iter().map(PathBuf::from).collect(),
            stamp: None,
            recheck: false,
            on_trigger: Box::new(|_| {}),
            on_fallback: Box::new(|_| {}),
        }
    }

    fn plain() -> Loop {
        watching("/d/m.json", vec![dir("/d", true)], &["/d/m.json"])
    }

    fn ev(kind: EventKind, paths: &[&str]) -> notify::Result<Event> {
        let mut e = Event::new(kind);
        for p in paths {
            e = e.add_path(PathBuf::from(p));
        }
        Ok(e)
    }

    const CHANGED: Seen = Seen {
        changed: true,
        moved: false,
        gone: false,
    };
    const NOTHING: Seen = Seen {
        changed: false,
        moved: false,
        gone: false,
    };

    #[test]
    fn a_rename_onto_the_map_is_a_change() {
        let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        let seen = plain().classify(&ev(both, &["/d/m.json.tmp", "/d/m.json"]));
        assert_eq!(seen, CHANGED);
    }

    #[test]
    fn other_files_and_our_own_reads_are_ignored() {
        let l = plain();
        let create = EventKind::Create(CreateKind::File);
        assert_eq!(l.classify(&ev(create, &["/d/m.json.tmp-1"])), NOTHING);
        assert_eq!(l.classify(&ev(create, &["/d/4913"])), NOTHING);
        let access = EventKind::Access(AccessKind::Any);
        assert_eq!(l.classify(&ev(access, &["/d/m.json"])), NOTHING);
    }

    #[test]
    fn kubernetes_data_links_are_changes() {
        let create = EventKind::Create(CreateKind::Any);
        assert_eq!(plain().classify(&ev(create, &["/d/..data_tmp"])), CHANGED);
    }

    #[test]
    fn the_directory_itself_going_away_moves_the_watch() {
        let remove = EventKind::Remove(RemoveKind::Folder);
        assert_eq!(
            plain().classify(&ev(remove, &["/d"])),
            EVERYTHING.without_change()
        );
    }

    #[test]
    fn a_chmod_of_the_directory_itself_is_a_change() {
        let attrib = EventKind::Modify(ModifyKind::Metadata(notify::event::MetadataKind::Any));
        assert_eq!(plain().classify(&ev(attrib, &["/d"])), CHANGED);
    }

    #[test]
    fn a_queue_overflow_means_rescan_everything() {
        let l = plain();
        let overflow = Event::new(EventKind::Other).set_flag(Flag::Rescan);
        assert_eq!(l.classify(&Ok(overflow)), EVERYTHING);
        assert_eq!(
            l.classify(&Err(notify::Error::generic("queue overflow"))),
            EVERYTHING
        );
    }

    #[test]
    fn while_watching_an_ancestor_any_event_may_be_the_directory_appearing() {
        let l = watching("/d/sub/m.json", vec![dir("/d", false)], &["/d/sub/m.json"]);
        let create = EventKind::Create(CreateKind::Folder);
        let seen = l.classify(&ev(create, &["/d/sub"]));
        assert_eq!(
            seen,
            Seen {
                moved: true,
                ..NOTHING
            }
        );
    }

    #[test]
    fn events_on_the_links_and_the_file_of_the_chain_are_changes() {
        // /d/m.json -> /e/hop -> /f/real.json, the file itself watched too.
        let mut file = dir("/f/real.json", true);
        file.is_dir = false;
        let l = watching(
            "/d/m.json",
            vec![dir("/d", true), dir("/e", true), dir("/f", true), file],
            &["/d/m.json", "/e/hop", "/f/real.json"],
        );
        let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert_eq!(l.classify(&ev(both, &["/e/hop.tmp", "/e/hop"])), CHANGED);
        assert_eq!(
            l.classify(&ev(both, &["/f/real.json.tmp-1", "/f/real.json"])),
            CHANGED
        );
        let data = EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any));
        assert_eq!(l.classify(&ev(data, &["/f/real.json"])), CHANGED);
        let create = EventKind::Create(CreateKind::File);
        assert_eq!(l.classify(&ev(create, &["/f/other.json"])), NOTHING);
        // The file's own watch when it is rotated away: a change, not a lost directory.
        let removed = EventKind::Remove(RemoveKind::File);
        assert_eq!(l.classify(&ev(removed, &["/f/real.json"])), CHANGED);
        let gone = EventKind::Remove(RemoveKind::Folder);
        assert_eq!(l.classify(&ev(gone, &["/f"])), EVERYTHING.without_change());
    }

    impl Seen {
        fn without_change(self) -> Seen {
            Seen {
                changed: false,
                ..self
            }
        }
    }

    #[test]
    fn targets_cover_each_directory_of_the_chain_once_and_the_file() {
        let (_t, d) = linked_map("targets");
        let l = watching(d.join("links/m.json").to_str().unwrap(), vec![], &[]);
        let (watches, entries) = l.targets();
        let paths: Vec<_> = watches.iter().map(|w| (w.path.clone(), w.is_dir)).collect();
        assert_eq!(
            paths,
            vec![
                (d.join("links"), true),
                (d.join("real"), true),
                (d.join("real/m.json"), false)
            ]
        );
        assert!(watches.iter().all(|w| w.exact && !w.ancestor));
        assert_eq!(
            entries,
            vec![
                d.join("links/m.json"),
                d.join("links/hop"),
                d.join("real/m.json")
            ]
        );
        // A missing directory of the chain is watched through its ancestor.
        std::fs::remove_dir_all(d.join("real")).unwrap();
        let (watches, _) = l.targets();
        assert_eq!(watches.len(), 2);
        assert_eq!(watches[0].path, d.join("links"));
        assert_eq!(
            (watches[1].path.clone(), watches[1].ancestor),
            (d.clone(), true)
        );
    }

    #[test]
    fn a_stamp_taken_right_after_a_change_is_looked_at_again() {
        let s = Stamp {
            dev: 1,
            ino: 1,
            size: 1,
            mtime_ns: 1_000_000_000,
            ctime_ns: 2_000_000_000,
            is_dir: false,
            is_file: true,
        };
        assert!(racy(Some(s), 2_000_000_000 + 1_000_000));
        assert!(!racy(Some(s), 2_000_000_000 + 500_000_000));
        assert!(!racy(None, 0));
    }
}
