//! Rule `cross-user-send`, for the session tools other than sends: reading
//! or changing another agent's session is held to the same same-user rule
//! and grants as `sessions_send`. With OpenClaw's defaults
//! (`tools.sessions.visibility: "all"`, agent-to-agent on) nothing else stops
//! `paco--francis` from reading `agent:pepito--atlas:...`.
//!
//! A hook sees params, not what OpenClaw will resolve them to, so a target
//! passes only in a form that names its agent (`agent:<id>:<rest>`) or that
//! OpenClaw resolves to the caller's own session alone (`current`, or the
//! param left out where it defaults to the current session). Session ids,
//! labels, `main`, `global` and other aliases are resolved by the gateway,
//! possibly in another agent's store, so they are refused with the exact
//! form to use. The tools and how OpenClaw resolves each param are listed
//! in docs/rules.md.

use super::Reads;
use serde_json::Value;

use super::cross_user_send::{self, RULE_ID};
use super::{Context, Decision, Params, Patch, ToolCall};
use crate::openclaw::agent_ids::{normalize_agent_id, session_key_agent};
use crate::openclaw::params::str_param;
use crate::paths::js_trim;

/// The session tools this rule guards: those whose `sessionKey` names one
/// session (absent: the current one), and `sessions_list`, whose `agentId`
/// scopes the listing.
pub const TOOLS: [&str; 5] = [
    "sessions_history",
    "session_status",
    "sessions",
    "sessions_search",
    LIST_TOOL,
];
/// The tool that lists sessions.
pub const LIST_TOOL: &str = "sessions_list";

/// The top-level params this rule reads (`targets[].sessionKey` inside `targets`).
pub const READS: &[&str] = &[
    "sessionKey",
    "session_key",
    "targets",
    "agentId",
    "agent_id",
    "action",
    "ownerType",
    "ownerId",
];

/// `sessions` `assign_owner` with `ownerType: "agent"` makes `ownerId` the
/// session's owner (`createSessionsTool`, `openclaw-tools-*.mjs`): work
/// handed to that agent.
fn new_owner<'p>(tool: &str, params: &'p Params) -> Option<&'p str> {
    let is = |k: &str, v: &str| str_param(params, k, k).is_some_and(|s| s.eq_ignore_ascii_case(v));
    (tool == "sessions" && is("action", "assign_owner") && is("ownerType", "agent"))
        .then(|| str_param(params, "ownerId", "ownerId"))
        .flatten()
}

/// The rule for the session tools other than sends: the caller may reach
/// only agents the same-user rule and the grants allow, and a listing is
/// narrowed to the caller with OpenClaw's own `agentId` filter.
pub fn decide<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    if let Some(owner) = new_owner(call.tool, call.params) {
        if let Some(d) = cross_user_send::assignees(cx, call, &[owner]) {
            return d;
        }
    }
    let caller = call.agent_id.and_then(normalize_agent_id);
    let reaches = match evaluate(call.tool, call.params) {
        Ok(Reaches::Own) => return Decision::pass(),
        Ok(r) => r,
        Err(why) => {
            let shown_caller = caller.as_deref().unwrap_or("<your agentId>");
            return Decision::block(RULE_ID, unchecked_reason(call.tool, shown_caller, &why));
        }
    };
    let Some(caller) = caller else {
        return Decision::block(RULE_ID, cross_user_send::unknown_caller_reason(call.tool));
    };
    let agents = match reaches {
        Reaches::Own => return Decision::pass(),
        // A listing can't be filtered after the fact: narrow it to the
        // caller's own agent with OpenClaw's own filter.
        Reaches::Everyone => {
            return Decision::rewrite(RULE_ID, Patch::param("agentId", Value::String(caller)))
        }
        Reaches::Agents(agents) => agents,
    };
    match cross_user_send::check(&cx.opts.rules.cross_user_send, call.tool, &caller, &agents) {
        Err(reason) => Decision::block(RULE_ID, reason),
        Ok(None) => Decision::pass(),
        Ok(Some(ask)) => cross_user_send::ask(call.tool, &caller, &ask, Patch::default()),
    }
}

/// What a session tool call reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reaches {
    /// Only the caller's own current session.
    Own,
    /// Sessions of these agents (normalized ids; may include the caller).
    Agents(Vec<String>),
    /// `sessions_list` without `agentId`: every visible agent. Scoped by
    /// setting `agentId` to the caller.
    Everyone,
}

/// Why a target can't be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unchecked {
    /// A session key that isn't `agent:<id>:<rest>` or `current`.
    Key(String),
    /// `sessions_search` with no `sessionKey` searches every visible session.
    SearchEverything,
    /// `sessions_list` with an `agentId` OpenClaw can't make an id of.
    BadAgentId,
}

/// One session reference: `current` (after JS trim, exactly as OpenClaw
/// compares it) is the caller's own; a full key names its agent.
fn key_target(raw: &str) -> Result<Option<String>, Unchecked> {
    if js_trim(raw) == "current" {
        return Ok(None);
    }
    session_key_agent(raw)
        .map(Some)
        .ok_or_else(|| Unchecked::Key(crate::redact::shown(js_trim(raw))))
}

