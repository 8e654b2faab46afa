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

use crate::engine::{Engine, UNREADABLE_RULE_ID};
use crate::layer::Layer;
use crate::log::LineBuf;
use crate::redact::{scrub, shown};
use crate::route::Route;
use crate::rules::{auth_token, Decision, ToolCall};
pub use crate::sessions::{Host, NoHost, SessionEntry};

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
