//! Rule `workboard-scope`: the bundled Workboard plugin's board namespace is
//! whatever board id the model passes, so one user's agents could read and
//! write another user's boards. Every Workboard tool that takes a `boardId`
//! gets `<boardPrefix><userprefix>` (`wb_paco`) instead, whatever the model
//! wrote, and `workboard_decompose` gets it on each child card. The board
//! admin tools name the board in `id`: `workboard_board_create` gets the
//! caller's board there too; archiving or deleting another board, and
//! listing every board (`workboard_boards`), are refused. Tools that take
//! only a card, attachment or subscription id are left alone (the board
//! can't be known from params; see docs/rules.md). Callers without a user
//! prefix are left alone. Workboard's schemas are strict, so the rule only
//! ever sets keys they declare.

use super::Reads;
use crate::options::rules::WorkboardScopeConfig;
use serde_json::Value;

use super::{Context, Decision, Params, Patch, ToolCall};
use crate::paths::js_trim;

pub const RULE_ID: &str = crate::call::rule_id::WORKBOARD_SCOPE;
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

/// The board admin tool whose `id` is the board to create or update.
pub const BOARD_CREATE_TOOL: &str = "workboard_board_create";
/// Board admin tools whose `id` is a board to archive or delete.
pub const BOARD_ADMIN_TOOLS: [&str; 2] = ["workboard_board_archive", "workboard_board_delete"];
/// Lists every board's id and counts; takes no params to scope it with.
pub const BOARDS_TOOL: &str = "workboard_boards";

/// Every Workboard tool this rule scopes.
pub const TOOLS: [&str; 13] = [
    BOARD_TOOLS[0],
    BOARD_TOOLS[1],
    BOARD_TOOLS[2],
    BOARD_TOOLS[3],
    BOARD_TOOLS[4],
    BOARD_TOOLS[5],
    BOARD_TOOLS[6],
    BOARD_TOOLS[7],
    DECOMPOSE_TOOL,
    BOARD_CREATE_TOOL,
    BOARD_ADMIN_TOOLS[0],
    BOARD_ADMIN_TOOLS[1],
    BOARDS_TOOL,
];

/// The top-level params this rule reads, those rule `cross-user-send`
/// reads on the same tools (who work is assigned to), and the workspaces
/// `map-access` reads (where the work runs).
pub const READS: &[&str] = &[
    "boardId",
    "children",
    "id",
    "agentId",
    "orchestration",
    "workspace",
    "defaultWorkspace",
];

/// The card tools that assign work to an agent by card id alone, outside
/// this rule's board scoping (`workboard_reassign {id, agentId}`).
pub const ASSIGN_TOOLS: [&str; 1] = ["workboard_reassign"];

/// The agents a Workboard call assigns work to (`extensions/workboard/index.js`
/// schemas): `agentId` of `workboard_create`, `_specify` and `_reassign`,
/// each `children[].agentId` of `workboard_decompose`, and
/// `orchestration.defaultAssignee` of `workboard_board_create`. (The
/// `agentId` of `workboard_list` only filters the listing.)
pub fn assignees<'p>(tool: &str, params: &'p Params) -> Vec<&'p str> {
    let text = |v: Option<&'p Value>| {
        v.and_then(Value::as_str)
            .map(js_trim)
            .filter(|s| !s.is_empty())
    };
    match tool {
        "workboard_create" | "workboard_specify" | "workboard_reassign" => {
            text(params.get("agentId")).into_iter().collect()
        }
        DECOMPOSE_TOOL => match params.get("children") {
            Some(Value::Array(children)) => children
                .iter()
                .filter_map(|c| text(c.get("agentId")))
                .collect(),
            _ => Vec::new(),
        },
        BOARD_CREATE_TOOL => text(
            params
                .get("orchestration")
                .and_then(|o| o.get("defaultAssignee")),
        )
        .into_iter()
        .collect(),
        _ => Vec::new(),
    }
}

/// The directories a Workboard call sets for the runs of its cards
/// (`extensions/workboard/index.js` schemas; a dispatched card's worker runs
/// in its workspace, `materializeWorkspace`, runtime-api-*.mjs):
/// `workspace.path` of `workboard_create` and `_specify`, each
/// `children[].workspace.path` of `workboard_decompose`, and
/// `defaultWorkspace.path` of `workboard_board_create`.
pub fn workspaces<'p>(tool: &str, params: &'p Params) -> Vec<&'p str> {
    let path = |w: Option<&'p Value>| w.and_then(|w| w.get("path")).and_then(Value::as_str);
    match tool {
        "workboard_create" | "workboard_specify" => {
            path(params.get("workspace")).into_iter().collect()
        }
        DECOMPOSE_TOOL => match params.get("children") {
            Some(Value::Array(children)) => children
                .iter()
                .filter_map(|c| path(c.get("workspace")))
                .collect(),
            _ => Vec::new(),
        },
        BOARD_CREATE_TOOL => path(params.get("defaultWorkspace")).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The rule's decision for a Workboard call.
pub fn decide<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    if !cx.opts.rules.workboard_scope.enabled {
        return Decision::pass();
    }
    match evaluate(
        &cx.opts.rules.workboard_scope,
        call.tool,
        call.agent_id,
        call.params,
    ) {
        Scope::Set(params) => Decision::rewrite(
            RULE_ID,
            Patch {
                params,
                ..Patch::default()
            },
        ),
        Scope::Refuse(reason) => Decision::block(RULE_ID, reason),
        Scope::Leave => Decision::pass(),
    }
}