pub fn evaluate(tool: &str, params: &Params) -> Result<Reaches, Unchecked> {
    if tool == LIST_TOOL {
        return match str_param(params, "agentId", "agent_id") {
            None => Ok(Reaches::Everyone),
            Some(raw) => crate::openclaw::agent_ids::normalize_agent_id(raw)
                .map(|a| Reaches::Agents(vec![a]))
                .ok_or(Unchecked::BadAgentId),
        };
    }
    let mut agents = Vec::new();
    match str_param(params, "sessionKey", "session_key") {
        // sessions_history requires it (OpenClaw refuses the call without
        // one); the others default to the current session.
        None if tool == "sessions_search" => return Err(Unchecked::SearchEverything),
        None => {}
        Some(raw) => agents.extend(key_target(raw)?),
    }
    // `sessions` action=patch applies to each `targets[].sessionKey`. A
    // non-string there is refused by OpenClaw's strict schema.
    if let Some(Value::Array(targets)) = params.get("targets") {
        for t in targets {
            if let Some(Value::String(raw)) = t.get("sessionKey") {
                agents.extend(key_target(raw)?);
            }
        }
    }
    Ok(if agents.is_empty() {
        Reaches::Own
    } else {
        Reaches::Agents(agents)
    })
}

pub fn unchecked_reason(tool: &str, caller: &str, why: &Unchecked) -> String {
    match why {
        Unchecked::Key(given) => format!(
            "{RULE_ID}: {tool} got the session reference \"{given}\", which does not name its agent, so it can't be checked and was not run. Use a full session key agent:<agentId>:<rest> as sessions_list returns it (your own main session is agent:{caller}:main), or \"current\" for this session. Session ids, labels, \"main\" and \"global\" are not accepted here."
        ),
        Unchecked::SearchEverything => format!(
            "{RULE_ID}: {tool} without sessionKey searches every user's sessions, so it was not run. Set sessionKey to \"current\" or to one of your own sessions (agent:<agentId>:<rest> from sessions_list), one search per session."
        ),
        Unchecked::BadAgentId => format!(
            "{RULE_ID}: {tool} got an agentId that is not an agent id: leave it out to list your own sessions, or use an id from agents_list (for example \"{caller}\")."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().unwrap().clone()
    }

    fn agents(v: &[&str]) -> Result<Reaches, Unchecked> {
        Ok(Reaches::Agents(v.iter().map(|s| s.to_string()).collect()))
    }

    #[test]
    fn full_keys_name_their_agent_in_any_case() {
        for tool in TOOLS.iter().filter(|t| **t != LIST_TOOL) {
            for key in [
                "agent:pepito--atlas:main",
                "AGENT:Pepito--Atlas:main",
                " agent:pepito--atlas:subagent:1 ",
                "\u{feff}agent:pepito--atlas:x",
            ] {
                assert_eq!(
                    evaluate(tool, &params(json!({"sessionKey": key, "query": "q"}))),
                    agents(&["pepito--atlas"]),
                    "{tool} {key:?}"
                );
            }
            assert_eq!(
                evaluate(
                    tool,
                    &params(json!({"session_key": "agent:pepito--atlas:main"}))
                ),
                agents(&["pepito--atlas"]),
                "{tool}: snake_case is read too"
            );
        }
    }

    #[test]
    fn current_and_an_absent_key_are_the_callers_own() {
        for tool in ["sessions_history", "session_status", "sessions"] {
            assert_eq!(
                evaluate(tool, &params(json!({"sessionKey": " current "}))),
                Ok(Reaches::Own)
            );
        }
        for tool in ["session_status", "sessions"] {
            assert_eq!(
                evaluate(tool, &params(json!({"action": "patch"}))),
                Ok(Reaches::Own)
            );
        }
    }

    #[test]
    fn references_the_gateway_resolves_are_refused() {
        for key in [
            "main",
            "global",
            "unknown",
            "CURRENT",
            "4f2a1c9e-1111-2222-3333-444455556666",
            "research",
            "cron:job1",
            "tui",
            "agent:pepito--atlas",
        ] {
            for tool in TOOLS.iter().filter(|t| **t != LIST_TOOL) {
                let got = evaluate(tool, &params(json!({"sessionKey": key, "query": "q"})));
                assert!(
                    matches!(got, Err(Unchecked::Key(_))),
                    "{tool} {key}: {got:?}"
                );
            }
        }
        assert_eq!(
            evaluate("sessions_search", &params(json!({"query": "q"}))),
            Err(Unchecked::SearchEverything)
        );
    }

    #[test]
    fn every_patch_target_is_checked() {
        let p = params(json!({"action": "patch", "targets": [
            {"sessionKey": "agent:paco--dali:main"},
            {"sessionKey": "agent:pepito--atlas:main", "expectedSessionId": "x"},
        ]}));
        assert_eq!(
            evaluate("sessions", &p),
            agents(&["paco--dali", "pepito--atlas"])
        );
        let p = params(json!({"action": "patch", "targets": [{"sessionKey": "main"}]}));
        assert!(matches!(evaluate("sessions", &p), Err(Unchecked::Key(_))));
    }

    #[test]
    fn the_listing_is_scoped_by_its_agent_filter() {
        assert_eq!(
            evaluate(LIST_TOOL, &params(json!({"limit": 5}))),
            Ok(Reaches::Everyone)
        );
        assert_eq!(
            evaluate(LIST_TOOL, &params(json!({"agentId": " Pepito--Atlas "}))),
            agents(&["pepito--atlas"])
        );
        assert_eq!(
            evaluate(LIST_TOOL, &params(json!({"agentId": "!!"}))),
            Err(Unchecked::BadAgentId)
        );
    }

    #[test]
    fn reasons_start_with_the_rule_id_and_give_the_form_to_use() {
        for why in [
            Unchecked::Key("main".into()),
            Unchecked::SearchEverything,
            Unchecked::BadAgentId,
        ] {
            let r = unchecked_reason("sessions_history", "paco--francis", &why);
            assert!(r.starts_with("cross-user-send: "), "{r}");
            assert!(
                r.contains("paco--francis") || r.contains("agent:<agentId>:<rest>"),
                "{r}"
            );
        }
    }
}
