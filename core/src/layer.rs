//! One identity layer: the options, the live map, the watcher, the counters.
//! Pure Rust; `lib.rs` wraps it for JavaScript.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use rustc_hash::FxHashSet;
use sha2::{Digest, Sha256};

use crate::engine::Engine;
use crate::log::{Level, LineBuf, Log};
use crate::options::Options;
use crate::redact::results::{Hits, Redactor, DEFAULT_GRACE};
use crate::redact::{as_is, Shown};
use crate::rules::{Decision, MapView, TokenStatus, ToolCall, Verdict};
use crate::token_map::{self, GateOptions, MapError, MapErrorKind, TokenMap};
use crate::watcher::{Trigger, WatchConfig, Watcher};
use crate::{log_error, log_info, log_warn};

/// How often the watcher thread re-checks its target directory and staleness.
const HEARTBEAT: Duration = Duration::from_millis(500);

/// The most tokens out of force the redactor keeps: 65,536, about 400 bytes
/// each with the redactor's index, so some 26 MB (50 MB while a reload
/// builds the next redactor). That is every token of a 10,000-agent map
/// rotated six times over within the grace period. A minting service that
/// rotates faster loses the oldest first, with a warning.
pub const MAX_RETIRED: usize = 1 << 16;

struct Snapshot {
    map: TokenMap,
    loaded: bool,
    /// Tokens that are not in force but may still be valid at the server.
    remembered: Remembered,
    /// Redacts the map's tokens and the remembered ones from text the
    /// models will see.
    redactor: Arc<Redactor>,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            map: TokenMap::default(),
            loaded: false,
            remembered: Remembered::default(),
            redactor: Arc::new(Redactor::new([])),
        }
    }
}

/// Tokens the redactor keeps beyond the map in force.
#[derive(Clone, Default)]
struct Remembered {
    /// Every token that was in force, and when it went out of force: kept
    /// for [`DEFAULT_GRACE`] (a result computed before a rotation may hold
    /// it), whatever the number of rotations, up to [`MAX_RETIRED`].
    /// Shared, not copied, by the snapshot each reload makes.
    retired: std::collections::VecDeque<(Arc<str>, Instant)>,
    /// Tokens of a map on disk that is not in force, or of entries it
    /// skipped: refused for their permissions, a duplicate id, a token given
    /// to two agents or a bad agent id, they are likely valid at the server.
    refused: Vec<String>,
}

impl Remembered {
    fn redactor(&self, map: &TokenMap) -> Redactor {
        Redactor::new(
            map.sorted()
                .into_iter()
                .map(|(_, t)| t.expose())
                .chain(self.refused.iter().map(String::as_str))
                .chain(self.retired.iter().map(|(t, _)| &**t)),
        )
    }

    /// Retires `tokens` now; true when some had to go early (the cap).
    fn retire<'t>(&mut self, tokens: impl IntoIterator<Item = &'t str>, now: Instant) -> bool {
        for t in tokens {
            self.retired.push_back((Arc::from(t), now));
        }
        let mut early = false;
        while self.retired.len() > MAX_RETIRED {
            self.retired.pop_front();
            early = true;
        }
        early
    }

    /// Forgets retired tokens older than the grace; true when any went.
    fn prune(&mut self, now: Instant) -> bool {
        let before = self.retired.len();
        while self
            .retired
            .front()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) >= DEFAULT_GRACE)
        {
            self.retired.pop_front();
        }
        self.retired.len() != before
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
    redaction_hits: AtomicU64,
}

/// Redaction hits are logged at most this many lines per
/// [`HIT_LOG_WINDOW`]; the rest are counted, and the next line logged says
/// how many were not: a flood of echoes can't drown the log.
pub const HIT_LOG_LINES: u32 = 10;
pub const HIT_LOG_WINDOW: Duration = Duration::from_secs(60);

#[derive(Default)]
struct HitLog {
    since: Option<Instant>,
    lines: u32,
    unlogged: u64,
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
    /// Runs of text replaced because they held a piece of a token, on
    /// every surface a model sees (`Layer::note_redaction`).
    pub redaction_hits: u64,
    pub watcher: &'static str,
    pub token_map_path: String,
    /// Whether the agents are contained (`crate::posture`).
    pub posture: Arc<crate::posture::Judged>,
}

