//! Rule `workboard-scope`: the bundled Workboard plugin's board namespace is
//! whatever `boardId` the model passes, so one user's agents could read and
//! write another user's boards. Every Workboard tool that takes a `boardId`
//! gets `<boardPrefix><userprefix>` (`wb_paco`) instead, whatever the model
//! wrote, and `workboard_decompose` gets it on each child card. Callers
//! without a user prefix are left alone. Workboard's schemas are strict, so
//! the rule only ever sets keys they declare.

use serde::Deserialize;
use serde_json::Value;

use super::agent_ids::{normalize_agent_id, user_prefix};
use super::Params;

pub const RULE_ID: &str = "workboard-scope";
pub const DEFAULT_BOARD_PREFIX: &str = "wb_";

/// Tools whose top-level `boardId` selects the board.
pub const BOARD_TOOLS: [&str; 8] = [
    "workboard_list",
    "workboard_create",
    "workboard_stats",
    "workboard_dispatch",
    "workboard_specify",
    "workboard_notify_subscribe",
    "workboard_notify_list",
    "workboard_notify_events",
];

/// The tool whose `children[].boardId` select the boards of new cards.
pub const DECOMPOSE_TOOL: &str = "workboard_decompose";

/// Workboard's board id grammar: `^[a-z0-9][a-z0-9._-]{0,79}$`.
fn is_board_id(id: &str) -> bool {
    let b = id.as_bytes();
    !b.is_empty()
        && b.len() <= 80
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"._-".contains(c))
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct WorkboardScopeConfig {
    pub enabled: bool,
    /// Prepended to the user prefix to make the board id.
    pub board_prefix: String,
}

impl Default for WorkboardScopeConfig {
    fn default() -> Self {
        WorkboardScopeConfig {
            enabled: true,
            board_prefix: DEFAULT_BOARD_PREFIX.to_owned(),
        }
    }
}

impl WorkboardScopeConfig {
    pub fn validate(&self) -> Result<(), String> {
        // The shortest user prefix is one character: "<boardPrefix>a" must be a board id.
        // Non-empty: a bare user prefix could name a shared board ("default").
        if self.board_prefix.is_empty()
            || self.board_prefix.len() > 40
            || !is_board_id(&format!("{}a", self.board_prefix))
        {
            return Err(format!(
                "rules.workboardScope.boardPrefix \"{}\" can't start a Workboard board id (^[a-z0-9][a-z0-9._-]{{0,79}}$; the prefix must be 1 to 40 characters)",
                crate::redact::shown(&self.board_prefix)
            ));
        }
        Ok(())
    }

    /// The board of `agent_id`'s user, if it has one.
    pub fn board_of(&self, agent_id: &str) -> Option<String> {
        let agent = normalize_agent_id(agent_id)?;
        let board = format!("{}{}", self.board_prefix, user_prefix(&agent)?);
        // A user prefix is [a-z0-9_-] and at most 61 long: always a board id
        // after a valid boardPrefix; checked anyway, a wrong id must never pass.
        is_board_id(&board).then_some(board)
    }
}

pub fn is_workboard_tool(tool: &str) -> bool {
    tool == DECOMPOSE_TOOL || BOARD_TOOLS.contains(&tool)
}

