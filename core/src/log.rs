//! The log bridge. The layer logs through `tracing`, each layer with its own
//! dispatcher (`tracing::Dispatch`) whose subscriber is that layer's sink:
//! the plugin's logger, reached from any thread. No global subscriber is
//! installed, so a host process's own one is left alone. A sink that cannot
//! take a line drops it and counts the drop: logging must never block a tool
//! call or the watcher.
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

    pub fn info(&self, msg: fmt::Arguments<'_>) {
        if self.info_enabled() {
            tracing::dispatcher::with_default(
                &self.dispatch,
                || tracing::info!(target: "claw_identity", "{}", msg),
            );
        }
    }

    pub fn warn(&self, msg: fmt::Arguments<'_>) {
        if self.enabled() {
            tracing::dispatcher::with_default(
                &self.dispatch,
                || tracing::warn!(target: "claw_identity", "{}", msg),
            );
        }
    }

    pub fn error(&self, msg: fmt::Arguments<'_>) {
        if self.enabled() {
            tracing::dispatcher::with_default(
                &self.dispatch,
                || tracing::error!(target: "claw_identity", "{}", msg),
            );
        }
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

/// The subscriber of one layer's dispatcher: every event becomes one line of
/// its sink.
struct ToSink(Arc<Sink>);

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ToSink {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut message = Message(String::from(PREFIX));
        event.record(&mut message);
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => Level::Error,
            tracing::Level::WARN => Level::Warn,
            _ => Level::Info,
        };
        if !(self.0.write)(level, message.0) {
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
        a.warn(format_args!("hello {}", 1));
        b.info(format_args!("other"));
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
        log.info(format_args!("tool={}", 1));
        assert_eq!(lines.lock()[0], (Level::Info, line.as_str().to_owned()));
        assert_eq!(line.as_str(), "[claw-identity] tool=1");
        assert!(!line.on_heap());
        assert_eq!(line.level(), Level::Info);
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
        log.info(format_args!("x"));
        log.info(format_args!("y"));
        assert_eq!(log.dropped(), 2);
    }
}
