//! The log bridge: the layer logs through `tracing`; one process-wide
//! subscriber routes each event to the sink of the layer that emitted it
//! (the JS logger, through a non-blocking threadsafe function). A sink that
//! cannot take a line drops it and counts the drop: logging must never block
//! a tool call or the watcher.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

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
}

fn sinks() -> &'static RwLock<HashMap<u64, Arc<Sink>>> {
    static SINKS: OnceLock<RwLock<HashMap<u64, Arc<Sink>>>> = OnceLock::new();
    SINKS.get_or_init(Default::default)
}

fn install_subscriber() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let subscriber = tracing_subscriber::registry().with(Bridge);
        // Fails only if the host process already set one; events then go there.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// One layer's handle on the bridge. Dropping it unregisters the sink.
pub struct Log {
    id: u64,
    sink: Option<Arc<Sink>>,
    /// False when the logger discards info lines: the per-call line is then
    /// not even formatted (it is most of a call's cost when on).
    info: bool,
}

impl Log {
    pub fn new(write: Option<Box<SinkFn>>, info: bool) -> Log {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let Some(write) = write else {
            return Log::silent();
        };
        install_subscriber();
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let sink = Arc::new(Sink {
            write,
            dropped: AtomicU64::new(0),
        });
        sinks().write().insert(id, sink.clone());
        Log {
            id,
            sink: Some(sink),
            info,
        }
    }

    /// A log that discards everything (no logger configured).
    pub fn silent() -> Log {
        Log {
            id: 0,
            sink: None,
            info: false,
        }
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.id != 0
    }

    #[inline]
    pub fn info_enabled(&self) -> bool {
        self.info
    }

    pub fn dropped(&self) -> u64 {
        self.sink
            .as_ref()
            .map_or(0, |s| s.dropped.load(Ordering::Relaxed))
    }

    /// A line of the hot path (the per-call line), formatted once straight
    /// into this layer's sink. It skips tracing's machinery (the event, the
    /// field visitor's second formatting pass, the sink lookup), which cost
    /// about a third of an owned call with info logging on (measured, see
    /// BENCHMARKS.md). Same gating and the same text as `info`/`warn`.
    pub fn line(&self, level: Level, msg: std::fmt::Arguments<'_>) {
        let Some(sink) = self.sink.as_ref() else {
            return;
        };
        if level == Level::Info && !self.info {
            return;
        }
        let mut line = String::with_capacity(128);
        line.push_str(PREFIX);
        let _ = line.write_fmt(msg);
        if !(sink.write)(level, line) {
            sink.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn info(&self, msg: std::fmt::Arguments<'_>) {
        if self.info {
            tracing::info!(target: "claw_identity", sink = self.id, "{}", msg);
        }
    }

    pub fn warn(&self, msg: std::fmt::Arguments<'_>) {
        if self.enabled() {
            tracing::warn!(target: "claw_identity", sink = self.id, "{}", msg);
        }
    }

    pub fn error(&self, msg: std::fmt::Arguments<'_>) {
        if self.enabled() {
            tracing::error!(target: "claw_identity", sink = self.id, "{}", msg);
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        if self.id != 0 {
            sinks().write().remove(&self.id);
        }
    }
}

struct Bridge;

#[derive(Default)]
struct Fields {
    sink: u64,
    message: String,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "sink" {
            self.sink = value;
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Bridge {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields {
            sink: 0,
            message: String::from(PREFIX),
        };
        event.record(&mut fields);
        let Some(sink) = sinks().read().get(&fields.sink).cloned() else {
            return;
        };
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => Level::Error,
            tracing::Level::WARN => Level::Warn,
            _ => Level::Info,
        };
        if !(sink.write)(level, fields.message) {
            sink.dropped.fetch_add(1, Ordering::Relaxed);
        }
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
    fn a_hot_path_line_matches_what_info_and_warn_write() {
        let (log, lines) = collecting();
        log.line(Level::Info, format_args!("tool={}", 1));
        log.info(format_args!("tool={}", 1));
        log.line(Level::Warn, format_args!("w"));
        log.warn(format_args!("w"));
        let l = lines.lock();
        assert_eq!(l[0], l[1]);
        assert_eq!(l[2], l[3]);
        assert_eq!(l[0], (Level::Info, "[claw-identity] tool=1".to_owned()));
    }

    #[test]
    fn a_hot_path_info_line_is_skipped_when_info_is_off() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        let log = Log::new(
            Some(Box::new(move |lvl, s| {
                l.lock().push((lvl, s));
                true
            })),
            false,
        );
        log.line(Level::Info, format_args!("per call"));
        log.line(Level::Warn, format_args!("missing"));
        assert_eq!(
            lines.lock().as_slice(),
            &[(Level::Warn, "[claw-identity] missing".to_owned())]
        );
    }

    #[test]
    fn a_full_sink_counts_drops() {
        let log = Log::new(Some(Box::new(|_, _| false)), true);
        log.info(format_args!("x"));
        log.info(format_args!("y"));
        assert_eq!(log.dropped(), 2);
    }
}
