//! The rules together, through the engine as the pipeline calls it: which
//! rule a call meets, how their rewrites compose (the token, then the
//! conversation; a send routed to its dedicated session), and that the route
//! table's declared fields are all the rules read. Each rule's own cases sit
//! next to it (`src/rules/`); the engine's own, next to it (`src/engine.rs`).
//! `Engine::decide_call` routes each call first, as the bridge does once
//! (feature `testing`).

use claw_identity_core::engine::{Engine, SessionRef};
use claw_identity_core::rules::{delegation_session, map_access, Decision, Params, Verdict};
use claw_identity_core::testing::{decide_on, empty_map, engine, p, pp, rules_engine, TempDir, T1};
use claw_identity_core::token_map::{parse, TokenMap};
use serde_json::{json, Value};

/// The params a decision sets (for a rewrite, or an approved call).
fn sets(e: &Engine, d: &Decision<'_>) -> Vec<(String, Value)> {
    d.patch()
        .map(|p| p.entries(e.options()).0)
        .unwrap_or_default()
}

fn needs_params(e: &Engine, tool: &str) -> bool {
    e.route(tool).is_some_and(|r| !r.reads.is_empty())
}

const FRANCIS_MAIN: &str = "agent:paco--francis:main";

/// Deciding again on the params a decision produced (a second tier, a
/// retried call) must set the same values (or pass), never block.
fn assert_idempotent(
    e: &Engine,
    tool: &'static str,
    agent: &'static str,
    session: &str,
    params: Params,
) -> Decision<'static> {
    let map = empty_map();
    let session: &'static str = Box::leak(session.to_owned().into_boxed_str());
    let params: &'static Params = Box::leak(Box::new(params));
    let first = decide_on(e, map, tool, Some(agent), Some(session), params);
    let patch = match &first.verdict {
        Verdict::Rewrite(_) | Verdict::RequireApproval { .. } => sets(e, &first),
        Verdict::Pass | Verdict::Block(_) => return first,
    };
    let mut rewritten = params.clone();
    for (k, v) in &patch {
        rewritten.insert(k.clone(), v.clone());
    }
    let rewritten: &'static Params = Box::leak(Box::new(rewritten));
    let second = decide_on(e, map, tool, Some(agent), Some(session), rewritten);
    let again = match &second.verdict {
        Verdict::Rewrite(_) | Verdict::RequireApproval { .. } => sets(e, &second),
        Verdict::Pass => Vec::new(),
        Verdict::Block(r) => panic!("second decision blocked: {r}"),
    };
    for (k, v) in &again {
        assert_eq!(rewritten.get(k), Some(v), "second decision changed {k}");
    }
    assert_eq!(second.ensure_session, first.ensure_session);
    first
}

fn blocked(d: &Decision<'_>) -> String {
    match &d.verdict {
        Verdict::Block(r) => r.clone(),
        other => panic!("not a block: {other:?}"),
    }
}

/// A map in a fresh directory, and an engine reading it.
fn map_engine(tag: &str, extra: serde_json::Value) -> (TempDir, Engine) {
    let dir = TempDir::new(&format!("engine-{tag}"));
    let map = dir.map("{}");
    let mut opts = json!({"tokenMapPath": map});
    opts.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    (dir, engine(&opts.to_string()))
}

#[test]
fn map_access_blocks_file_tools_on_the_map_by_default() {
    let (dir, e) = map_engine("default", json!({}));
    let map = TokenMap::default();
    let rd = p(json!({"path": dir.join("agent-tokens.json")}));
    let d = decide_on(&e, &map, "read", Some("paco--francis"), None, &rd);
    assert_eq!(d.rule, Some(map_access::RULE_ID));
    assert!(matches!(&d.verdict, Verdict::Block(r) if r.starts_with("map-access: read refused")));
    let w = p(json!({"path": dir.join("agent-tokens.json"), "content": "{}"}));
    assert!(matches!(
        decide_on(&e, &map, "write", None, None, &w).verdict,
        Verdict::Block(_)
    ));
    let elsewhere = p(json!({"path": "/etc/hostname"}));
    assert_eq!(
        decide_on(&e, &map, "read", None, None, &elsewhere).verdict,
        Verdict::Pass
    );
    let exec = p(json!({"command": "cat x"}));
    assert_eq!(
        decide_on(&e, &map, "exec", None, None, &exec).verdict,
        Verdict::Pass
    );

    let (dir2, off) = map_engine("off", json!({"protectMap": "off"}));
    let p2 = p(json!({"path": dir2.join("agent-tokens.json")}));
    assert_eq!(
        decide_on(&off, &map, "read", None, None, &p2).verdict,
        Verdict::Pass
    );
}

