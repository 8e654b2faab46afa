//! The one decision pipeline: from a tool call to the decision OpenClaw
//! gets back. The trusted policy, the ordinary hook (when OpenClaw refused
//! the policy), `IdentityLayer.beforeToolCall` and `claw-identity explain`
//! all come here, with the layer's own map snapshot, redactor and
//! workspace table, so they agree by construction.
//!
//! It owns the two choices around the rules: a call that needs a session's
//! entry (who spawned a sub-agent, the cwd it was spawned with) is decided
//! once OpenClaw's session store gave it (looked up at most
//! [`MAX_SESSION_LOOKUPS`] times), and a call that can't be decided does
//! not run when a rule concerns it ([`undecided`]).

use std::cell::Cell;
use std::path::PathBuf;

use crate::engine::{Engine, UNREADABLE_RULE_ID};
use crate::layer::Layer;
use crate::log::LineBuf;
use crate::redact::{scrub, shown};
use crate::route::Route;
use crate::rules::{auth_token, Decision, ToolCall};
pub use crate::sessions::{Host, NoHost, SessionEntry, SessionNow};

/// Session look-ups allowed for one call: a lineage longer than this means
/// a broken store, and the call is not run.
pub const MAX_SESSION_LOOKUPS: usize = 16;

/// Shown when a call could not be decided (an error or a panic): it does not run.
pub const UNDECIDED: &str = "claw-identity could not decide this call, so it was not run; do not retry it. The operator will find the error in the gateway log.";