/// What to do with a Workboard call.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    Leave,
    Set(Vec<(&'static str, Value)>),
    Refuse(String),
}

/// A board id as Workboard's `normalizeBoardId` reads it: trimmed, lowercased.
fn board_param(params: &Params, key: &str) -> Option<String> {
    match params.get(key) {
        Some(Value::String(s)) => Some(js_trim(s).to_lowercase()),
        _ => None,
    }
}

pub fn evaluate(
    cfg: &WorkboardScopeConfig,
    tool: &str,
    caller: Option<&str>,
    params: &Params,
) -> Scope {
    let Some(board) = caller.and_then(|c| cfg.board_of(c)) else {
        return Scope::Leave;
    };
    if BOARD_TOOLS.contains(&tool) {
        return Scope::Set(vec![("boardId", Value::String(board))]);
    }
    if tool == BOARD_CREATE_TOOL {
        return Scope::Set(vec![("id", Value::String(board))]);
    }
    if BOARD_ADMIN_TOOLS.contains(&tool) {
        return match board_param(params, "id") {
            Some(id) if id == board => Scope::Leave,
            _ => Scope::Refuse(format!(
                "{RULE_ID}: {tool} may only act on your user's board \"{board}\"; another board was named, so it was not run. Set id to \"{board}\", or tell the user that other boards are managed by their own users."
            )),
        };
    }
    if tool == BOARDS_TOOL {
        return Scope::Refuse(format!(
            "{RULE_ID}: {tool} lists every user's boards, so it was not run. Your user's board is \"{board}\": use workboard_stats or workboard_list for it."
        ));
    }
    if tool != DECOMPOSE_TOOL {
        return Scope::Leave;
    }
    let Some(Value::Array(children)) = params.get("children") else {
        return Scope::Leave; // not an array: Workboard's schema refuses the call anyway
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
    Scope::Set(vec![("children", Value::Array(scoped))])
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
                    Scope::Set(vec![("boardId", json!("wb_paco"))]),
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
        let got = evaluate(&cfg(), DECOMPOSE_TOOL, Some("paco--dali"), &p);
        assert_eq!(
            got,
            Scope::Set(vec![(
                "children",
                json!([
                    {"title": "a", "boardId": "wb_paco", "agentId": "paco--dali"},
                    {"title": "b", "boardId": "wb_paco"},
                    "not a card",
                ])
            )])
        );
        assert_eq!(
            evaluate(
                &cfg(),
                DECOMPOSE_TOOL,
                Some("paco--dali"),
                &params(json!({"children": "x"}))
            ),
            Scope::Leave
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
                Scope::Leave,
                "{caller:?}"
            );
        }
    }

    #[test]
    fn board_admin_tools_act_only_on_the_callers_board() {
        let p = |v| params(v);
        assert_eq!(
            evaluate(
                &cfg(),
                "workboard_board_create",
                Some("paco--x"),
                &p(json!({"id": "wb_pepito", "name": "n"}))
            ),
            Scope::Set(vec![("id", json!("wb_paco"))])
        );
        for tool in BOARD_ADMIN_TOOLS {
            for id in [json!("wb_pepito"), json!("default"), json!(3)] {
                let got = evaluate(&cfg(), tool, Some("paco--x"), &p(json!({"id": id})));
                let Scope::Refuse(r) = got else {
                    panic!("{tool} {id}: {got:?}")
                };
                assert!(
                    r.starts_with("workboard-scope: ") && r.contains("wb_paco"),
                    "{r}"
                );
            }
            for id in ["wb_paco", " WB_Paco "] {
                assert_eq!(
                    evaluate(&cfg(), tool, Some("paco--x"), &p(json!({"id": id}))),
                    Scope::Leave,
                    "{tool} {id}"
                );
            }
        }
        let Scope::Refuse(r) = evaluate(&cfg(), BOARDS_TOOL, Some("paco--x"), &p(json!({}))) else {
            panic!()
        };
        assert!(r.contains("workboard_stats"), "{r}");
        assert_eq!(
            evaluate(&cfg(), BOARDS_TOOL, Some("main"), &p(json!({}))),
            Scope::Leave
        );
    }

    #[test]
    fn card_id_tools_are_not_touched() {
        for tool in [
            "workboard_read",
            "workboard_claim",
            "workboard_move",
            "workboard_link",
            "workboard_attachment_read",
            "workboard_notify_advance",
            "exec",
        ] {
            assert!(!TOOLS.contains(&tool));
            assert_eq!(
                evaluate(&cfg(), tool, Some("paco--x"), &params(json!({"id": "c"}))),
                Scope::Leave
            );
        }
    }

    #[test]
    fn board_ids_follow_workboards_grammar() {
        let c = cfg();
        assert_eq!(c.board_of("Paco--Francis").as_deref(), Some("wb_paco"));
        assert_eq!(c.board_of("paco_2--x").as_deref(), Some("wb_paco_2"));
        let long = format!("{}--x", "p".repeat(61));
        assert!(c
            .board_of(&long)
            .is_some_and(|b| crate::options::rules::is_board_id(&b)));
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
        let Scope::Set(first) = evaluate(&cfg(), DECOMPOSE_TOOL, Some("paco--f"), &p) else {
            panic!()
        };
        let mut after = p.clone();
        for (k, v) in &first {
            after.insert((*k).to_owned(), v.clone());
        }
        assert_eq!(
            evaluate(&cfg(), DECOMPOSE_TOOL, Some("paco--f"), &after),
            Scope::Set(first)
        );
    }
}
