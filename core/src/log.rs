//! The log bridge. The layer logs through `tracing`: each line is an event
//! with fields, emitted with [`log_info!`](crate::log_info),
//! [`log_warn!`](crate::log_warn) or [`log_error!`](crate::log_error) under
//! that layer's own dispatcher (`tracing::Dispatch`), whose one subscriber
//! layer, [`ToSink`], renders the event into the line the plugin's logger
//! gets, from any thread. No global subscriber is installed, so a host
//! process's own one is left alone. A sink that cannot take a line drops it
//! and counts the drop: logging must never block a tool call or the watcher.
//!
//! An event's message is a template: `{name}` in it is replaced by the
//! field `name`'s value, so the line reads as a sentence and a subscriber
//! still gets each value as a field. A field the message does not name is
//! added at the end as ` name=value`. Values are recorded as they are given
//! (`%` for `Display`), and only rendered when the line is written: an info
//! event is not even built when the logger takes no info lines.
//!
//! ```
//! # let log = claw_identity_core::log::Log::silent();
//! # let (agents, path) = (3, "/m.json");
//! claw_identity_core::log_info!(log, "token map {path}: {agents} agents", path = %path, agents);
//! ```
//!
//! Nothing may print a token: values that came from outside pass through
//! `redact::shown`/`scrub` at the call site, and [`ToSink`] scrubs the line
//! it renders once more.
//!
//! The per-call line is not an event: it is formatted into a [`LineBuf`] on
//! the stack and handed to the caller with the decision, so an owned call
//! logs without a heap allocation (the bridge delivers it in the same call
//! into JS that builds the rewrite).

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

use crate::redact::scrub;

pub const PREFIX: &str = "[claw-identity] ";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// Receives one finished line. Returns false when the line was dropped.
pub type SinkFn = dyn Fn(Level, String) -> bool + Send + Sync;

struct Sink {
    write: Box<SinkFn>,
    dropped: AtomicU64,
    /// Whether the logger takes info lines at all.
    info: bool,
}

/// One layer's log.
pub struct Log {
    sink: Option<Arc<Sink>>,
    dispatch: tracing::Dispatch,
}

impl Log {
    /// A log whose lines go to `write`; `info`: whether info lines are
    /// wanted (the per-call line is then not even formatted).
    pub fn new(write: Option<Box<SinkFn>>, info: bool) -> Log {
        let Some(write) = write else {
            return Log::silent();
        };
        let sink = Arc::new(Sink {
            write,
            dropped: AtomicU64::new(0),
            info,
        });
        let dispatch =
            tracing::Dispatch::new(tracing_subscriber::registry().with(ToSink(sink.clone())));
        Log {
            sink: Some(sink),
            dispatch,
        }
    }

    /// A log that discards everything (no logger configured).
    pub fn silent() -> Log {
        Log {
            sink: None,
            dispatch: tracing::Dispatch::none(),
        }
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.sink.is_some()
    }

    #[inline]
    pub fn info_enabled(&self) -> bool {
        self.sink.as_ref().is_some_and(|s| s.info)
    }

    pub fn dropped(&self) -> u64 {
        self.sink
            .as_ref()
            .map_or(0, |s| s.dropped.load(Ordering::Relaxed))
    }

