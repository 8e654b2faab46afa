//! Rule `conversation-id`: every owned tool call (`claw-os__*`) carries the
//! user's ORIGINATING conversation in `_conversation_id`, set host-side from
//! `ctx.sessionKey`, so the server can route approval cards back to the chat
//! the work came from. The model's own value never reaches the server.
//!
//! How the conversation C is derived from the calling session S:
//! - S is a delegation key (`agent:<x>:delegation:<C escaped>`, rule
//!   `delegation-session`): C is decoded from it.
//! - S is a sub-agent (`agent:<x>:subagent:<uuid>`): OpenClaw gives a hook no
//!   lineage, but the child's session entry records `spawnedBy`. C is the
//!   conversation of that spawner, followed up to [`MAX_HOPS`] levels. The
//!   lineage lives in a bounded table filled on demand: when an entry is
//!   missing, the engine asks the JS side to read it (`NeedLineage`).
//! - Anything else: C is S itself (the session the user talks in).
//! - No `ctx.sessionKey`: no conversation is known and the param is left as
//!   the model wrote it (OpenClaw gives every agent-run tool call a session
//!   key; a call without one has no conversation to route to).

use std::collections::HashMap;

use parking_lot::RwLock;
use serde::Deserialize;

use super::agent_ids::split_session_key;
use super::delegation_session;

pub const RULE_ID: &str = "conversation-id";
pub const DEFAULT_PARAM: &str = "_conversation_id";

/// How many spawner links are followed before giving up (and using the
/// session reached so far). OpenClaw's own spawn depth limit is lower.
pub const MAX_HOPS: usize = 8;

/// Lineage entries kept; when full, the table is cleared and refilled on demand.
pub const MAX_LINEAGE: usize = 4096;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ConversationIdConfig {
    pub enabled: bool,
    /// The tool parameter that carries the conversation.
    pub param: String,
}

impl Default for ConversationIdConfig {
    fn default() -> Self {
        ConversationIdConfig {
            enabled: true,
            param: DEFAULT_PARAM.to_owned(),
        }
    }
}

impl ConversationIdConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.param.is_empty() || self.param == "__proto__" {
            return Err(format!(
                "rules.conversationId.param \"{}\" is not a usable parameter name",
                crate::redact::shown(&self.param)
            ));
        }
        Ok(())
    }
}

/// Who spawned which sub-agent session: child key → spawner key (`None`:
/// looked up, nothing recorded).
#[derive(Debug, Default)]
pub struct Lineage {
    spawners: RwLock<HashMap<String, Option<String>>>,
}

impl Lineage {
    pub fn note(&self, child: &str, spawner: Option<&str>) {
        let mut map = self.spawners.write();
        if map.len() >= MAX_LINEAGE && !map.contains_key(child) {
            map.clear();
        }
        map.insert(
            child.to_owned(),
            spawner.filter(|s| !s.is_empty()).map(str::to_owned),
        );
    }

    /// `None`: never looked up; `Some(None)`: looked up, no spawner.
    pub fn spawner_of(&self, child: &str) -> Option<Option<String>> {
        self.spawners.read().get(child).cloned()
    }