#[test]
fn strict_blocks_exec_for_agents_outside_the_sandbox() {
    let (_dir, e) = map_engine("strict", json!({"protectMap": "strict"}));
    let map = TokenMap::default();
    let exec = p(json!({"command": "base64 ~/.config/x"}));
    for tool in ["exec", "process"] {
        let d = decide_on(&e, &map, tool, Some("paco--francis"), None, &exec);
        assert!(
            matches!(&d.verdict, Verdict::Block(r) if r.starts_with("map-access: ")),
            "{tool}"
        );
    }
    let mut table = claw_identity_core::agent_fs::AgentFsTable::default();
    table.agents.insert(
        "paco--francis".into(),
        claw_identity_core::agent_fs::AgentFs {
            cwd: None,
            workspaces: vec![],
            sandboxed: true,
        },
    );
    e.set_agent_fs(table);
    assert_eq!(
        decide_on(&e, &map, "exec", Some("paco--francis"), None, &exec).verdict,
        Verdict::Pass
    );
    assert!(matches!(
        decide_on(&e, &map, "exec", Some("dali"), None, &exec).verdict,
        Verdict::Block(_)
    ));
}

#[test]
fn routes_name_exact_tools_and_owned_calls_read_no_params() {
    let e = rules_engine(json!({}));
    for t in [
        "sessions_send",
        "sessions_spawn",
        "workboard_list",
        "workboard_decompose",
    ] {
        assert!(needs_params(&e, t), "{t}");
    }
    assert!(!needs_params(&e, "claw-os__claw_notes"));
    assert!(!needs_params(&e, "workboard_read"));
    assert!(needs_params(&e, "read") && needs_params(&e, "apply_patch"));
    // exec's `pty` and `env`: rule sandbox-pty passes the ask for a terminal on.
    assert_eq!(e.route("exec").map(|r| r.reads), Some(&["pty", "env"][..]));
    let off = engine(
        &json!({"tokenMapPath": "/m.json", "protectMap": "off", "posture": "warn", "rules": {
            "crossUserSend": {"enabled": false}, "spawnRedirect": {"enabled": false},
            "delegationSession": {"enabled": false}, "workboardScope": {"enabled": false},
            "conversationId": {"enabled": false}, "layerControls": {"enabled": false},
        }})
        .to_string(),
    );
    // The shells (sandbox-pty) and the Workboard tools (token-text)
    // have no switch.
    let mut left = off.routed_tools();
    left.retain(|t| !map_access::EXEC_TOOLS.contains(t) && !t.starts_with("workboard_"));
    assert!(left.is_empty(), "{left:?}");
    assert!(off.concerns("claw-os__x"));
}

#[test]
fn an_exec_that_asks_for_a_terminal_carries_the_sandboxs_marker_in_its_env() {
    let e = rules_engine(json!({}));
    let d = assert_idempotent(
        &e,
        "exec",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"command": "top", "pty": true, "env": {"A": "b"}})),
    );
    assert_eq!(
        sets(&e, &d),
        vec![(
            "env".into(),
            json!({"A": "b", claw_identity_core::sandbox::PTY_MARKER: "1"})
        )]
    );
    for params in [
        json!({"command": "ls"}),
        json!({"command": "ls", "pty": false}),
        json!({"command": "ls", "pty": true, "env": "x"}),
    ] {
        let d = decide_on(
            &e,
            empty_map(),
            "exec",
            Some("paco--francis"),
            None,
            pp(params.clone()),
        );
        assert_eq!(d.verdict, Verdict::Pass, "{params}");
    }
    // process has no terminal to ask for.
    let d = decide_on(
        &e,
        empty_map(),
        "process",
        None,
        None,
        pp(json!({"action": "poll", "pty": true})),
    );
    assert_eq!(d.verdict, Verdict::Pass);
}

