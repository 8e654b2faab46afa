//! Rule `auth-token`: an owned tool (its name starts with a configured prefix)
//! gets the calling agent's token from the map, whatever the model wrote.

use super::conversation_id::{self, Origin};
use super::Reads;
use super::{Context, Decision, Patch, Slot, TokenStatus, ToolCall, Verdict};
use crate::call::Missing;
use crate::options::OnMissingToken;
use crate::redact::shown;

use crate::token_map::{Token, TokenMap};

pub const RULE_ID: &str = crate::call::rule_id::AUTH_TOKEN;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'m> {
    Inject(&'m Token),
    Missing(Missing),
}

/// Whether `tool` is one of ours.
pub fn owns(prefixes: &[String], tool: &str) -> bool {
    prefixes.iter().any(|p| tool.starts_with(p.as_str()))
}

/// What the map says about an owned call's agent. The route table sent the
/// call here because its tool is one of ours ([`owns`]): nothing checks that
/// a second time.
pub fn evaluate<'m>(
    call: &ToolCall<'_>,
    map: &'m TokenMap,
    map_loaded: bool,
    stale: bool,
) -> Outcome<'m> {
    let Some(agent) = call.agent_id else {
        return Outcome::Missing(Missing::NoAgentId);
    };
    if stale {
        return Outcome::Missing(Missing::Stale);
    }
    if !map_loaded {
        return Outcome::Missing(Missing::NoMap);
    }
    match map.get(agent) {
        Some(token) => Outcome::Inject(token),
        None => Outcome::Missing(Missing::UnknownAgent),
    }
}

/// The owned tools' rule: the caller's token (this rule), then its
/// originating conversation (rule `conversation-id`). Under
/// `onMissingToken: "pass"` an agent without a token runs the call without
/// one, never with whatever the model wrote; an unknown conversation is
/// taken out the same way. Allocates nothing in the common case: the token
/// and the conversation (the caller's session key) are borrowed.
pub fn decide<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    let opts = cx.opts;
    let view = cx.view;
    let mut patch = Patch::default();
    let token = match evaluate(call, view.map, view.loaded, view.stale) {
        // Whatever the map holds: an agent that can reach the map can
        // reach every token, so none is served until all are contained.
        _ if cx.posture.block.is_some() => {
            return Decision {
                token: TokenStatus::Missing(Missing::Uncontained),
                ..Decision::block(
                    crate::posture::RULE_ID,
                    cx.posture.block.clone().unwrap_or_default(),
                )
            };
        }
        Outcome::Inject(t) => {
            patch.token = Slot::Set(t);
            TokenStatus::Injected(t)
        }
        Outcome::Missing(why) if opts.on_missing_token == OnMissingToken::Block => {
            return Decision {
                token: TokenStatus::Missing(why),
                ..Decision::block(RULE_ID, missing_reason(cx, call, why))
            };
        }
        Outcome::Missing(why) => {
            patch.token = Slot::Clear;
            TokenStatus::Missing(why)
        }
    };
    let mut rule = matches!(token, TokenStatus::Injected(_)).then_some(RULE_ID);
    if opts.rules.conversation_id.enabled {
        match conversation_id::evaluate(cx, call) {
            Origin::Conversation(c) => {
                patch.conversation = Slot::Set(c);
                rule.get_or_insert(conversation_id::RULE_ID);
            }
            Origin::NeedLineage(key) => {
                return Decision {
                    token,
                    ..Decision::need_session(key, call.agent_id)
                }
            }
            // No conversation known: the model's value must not pass for one.
            Origin::Unknown => patch.conversation = Slot::Clear,
        }
    }
    Decision {
        token,
        ..Decision::new(Verdict::Rewrite(patch), rule)
    }
}

fn missing_reason(cx: &Context<'_, '_>, call: &ToolCall<'_>, why: Missing) -> String {
    let path = cx.opts.token_map_path.display();
    let tool = shown(call.tool);
    match why {
        Missing::NoAgentId => format!(
            "{RULE_ID}: the call to {tool} has no calling agent id, so no token can be injected; do not retry it. The operator must run it from an agent listed in the token map {path}."
        ),
        Missing::UnknownAgent => format!(
            "{RULE_ID}: agent \"{}\" has no token in the token map {path}, so {tool} was not called; do not retry it. Tell the user this agent is not provisioned; the operator can check with: claw-identity doctor --map {path}",
            shown(call.agent_id.unwrap_or_default())
        ),
        Missing::NoMap => format!(
            "{RULE_ID}: the token map {path} could not be loaded, so {tool} was not called; do not retry it. The operator can see why with: claw-identity doctor --map {path}"
        ),
        Missing::Stale => format!(
            "{RULE_ID}: the token map {path} has been unreadable for longer than maxStaleSeconds, so {tool} was not called; do not retry it. The operator can see why with: claw-identity doctor --map {path}"
        ),
        Missing::Uncontained => cx.posture.block.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Params;
    use crate::token_map::{parse, tests::T1};

    fn call<'a>(tool: &'a str, agent: Option<&'a str>, params: &'a Params) -> ToolCall<'a> {
        ToolCall {
            tool,
            agent_id: agent,
            session_key: None,
            params,
            derived_paths: &[],
            call_id: None,
        }
    }

    #[test]
    fn owned_tool_with_known_agent_injects_its_token() {
        let map = parse(format!(r#"{{"paco--francis": "{T1}"}}"#).as_bytes())
            .unwrap()
            .map;
        let p = Params::new();
        match evaluate(
            &call("claw-os__claw_notes", Some("paco--francis"), &p),
            &map,
            true,
            false,
        ) {
            Outcome::Inject(t) => assert_eq!(t.expose(), T1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_tools_are_not_owned() {
        let prefixes = vec!["claw-os__".to_owned()];
        assert!(owns(&prefixes, "claw-os__claw_notes"));
        for tool in ["exec", "claw-os_claw_notes", "xclaw-os__notes", ""] {
            assert!(!owns(&prefixes, tool), "{tool}");
        }
    }

    #[test]
    fn missing_cases_are_distinguished() {
        let map = parse(format!(r#"{{"a": "{T1}"}}"#).as_bytes()).unwrap().map;
        let p = Params::new();
        let t = "claw-os__x";
        assert_eq!(
            evaluate(&call(t, None, &p), &map, true, false),
            Outcome::Missing(Missing::NoAgentId)
        );
        assert_eq!(
            evaluate(&call(t, Some("b"), &p), &map, true, false),
            Outcome::Missing(Missing::UnknownAgent)
        );
        assert_eq!(
            evaluate(&call(t, Some("a"), &p), &map, true, true),
            Outcome::Missing(Missing::Stale)
        );
        assert_eq!(
            evaluate(&call(t, Some("a"), &p), &map, false, false),
            Outcome::Missing(Missing::NoMap)
        );
    }

    #[test]
    fn prototype_names_resolve_only_when_present() {
        let map = parse(format!(r#"{{"a": "{T1}"}}"#).as_bytes()).unwrap().map;
        let p = Params::new();
        for id in ["__proto__", "constructor", "toString", "", "hasOwnProperty"] {
            assert_eq!(
                evaluate(&call("claw-os__x", Some(id), &p), &map, true, false),
                Outcome::Missing(Missing::UnknownAgent),
                "{id}"
            );
        }
    }
}
