//! One identity layer: the options, the live map, the watcher, the counters.
//! Pure Rust; `lib.rs` wraps it for JavaScript.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use crate::engine::Engine;
use crate::log::{Level, LineBuf, Log};
use crate::options::Options;
use crate::redact::results::{Redactor, DEFAULT_GRACE};
use crate::redact::Shown;
use crate::rules::{Decision, MapView, TokenStatus, ToolCall, Verdict};
use crate::token_map::{self, GateOptions, MapError, MapErrorKind, TokenMap};
use crate::watcher::{Trigger, WatchConfig, Watcher};

/// How often the watcher thread re-checks its target directory and staleness.
const HEARTBEAT: Duration = Duration::from_millis(500);

struct Snapshot {
    map: TokenMap,
    loaded: bool,
    /// Redacts this map's tokens from text the models will see, and the
    /// previous map's until `grace_until` (a result computed just before a
    /// rotation may hold them).
    redactor: Arc<Redactor>,
    grace_until: Option<Instant>,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            map: TokenMap::default(),
            loaded: false,
            redactor: Arc::new(Redactor::new([])),
            grace_until: None,
        }
    }
}

#[derive(Default)]
struct ReloadState {
    /// sha256 of the content now in force: a change that leaves the bytes
    /// equal is not a reload (a rename yields two events; a `touch` none).
    content: Option<[u8; 32]>,
    failing_since: Option<Instant>,
    last_logged_error: Option<String>,
    last_error: Option<String>,
}

#[derive(Default)]
struct Counters {
    reloads: AtomicU64,
    reload_errors: AtomicU64,
    injected: AtomicU64,
    passed: AtomicU64,
    missing: AtomicU64,
    blocked: AtomicU64,
    rewritten: AtomicU64,
    internal_errors: AtomicU64,
}

/// A point-in-time copy of the counters, for `stats()`.
#[derive(Debug, Clone)]
pub struct Stats {
    pub agents: u32,
    pub loaded: bool,
    pub reloads: u64,
    pub reload_errors: u64,
    pub last_error: Option<String>,
    pub stale: bool,
    pub injected: u64,
    pub passed: u64,
    pub missing: u64,
    pub blocked: u64,
    pub rewritten: u64,
    pub log_dropped: u64,
    pub internal_errors: u64,
    pub watcher: &'static str,
    pub token_map_path: String,
}

struct Shared {
    engine: Engine,
    log: Log,
    gate: GateOptions,
    snapshot: ArcSwap<Snapshot>,
    reload: Mutex<ReloadState>,
    stale: AtomicBool,
    counters: Counters,
}

pub struct Layer {
    shared: Arc<Shared>,
    watcher: Mutex<Option<Watcher>>,
    /// Counts the watchers started, so a poll timer of the WebAssembly
    /// build knows when the watcher it drives is gone.
    generation: std::sync::atomic::AtomicU64,
}

impl Layer {
    /// Loads the map once (a failure is logged, not returned: the map may
    /// appear later); `watch` then keeps it live.
    pub fn load(opts: Options, log: Log) -> Layer {
        Layer::load_after(opts, log, None)
    }

    /// As `load`, for a layer that replaces `previous` (the plugin's options
    /// changed): it starts from the map `previous` has in force, and that
    /// map's tokens stay redacted, so a bad map on disk at that moment costs
    /// nothing, as a bad reload does.
    pub fn load_after(opts: Options, log: Log, previous: Option<&Layer>) -> Layer {
        let gate = opts.gate();
        let start = previous
            .map(|p| p.shared.snapshot.load_full())
            .unwrap_or_default();
        let shared = Arc::new(Shared {
            engine: Engine::new(opts),
            log,
            gate,
            snapshot: ArcSwap::new(start),
            reload: Mutex::new(ReloadState::default()),
            stale: AtomicBool::new(false),
            counters: Counters::default(),
        });
        shared.reload();
        shared.log.info(format_args!(
            "plugin loaded; token map = {} ({} agents)",
            shared.engine.options().token_map_path.display(),
            shared.snapshot.load().map.len()
        ));
        Layer {
            shared,
            watcher: Mutex::new(None),
            generation: Default::default(),
        }
    }