#[test]
fn owned_calls_get_the_token_then_the_conversation() {
    let map = parse(format!(r#"{{"paco--francis": "{T1}"}}"#).as_bytes())
        .unwrap()
        .map;
    let e = rules_engine(json!({}));
    let none = Params::new();
    let d = decide_on(
        &e,
        &map,
        "claw-os__x",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        &none,
    );
    assert_eq!(
        sets(&e, &d),
        vec![
            ("auth_token".into(), json!(T1)),
            ("_conversation_id".into(), json!(FRANCIS_MAIN)),
        ]
    );
    assert_eq!(d.rule, Some("auth-token"));
    let deleg = delegation_session::delegation_key("paco--dali", FRANCIS_MAIN);
    let d = decide_on(
        &e,
        &map,
        "claw-os__x",
        Some("paco--dali"),
        Some(&deleg),
        &none,
    );
    assert_eq!(
        sets(&e, &d),
        vec![("_conversation_id".into(), json!(FRANCIS_MAIN))],
        "the token is missing (pass mode), the conversation is still set"
    );
    assert_eq!(d.rule, Some("conversation-id"));
}

#[test]
fn a_sub_agent_call_waits_for_its_lineage_and_is_not_counted_until_then() {
    let map = TokenMap::default();
    let e = rules_engine(json!({}));
    let child = "agent:paco--francis:subagent:77";
    let none = Params::new();
    let d = decide_on(
        &e,
        &map,
        "claw-os__x",
        Some("paco--francis"),
        Some(child),
        &none,
    );
    assert_eq!(
        d.need_session,
        Some(SessionRef {
            agent_id: "paco--francis".into(),
            session_key: child.into()
        })
    );
    e.note_spawn(child, Some(FRANCIS_MAIN));
    let d = decide_on(
        &e,
        &map,
        "claw-os__x",
        Some("paco--francis"),
        Some(child),
        &none,
    );
    assert_eq!(d.need_session, None);
    assert_eq!(
        sets(&e, &d),
        vec![("_conversation_id".into(), json!(FRANCIS_MAIN))]
    );
}

#[test]
fn a_same_user_send_goes_to_its_dedicated_session_which_is_ensured() {
    let e = rules_engine(json!({}));
    let d = assert_idempotent(
        &e,
        "sessions_send",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"agentId": "paco--dali", "message": "hi"})),
    );
    let key = "agent:paco--dali:delegation:agent.paco--francis.main";
    assert_eq!(sets(&e, &d), vec![("sessionKey".into(), json!(key))]);
    assert_eq!(d.rule, Some("delegation-session"));
    let ensure = d.ensure_session.unwrap();
    assert_eq!(
        ensure.session,
        SessionRef {
            agent_id: "paco--dali".into(),
            session_key: key.into()
        }
    );
    assert!(ensure.failure_reason.starts_with("delegation-session: "));
}

#[test]
fn a_send_from_a_delegated_session_keeps_the_original_conversation() {
    let e = rules_engine(json!({}));
    let from = delegation_session::delegation_key("paco--dali", FRANCIS_MAIN);
    let d = assert_idempotent(
        &e,
        "sessions_send",
        "paco--dali",
        &from,
        p(json!({"agentId": "paco--atlas", "message": "hi"})),
    );
    assert_eq!(
        sets(&e, &d),
        vec![(
            "sessionKey".into(),
            json!("agent:paco--atlas:delegation:agent.paco--francis.main")
        )]
    );
}

#[test]
fn a_cross_user_send_is_blocked_before_any_routing() {
    let e = rules_engine(json!({}));
    for params in [
        json!({"agentId": "pepito--atlas", "message": "m"}),
        json!({"sessionKey": "agent:pepito--atlas:main", "message": "m"}),
        json!({"sessionKey": "agent:paco--dali:main", "agentId": "pepito--atlas", "message": "m"}),
        json!({"agent_id": "PEPITO--ATLAS", "message": "m"}),
    ] {
        let d = assert_idempotent(
            &e,
            "sessions_send",
            "paco--francis",
            FRANCIS_MAIN,
            p(params.clone()),
        );
        let r = blocked(&d);
        assert!(
            r.starts_with("cross-user-send: ") && r.contains("pepito--atlas"),
            "{params}: {r}"
        );
        assert_eq!(d.ensure_session, None);
    }
    let d = decide_on(
        &e,
        empty_map(),
        "sessions_send",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        pp(json!({"label": "x", "message": "m"})),
    );
    assert!(blocked(&d).contains("agentId"));
    let d = decide_on(
        &e,
        empty_map(),
        "sessions_send",
        None,
        Some(FRANCIS_MAIN),
        pp(json!({"agentId": "paco--dali", "message": "m"})),
    );
    assert!(blocked(&d).starts_with("cross-user-send: "));
}

