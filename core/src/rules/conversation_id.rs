//! Rule `conversation-id`: every owned tool call (`claw-os__*`) carries the
//! user's ORIGINATING conversation in `_conversation_id`, set host-side from
//! `ctx.sessionKey`, so the server can route approval cards back to the chat
//! the work came from. The model's own value never reaches the server.
//!
//! How the conversation C is derived from the calling session S:
//! - S is a delegation key (`agent:<x>:delegation:<C escaped>`, rule
//!   `delegation-session`): C is decoded from it, but only when the layer
//!   made that session, or when the caller may reach C's agent (its own
//!   user, or an `allow` grant of rule `cross-user-send`). Otherwise no
//!   conversation is known, and the param is taken out.
//! - S is a sub-agent (`agent:<x>:subagent:<uuid>`): OpenClaw gives a hook no
//!   lineage, but the child's session entry records `spawnedBy`. C is the
//!   conversation of that spawner, followed up to [`MAX_HOPS`] levels (a
//!   delegation key on the way is held to the same test). The lineage
//!   lives in a bounded table filled on demand: when an entry is missing,
//!   the engine asks the JS side to read it (`NeedLineage`).
//! - Anything else: C is S itself (the session the user talks in).
//! - No `ctx.sessionKey`: no conversation is known and the param is taken
//!   out (OpenClaw gives every agent-run tool call a session key; a call
//!   without one has no conversation to route to).
//!
//! Why a delegation key alone is not enough: its format is the layer's, but
//! OpenClaw lets an agent run in a session key it names itself (an
//! automation with `sessionTarget: "session:<key>"`, `cron-tool-*.mjs`), so
//! `paco--dali` could run in `agent:paco--dali:delegation:<pepito's chat>`
//! and have its approval cards routed into another user's chat. "The layer
//! made that session" is what the layer itself did: it routed a send into
//! the key and had OpenClaw create it (`Known::note_made`, noted once the
//! session store answered). That memory is the process's; after a restart
//! the reach test alone decides, which keeps every same-user delegation.

use std::borrow::Cow;

use crate::openclaw::agent_ids::{normalize_agent_id, session_key_agent, split_session_key};

use super::delegation_session;
use super::{Context, ToolCall};
use crate::options::rules::{reach, Access, Reach};
use crate::sessions::Known;

pub const RULE_ID: &str = crate::call::rule_id::CONVERSATION_ID;
/// How many spawner links are followed before giving up (and using the
/// session reached so far). OpenClaw's own spawn depth limit is lower.
pub const MAX_HOPS: usize = 8;

/// The originating conversation of a session, or the sub-agent session
/// whose spawner must be looked up first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin<'a> {
    /// Borrowed from the caller's session key in the common case (a call
    /// from the user's own session).
    Conversation(Cow<'a, str>),
    NeedLineage(String),
    /// No conversation known: no session key, or a delegation key that
    /// may not carry its conversation for this caller.
    Unknown,
}

fn rest_of(key: &str) -> &str {
    split_session_key(key).map_or(key, |(_, rest)| rest)
}

/// OpenClaw's `isSubagentSessionKey`: the rest (or a bare key) starts with `subagent:`, in any case.
fn is_subagent_rest(rest: &str) -> bool {
    rest.get(..9)
        .is_some_and(|p| p.eq_ignore_ascii_case("subagent:"))
}

/// Whether `rest` starts with the delegation tag in any case (OpenClaw
/// lowercases keys, so `DELEGATION:` is the same session).
fn is_delegation_rest(rest: &str) -> bool {
    let tag = delegation_session::KEY_TAG;
    rest.get(..tag.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(tag))
}

/// The originating conversation of `session_key`; `trusted(key, c)` says
/// whether a delegation key met on the way may carry its conversation `c`.
pub fn originating_conversation<'a>(
    session_key: &'a str,
    lineage: &Known,
    trusted: &dyn Fn(&str, &str) -> bool,
) -> Origin<'a> {
    // The common case (every claw-os call from a user's own session): one
    // parse, one copy. The conversation is the key exactly as OpenClaw gave
    // it (it keeps the case of Signal/Matrix peer ids), never re-cased.
    let rest = rest_of(session_key);
    if !is_delegation_rest(rest) && !is_subagent_rest(rest) {
        return Origin::Conversation(Cow::Borrowed(session_key));
    }
    let mut key = session_key.to_owned();
    for _ in 0..MAX_HOPS {
        if let Some(c) = delegation_session::conversation_of(&key) {
            return match trusted(&key, &c) {
                true => Origin::Conversation(Cow::Owned(c)),
                false => Origin::Unknown,
            };
        }
        if !is_subagent_rest(rest_of(&key)) {
            return Origin::Conversation(Cow::Owned(key));
        }
        match lineage.spawner_of(&key) {
            None => return Origin::NeedLineage(key),
            // The spawner is gone: the sub-agent is the best origin known.
            Some(None) => return Origin::Conversation(Cow::Owned(key)),
            Some(Some(parent)) => key = parent,
        }
    }
    Origin::Conversation(Cow::Owned(key))
}