    pub fn len(&self) -> usize {
        self.spawners.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The originating conversation of a session, or the sub-agent session
/// whose spawner must be looked up first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Conversation(String),
    NeedLineage(String),
    /// No session key: no conversation known.
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

pub fn originating_conversation(session_key: &str, lineage: &Lineage) -> Origin {
    // The common case (every claw-os call from a user's own session): one
    // parse, one copy. The conversation is the key exactly as OpenClaw gave
    // it (it keeps the case of Signal/Matrix peer ids), never re-cased.
    let rest = rest_of(session_key);
    if !is_delegation_rest(rest) && !is_subagent_rest(rest) {
        return Origin::Conversation(session_key.to_owned());
    }
    let mut key = session_key.to_owned();
    for _ in 0..MAX_HOPS {
        if let Some(c) = delegation_session::conversation_of(&key) {
            return Origin::Conversation(c);
        }
        if !is_subagent_rest(rest_of(&key)) {
            return Origin::Conversation(key);
        }
        match lineage.spawner_of(&key) {
            None => return Origin::NeedLineage(key),
            // The spawner is gone: the sub-agent is the best origin known.
            Some(None) => return Origin::Conversation(key),
            Some(Some(parent)) => key = parent,
        }
    }
    Origin::Conversation(key)
}

/// The conversation id for a call from `session_key` (`ctx.sessionKey`).
pub fn evaluate(session_key: Option<&str>, lineage: &Lineage) -> Origin {
    match session_key {
        None => Origin::Unknown,
        Some(s) => originating_conversation(s, lineage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::delegation_session::delegation_key;

    const C: &str = "agent:paco--francis:main";

    fn conv(o: Origin) -> String {
        match o {
            Origin::Conversation(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_main_agent_session_is_its_own_conversation() {
        let l = Lineage::default();
        assert_eq!(conv(evaluate(Some(C), &l)), C);
        let direct = "agent:paco--francis:telegram:direct:12345";
        assert_eq!(conv(evaluate(Some(direct), &l)), direct);
        assert_eq!(conv(evaluate(Some("main"), &l)), "main");
    }

    #[test]
    fn a_delegated_session_carries_the_delegating_conversation() {
        let l = Lineage::default();
        let k = delegation_key("paco--dali", C);
        assert_eq!(conv(evaluate(Some(&k), &l)), C);
    }

    #[test]
    fn a_delegated_session_key_in_another_case_still_carries_the_conversation() {
        let l = Lineage::default();
        let k = delegation_key("paco--dali", C).to_uppercase();
        assert_eq!(conv(evaluate(Some(&k), &l)), C);
        let k = delegation_key("paco--dali", C).replace(":delegation:", ":Delegation:");
        assert_eq!(conv(evaluate(Some(&k), &l)), C);
    }

    #[test]
    fn a_sub_agent_needs_its_lineage_then_resolves_through_it() {
        let l = Lineage::default();
        let child = "agent:paco--francis:subagent:0f3c";
        assert_eq!(evaluate(Some(child), &l), Origin::NeedLineage(child.into()));
        l.note(child, Some(C));
        assert_eq!(conv(evaluate(Some(child), &l)), C);
    }

    #[test]
    fn nested_sub_agents_and_delegations_resolve_to_the_origin() {
        let l = Lineage::default();
        let deleg = delegation_key("paco--dali", C);
        let child = "agent:paco--dali:subagent:aa";
        let grandchild = "agent:paco--dali:subagent:bb";
        l.note(child, Some(&deleg));
        assert_eq!(
            evaluate(Some(grandchild), &l),
            Origin::NeedLineage(grandchild.into())
        );
        l.note(grandchild, Some(child));
        assert_eq!(conv(evaluate(Some(grandchild), &l)), C);
    }

    #[test]
    fn a_sub_agent_without_a_recorded_spawner_is_its_own_origin() {
        let l = Lineage::default();
        let child = "agent:paco--francis:subagent:0f3c";
        l.note(child, None);
        assert_eq!(conv(evaluate(Some(child), &l)), child);
        l.note(child, Some(""));
        assert_eq!(conv(evaluate(Some(child), &l)), child);
    }

    #[test]
    fn a_lineage_cycle_stops_after_max_hops() {
        let l = Lineage::default();
        let a = "agent:x:subagent:a";
        let b = "agent:x:subagent:b";
        l.note(a, Some(b));
        l.note(b, Some(a));
        let got = conv(evaluate(Some(a), &l));
        assert!(got == a || got == b, "{got}");
    }

    #[test]
    fn no_session_key_means_no_conversation() {
        assert_eq!(evaluate(None, &Lineage::default()), Origin::Unknown);
    }

    #[test]
    fn the_lineage_table_is_bounded() {
        let l = Lineage::default();
        for i in 0..MAX_LINEAGE {
            l.note(&format!("agent:x:subagent:{i}"), Some(C));
        }
        assert_eq!(l.len(), MAX_LINEAGE);
        l.note("agent:x:subagent:0", Some(C));
        assert_eq!(
            l.len(),
            MAX_LINEAGE,
            "re-noting a known child keeps the table"
        );
        l.note("agent:x:subagent:new", Some(C));
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn the_param_name_is_validated() {
        let mut c = ConversationIdConfig::default();
        assert!(c.validate().is_ok());
        c.param = String::new();
        assert!(c.validate().is_err());
    }
}