#[test]
fn an_ask_grant_asks_and_still_routes_to_the_dedicated_session() {
    let e =
        rules_engine(json!({"crossUserSend": {"grants": {"paco--*": {"pepito--atlas": "ask"}}}}));
    let d = assert_idempotent(
        &e,
        "sessions_send",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"agentId": "pepito--atlas", "message": "m"})),
    );
    let Verdict::RequireApproval {
        title, description, ..
    } = &d.verdict
    else {
        panic!("{d:?}")
    };
    assert!(title.contains("pepito--atlas") && description.contains("paco--francis"));
    assert_eq!(
        sets(&e, &d),
        vec![(
            "sessionKey".into(),
            json!("agent:pepito--atlas:delegation:agent.paco--francis.main")
        )]
    );
    assert!(d.ensure_session.is_some());
    let allow = rules_engine(
        json!({"crossUserSend": {"grants": {"paco--francis": {"pepito--atlas": "allow"}}}}),
    );
    let d = decide_on(
        &allow,
        empty_map(),
        "sessions_send",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        pp(json!({"agentId": "pepito--atlas", "message": "m"})),
    );
    assert!(matches!(d.verdict, Verdict::Rewrite(_)));
}

#[test]
fn explicit_other_sessions_and_self_sends_are_left_alone() {
    let e = rules_engine(json!({}));
    for params in [
        json!({"sessionKey": "agent:paco--dali:subagent:1", "message": "m"}),
        json!({"agentId": "paco--dali", "label": "research", "message": "m"}),
        json!({"agentId": "paco--francis", "message": "m"}),
    ] {
        let d = assert_idempotent(
            &e,
            "sessions_send",
            "paco--francis",
            FRANCIS_MAIN,
            p(params.clone()),
        );
        assert_eq!(d.verdict, Verdict::Pass, "{params}");
    }
}

#[test]
fn a_spawn_of_a_specialist_is_redirected_to_the_exact_send() {
    let e = rules_engine(json!({}));
    let d = assert_idempotent(
        &e,
        "sessions_spawn",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"agentId": "paco--dali", "task": "paint"})),
    );
    let r = blocked(&d);
    assert!(r.starts_with("spawn-redirect: "), "{r}");
    assert!(
        r.contains(r#"{"agentId":"paco--dali","message":"paint","sessionKey":"agent:paco--dali:delegation:agent.paco--francis.main"}"#),
        "{r}"
    );
    for params in [
        json!({"task": "t"}),
        json!({"agentId": "paco--francis", "task": "t"}),
    ] {
        let d = assert_idempotent(
            &e,
            "sessions_spawn",
            "paco--francis",
            FRANCIS_MAIN,
            p(params.clone()),
        );
        assert_eq!(d.verdict, Verdict::Pass, "{params}");
    }
    let d = decide_on(
        &e,
        empty_map(),
        "sessions_spawn",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        pp(json!({"agentId": "pepito--atlas", "task": "t"})),
    );
    assert!(
        blocked(&d).starts_with("cross-user-send: "),
        "cross-user comes first"
    );
    let free = rules_engine(json!({"spawnRedirect": {"enabled": false}}));
    let d = decide_on(
        &free,
        empty_map(),
        "sessions_spawn",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        pp(json!({"agentId": "paco--dali", "task": "t"})),
    );
    assert_eq!(d.verdict, Verdict::Pass);
}

#[test]
fn workboard_calls_are_scoped_to_the_callers_user_board() {
    let e = rules_engine(json!({}));
    let d = assert_idempotent(
        &e,
        "workboard_list",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"boardId": "wb_pepito"})),
    );
    assert_eq!(sets(&e, &d), vec![("boardId".into(), json!("wb_paco"))]);
    assert_eq!(d.rule, Some("workboard-scope"));
    let d = assert_idempotent(
        &e,
        "workboard_decompose",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"id": "c", "children": [{"title": "a"}]})),
    );
    assert!(matches!(d.verdict, Verdict::Rewrite(_)));
    let d = assert_idempotent(
        &e,
        "workboard_list",
        "main",
        "agent:main:main",
        p(json!({"boardId": "x"})),
    );
    assert_eq!(d.verdict, Verdict::Pass);
}