/// Decides `call`, routed by `route` (the caller routed it once, to know
/// which params to read), on the layer's map in force and counts it, and
/// hands the decision, with its per-call log line, to `f` while the map it
/// borrows from is pinned.
pub fn decide<R>(
    layer: &Layer,
    route: &Route,
    call: &ToolCall<'_>,
    host: &dyn Host,
    f: impl FnOnce(&Decision<'_>, Option<&LineBuf>) -> R,
) -> R {
    let engine = layer.engine();
    layer.with_view(|view| {
        for _ in 0..MAX_SESSION_LOOKUPS {
            let d = engine.decide(route, call, view, host);
            let Some(need) = &d.need_session else {
                let d = crate::proxy::with_handle(layer, call, d);
                let line = layer.account(call, &d);
                return f(&d, line.as_ref());
            };
            let entry = host
                .session(&need.agent_id, &need.session_key)
                .unwrap_or_else(|e| {
                    crate::log_warn!(
                        layer.log(),
                        "cannot read a session's entry in OpenClaw's session store: {error}",
                        error = %scrub(&e),
                    );
                    None
                });
            engine.note_session(&need.session_key, entry);
        }
        let d = undecided(layer, call.tool, "its sub-agent lineage does not resolve");
        f(&d, None)
    })
}

/// [`decide`] for a caller that can't reach the host during the call (the
/// WebAssembly build's front, which decides with no N-API call): the
/// decision goes to `f` where it needed nothing of the host and `keep`
/// accepts it. Otherwise `None`, with nothing counted, logged or minted:
/// the caller then decides the call with its host ([`decide`]), on the
/// same fields.
pub fn decide_offline<R>(
    layer: &Layer,
    route: &Route,
    call: &ToolCall<'_>,
    keep: impl FnOnce(&Decision<'_>) -> bool,
    f: impl FnOnce(&Decision<'_>, Option<&LineBuf>) -> R,
) -> Option<R> {
    let engine = layer.engine();
    layer.with_view(|view| {
        let host = Offline::default();
        let d = engine.decide(route, call, view, &host);
        if host.asked.get() || d.need_session.is_some() || !keep(&d) {
            return None;
        }
        let d = crate::proxy::with_handle(layer, call, d);
        let line = layer.account(call, &d);
        Some(f(&d, line.as_ref()))
    })
}

/// The host of [`decide_offline`]: it knows nothing, and notes that it was
/// asked (the decision is then thrown away). What every host answers
/// alike, the homes and the working directory, it answers.
#[derive(Default)]
struct Offline {
    asked: Cell<bool>,
}

impl Host for Offline {
    fn session(&self, _: &str, _: &str) -> Result<Option<SessionEntry>, String> {
        self.asked.set(true);
        Ok(None)
    }

    fn session_now(&self, _: &str, _: &str) -> Result<Option<SessionNow>, String> {
        self.asked.set(true);
        Ok(None)
    }

    fn file_url_to_path(&self, _: &str) -> Option<PathBuf> {
        self.asked.set(true);
        None
    }
}

/// The decision for a call that could not be decided (an error, a panic,
/// a lineage that does not resolve): a call a rule concerns is blocked,
/// since passing it would skip a guard or send the model's own token; any
/// other call passes. Counted and logged as an internal error.
pub fn undecided(layer: &Layer, tool: &str, why: &str) -> Decision<'static> {
    layer.note_internal_error();
    crate::log_error!(
        layer.log(),
        "internal error deciding tool={tool}: {why}",
        tool = %shown(tool),
        why = %scrub(why),
    );
    fail_closed(layer.engine(), tool)
}

fn fail_closed(engine: &Engine, tool: &str) -> Decision<'static> {
    match engine.route(tool) {
        None => Decision::pass(),
        Some(r) if r.rule == auth_token::RULE_ID => {
            Decision::block(auth_token::RULE_ID, format!("{}: {UNDECIDED}", r.rule))
        }
        Some(_) => Decision::block(
            UNREADABLE_RULE_ID,
            format!("{UNREADABLE_RULE_ID}: {UNDECIDED}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::tests::collecting;
    use crate::options::Options;
    use crate::rules::{Params, Slot, Verdict};
    use crate::testing::{TempDir, T1};

    fn layer(dir: &TempDir) -> (Layer, crate::log::tests::Lines) {
        let map = dir.map(format!(r#"{{"paco--francis": "{T1}"}}"#));
        let opts = format!(r#"{{"tokenMapPath": {:?}, "posture": "warn"}}"#, map);
        let (log, lines) = collecting();
        (Layer::load(Options::from_json(&opts).unwrap(), log), lines)
    }

    fn call<'a>(session: &'a str, params: &'a Params) -> ToolCall<'a> {
        ToolCall {
            tool: "claw-os__claw_notes",
            agent_id: Some("paco--francis"),
            session_key: Some(session),
            params,
            derived_paths: &[],
            call_id: None,
        }
    }

    /// What `decide_offline` gives: the decision's token and whether the call was counted.
    fn offline(layer: &Layer, call: &ToolCall<'_>, keep: bool) -> (Option<String>, u64) {
        let route = layer.engine().route(call.tool).unwrap();
        let before = layer.stats().injected;
        let token = decide_offline(
            layer,
            route,
            call,
            |_| keep,
            |d, _| match &d.verdict {
                Verdict::Rewrite(p) => match &p.token {
                    Slot::Set(t) => Some(t.expose().to_owned()),
                    _ => None,
                },
                _ => None,
            },
        )
        .flatten();
        (token, layer.stats().injected - before)
    }

    #[test]
    fn offline_decides_what_needs_nothing_of_the_host() {
        let dir = TempDir::new("offline");
        let (layer, _) = layer(&dir);
        let p = Params::new();
        let (token, counted) = offline(&layer, &call("agent:paco--francis:main", &p), true);
        assert_eq!(token.as_deref(), Some(T1));
        assert_eq!(counted, 1);
    }

    #[test]
    fn offline_gives_up_with_nothing_counted_where_the_host_or_the_caller_is_needed() {
        let dir = TempDir::new("offline-no");
        let (layer, lines) = layer(&dir);
        let p = Params::new();
        let logged = lines.lock().len();
        // A sub-agent's conversation needs its spawner, from the session store.
        let sub = call("agent:paco--francis:subagent:7", &p);
        assert_eq!(offline(&layer, &sub, true), (None, 0));
        // A decision the caller does not take.
        assert_eq!(
            offline(&layer, &call("agent:paco--francis:main", &p), false),
            (None, 0)
        );
        assert_eq!(lines.lock().len(), logged, "nothing logged");
        // With its host, the same call is decided.
        let route = layer.engine().route(sub.tool).unwrap();
        let injected = decide(&layer, route, &sub, &NoHost, |d, _| {
            matches!(d.token, crate::rules::TokenStatus::Injected(_))
        });
        assert!(injected);
    }
}
