//! Rule `auth-token`: an owned tool (its name starts with a configured prefix)
//! gets the calling agent's token from the map, whatever the model wrote.

use super::ToolCall;
use crate::token_map::{Token, TokenMap};

pub const RULE_ID: &str = "auth-token";

/// Why an owned call has no token to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// `ctx.agentId` was absent or not a string: the caller is unknown and not trusted.
    NoAgentId,
    /// No map was ever loaded (missing file, refused by the gate, invalid).
    NoMap,
    /// The agent is not in the map.
    UnknownAgent,
    /// The map has been unreadable for longer than `maxStaleSeconds`.
    Stale,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'m> {
    NotOwned,
    Inject(&'m Token),
    Missing(Missing),
}

/// Whether `tool` is one of ours.
pub fn owns(prefixes: &[String], tool: &str) -> bool {
    prefixes.iter().any(|p| tool.starts_with(p.as_str()))
}

pub fn evaluate<'m>(
    call: &ToolCall<'_>,
    prefixes: &[String],
    map: &'m TokenMap,
    map_loaded: bool,
    stale: bool,
) -> Outcome<'m> {
    if !owns(prefixes, call.tool) {
        return Outcome::NotOwned;
    }
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
        }
    }

    fn prefixes() -> Vec<String> {
        vec!["claw-os__".into()]
    }

    #[test]
    fn owned_tool_with_known_agent_injects_its_token() {
        let map = parse(format!(r#"{{"paco--francis": "{T1}"}}"#).as_bytes())
            .unwrap()
            .map;
        let p = Params::new();
        match evaluate(
            &call("claw-os__claw_notes", Some("paco--francis"), &p),
            &prefixes(),
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
        let map = TokenMap::default();
        let p = Params::new();
        for tool in ["exec", "claw-os_claw_notes", "xclaw-os__notes", ""] {
            assert_eq!(
                evaluate(&call(tool, Some("a"), &p), &prefixes(), &map, true, false),
                Outcome::NotOwned
            );
        }
    }

    #[test]
    fn missing_cases_are_distinguished() {
        let map = parse(format!(r#"{{"a": "{T1}"}}"#).as_bytes()).unwrap().map;
        let p = Params::new();
        let t = "claw-os__x";
        assert_eq!(
            evaluate(&call(t, None, &p), &prefixes(), &map, true, false),
            Outcome::Missing(Missing::NoAgentId)
        );
        assert_eq!(
            evaluate(&call(t, Some("b"), &p), &prefixes(), &map, true, false),
            Outcome::Missing(Missing::UnknownAgent)
        );
        assert_eq!(
            evaluate(&call(t, Some("a"), &p), &prefixes(), &map, true, true),
            Outcome::Missing(Missing::Stale)
        );
        assert_eq!(
            evaluate(&call(t, Some("a"), &p), &prefixes(), &map, false, false),
            Outcome::Missing(Missing::NoMap)
        );
    }

    #[test]
    fn prototype_names_resolve_only_when_present() {
        let map = parse(format!(r#"{{"a": "{T1}"}}"#).as_bytes()).unwrap().map;
        let p = Params::new();
        for id in ["__proto__", "constructor", "toString", "", "hasOwnProperty"] {
            assert_eq!(
                evaluate(
                    &call("claw-os__x", Some(id), &p),
                    &prefixes(),
                    &map,
                    true,
                    false
                ),
                Outcome::Missing(Missing::UnknownAgent),
                "{id}"
            );
        }
    }
}