#[test]
fn another_users_sessions_cannot_be_read_or_changed() {
    let e = rules_engine(json!({}));
    for (tool, params) in [
        (
            "sessions_history",
            json!({"sessionKey": "agent:pepito--atlas:main"}),
        ),
        (
            "sessions_history",
            json!({"sessionKey": "AGENT:PEPITO--ATLAS:main", "limit": 5}),
        ),
        (
            "session_status",
            json!({"sessionKey": "agent:pepito--atlas:main", "model": "x"}),
        ),
        (
            "sessions_search",
            json!({"query": "q", "sessionKey": "agent:pepito--atlas:main"}),
        ),
        (
            "sessions",
            json!({"action": "delete", "sessionKey": "agent:pepito--atlas:main"}),
        ),
        (
            "sessions",
            json!({"action": "patch", "targets": [{"sessionKey": "agent:paco--dali:main"}, {"sessionKey": "agent:pepito--atlas:main"}]}),
        ),
        ("sessions_list", json!({"agentId": "pepito--atlas"})),
    ] {
        let d = assert_idempotent(&e, tool, "paco--francis", FRANCIS_MAIN, p(params.clone()));
        let r = blocked(&d);
        assert!(
            r.starts_with("cross-user-send: ") && r.contains("pepito--atlas"),
            "{tool} {params}: {r}"
        );
    }
}

#[test]
fn session_references_that_dont_name_an_agent_are_refused_with_the_form_to_use() {
    let e = rules_engine(json!({}));
    for (tool, params) in [
        ("sessions_history", json!({"sessionKey": "main"})),
        (
            "sessions_history",
            json!({"sessionKey": "4f2a1c9e-1111-2222-3333-444455556666"}),
        ),
        ("session_status", json!({"sessionKey": "research"})),
        (
            "sessions",
            json!({"action": "reset", "sessionKey": "global"}),
        ),
        ("sessions_search", json!({"query": "q"})),
    ] {
        let d = assert_idempotent(&e, tool, "paco--francis", FRANCIS_MAIN, p(params.clone()));
        let r = blocked(&d);
        assert!(
            r.starts_with("cross-user-send: ") && r.contains("agent:"),
            "{tool} {params}: {r}"
        );
    }
    let d = decide_on(
        &e,
        empty_map(),
        "sessions_history",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        pp(json!({"sessionKey": "main"})),
    );
    assert!(blocked(&d).contains("agent:paco--francis:main"));
}

#[test]
fn own_users_sessions_pass_and_the_listing_is_scoped_to_the_caller() {
    let e = rules_engine(json!({}));
    for (tool, params) in [
        ("sessions_history", json!({"sessionKey": "current"})),
        (
            "sessions_history",
            json!({"sessionKey": "agent:paco--dali:main"}),
        ),
        ("session_status", json!({})),
        ("sessions", json!({"action": "patch", "label": "x"})),
        ("sessions", json!({"action": "group_list"})),
        (
            "sessions_search",
            json!({"query": "q", "sessionKey": "current"}),
        ),
        ("sessions_list", json!({"agentId": "Paco--Dali"})),
    ] {
        let d = assert_idempotent(&e, tool, "paco--francis", FRANCIS_MAIN, p(params.clone()));
        assert_eq!(d.verdict, Verdict::Pass, "{tool} {params}");
    }
    let d = assert_idempotent(
        &e,
        "sessions_list",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"limit": 10, "agentId": " "})),
    );
    assert_eq!(
        sets(&e, &d),
        vec![("agentId".into(), json!("paco--francis"))]
    );
    assert!(needs_params(&e, "sessions_history") && needs_params(&e, "sessions_list"));
}

#[test]
fn session_reads_follow_the_send_grants() {
    let e = rules_engine(
        json!({"crossUserSend": {"grants": {"paco--*": {"pepito--atlas": "ask"}, "paco--francis": {"pepito--bob": "allow"}}}}),
    );
    let d = assert_idempotent(
        &e,
        "sessions_history",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"sessionKey": "agent:pepito--atlas:main"})),
    );
    assert!(
        matches!(d.verdict, Verdict::RequireApproval { .. }),
        "{d:?}"
    );
    let d = assert_idempotent(
        &e,
        "sessions_list",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"agentId": "pepito--bob"})),
    );
    assert_eq!(d.verdict, Verdict::Pass);
    let off = rules_engine(json!({"crossUserSend": {"enabled": false}}));
    let d = decide_on(
        &off,
        empty_map(),
        "sessions_history",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        pp(json!({"sessionKey": "agent:pepito--atlas:main"})),
    );
    assert_eq!(d.verdict, Verdict::Pass);
    assert!(!needs_params(&off, "sessions_history"));
}