/// The params to set for a Workboard call, or `None` to leave it alone.
pub fn evaluate(
    cfg: &WorkboardScopeConfig,
    tool: &str,
    caller: Option<&str>,
    params: &Params,
) -> Option<Vec<(String, Value)>> {
    let board = cfg.board_of(caller?)?;
    if BOARD_TOOLS.contains(&tool) {
        return Some(vec![("boardId".to_owned(), Value::String(board))]);
    }
    if tool != DECOMPOSE_TOOL {
        return None;
    }
    let Some(Value::Array(children)) = params.get("children") else {
        return None; // not an array: Workboard's schema refuses the call anyway
    };
    let scoped: Vec<Value> = children
        .iter()
        .map(|child| match child {
            Value::Object(c) => {
                let mut c = c.clone();
                c.insert("boardId".to_owned(), Value::String(board.clone()));
                Value::Object(c)
            }
            other => other.clone(),
        })
        .collect();
    Some(vec![("children".to_owned(), Value::Array(scoped))])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().unwrap().clone()
    }

    fn cfg() -> WorkboardScopeConfig {
        WorkboardScopeConfig::default()
    }

    #[test]
    fn every_board_tool_gets_the_callers_user_board() {
        for tool in BOARD_TOOLS {
            for p in [
                json!({}),
                json!({"boardId": "wb_pepito"}),
                json!({"boardId": 3}),
            ] {
                assert_eq!(
                    evaluate(&cfg(), tool, Some("paco--francis"), &params(p)),
                    Some(vec![("boardId".into(), json!("wb_paco"))]),
                    "{tool}"
                );
            }
        }
    }

    #[test]
    fn decompose_scopes_each_child_and_keeps_the_rest() {
        let p = params(json!({
            "id": "card1",
            "children": [
                {"title": "a", "boardId": "wb_pepito", "agentId": "paco--dali"},
                {"title": "b"},
                "not a card",
            ],
        }));
        let got = evaluate(&cfg(), DECOMPOSE_TOOL, Some("paco--dali"), &p).unwrap();
        assert_eq!(
            got,
            vec![(
                "children".into(),
                json!([
                    {"title": "a", "boardId": "wb_paco", "agentId": "paco--dali"},
                    {"title": "b", "boardId": "wb_paco"},
                    "not a card",
                ])
            )]
        );
        assert_eq!(
            evaluate(
                &cfg(),
                DECOMPOSE_TOOL,
                Some("paco--dali"),
                &params(json!({"children": "x"}))
            ),
            None
        );
    }

    #[test]
    fn callers_without_a_user_prefix_are_left_alone() {
        for caller in [None, Some("main"), Some("x--"), Some("")] {
            assert_eq!(
                evaluate(
                    &cfg(),
                    "workboard_list",
                    caller,
                    &params(json!({"boardId": "b"}))
                ),
                None,
                "{caller:?}"
            );
        }
    }

    #[test]
    fn other_workboard_tools_are_not_touched() {
        for tool in [
            "workboard_read",
            "workboard_boards",
            "workboard_board_create",
            "exec",
        ] {
            assert!(!is_workboard_tool(tool));
            assert_eq!(
                evaluate(&cfg(), tool, Some("paco--x"), &params(json!({}))),
                None
            );
        }
    }

    #[test]
    fn board_ids_follow_workboards_grammar() {
        let c = cfg();
        assert_eq!(c.board_of("Paco--Francis").as_deref(), Some("wb_paco"));
        assert_eq!(c.board_of("paco_2--x").as_deref(), Some("wb_paco_2"));
        let long = format!("{}--x", "p".repeat(61));
        assert!(c.board_of(&long).is_some_and(|b| is_board_id(&b)));
        for bad in ["", "_x", "WB_", "wb:", &"w".repeat(41)] {
            let c = WorkboardScopeConfig {
                enabled: true,
                board_prefix: bad.to_owned(),
            };
            assert!(c.validate().is_err(), "{bad:?}");
        }
        for good in ["wb_", "board.", "x"] {
            let c = WorkboardScopeConfig {
                enabled: true,
                board_prefix: good.to_owned(),
            };
            assert!(c.validate().is_ok(), "{good:?}");
        }
    }

    #[test]
    fn deciding_again_on_scoped_params_gives_the_same_values() {
        let p = params(json!({"id": "c", "children": [{"title": "a", "boardId": "x"}]}));
        let first = evaluate(&cfg(), DECOMPOSE_TOOL, Some("paco--f"), &p).unwrap();
        let mut after = p.clone();
        for (k, v) in &first {
            after.insert(k.clone(), v.clone());
        }
        assert_eq!(
            evaluate(&cfg(), DECOMPOSE_TOOL, Some("paco--f"), &after).unwrap(),
            first
        );
    }
}