struct Shared {
    engine: Engine,
    log: Log,
    gate: GateOptions,
    snapshot: ArcSwap<Snapshot>,
    reload: Mutex<ReloadState>,
    stale: AtomicBool,
    counters: Counters,
    /// The warning that the grace lost tokens to its cap was given.
    warned_retired: AtomicBool,
    hit_log: Mutex<HitLog>,
}

/// What the plugin tells the layer besides OpenClaw's config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginFacts {
    /// Where the plugin is installed and the copy OpenClaw loaded it from.
    pub plugin_dirs: Vec<std::path::PathBuf>,
    /// A file of OpenClaw's package, as the plugin resolves it.
    pub openclaw_files: Vec<std::path::PathBuf>,
    /// Each configured agent's workspace, as OpenClaw resolves it.
    pub workspaces: Vec<(String, std::path::PathBuf)>,
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
            warned_retired: AtomicBool::new(false),
            hit_log: Mutex::new(HitLog::default()),
        });
        shared.reload();
        log_info!(
            shared.log,
            "plugin loaded; token map = {path} ({agents} agents)",
            path = %shared.engine.options().token_map_path.display(),
            agents = shared.snapshot.load().map.len(),
        );
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
            Box::new(move |why: &str| log_warn!(shared.log, "{why}", why))
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

    /// How often the WebAssembly build's heartbeat timer ticks: every
    /// heartbeat, or every `pollIntervalMs` if that is shorter.
    #[cfg(target_os = "wasi")]
    pub fn poll_every(&self) -> Duration {
        HEARTBEAT.min(Duration::from_millis(
            self.shared.engine.options().poll_interval_ms,
        ))
    }

    /// Hands the WebAssembly build's watcher what its bridge saw, if
    /// watcher `generation` still runs, and says what to watch now; `None`
    /// once it doesn't (the bridge then stops its timer and watches).
    #[cfg(target_os = "wasi")]
    pub fn watcher_input(
        &self,
        generation: u64,
        input: crate::watcher::Input<'_>,
    ) -> Option<crate::watcher::Watch> {
        let mut slot = self.watcher.lock();
        match slot.as_mut() {
            Some(w) if self.generation.load(Ordering::Relaxed) == generation => Some(w.on(input)),
            _ => None,
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.shared.engine
    }

    /// What the rules learn from OpenClaw's config (the agents' workspaces
    /// and sandboxes, OpenClaw's files) and from the plugin, for
    /// `map-access` and the protected locations (`crate::protected`). The
    /// plugin calls this with the gateway's config, `explain` with the file
    /// it is given, a bare `IdentityLayer` with none: its protected
    /// locations are then the environment's and the process's.
    pub fn use_openclaw_config(
        &self,
        config: Option<&crate::openclaw::config::OpenClawConfig>,
        plugin: &PluginFacts,
    ) {
        let (mut table, mut files) = match config {
            Some(c) => {
                let table = c.agent_fs();
                let files = crate::protected::OpenClawFiles {
                    process: crate::protected::Process::current(),
                    ..c.files(&table)
                };
                (table, files)
            }
            None => (
                crate::agent_fs::AgentFsTable::default(),
                crate::protected::OpenClawFiles {
                    process: crate::protected::Process::current(),
                    ..Default::default()
                },
            ),
        };
        // OpenClaw's own answer, where the plugin has it, replaces every
        // workspace it might have been.
        for (id, w) in &plugin.workspaces {
            if let Some(a) = table.agents.get_mut(&id.to_lowercase()) {
                a.workspaces = vec![w.clone()];
                if !files.workspaces.contains(w) {
                    files.workspaces.push(w.clone());
                }
            }
        }
        files.plugin_dirs = plugin.plugin_dirs.clone();
        files.openclaw_files = plugin.openclaw_files.clone();
        let engine = &self.shared.engine;
        let posture = config.map(|c| {
            let opts = engine.options();
            let protected = crate::protected::locations(&opts.token_map_path, &files);
            crate::posture::of_config(
                opts.posture,
                c.root(),
                &table,
                &protected,
                &crate::posture::ConfigTools::new(c.root()),
                crate::sandbox::bwrap_here(&opts.sandbox),
                &opts.tool_prefixes,
            )
        });
        engine.set_openclaw_facts(table, &files);
        if let Some(p) = posture {
            self.set_posture(p);
        }
    }

    /// Says that nobody judged the posture: a layer made without OpenClaw's
    /// config (the JS API used on its own) serves tokens as configured. A
    /// layer starts unjudged, so [`Layer::set_posture`] never sees that as a
    /// change: whoever makes a layer without a config says it, once.
    pub fn say_unjudged(&self) {
        log_warn!(
            self.shared.log,
            "posture: no OpenClaw config was given, so nobody judged whether the agents' own tools can reach the token map; tokens are served as configured"
        );
    }

    /// Puts `posture` in force, and says so in the log when it changed: at
    /// start, and at each config reload that changes it. Under `"enforce"`
    /// an exposed agent is an error (no token is served), under `"warn"` a
    /// warning.
    pub fn set_posture(&self, posture: crate::posture::Posture) {
        use crate::options::PostureMode as Mode;
        let engine = &self.shared.engine;
        let before = engine.posture();
        let changed = before.posture != posture;
        engine.set_posture(posture);
        if !changed {
            return;
        }
        let now = engine.posture();
        let p = &now.posture;
        let exposed = p.describe_exposed();
        let log = &self.shared.log;
        match (p.judged(), exposed.is_empty(), p.mode) {
            (false, _, _) => self.say_unjudged(),
            (true, true, _) => log_info!(
                log,
                "posture: every agent is contained ({agents}); tokens are served",
                agents = %p
                    .agents
                    .iter()
                    .flatten()
                    .map(|a| format!(
                        "{}: {}",
                        crate::posture::display(&a.agent_id),
                        match a.containment {
                            Ok(crate::posture::Containment::Sandbox) => "sandbox",
                            _ => "host, confined",
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            // Not "NO token: 4 agents": OpenClaw's log redaction takes a
            // value after "token:" for a secret, and the count is lost.
            (true, false, Mode::Enforce) => log_error!(
                log,
                "posture: serving NO token, since {exposed} agent{s} can reach the token map or OpenClaw's config with {their} own tools, and posture is \"enforce\". {agents}",
                exposed = exposed.len(),
                s = if exposed.len() == 1 { "" } else { "s" },
                their = if exposed.len() == 1 { "its" } else { "their" },
                agents = %exposed.join(" | "),
            ),
            (true, false, Mode::Warn) => log_warn!(
                log,
                "posture \"warn\": serving tokens although {exposed} agent{s} can reach the token map or OpenClaw's config with {their} own tools: {agents}",
                exposed = exposed.len(),
                s = if exposed.len() == 1 { "" } else { "s" },
                their = if exposed.len() == 1 { "its" } else { "their" },
                agents = %exposed.join(" | "),
            ),
        }
    }

    /// This gateway's sandbox, taken now (on the calling thread): the
    /// protected locations in force (the same `map-access` guards), the
    /// workspaces, and the map's tokens, which no command's environment
    /// may hold.
    pub fn sandbox(&self) -> crate::sandbox::Context {
        let e = &self.shared.engine;
        let redactor = self.redactor();
        crate::sandbox::Context {
            opts: e.options().sandbox.clone(),
            protected: e.protected_locations(),
            workspaces: e.workspaces(),
            workspace_hooks: e.workspace_hooks(),
            env: crate::sandbox::GatewayEnv::read(),
            holds_token: Box::new(move |v| {
                matches!(redactor.redact_str(v), std::borrow::Cow::Owned(_))
            }),
        }
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

    /// A redaction that fired: some text on its way to a model (`surface`:
    /// a tool result, a transcript, text for another agent) held a piece of
    /// a token. That is a compromise signal, whoever put it there: it is
    /// counted (`stats().redactionHits`) and logged with the agent, the
    /// tool and the tokens' fingerprints, never a digit of them, at most
    /// [`HIT_LOG_LINES`] lines per [`HIT_LOG_WINDOW`].
    pub fn note_redaction(
        &self,
        agent: Option<&str>,
        tool: Option<&str>,
        surface: &str,
        hits: &Hits,
    ) {
        self.shared
            .note_redaction(agent, tool, surface, hits, Instant::now());
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
            redaction_hits: c.redaction_hits.load(Ordering::Relaxed),
            watcher: self
                .watcher
                .lock()
                .as_ref()
                .map_or("closed", |w| w.backend().as_str()),
            token_map_path: s.engine.options().token_map_path.display().to_string(),
            posture: s.engine.posture(),
        }
    }

    /// The map in force: each agent (as `redact::shown` prints it: a token
    /// used as an agent id is a valid id) with its token's fingerprint, sorted.
    pub fn fingerprints(&self) -> Vec<(String, String)> {
        let snap = self.shared.snapshot.load();
        snap.map
            .sorted()
            .into_iter()
            .map(|(id, t)| (crate::redact::shown(id), t.fingerprint()))
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
    fn note_redaction(
        &self,
        agent: Option<&str>,
        tool: Option<&str>,
        surface: &str,
        hits: &Hits,
        now: Instant,
    ) {
        if hits.is_empty() {
            return;
        }
        self.counters
            .redaction_hits
            .fetch_add(hits.runs, Ordering::Relaxed);
        let unlogged = {
            let mut h = self.hit_log.lock();
            if h.since
                .is_none_or(|s| now.saturating_duration_since(s) >= HIT_LOG_WINDOW)
            {
                h.since = Some(now);
                h.lines = 0;
            }
            if h.lines >= HIT_LOG_LINES {
                h.unlogged += hits.runs;
                return;
            }
            h.lines += 1;
            std::mem::take(&mut h.unlogged)
        };
        let also = if unlogged > 0 {
            format!(
                " ({unlogged} earlier hit{} within {} s were counted, not logged)",
                if unlogged == 1 { "" } else { "s" },
                HIT_LOG_WINDOW.as_secs()
            )
        } else {
            String::new()
        };
        let fps = hits.fingerprints();
        log_warn!(
            self.log,
            "token redacted from a {surface}: tool={tool} agent={agent} token{s} {fingerprints} ({runs} run{runs_s} replaced by a fingerprint); a token that reaches a model is a compromise signal: find how it got there, and rotate it{also}",
            surface,
            tool = %Shown(tool.unwrap_or("<none>")),
            agent = %Shown(agent.unwrap_or("<none>")),
            s = if fps.len() == 1 { "" } else { "s" },
            fingerprints = %fps.join(", "),
            runs = hits.runs,
            runs_s = if hits.runs == 1 { "" } else { "s" },
            also = %also,
        );
    }

    fn account(&self, call: &ToolCall<'_>, d: &Decision<'_>) -> Option<LineBuf> {
        if d.need_session.is_some() {
            return None; // not a decision yet: the call is decided again (and counted) once the session is known
        }
        if !d.redaction.is_empty() {
            self.note_redaction(
                call.agent_id,
                Some(call.tool),
                "message for another agent",
                &d.redaction,
                Instant::now(),
            );
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
            // The line of nearly every call, without the formatting machinery.
            (TokenStatus::Injected(_), _) if as_is(call.tool) && as_is(agent.0) => {
                self.log.line_of(
                    Level::Info,
                    &[
                        "before_tool_call tool=",
                        call.tool,
                        " agent=",
                        agent.0,
                        " token-status=ok",
                    ],
                )
            }
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
            log_warn!(
                self.log,
                "token map {path}: {warning}",
                path = %self.engine.options().token_map_path.display(),
                warning = %w,
            );
        }
        let agents = parsed.map.len();
        let first = st.content.is_none();
        let now = Instant::now();
        let old = self.snapshot.load();
        let mut remembered = old.remembered.clone();
        // What leaves force retires: the old map's tokens that the new one
        // lacks, and refused ones the file no longer holds.
        // Sets, not scans: a map at the size cap holds 180,000 tokens.
        let in_force = parsed.map.token_set();
        let refused_now = token_map::tokens_in(&file.bytes)
            .into_iter()
            .filter(|t| !in_force.contains(t.as_str()))
            .collect::<Vec<_>>();
        let still_refused: FxHashSet<&str> = refused_now.iter().map(String::as_str).collect();
        let leaving: Vec<String> = old
            .map
            .token_set()
            .into_iter()
            .map(str::to_owned)
            .chain(std::mem::take(&mut remembered.refused))
            .filter(|t| !in_force.contains(t.as_str()) && !still_refused.contains(t.as_str()))
            .collect();
        drop(still_refused);
        drop(in_force);
        let early = remembered.retire(leaving.iter().map(String::as_str), now);
        remembered.refused = refused_now;
        remembered.prune(now);
        self.retired_early(early);
        let redactor = remembered.redactor(&parsed.map);
        self.snapshot.store(Arc::new(Snapshot {
            map: parsed.map,
            loaded: true,
            remembered,
            redactor: Arc::new(redactor),
        }));
        st.content = Some(digest);
        self.counters.reloads.fetch_add(1, Ordering::Relaxed);
        self.recovered(&mut st);
        if !first {
            log_info!(self.log, "token map reloaded; {agents} agents", agents);
        }
    }

    /// A warning, once, that the grace lost tokens to the cap.
    fn retired_early(&self, early: bool) {
        if early && !self.warned_retired.swap(true, Ordering::Relaxed) {
            log_warn!(
                self.log,
                "the token map rotated more than {max} tokens out of force within {grace} s: the oldest are no longer redacted from tool results",
                max = MAX_RETIRED,
                grace = DEFAULT_GRACE.as_secs(),
            );
        }
    }

    /// The tokens a map on disk holds that the layer won't serve (it is
    /// refused, or they are in entries it skipped) stay redacted.
    fn refuse_tokens(&self, bytes: &[u8]) {
        let old = self.snapshot.load();
        let in_force = old.map.token_set();
        let refused: Vec<String> = token_map::tokens_in(bytes)
            .into_iter()
            .filter(|t| !in_force.contains(t.as_str()))
            .collect();
        if refused == old.remembered.refused {
            return;
        }
        let now = Instant::now();
        let mut remembered = old.remembered.clone();
        // Refused tokens the file no longer holds retire, with the grace.
        let now_refused: FxHashSet<&str> = refused.iter().map(String::as_str).collect();
        let gone: Vec<String> = remembered
            .refused
            .iter()
            .filter(|t| !now_refused.contains(t.as_str()))
            .cloned()
            .collect();
        drop(now_refused);
        let early = remembered.retire(gone.iter().map(String::as_str), now);
        remembered.refused = refused;
        self.retired_early(early);
        let redactor = remembered.redactor(&old.map);
        self.snapshot.store(Arc::new(Snapshot {
            map: old.map.clone(),
            loaded: old.loaded,
            remembered,
            redactor: Arc::new(redactor),
        }));
    }

    fn fail(&self, st: &mut ReloadState, e: MapError) {
        self.counters.reload_errors.fetch_add(1, Ordering::Relaxed);
        // Read for redaction only (never served): a refused map's tokens.
        if let Some(bytes) =
            token_map::read_unserved(&self.engine.options().token_map_path, self.gate.max_bytes)
        {
            self.refuse_tokens(&bytes);
        }
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
            log_warn!(
                self.log,
                "token map not loaded: {error}; {kept}",
                error = %e.message,
                kept = %kept,
            );
            st.last_logged_error = Some(key);
        }
        st.last_error = Some(e.message);
    }

    fn recovered(&self, st: &mut ReloadState) {
        if st.failing_since.take().is_some() && st.last_logged_error.is_some() {
            log_info!(self.log, "token map is loadable again");
        }
        st.last_logged_error = None;
        st.last_error = None;
        if self.stale.swap(false, Ordering::Relaxed) {
            log_info!(self.log, "token map is fresh again; injecting tokens");
        }
    }

    /// Once the grace after a token went out of force is over, it is no
    /// longer redacted.
    fn end_grace(&self) {
        let now = Instant::now();
        let snap = self.snapshot.load();
        if snap
            .remembered
            .retired
            .front()
            .is_none_or(|(_, at)| now.saturating_duration_since(*at) < DEFAULT_GRACE)
        {
            return;
        }
        let _st = self.reload.lock(); // no reload swaps the snapshot meanwhile
        let snap = self.snapshot.load();
        let mut remembered = snap.remembered.clone();
        if !remembered.prune(now) {
            return;
        }
        let redactor = remembered.redactor(&snap.map);
        self.snapshot.store(Arc::new(Snapshot {
            map: snap.map.clone(),
            loaded: snap.loaded,
            remembered,
            redactor: Arc::new(redactor),
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
            log_warn!(
                self.log,
                "token map unreadable for more than {max}s (maxStaleSeconds); treating every agent as missing until it loads",
                max,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{write, TempDir};

    /// A private directory, and the path of the map in it (not written yet).
    fn map_dir(tag: &str) -> (TempDir, std::path::PathBuf) {
        let d = TempDir::new(&format!("layer-{tag}"));
        let map = d.join("agent-tokens.json");
        (d, map)
    }

    fn token(i: u32) -> String {
        format!("{:064x}", 0xabcdef_u64 * u64::from(i + 1) + 0x1234567)
    }

    fn layer(map: &std::path::Path) -> Layer {
        let opts =
            Options::from_json(&serde_json::json!({ "tokenMapPath": map }).to_string()).unwrap();
        Layer::load(opts, Log::silent())
    }

    fn redacts(l: &Layer, t: &str) -> bool {
        l.redactor().redact_str(t) != t
    }

    #[test]
    fn every_token_in_force_in_the_grace_stays_redacted_whatever_the_rotations() {
        let (_d, map) = map_dir("rotations");
        write(&map, format!(r#"{{"a": "{}"}}"#, token(0)), 0o600);
        let l = layer(&map);
        // One agent rotated per write, many times over: every token stays.
        for i in 1..40 {
            write(&map, format!(r#"{{"a": "{}"}}"#, token(i)), 0o600);
            l.shared.reload();
        }
        for i in 0..40 {
            assert!(redacts(&l, &token(i)), "token {i} is no longer redacted");
        }
        // Past the grace they go; the one in force stays.
        let mut r = l.shared.snapshot.load().remembered.clone();
        assert!(r.prune(Instant::now() + DEFAULT_GRACE));
        assert!(r.retired.is_empty());
        assert!(
            r.redactor(&l.shared.snapshot.load().map)
                .redact_str(&token(39))
                != token(39)
        );
    }

    /// A layer over `map` whose log lines are kept.
    fn logged_layer(map: &std::path::Path) -> (Layer, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let log = Log::new(
            Some(Box::new(move |_, line: String| {
                sink.lock().push(line);
                true
            })),
            true,
        );
        let opts =
            Options::from_json(&serde_json::json!({ "tokenMapPath": map }).to_string()).unwrap();
        (Layer::load(opts, log), lines)
    }

    #[test]
    fn a_redaction_hit_is_counted_and_logged_with_agent_tool_and_fingerprint_at_a_bounded_rate() {
        let (_d, map) = map_dir("hits");
        let t = token(3);
        write(&map, format!(r#"{{"paco--francis": "{t}"}}"#), 0o600);
        let (l, lines) = logged_layer(&map);
        let r = l.redactor();
        let mut hits = Hits::default();
        let text = format!("echo {} and {}", &t[..20], &t[30..]);
        assert_ne!(r.redact_str_noting(&text, &mut hits), text);
        lines.lock().clear();
        let start = Instant::now();
        let note = |at: Duration| {
            l.shared.note_redaction(
                Some("paco--francis"),
                Some("exec"),
                "tool result",
                &hits,
                start + at,
            )
        };
        note(Duration::ZERO);
        assert_eq!(l.stats().redaction_hits, 2);
        let first = lines.lock()[0].clone();
        let fp = crate::redact::fingerprint(&t);
        for part in [
            "token redacted from a tool result",
            "tool=exec",
            "agent=paco--francis",
            &format!("token sha256:{fp}"),
            "2 runs",
            "rotate",
        ] {
            assert!(
                first.contains(part),
                "{part}: {}",
                crate::redact::scrub(&first)
            );
        }
        assert!(
            (0..=48).all(|i| !first.contains(&t[i..i + 16])),
            "a line shows digits of the token: {}",
            crate::redact::scrub(&first)
        );
        // A flood: HIT_LOG_LINES lines per window, every hit counted.
        for i in 1..40 {
            note(Duration::from_millis(i));
        }
        assert_eq!(lines.lock().len(), HIT_LOG_LINES as usize);
        assert_eq!(l.stats().redaction_hits, 80);
        // The next window's first line says how many went unlogged.
        note(HIT_LOG_WINDOW + Duration::from_secs(1));
        let last = lines.lock().last().unwrap().clone();
        assert!(
            last.contains("(60 earlier hits within 60 s were counted, not logged)"),
            "{last}"
        );
        assert_eq!(lines.lock().len(), HIT_LOG_LINES as usize + 1);
        // Nothing found, nothing noted.
        l.note_redaction(None, None, "transcript", &Hits::default());
        assert_eq!(l.stats().redaction_hits, 82);
    }

    #[test]
    fn the_grace_keeps_at_most_its_cap_and_drops_the_oldest_first() {
        let mut r = Remembered::default();
        let now = Instant::now();
        let many: Vec<String> = (0..(MAX_RETIRED as u32 + 3)).map(token).collect();
        assert!(r.retire(many.iter().map(String::as_str), now));
        assert_eq!(r.retired.len(), MAX_RETIRED);
        assert_eq!(&*r.retired.front().unwrap().0, many[3].as_str());
    }

    #[test]
    fn the_tokens_of_a_map_the_layer_refuses_are_redacted_too() {
        let (_d, map) = map_dir("refused");
        let good = token(100);
        write(&map, format!(r#"{{"a": "{good}"}}"#), 0o600);
        let l = layer(&map);
        // A duplicate id, a token given to two agents, a bad agent id,
        // unsafe permissions: none is served, all are redacted.
        let cases = [
            (
                format!(r#"{{"a": "{}", "a": "{}"}}"#, token(1), token(2)),
                0o600,
                vec![1, 2],
            ),
            (
                format!(r#"{{"a": "{}", "b": "{}"}}"#, token(3), token(3)),
                0o600,
                vec![3],
            ),
            (
                format!(r#"{{"a": "{good}", "Not An Id": "{}"}}"#, token(4)),
                0o600,
                vec![4],
            ),
            (format!(r#"{{"a": "{}"}}"#, token(5)), 0o666, vec![5]),
        ];
        for (content, mode, tokens) in cases {
            write(&map, &content, mode);
            l.shared.reload();
            for t in tokens {
                assert!(
                    redacts(&l, &token(t)),
                    "{content} (mode {mode:o}): token {t}"
                );
            }
            assert!(redacts(&l, &good));
        }
        // The unsafe map was never served.
        assert_eq!(
            l.shared
                .snapshot
                .load()
                .map
                .get("a")
                .map(|t| t.expose().to_owned()),
            Some(good)
        );
    }

    /// A map near the size cap, rotated whole and then refused: every step
    /// compares 100,000 tokens with 100,000 (the first cut scanned a list
    /// per token and took minutes here; the bench's scale rows found it).
    #[test]
    fn a_map_of_100_000_agents_rotates_and_is_refused_with_every_token_redacted() {
        let (_d, map) = map_dir("large");
        let n = 100_000u32;
        let body = |base: u32| {
            let entries: Vec<String> = (0..n)
                .map(|i| format!(r#""user-{i:06}--assistant": "{}""#, token(base + i)))
                .collect();
            format!("{{{}}}", entries.join(","))
        };
        write(&map, body(0), 0o600);
        let l = layer(&map);
        assert_eq!(l.shared.snapshot.load().map.len(), n as usize);
        // Every token rotated: the old ones retire, up to the cap.
        write(&map, body(n), 0o600);
        l.shared.reload();
        let snap = l.shared.snapshot.load();
        assert_eq!(
            snap.map.get("user-000000--assistant").unwrap().expose(),
            token(n)
        );
        assert_eq!(snap.remembered.retired.len(), MAX_RETIRED);
        // The same map made unsafe: refused, its tokens (here the ones in
        // force) stay redacted; a third set in a refused file is learned.
        write(&map, body(2 * n), 0o666);
        l.shared.reload();
        let snap = l.shared.snapshot.load();
        assert_eq!(
            snap.map.get("user-000000--assistant").unwrap().expose(),
            token(n)
        );
        assert_eq!(snap.remembered.refused.len(), n as usize);
        for i in [0, n / 2, n - 1] {
            assert!(redacts(&l, &token(2 * n + i)), "refused token {i}");
            assert!(redacts(&l, &token(n + i)), "token {i} in force");
        }
    }

    #[test]
    fn a_layer_made_for_new_options_starts_from_the_map_the_old_one_had_in_force() {
        let (_d, map) = map_dir("succeed");
        let t = token(7);
        write(&map, format!(r#"{{"paco--francis": "{t}"}}"#), 0o600);
        let old = layer(&map);
        // The map breaks, then the options change (another onMissingToken).
        write(&map, "{ not json", 0o600);
        let opts = Options::from_json(
            &serde_json::json!({ "tokenMapPath": map, "onMissingToken": "block" }).to_string(),
        )
        .unwrap();
        let new = Layer::load_after(opts, Log::silent(), Some(&old));
        let snap = new.shared.snapshot.load();
        assert!(snap.loaded);
        assert_eq!(
            snap.map.get("paco--francis").map(|t| t.expose().to_owned()),
            Some(t.clone())
        );
        assert!(redacts(&new, &t));
        assert!(
            new.stats().last_error.is_some(),
            "the broken file is reported"
        );
    }
}