#[test]
fn a_delegation_key_in_another_case_is_routed_to_the_callers_conversation() {
    let e = rules_engine(json!({}));
    let d = assert_idempotent(
        &e,
        "sessions_send",
        "paco--francis",
        FRANCIS_MAIN,
        p(
            json!({"sessionKey": "agent:paco--dali:DELEGATION:agent.paco--francis.other", "message": "m"}),
        ),
    );
    assert_eq!(
        sets(&e, &d),
        vec![(
            "sessionKey".into(),
            json!("agent:paco--dali:delegation:agent.paco--francis.main")
        )]
    );
}

#[test]
fn work_may_be_assigned_only_to_agents_the_send_rule_lets_the_caller_reach() {
    let e = rules_engine(json!({}));
    let other = [
        (
            "workboard_create",
            json!({"title": "t", "agentId": "pepito--atlas"}),
        ),
        (
            "workboard_specify",
            json!({"id": "c1", "agentId": "pepito--atlas"}),
        ),
        (
            "workboard_reassign",
            json!({"id": "c1", "agentId": "PEPITO--ATLAS"}),
        ),
        (
            "workboard_decompose",
            json!({"id": "c1", "children": [{"title": "a"}, {"title": "b", "agentId": "pepito--atlas"}]}),
        ),
        (
            "workboard_board_create",
            json!({"id": "wb_paco", "orchestration": {"defaultAssignee": "pepito--atlas"}}),
        ),
        (
            "sessions",
            json!({"action": "assign_owner", "ownerType": "agent", "ownerId": "pepito--atlas"}),
        ),
        (
            "automations",
            json!({"action": "add", "job": {"agentId": "pepito--atlas", "schedule": {"kind": "every"}}}),
        ),
        (
            "automations",
            json!({"action": "update", "job": {"owner": {"agentId": "pepito--atlas"}}}),
        ),
        (
            "automations",
            json!({"action": "add", "job": {"sessionKey": "agent:pepito--atlas:main"}}),
        ),
        (
            "automations",
            json!({"action": "wake", "agentId": "pepito--atlas"}),
        ),
        (
            "automations",
            json!({"action": "wake", "sessionKey": "agent:pepito--atlas:main"}),
        ),
        // As OpenClaw canonicalizes the call: a session target, flat
        // params, an empty job, `job.data`, a padded key, snake spellings.
        (
            "automations",
            json!({"action": "add", "job": {"sessionTarget": "session:agent:pepito--atlas:main", "message": "m"}}),
        ),
        (
            "automations",
            json!({"action": "add", "agentId": "pepito--atlas", "message": "m", "everyMs": 60000}),
        ),
        (
            "automations",
            json!({"action": "add", "job": {}, "sessionTarget": "Session:agent:pepito--atlas:x", "text": "t"}),
        ),
        (
            "automations",
            json!({"action": "add", "job": {"agentId": "paco--dali", "data": {"agentId": "pepito--atlas", "message": "m"}}}),
        ),
        (
            "automations",
            json!({"action": "update", "jobId": "j", "job": {"agentId ": "pepito--atlas"}}),
        ),
        (
            "automations",
            json!({"action": "wake", "agent_id": "pepito--atlas", "text": "t"}),
        ),
    ];
    for (tool, params) in &other {
        let d = decide_on(
            &e,
            empty_map(),
            tool,
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(params.clone()),
        );
        let r = blocked(&d);
        assert!(
            r.starts_with("cross-user-send: ") && r.contains("pepito--atlas"),
            "{tool} {params}: {r}"
        );
    }
    // The same user's agents, a human owner, and the caller itself pass (scoped as before).
    for (tool, params) in [
        (
            "workboard_create",
            json!({"title": "t", "agentId": "paco--dali"}),
        ),
        (
            "workboard_reassign",
            json!({"id": "c1", "agentId": "paco--dali"}),
        ),
        (
            "sessions",
            json!({"action": "assign_owner", "ownerType": "human", "ownerId": "pepito"}),
        ),
        ("automations", json!({"action": "wake"})),
        (
            "automations",
            json!({"action": "list", "agentId": "pepito--atlas"}),
        ),
    ] {
        let d = decide_on(
            &e,
            empty_map(),
            tool,
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(params.clone()),
        );
        assert!(!d.is_block(), "{tool} {params}: {:?}", d.verdict);
    }
    // The send grants apply: allow, and ask.
    let ask =
        rules_engine(json!({"crossUserSend": {"grants": {"paco--*": {"pepito--atlas": "ask"}}}}));
    let d = decide_on(
        &ask,
        empty_map(),
        "workboard_reassign",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        pp(json!({"id": "c", "agentId": "pepito--atlas"})),
    );
    assert!(
        matches!(d.verdict, Verdict::RequireApproval { .. }),
        "{:?}",
        d.verdict
    );
    let allow = rules_engine(
        json!({"crossUserSend": {"grants": {"paco--francis": {"pepito--atlas": "allow"}}}}),
    );
    let d = decide_on(
        &allow,
        empty_map(),
        "automations",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        pp(json!({"action": "wake", "agentId": "pepito--atlas"})),
    );
    assert!(!d.is_block());
    // A name that is no agent id can't be checked.
    let d = decide_on(
        &e,
        empty_map(),
        "workboard_create",
        Some("paco--francis"),
        Some(FRANCIS_MAIN),
        pp(json!({"title": "t", "agentId": "no such/agent"})),
    );
    assert!(blocked(&d).starts_with("cross-user-send: "));
}