/// The conversation id for `call` (from `ctx.sessionKey`): a delegation
/// key's conversation only when this layer made that session, or when the
/// caller may reach the conversation's agent.
pub fn evaluate<'a>(cx: &Context<'_, '_>, call: &ToolCall<'a>) -> Origin<'a> {
    let Some(session_key) = call.session_key else {
        return Origin::Unknown;
    };
    // Only a delegation key is tested: the common call allocates nothing here.
    let trusted = |key: &str, conversation: &str| {
        cx.sessions.made(key)
            || match (
                call.agent_id.and_then(normalize_agent_id),
                session_key_agent(conversation),
            ) {
                (Some(caller), Some(agent)) => matches!(
                    reach(&cx.opts.rules.cross_user_send, &caller, &agent),
                    Reach::SameUser | Reach::Granted(Access::Allow)
                ),
                _ => false,
            }
    };
    originating_conversation(session_key, cx.sessions, &trusted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::delegation_session::delegation_key;

    /// How a session key resolves when every delegation key may carry its
    /// conversation (the derivation alone; `evaluate` adds the trust test).
    fn evaluate<'a>(session_key: Option<&'a str>, lineage: &Known) -> Origin<'a> {
        match session_key {
            None => Origin::Unknown,
            Some(k) => originating_conversation(k, lineage, &|_, _| true),
        }
    }

    const C: &str = "agent:paco--francis:main";

    fn conv(o: Origin) -> String {
        match o {
            Origin::Conversation(c) => c.into_owned(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_main_agent_session_is_its_own_conversation() {
        let l = Known::default();
        assert_eq!(conv(evaluate(Some(C), &l)), C);
        let direct = "agent:paco--francis:telegram:direct:12345";
        assert_eq!(conv(evaluate(Some(direct), &l)), direct);
        assert_eq!(conv(evaluate(Some("main"), &l)), "main");
    }

    #[test]
    fn a_delegated_session_carries_the_delegating_conversation() {
        let l = Known::default();
        let k = delegation_key("paco--dali", C);
        assert_eq!(conv(evaluate(Some(&k), &l)), C);
    }

    #[test]
    fn a_delegated_session_key_in_another_case_still_carries_the_conversation() {
        let l = Known::default();
        let k = delegation_key("paco--dali", C).to_uppercase();
        assert_eq!(conv(evaluate(Some(&k), &l)), C);
        let k = delegation_key("paco--dali", C).replace(":delegation:", ":Delegation:");
        assert_eq!(conv(evaluate(Some(&k), &l)), C);
    }

    #[test]
    fn a_sub_agent_needs_its_lineage_then_resolves_through_it() {
        let l = Known::default();
        let child = "agent:paco--francis:subagent:0f3c";
        assert_eq!(evaluate(Some(child), &l), Origin::NeedLineage(child.into()));
        l.note_spawner(child, Some(C));
        assert_eq!(conv(evaluate(Some(child), &l)), C);
    }

    #[test]
    fn nested_sub_agents_and_delegations_resolve_to_the_origin() {
        let l = Known::default();
        let deleg = delegation_key("paco--dali", C);
        let child = "agent:paco--dali:subagent:aa";
        let grandchild = "agent:paco--dali:subagent:bb";
        l.note_spawner(child, Some(&deleg));
        assert_eq!(
            evaluate(Some(grandchild), &l),
            Origin::NeedLineage(grandchild.into())
        );
        l.note_spawner(grandchild, Some(child));
        assert_eq!(conv(evaluate(Some(grandchild), &l)), C);
    }

    #[test]
    fn a_sub_agent_without_a_recorded_spawner_is_its_own_origin() {
        let l = Known::default();
        let child = "agent:paco--francis:subagent:0f3c";
        l.note_spawner(child, None);
        assert_eq!(conv(evaluate(Some(child), &l)), child);
        l.note_spawner(child, Some(""));
        assert_eq!(conv(evaluate(Some(child), &l)), child);
    }

    #[test]
    fn a_lineage_cycle_stops_after_max_hops() {
        let l = Known::default();
        let a = "agent:x:subagent:a";
        let b = "agent:x:subagent:b";
        l.note_spawner(a, Some(b));
        l.note_spawner(b, Some(a));
        let got = conv(evaluate(Some(a), &l));
        assert!(got == a || got == b, "{got}");
    }

    #[test]
    fn no_session_key_means_no_conversation() {
        assert_eq!(evaluate(None, &Known::default()), Origin::Unknown);
    }

    #[test]
    fn the_lineage_table_is_bounded() {
        let l = Known::default();
        for i in 0..crate::sessions::MAX_KNOWN {
            l.note_spawner(&format!("agent:x:subagent:{i}"), Some(C));
        }
        assert_eq!(l.len(), crate::sessions::MAX_KNOWN);
        l.note_spawner("agent:x:subagent:0", Some(C));
        assert_eq!(
            l.len(),
            crate::sessions::MAX_KNOWN,
            "re-noting a known child keeps the table"
        );
        l.note_spawner("agent:x:subagent:new", Some(C));
        assert_eq!(l.len(), 1);
    }

    /// The conversation param a `claw-os__x` call of `agent` in `session`
    /// gets from an engine with `rules`, after `made` were made by the layer.
    fn param_for(
        agent: &str,
        session: &str,
        rules: serde_json::Value,
        made: &[&str],
    ) -> Option<String> {
        use crate::rules::{MapView, Params, Slot};
        let opts = serde_json::json!({"tokenMapPath": "/m.json", "rules": rules});
        let e = crate::engine::Engine::new(
            crate::options::Options::from_json(&opts.to_string()).unwrap(),
        );
        for k in made {
            e.note_delegation(k);
        }
        let map = crate::token_map::TokenMap::default();
        let params = Params::new();
        let call = ToolCall {
            tool: "claw-os__x",
            agent_id: Some(agent),
            session_key: Some(session),
            params: &params,
            derived_paths: &[],
            call_id: None,
        };
        let view = MapView {
            map: &map,
            generation: 0,
            loaded: true,
            stale: false,
            redactor: None,
        };
        let d = e.decide_call(&call, &view, &crate::sessions::NoHost);
        match &d.patch().expect("owned calls are rewritten").conversation {
            Slot::Set(c) => Some(c.to_string()),
            Slot::Clear => None,
            Slot::Keep => panic!("the conversation was left as the model wrote it"),
        }
    }

    #[test]
    fn a_delegation_key_an_agent_named_itself_carries_no_other_users_conversation() {
        // paco--dali runs (an automation's sessionTarget) in a key it made up,
        // naming pepito's chat: the approval cards must not go there.
        let pepito = "agent:pepito--atlas:telegram:direct:777";
        let forged = delegation_key("paco--dali", pepito);
        assert_eq!(
            param_for("paco--dali", &forged, serde_json::json!({}), &[]),
            None
        );
        // The same with a sub-agent spawned from the forged session.
        let child = "agent:paco--dali:subagent:1";
        let lineage = Known::default();
        lineage.note_spawner(child, Some(&forged));
        let cx_trusted = |_: &str, _: &str| false;
        assert_eq!(
            originating_conversation(child, &lineage, &cx_trusted),
            Origin::Unknown
        );
        // A delegation within the user's own agents keeps its conversation.
        let own = delegation_key("paco--dali", C);
        assert_eq!(
            param_for("paco--dali", &own, serde_json::json!({}), &[]).as_deref(),
            Some(C)
        );
        // So does one the caller may reach by an allow grant, not by an ask.
        let grant = |access: &str| serde_json::json!({"crossUserSend": {"grants": {"paco--dali": {"pepito--*": access}}}});
        assert_eq!(
            param_for("paco--dali", &forged, grant("allow"), &[]).as_deref(),
            Some(pepito)
        );
        assert_eq!(param_for("paco--dali", &forged, grant("ask"), &[]), None);
        // And one the layer made (pepito's send, routed there by delegation-session),
        // in whatever case OpenClaw hands the key back.
        assert_eq!(
            param_for(
                "paco--dali",
                &forged.to_uppercase(),
                serde_json::json!({}),
                &[&forged]
            )
            .as_deref(),
            Some(pepito)
        );
        // No caller: no reach.
        assert_eq!(param_for("", &forged, serde_json::json!({}), &[]), None);
    }

    #[test]
    fn the_param_name_is_validated() {
        let mut c = crate::options::rules::ConversationIdConfig::default();
        assert!(c.validate().is_ok());
        c.param = String::new();
        assert!(c.validate().is_err());
    }
}