    /// Counts a line its receiver could not take.
    pub fn count_dropped(&self) {
        if let Some(s) = &self.sink {
            s.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Runs `emit` with this log's dispatcher as the default, so the events
    /// it emits reach this log's sink (what the `log_*!` macros do).
    #[inline]
    pub fn scope<R>(&self, emit: impl FnOnce() -> R) -> R {
        tracing::dispatcher::with_default(&self.dispatch, emit)
    }

    /// The per-call line made of `parts`, on the stack, or `None` when its
    /// level is off.
    pub fn line_of(&self, level: Level, parts: &[&str]) -> Option<LineBuf> {
        if !self.enabled() || (level == Level::Info && !self.info_enabled()) {
            return None;
        }
        let mut line = LineBuf::new(level);
        let _ = line.write_str(PREFIX);
        for p in parts {
            let _ = line.write_str(p);
        }
        Some(line)
    }

    /// The per-call line of a decision, formatted on the stack, or `None`
    /// when its level is off.
    pub fn line(&self, level: Level, msg: fmt::Arguments<'_>) -> Option<LineBuf> {
        if !self.enabled() || (level == Level::Info && !self.info_enabled()) {
            return None;
        }
        let mut line = LineBuf::new(level);
        let _ = line.write_str(PREFIX);
        let _ = line.write_fmt(msg);
        Some(line)
    }
}

/// An info event of `log`: `log_info!(log, "template {name}", name = value)`
/// (see the module's header). Nothing is evaluated when info is off.
#[macro_export]
macro_rules! log_info {
    ($log:expr, $($event:tt)+) => {
        $crate::__log_event!($log, info_enabled, INFO, $($event)+)
    };
}

/// A warning event of `log`, as [`log_info!`].
#[macro_export]
macro_rules! log_warn {
    ($log:expr, $($event:tt)+) => {
        $crate::__log_event!($log, enabled, WARN, $($event)+)
    };
}

/// An error event of `log`, as [`log_info!`].
#[macro_export]
macro_rules! log_error {
    ($log:expr, $($event:tt)+) => {
        $crate::__log_event!($log, enabled, ERROR, $($event)+)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __log_event {
    ($log:expr, $on:ident, $level:ident, $template:literal $(, $($fields:tt)*)?) => {{
        let log: &$crate::log::Log = &$log;
        if log.$on() {
            log.scope(|| {
                $crate::log::tracing::event!(
                    target: "claw_identity",
                    $crate::log::tracing::Level::$level,
                    message = $template
                    $(, $($fields)*)?
                )
            });
        }
    }};
}

/// For the `log_*!` macros, in crates that don't depend on `tracing`.
#[doc(hidden)]
pub use tracing;

/// The one subscriber layer of a layer's dispatcher: every event becomes
/// one line of its sink, rendered by [`Fields::line`].
struct ToSink(Arc<Sink>);

/// An event's message (its template) and its other fields, as recorded.
#[derive(Default)]
struct Fields {
    message: String,
    fields: Vec<(&'static str, String)>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: String) {
        match field.name() {
            "message" => self.message = value,
            name => self.fields.push((name, value)),
        }
    }

    /// The line: the prefix, the message with each `{name}` replaced by that
    /// field's value, then the fields it does not name as ` name=value`;
    /// scrubbed, a last net for a token that reached a value.
    fn line(&self) -> String {
        let mut line = String::from(PREFIX);
        let mut named = vec![false; self.fields.len()];
        let mut rest = self.message.as_str();
        while let Some(open) = rest.find('{') {
            line.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let field = after.find('}').and_then(|close| {
                let i = self
                    .fields
                    .iter()
                    .position(|(n, _)| *n == &after[..close])?;
                Some((close, i))
            });
            match field {
                Some((close, i)) => {
                    line.push_str(&self.fields[i].1);
                    named[i] = true;
                    rest = &after[close + 1..];
                }
                None => {
                    line.push('{');
                    rest = after;
                }
            }
        }
        line.push_str(rest);
        for ((name, value), named) in self.fields.iter().zip(named) {
            if !named {
                let _ = write!(line, " {name}={value}");
            }
        }
        scrub(&line)
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.to_owned());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.to_string());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, value.to_string());
    }

    /// Integers, `%value` (whose `Debug` is its `Display`), a formatted
    /// message, and `?value`.
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ToSink {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => Level::Error,
            tracing::Level::WARN => Level::Warn,
            _ => Level::Info,
        };
        if !(self.0.write)(level, fields.line()) {
            self.0.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Bytes a [`LineBuf`] holds on the stack; the per-call line of an owned
/// call (a tool, an agent id, a status) fits.
const LINE_STACK: usize = 320;

/// A log line formatted on the stack. A longer one (a block reason that
/// quotes a long path) moves to the heap.
pub struct LineBuf {
    level: Level,
    len: usize,
    stack: [u8; LINE_STACK],
    heap: Option<String>,
}

impl LineBuf {
    pub fn new(level: Level) -> LineBuf {
        LineBuf {
            level,
            len: 0,
            stack: [0; LINE_STACK],
            heap: None,
        }
    }

    pub fn level(&self) -> Level {
        self.level
    }

    pub fn as_str(&self) -> &str {
        match &self.heap {
            Some(h) => h,
            // Only whole `str`s are copied in, so this is UTF-8.
            None => std::str::from_utf8(&self.stack[..self.len]).unwrap_or_default(),
        }
    }

    /// Whether it spilled to the heap (for the allocation test).
    pub fn on_heap(&self) -> bool {
        self.heap.is_some()
    }
}

impl fmt::Write for LineBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if let Some(h) = &mut self.heap {
            h.push_str(s);
            return Ok(());
        }
        if self.len + s.len() <= LINE_STACK {
            self.stack[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
            self.len += s.len();
            return Ok(());
        }
        let mut h = String::with_capacity(self.len + s.len() + 64);
        h.push_str(self.as_str());
        h.push_str(s);
        self.heap = Some(h);
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use parking_lot::Mutex;

    pub type Lines = Arc<Mutex<Vec<(Level, String)>>>;

    /// A log that collects its lines, for tests.
    pub fn collecting() -> (Log, Lines) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        (
            Log::new(
                Some(Box::new(move |lvl, s| {
                    l.lock().push((lvl, s));
                    true
                })),
                true,
            ),
            lines,
        )
    }

    #[test]
    fn lines_reach_their_own_sink_only_with_the_prefix() {
        let (a, a_lines) = collecting();
        let (b, b_lines) = collecting();
        crate::log_warn!(a, "hello {n}", n = 1);
        crate::log_info!(b, "other");
        assert_eq!(
            a_lines.lock().as_slice(),
            &[(Level::Warn, "[claw-identity] hello 1".to_owned())]
        );
        assert_eq!(
            b_lines.lock().as_slice(),
            &[(Level::Info, "[claw-identity] other".to_owned())]
        );
    }

    #[test]
    fn a_per_call_line_reads_as_an_event_line_and_stays_on_the_stack() {
        let (log, lines) = collecting();
        let line = log.line(Level::Info, format_args!("tool={}", 1)).unwrap();
        crate::log_info!(log, "tool={tool}", tool = 1);
        assert_eq!(lines.lock()[0], (Level::Info, line.as_str().to_owned()));
        assert_eq!(line.as_str(), "[claw-identity] tool=1");
        assert!(!line.on_heap());
        assert_eq!(line.level(), Level::Info);
    }

    #[test]
    fn an_event_renders_its_fields_into_its_message() {
        let (log, lines) = collecting();
        let path = std::path::Path::new("/srv/map.json");
        crate::log_warn!(
            log,
            "token map {path}: {agents} agents after {max}s, {what} {missing}",
            path = %path.display(),
            agents = 3_usize,
            max = 2.0_f64,
            what = "quoted?",
            reason = ?"why",
        );
        assert_eq!(
            lines.lock()[0],
            (
                Level::Warn,
                r#"[claw-identity] token map /srv/map.json: 3 agents after 2s, quoted? {missing} reason="why""#
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_token_in_a_field_is_not_printed() {
        let (log, lines) = collecting();
        let token = "4f1c9a0b7d2e8f3a6c5b4d0e9f8a7b6c";
        crate::log_error!(log, "cannot read {what}", what = %format!("/x/{token}"));
        let line = &lines.lock()[0].1;
        assert!(!line.contains(&token[..16]), "{line}");
        assert!(line.starts_with("[claw-identity] cannot read /x/<redacted sha256:"));
    }

    #[test]
    fn an_info_event_is_not_built_when_info_is_off() {
        let built = std::cell::Cell::new(0);
        let count = || {
            built.set(built.get() + 1);
            1
        };
        let log = Log::new(Some(Box::new(|_, _| true)), false);
        crate::log_info!(log, "{n}", n = count());
        assert_eq!(built.get(), 0);
        crate::log_warn!(log, "{n}", n = count());
        assert_eq!(built.get(), 1);
        crate::log_error!(Log::silent(), "{n}", n = count());
        assert_eq!(built.get(), 1);
    }

    #[test]
    fn a_long_line_moves_to_the_heap_whole() {
        let (log, _) = collecting();
        let long = "x".repeat(1000);
        let line = log.line(Level::Warn, format_args!("a {long} b")).unwrap();
        assert!(line.on_heap());
        assert_eq!(line.as_str(), format!("[claw-identity] a {long} b"));
    }

    #[test]
    fn a_per_call_info_line_is_not_made_when_info_is_off() {
        let log = Log::new(Some(Box::new(|_, _| true)), false);
        assert!(log.line(Level::Info, format_args!("per call")).is_none());
        assert!(log.line(Level::Warn, format_args!("missing")).is_some());
        assert!(Log::silent().line(Level::Warn, format_args!("x")).is_none());
    }

    #[test]
    fn a_full_sink_counts_drops() {
        let log = Log::new(Some(Box::new(|_, _| false)), true);
        crate::log_info!(log, "x");
        crate::log_error!(log, "y");
        assert_eq!(log.dropped(), 2);
    }
}