#[test]
fn another_users_board_cannot_be_archived_deleted_or_overwritten() {
    let e = rules_engine(json!({}));
    for tool in ["workboard_board_archive", "workboard_board_delete"] {
        let d = assert_idempotent(
            &e,
            tool,
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"id": "wb_pepito", "archived": true})),
        );
        assert!(blocked(&d).starts_with("workboard-scope: "), "{tool}");
    }
    let d = assert_idempotent(
        &e,
        "workboard_board_create",
        "paco--francis",
        FRANCIS_MAIN,
        p(json!({"id": "wb_pepito", "name": "mine now"})),
    );
    assert_eq!(sets(&e, &d), vec![("id".into(), json!("wb_paco"))]);
    assert!(needs_params(&e, "workboard_board_delete") && needs_params(&e, "workboard_boards"));
}

#[test]
fn switched_off_rules_do_nothing() {
    let e = rules_engine(json!({
        "crossUserSend": {"enabled": false}, "delegationSession": {"enabled": false},
        "workboardScope": {"enabled": false}, "conversationId": {"enabled": false},
    }));
    let map = TokenMap::default();
    for (tool, params) in [
        (
            "sessions_send",
            json!({"agentId": "pepito--atlas", "message": "m"}),
        ),
        ("sessions_send", json!({"label": "x", "message": "m"})),
        ("workboard_list", json!({"boardId": "x"})),
        ("claw-os__x", json!({})),
    ] {
        let d = decide_on(
            &e,
            &map,
            tool,
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(params),
        );
        // An owned tool's only change is taking the model's token out.
        assert!(!d.patch().is_some_and(|p| p.sets_anything()), "{tool}");
        assert!(!d.is_block(), "{tool}");
    }
}