    /// Starts the watcher, unless one runs; after `close`, starts a new one
    /// (which reads the map again first). Idempotent.
    pub fn watch(&self) -> std::io::Result<()> {
        let mut slot = self.watcher.lock();
        if slot.is_some() {
            return Ok(());
        }
        let opts = self.shared.engine.options();
        let config = WatchConfig {
            path: opts.token_map_path.clone(),
            mode: opts.watcher,
            poll_interval: Duration::from_millis(opts.poll_interval_ms),
            heartbeat: HEARTBEAT,
        };
        let on_trigger = {
            let shared = self.shared.clone();
            Box::new(move |t: Trigger| match t {
                Trigger::Watching | Trigger::Changed => shared.reload(),
                Trigger::Heartbeat => shared.check_stale(),
            })
        };
        let on_fallback = {
            let shared = self.shared.clone();
            Box::new(move |why: &str| shared.log.warn(format_args!("{why}")))
        };
        *slot = Some(Watcher::spawn(config, on_trigger, on_fallback)?);
        self.generation.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The running watcher's generation, if one runs.
    #[cfg(target_os = "wasi")]
    pub fn watching(&self) -> Option<u64> {
        let slot = self.watcher.lock();
        slot.as_ref()
            .map(|_| self.generation.load(Ordering::Relaxed))
    }

    /// How often the WebAssembly build's timer calls [`Layer::poll`]: every
    /// heartbeat, or every `pollIntervalMs` if that is shorter.
    #[cfg(target_os = "wasi")]
    pub fn poll_every(&self) -> Duration {
        HEARTBEAT.min(Duration::from_millis(
            self.shared.engine.options().poll_interval_ms,
        ))
    }

    /// One tick of the WebAssembly build's watcher, if watcher `generation`
    /// still runs; false once it doesn't (the timer then stops).
    #[cfg(target_os = "wasi")]
    pub fn poll(&self, generation: u64) -> bool {
        let mut slot = self.watcher.lock();
        match slot.as_mut() {
            Some(w) if self.generation.load(Ordering::Relaxed) == generation => {
                w.tick();
                true
            }
            _ => false,
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.shared.engine
    }

    /// What the rules learn from OpenClaw's config: the agents' workspaces
    /// and sandboxes (`map-access`). The plugin calls this with the
    /// gateway's config, `explain` with the file it is given.
    pub fn use_openclaw_config(
        &self,
        config: &crate::ops::config::OpenClawConfig,
        plugin_dirs: &[std::path::PathBuf],
        workspaces: &[(String, std::path::PathBuf)],
    ) {
        let mut table = config.agent_fs();
        // OpenClaw's own answer, where the plugin has it, replaces every
        // workspace it might have been.
        for (id, w) in workspaces {
            if let Some(a) = table.agents.get_mut(&id.to_lowercase()) {
                a.workspaces = vec![w.clone()];
            }
        }
        let mut files = config.files(&table);
        files.plugin_dirs = plugin_dirs.to_vec();
        self.shared.engine.set_openclaw_facts(table, &files);
    }

    /// This gateway's sandbox inputs: the protected locations in force
    /// (the same `map-access` guards), and the paths the sandbox hides.
    pub fn sandbox_inputs(&self) -> crate::sandbox::Inputs {
        let e = &self.shared.engine;
        crate::sandbox::inputs(
            e.protected_locations(),
            &e.workspaces(),
            &e.options().sandbox,
            &crate::sandbox::LiveHost::new(),
        )
    }

    /// Whether the sandbox backend can run here (`crate::sandbox::probe`).
    pub fn sandbox_probe(&self) -> crate::sandbox::Probe {
        crate::sandbox::probe(
            &crate::sandbox::LiveHost::new(),
            &self.shared.engine.options().sandbox,
            &self.sandbox_inputs(),
            &crate::sandbox::gateway_path(),
        )
    }

    /// The bwrap command line and environment for one sandboxed command.
    /// A variable that holds a token of the map in force is left out.
    pub fn sandbox_spawn(
        &self,
        req: &crate::sandbox::Request,
    ) -> Result<crate::sandbox::Spawn, crate::sandbox::Refusal> {
        let redactor = self.redactor();
        crate::sandbox::spawn_for(
            &crate::sandbox::LiveHost::new(),
            &self.shared.engine.options().sandbox,
            &self.sandbox_inputs(),
            req,
            |v| matches!(redactor.redact_str(v), std::borrow::Cow::Owned(_)),
        )
    }

    /// `f` on the map in force, pinned while `f` runs (a reload meanwhile
    /// swaps in a new one for later calls).
    pub fn with_view<R>(&self, f: impl FnOnce(&MapView<'_>) -> R) -> R {
        let s = &*self.shared;
        let snap = s.snapshot.load();
        let view = MapView {
            map: &snap.map,
            generation: s.counters.reloads.load(Ordering::Relaxed),
            loaded: snap.loaded,
            stale: s.stale.load(Ordering::Relaxed),
            redactor: Some(&snap.redactor),
        };
        f(&view)
    }

    /// Counts one decision; its per-call log line, if it has one.
    pub fn account(&self, call: &ToolCall<'_>, d: &Decision<'_>) -> Option<LineBuf> {
        self.shared.account(call, d)
    }

    /// A call to a tool no rule concerns: passed, counted, not logged.
    pub fn note_unowned(&self) {
        self.shared.counters.passed.fetch_add(1, Ordering::Relaxed);
    }

    /// An error or a panic while deciding, caught at the N-API boundary.
    pub fn note_internal_error(&self) {
        self.shared
            .counters
            .internal_errors
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Replaces every token of the map in force (and of the previous map,
    /// shortly after a rotation) in `text` by its fingerprint.
    pub fn redactor(&self) -> Arc<Redactor> {
        self.shared.snapshot.load().redactor.clone()
    }

    pub fn log(&self) -> &Log {
        &self.shared.log
    }

    pub fn stats(&self) -> Stats {
        let s = &*self.shared;
        let snap = s.snapshot.load();
        let c = &s.counters;
        let last_error = s.reload.lock().last_error.clone();
        Stats {
            agents: snap.map.len() as u32,
            loaded: snap.loaded,
            reloads: c.reloads.load(Ordering::Relaxed),
            reload_errors: c.reload_errors.load(Ordering::Relaxed),
            last_error,
            stale: s.stale.load(Ordering::Relaxed),
            injected: c.injected.load(Ordering::Relaxed),
            passed: c.passed.load(Ordering::Relaxed),
            missing: c.missing.load(Ordering::Relaxed),
            blocked: c.blocked.load(Ordering::Relaxed),
            rewritten: c.rewritten.load(Ordering::Relaxed),
            log_dropped: s.log.dropped(),
            internal_errors: c.internal_errors.load(Ordering::Relaxed),
            watcher: self
                .watcher
                .lock()
                .as_ref()
                .map_or("closed", |w| w.backend().as_str()),
            token_map_path: s.engine.options().token_map_path.display().to_string(),
        }
    }

    /// The map in force: each agent with its token's fingerprint, sorted.
    pub fn fingerprints(&self) -> Vec<(String, String)> {
        let snap = self.shared.snapshot.load();
        snap.map
            .sorted()
            .into_iter()
            .map(|(id, t)| (id.to_owned(), t.fingerprint()))
            .collect()
    }

    /// Stops the watcher. The last map stays in force for calls made after.
    pub fn close(&self) {
        let w = self.watcher.lock().take();
        drop(w);
    }
}

impl Drop for Layer {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn account(&self, call: &ToolCall<'_>, d: &Decision<'_>) -> Option<LineBuf> {
        if d.need_session.is_some() {
            return None; // not a decision yet: the call is decided again (and counted) once the session is known
        }
        let c = &self.counters;
        match d.token {
            TokenStatus::Injected(_) => {
                c.injected.fetch_add(1, Ordering::Relaxed);
            }
            TokenStatus::Missing(_) => {
                c.missing.fetch_add(1, Ordering::Relaxed);
            }
            TokenStatus::NotOwned => {}
        }
        match &d.verdict {
            // A patch that only takes the model's values out sets nothing: passed.
            Verdict::Rewrite(p) if !p.sets_anything() => c.passed.fetch_add(1, Ordering::Relaxed),
            Verdict::Pass => c.passed.fetch_add(1, Ordering::Relaxed),
            Verdict::Rewrite(_) => c.rewritten.fetch_add(1, Ordering::Relaxed),
            Verdict::Block(_) | Verdict::RequireApproval { .. } => {
                c.blocked.fetch_add(1, Ordering::Relaxed)
            }
        };
        // The per-call line: formatted once, on the stack (`Shown` and
        // `LineBuf` allocate nothing on the way).
        let agent = Shown(call.agent_id.unwrap_or("<none>"));
        let tool = Shown(call.tool);
        match (d.token, &d.verdict) {
            (TokenStatus::Injected(_), _) => self.log.line(
                Level::Info,
                format_args!("before_tool_call tool={tool} agent={agent} token-status=ok"),
            ),
            (TokenStatus::Missing(why), v) => self.log.line(
                Level::Warn,
                format_args!(
                    "before_tool_call tool={tool} agent={agent} token-status=missing ({why:?}){}",
                    if matches!(v, Verdict::Block(_)) {
                        "; blocked"
                    } else {
                        "; passed without a token"
                    }
                ),
            ),
            (TokenStatus::NotOwned, Verdict::Block(reason)) => self.log.line(
                Level::Warn,
                format_args!("blocked tool={tool} agent={agent}: {reason}"),
            ),
            (TokenStatus::NotOwned, _) => None,
        }
    }

    /// Re-reads the map; swaps it in if it is valid and different. Never
    /// throws away the map in force because of a bad file.
    fn reload(&self) {
        let mut st = self.reload.lock();
        let file = match token_map::read_map(&self.engine.options().token_map_path, &self.gate) {
            Ok(f) => f,
            Err(e) => return self.fail(&mut st, e),
        };
        let digest: [u8; 32] = Sha256::digest(&file.bytes).into();
        if st.content == Some(digest) {
            self.recovered(&mut st);
            return;
        }
        let parsed = match token_map::parse(&file.bytes) {
            Ok(p) => p,
            // The parser does not know the path; every refusal line names it.
            Err(e) => {
                let path = self.engine.options().token_map_path.display();
                return self.fail(&mut st, MapError::new(e.kind, format!("{path}: {e}")));
            }
        };
        for w in file.warnings.iter().chain(parsed.skipped.iter()) {
            self.log.warn(format_args!(
                "token map {}: {w}",
                self.engine.options().token_map_path.display()
            ));
        }
        let agents = parsed.map.len();
        let first = st.content.is_none();
        let now = Instant::now();
        let old = self.snapshot.load();
        let redactor = Redactor::for_maps(&parsed.map, Some((&old.map, now)), DEFAULT_GRACE, now);
        self.snapshot.store(Arc::new(Snapshot {
            map: parsed.map,
            loaded: true,
            redactor: Arc::new(redactor),
            grace_until: (!old.map.is_empty()).then_some(now + DEFAULT_GRACE),
        }));
        st.content = Some(digest);
        self.counters.reloads.fetch_add(1, Ordering::Relaxed);
        self.recovered(&mut st);
        if !first {
            self.log
                .info(format_args!("token map reloaded; {agents} agents"));
        }
    }

    fn fail(&self, st: &mut ReloadState, e: MapError) {
        self.counters.reload_errors.fetch_add(1, Ordering::Relaxed);
        st.failing_since.get_or_insert_with(Instant::now);
        // One failure, one line: a slow in-place write passes through many
        // invalid states (each at a new column), so consecutive invalid
        // contents count as one failure; other failures compare by message,
        // numbers aside. `stats().lastError` always has the current one.
        let key: String = if e.kind == MapErrorKind::Invalid {
            "invalid content".to_owned()
        } else {
            e.message.chars().filter(|c| !c.is_ascii_digit()).collect()
        };
        if st.last_logged_error.as_deref() != Some(key.as_str()) {
            let snap = self.snapshot.load();
            let kept = if snap.loaded {
                format!("keeping the last good map ({} agents)", snap.map.len())
            } else {
                "no map is loaded yet, so no tokens are injected".to_owned()
            };
            self.log
                .warn(format_args!("token map not loaded: {}; {kept}", e.message));
            st.last_logged_error = Some(key);
        }
        st.last_error = Some(e.message);
    }

    fn recovered(&self, st: &mut ReloadState) {
        if st.failing_since.take().is_some() && st.last_logged_error.is_some() {
            self.log.info(format_args!("token map is loadable again"));
        }
        st.last_logged_error = None;
        st.last_error = None;
        if self.stale.swap(false, Ordering::Relaxed) {
            self.log
                .info(format_args!("token map is fresh again; injecting tokens"));
        }
    }

    /// Once the grace period after a rotation is over, the previous map's
    /// tokens are no longer redacted (another map may reuse none of them).
    fn end_grace(&self) {
        let snap = self.snapshot.load();
        if snap.grace_until.is_none_or(|t| Instant::now() < t) {
            return;
        }
        let _st = self.reload.lock(); // no reload swaps the snapshot meanwhile
        let snap = self.snapshot.load();
        let redactor = Redactor::for_maps(&snap.map, None, DEFAULT_GRACE, Instant::now());
        self.snapshot.store(Arc::new(Snapshot {
            map: snap.map.clone(),
            loaded: snap.loaded,
            redactor: Arc::new(redactor),
            grace_until: None,
        }));
    }

    fn check_stale(&self) {
        self.end_grace();
        let Some(max) = self.engine.options().max_stale_seconds else {
            return;
        };
        let st = self.reload.lock();
        let Some(since) = st.failing_since else {
            return;
        };
        if since.elapsed().as_secs_f64() > max && !self.stale.swap(true, Ordering::Relaxed) {
            self.log.warn(format_args!(
                "token map unreadable for more than {max}s (maxStaleSeconds); treating every agent as missing until it loads"
            ));
        }
    }
}