/// The N-API side hands the rules only `param_fields` (and
/// `quoted_fields`) of a call: a rule that read any other param would
/// decide on something else than what runs. Deciding on the whole params
/// and on those fields alone must agree.
#[test]
fn the_declared_param_fields_are_all_the_rules_read() {
    let e = rules_engine(json!({}));
    let francis = parse(format!(r#"{{"paco--francis": "{T1}"}}"#).as_bytes())
        .unwrap()
        .map;
    let extra =
        json!({"note": "x", "label2": "y", "model": "m", "timeoutSeconds": 5, "mode": "run"});
    let cases = [
        (
            "sessions_send",
            json!({"agentId": "paco--dali", "message": "hi"}),
        ),
        (
            "sessions_send",
            json!({"sessionKey": "agent:pepito--atlas:main", "message": "hi"}),
        ),
        (
            "sessions_send",
            json!({"agent_id": "paco--dali", "label": "research", "message": "m"}),
        ),
        (
            "sessions_send",
            json!({"session_key": "agent:paco--dali:DELEGATION:agent.x.y", "message": "m"}),
        ),
        (
            "sessions_spawn",
            json!({"agentId": "paco--dali", "task": "paint"}),
        ),
        (
            "sessions_spawn",
            json!({"agent_id": "pepito--atlas", "task": "t"}),
        ),
        ("sessions_spawn", json!({"task": "own worker"})),
        (
            "sessions_history",
            json!({"sessionKey": "agent:pepito--atlas:main"}),
        ),
        (
            "session_status",
            json!({"sessionKey": "agent:paco--dali:main", "model": "x"}),
        ),
        (
            "sessions",
            json!({"action": "delete", "targets": [{"sessionKey": "agent:pepito--atlas:x"}]}),
        ),
        ("sessions_search", json!({"query": "q"})),
        ("sessions_list", json!({"agentId": "pepito--atlas"})),
        ("sessions_list", json!({})),
        ("workboard_list", json!({"boardId": "wb_pepito"})),
        ("workboard_board_delete", json!({"id": "wb_pepito"})),
        (
            "workboard_board_create",
            json!({"id": "wb_x", "title": "t"}),
        ),
        (
            "workboard_decompose",
            json!({"id": "c", "children": [{"title": "a"}]}),
        ),
        ("read", json!({"path": "/etc/hostname"})),
        (
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Add File: /tmp/x\n+1\n*** End Patch"}),
        ),
        ("claw-os__claw_notes", json!({"note": "n"})),
        // Assignments to another user's agent, in every tool that makes one.
        (
            "workboard_reassign",
            json!({"id": "c", "agentId": "pepito--atlas"}),
        ),
        (
            "workboard_specify",
            json!({"id": "c", "agentId": "pepito--atlas"}),
        ),
        (
            "sessions",
            json!({"action": "assign_owner", "ownerType": "agent", "ownerId": "pepito--atlas"}),
        ),
        (
            "automations",
            json!({"action": "add", "job": {"agentId": "pepito--atlas", "name": "n"}}),
        ),
        // The layer's own controls.
        (
            "plugins",
            json!({"action": "disable", "pluginId": "claw-identity"}),
        ),
        ("plugins", json!({"action": "list"})),
        ("openclaw", json!({"message": "set protectMap off"})),
        // Every file tool, on a path that is refused and on one that is not.
        ("read", json!({"path": "~/.openclaw/openclaw.json"})),
        ("memory_get", json!({"path": "/tmp/notes.md"})),
        ("write", json!({"file_path": "/tmp/x", "content": "c"})),
        (
            "edit",
            json!({"filePath": "~/.openclaw/openclaw.json", "oldText": "a", "newText": "b"}),
        ),
        ("ls", json!({"path": "~/.openclaw"})),
        ("grep", json!({"pattern": "[0-9a-f]{8}"})),
        ("grep", json!({"pattern": "x", "path": ""})),
        ("find", json!({"pattern": "*.json", "path": "/"})),
        (
            "view_image",
            json!({"path": "file://localhost/etc/hostname"}),
        ),
        ("pdf", json!({"pdf": "MEDIA:/tmp/a.pdf", "prompt": "p"})),
        (
            "image_generate",
            json!({"image": "@/tmp/a.png", "prompt": "p"}),
        ),
        (
            "message",
            json!({"action": "send", "media": "~/.openclaw/openclaw.json", "to": "x"}),
        ),
        (
            "nodes",
            json!({"action": "camera_snap", "outPath": "/tmp/o.png"}),
        ),
        ("file_fetch", json!({"path": "/tmp/x", "node": "n"})),
        ("browser", json!({"action": "upload", "paths": ["/tmp/x"]})),
        (
            "sessions_spawn",
            json!({"task": "t", "cwd": "~/.config/micelclaw"}),
        ),
    ];
    for (tool, params) in cases {
        let mut full = p(params.clone());
        for (k, v) in extra.as_object().unwrap() {
            full.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let read: Params = full
            .iter()
            .filter(|(k, _)| {
                e.route(tool)
                    .is_some_and(|r| r.reads.contains(&k.as_str()) || r.scans.contains(&k.as_str()))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let a = decide_on(
            &e,
            &francis,
            tool,
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            &full,
        );
        let b = decide_on(
            &e,
            &francis,
            tool,
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            &read,
        );
        assert_eq!(a.verdict, b.verdict, "{tool} {params}");
        assert_eq!(a.rule, b.rule, "{tool} {params}");
    }
}
