//! Rule `cross-user-send`: a `sessions_send` or `sessions_spawn` may reach
//! only agents of the caller's own user, unless a grant in config says
//! otherwise. Deny by default: a target that can't be resolved is refused.

use crate::options::rules::{reach, Access, CrossUserSendConfig, Reach};

use serde_json::Value;

use super::conversation_id::{self, Origin};
use super::{delegation_session, spawn_redirect};
use super::{Context, Decision, EnsureSession, Params, Patch, SessionRef, ToolCall, Verdict};
use crate::openclaw::agent_ids::{
    normalize_agent_id, owner_of, session_key_agent, user_prefix, Owner,
};
use crate::openclaw::params::str_param;
use crate::redact::scrub;

pub const RULE_ID: &str = crate::call::rule_id::CROSS_USER_SEND;

/// The agents a `sessions_send` reaches, as OpenClaw resolves them: the
/// agent of `sessionKey` when it is given (OpenClaw then uses `agentId` only
/// for a label lookup), otherwise `agentId`. `also` is an `agentId` given next
/// to a `sessionKey`: checked too, so no referenced agent slips through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendTarget {
    pub agent: String,
    pub also: Option<String>,
    /// The target was addressed by `sessionKey`.
    pub by_session_key: bool,
}

/// Why a send's target could not be resolved from its params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    /// No `sessionKey` or `agentId` (for example a bare `label`).
    NoTarget,
    /// A `sessionKey` that is not `agent:<id>:...` (an alias, a session id).
    UnscopedSessionKey,
    /// An `agentId` with nothing OpenClaw could make an id of.
    BadAgentId,
}

pub fn send_target(params: &Params) -> Result<SendTarget, Unresolved> {
    let agent_id = str_param(params, "agentId", "agent_id");
    match str_param(params, "sessionKey", "session_key") {
        Some(key) => {
            let agent = session_key_agent(key).ok_or(Unresolved::UnscopedSessionKey)?;
            Ok(SendTarget {
                agent,
                also: agent_id.and_then(normalize_agent_id),
                by_session_key: true,
            })
        }
        None => {
            let raw = agent_id.ok_or(Unresolved::NoTarget)?;
            let agent = normalize_agent_id(raw).ok_or(Unresolved::BadAgentId)?;
            Ok(SendTarget {
                agent,
                also: None,
                by_session_key: false,
            })
        }
    }
}

/// The agent a `sessions_spawn` targets: `None` when `agentId` is absent
/// (the caller's own worker). `Err` when it is given but unrepresentable.
pub fn spawn_target(params: &Params) -> Result<Option<String>, Unresolved> {
    match str_param(params, "agentId", "agent_id") {
        None => Ok(None),
        Some(raw) => normalize_agent_id(raw)
            .map(Some)
            .ok_or(Unresolved::BadAgentId),
    }
}

/// Whether `caller` may reach every agent of `targets`: `Ok(None)` yes,
/// `Ok(Some(agent))` only once the user approves (an "ask" grant for
/// `agent`), `Err` the reason it may not. The one caller → target check of
/// every tool this rule guards.
pub fn check(
    cfg: &CrossUserSendConfig,
    tool: &str,
    caller: &str,
    targets: &[String],
) -> Result<Option<String>, String> {
    let mut ask = None;
    for agent in targets {
        match reach(cfg, caller, agent) {
            Reach::SameUser | Reach::Granted(Access::Allow) => {}
            Reach::Granted(Access::Ask) => ask = ask.or(Some(agent.clone())),
            Reach::Denied => return Err(denied_reason(tool, caller, agent)),
        }
    }
    Ok(ask)
}

/// The approval an "ask" grant needs; approved, the call runs with `then`.
pub fn ask<'a>(tool: &str, caller: &str, target: &str, then: Patch<'a>) -> Decision<'a> {
    let (title, description) = approval(tool, caller, target);
    Decision::new(
        Verdict::RequireApproval {
            title,
            description,
            then,
        },
        Some(RULE_ID),
    )
}

/// What to do with a call whose caller is unknown: refused while this rule
/// is on, left alone when it is off.
fn unknown_caller<'a>(cx: &Context<'_, 'a>, tool: &str) -> Decision<'a> {
    if cx.opts.rules.cross_user_send.enabled {
        Decision::block(RULE_ID, unknown_caller_reason(tool))
    } else {
        Decision::pass()
    }
}

/// A target that can't be resolved: refused while this rule is on.
fn unresolved<'a>(cx: &Context<'_, 'a>, tool: &str, why: Unresolved) -> Decision<'a> {
    if cx.opts.rules.cross_user_send.enabled {
        Decision::block(RULE_ID, unresolved_reason(tool, why))
    } else {
        Decision::pass()
    }
}

/// Work handed to other agents: the agents a call assigns, makes owners or
/// wakes (a Workboard card's `agentId`, a session's new owner, a cron job's
/// agent) are held to the same user rule and grants as a send. `None`:
/// every one may be reached; otherwise the block, or the approval to ask.
pub fn assignees<'a>(
    cx: &Context<'_, 'a>,
    call: &ToolCall<'a>,
    named: &[&str],
) -> Option<Decision<'a>> {
    if !cx.opts.rules.cross_user_send.enabled || named.is_empty() {
        return None;
    }
    let Some(caller) = call.agent_id.and_then(normalize_agent_id) else {
        return Some(Decision::block(RULE_ID, unknown_caller_reason(call.tool)));
    };
    let mut targets = Vec::new();
    for raw in named {
        match normalize_agent_id(raw) {
            Some(a) => targets.push(a),
            None => {
                return Some(Decision::block(
                    RULE_ID,
                    unresolved_reason(call.tool, Unresolved::BadAgentId),
                ))
            }
        }
    }
    match check(&cx.opts.rules.cross_user_send, call.tool, &caller, &targets) {
        Ok(None) => None,
        Ok(Some(agent)) => Some(ask(call.tool, &caller, &agent, Patch::default())),
        Err(reason) => Some(Decision::block(RULE_ID, reason)),
    }
}

/// The agents an `automations` (OpenClaw's cron, `cron-tool-*.mjs`) call
/// makes run, read as OpenClaw canonicalizes the call
/// (`crate::openclaw::cron`): the job's `agentId`, `owner.agentId`, the
/// agent of its `sessionKey` or `sessionTarget: "session:<key>"`; a wake's
/// `agentId` or `sessionKey` (the caller itself when neither is given).
pub fn automation_agents(params: &Params) -> Vec<String> {
    crate::openclaw::cron::read(params).agents(params)
}

/// `sessions_send`: this rule, then `delegation-session`, which routes a
/// send addressed by agent into the session dedicated to (conversation ×
/// specialist) and has it created first.
pub fn send<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>) -> Decision<'a> {
    let rules = &cx.opts.rules;
    let target = match send_target(call.params) {
        Ok(t) => t,
        Err(why) => return unresolved(cx, call.tool, why),
    };
    let Some(caller) = call.agent_id.and_then(normalize_agent_id) else {
        return unknown_caller(cx, call.tool);
    };
    let mut ask_for = None;
    if rules.cross_user_send.enabled {
        let targets: Vec<String> = std::iter::once(target.agent.clone())
            .chain(target.also.clone())
            .collect();
        match check(&rules.cross_user_send, call.tool, &caller, &targets) {
            Ok(a) => ask_for = a,
            Err(reason) => return Decision::block(RULE_ID, reason),
        }
    }

    let mut patch = Patch::default();
    let mut ensure_session = None;
    if rules.delegation_session.enabled
        && target.agent != caller
        && delegation_session::redirects(call.params)
    {
        match conversation_id::evaluate(cx, call) {
            Origin::NeedLineage(key) => return Decision::need_session(key, Some(&caller)),
            // No conversation known: the send goes where the model addressed it.
            Origin::Unknown => {}
            Origin::Conversation(c) => {
                let key = delegation_session::delegation_key(&target.agent, &c);
                ensure_session = Some(EnsureSession {
                    failure_reason: scrub(&delegation_session::ensure_failed_reason(
                        &target.agent,
                        &key,
                    )),
                    session: SessionRef {
                        agent_id: target.agent.clone(),
                        session_key: key.clone(),
                    },
                });
                patch.set("sessionKey", Value::String(key));
            }
        }
    }

    let mut d = match ask_for {
        Some(agent) => ask(call.tool, &caller, &agent, patch),
        None => Decision::rewrite(delegation_session::RULE_ID, patch),
    };
    d.ensure_session = ensure_session;
    d
}

/// `sessions_spawn`: this rule, then `spawn-redirect`, which turns a spawn
/// of another agent of the same user into the exact `sessions_send` to make.
pub fn spawn<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>) -> Decision<'a> {
    let rules = &cx.opts.rules;
    let target = match spawn_target(call.params) {
        Ok(None) => return Decision::pass(), // the caller's own worker
        Ok(Some(t)) => t,
        Err(why) => return unresolved(cx, call.tool, why),
    };
    let Some(caller) = call.agent_id.and_then(normalize_agent_id) else {
        return unknown_caller(cx, call.tool);
    };
    if target == caller {
        return Decision::pass();
    }
    let mut ask_for = None;
    if rules.cross_user_send.enabled {
        match check(
            &rules.cross_user_send,
            call.tool,
            &caller,
            std::slice::from_ref(&target),
        ) {
            Ok(a) => ask_for = a,
            Err(reason) => return Decision::block(RULE_ID, reason),
        }
    }
    if rules.spawn_redirect.enabled {
        let mut key = None;
        if rules.delegation_session.enabled {
            match conversation_id::evaluate(cx, call) {
                Origin::NeedLineage(k) => return Decision::need_session(k, Some(&caller)),
                Origin::Unknown => {}
                Origin::Conversation(c) => {
                    key = Some(delegation_session::delegation_key(&target, &c))
                }
            }
        }
        return Decision::block(
            spawn_redirect::RULE_ID,
            spawn_redirect::reason(&target, key.as_deref(), call.params),
        );
    }
    match ask_for {
        Some(agent) => ask(call.tool, &caller, &agent, Patch::default()),
        None => Decision::pass(),
    }
}

fn describe_owner(agent: &str) -> String {
    match owner_of(agent) {
        Owner::User(u) => format!("user \"{u}\""),
        Owner::Unscoped(_) => "no user (its id has no <user>--<agent> form)".to_owned(),
    }
}

pub fn denied_reason(tool: &str, caller: &str, target: &str) -> String {
    let own = match user_prefix(caller) {
        Some(u) => format!(" Work with your own user's agents ({u}--*) instead, or"),
        None => " Instead,".to_owned(),
    };
    format!(
        "{RULE_ID}: {tool} from {caller} to {target} was refused: {target} belongs to {}, {caller} to {}, and no grant allows it.{own} tell the user that reaching another user's agent needs an operator grant (claw-identity rules.crossUserSend.grants). Do not retry.",
        describe_owner(target),
        describe_owner(caller),
    )
}

pub fn unresolved_reason(tool: &str, why: Unresolved) -> String {
    match why {
        Unresolved::NoTarget => format!(
            "{RULE_ID}: {tool} needs an explicit target so it can be checked: set agentId to the agent you want (for example \"paco--dali\"); a label alone can't be checked."
        ),
        Unresolved::UnscopedSessionKey => format!(
            "{RULE_ID}: {tool} got a sessionKey that does not name its agent, so it can't be checked: use a full key of the form agent:<agentId>:<rest>, or set agentId alone and drop sessionKey."
        ),
        Unresolved::BadAgentId => format!(
            "{RULE_ID}: {tool} got an agentId that is not an agent id: use one of the ids from agents_list (for example \"paco--dali\")."
        ),
    }
}

pub fn unknown_caller_reason(tool: &str) -> String {
    format!("{RULE_ID}: {tool} has no calling agent id, so it can't be checked and was not run. Do not retry.")
}

pub fn approval(tool: &str, caller: &str, target: &str) -> (String, String) {
    let title = format!("{tool}: {caller} → {target} (another user)");
    let description = format!(
        "Agent {caller} ({}) wants to reach {target} ({}) with {tool}. A claw-identity grant asks you each time. Allow only if this conversation should reach that user's agent.",
        describe_owner(caller),
        describe_owner(target),
    );
    (title, description)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(grants: serde_json::Value) -> CrossUserSendConfig {
        serde_json::from_value(json!({ "grants": grants })).unwrap()
    }

    fn params(v: serde_json::Value) -> Params {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn same_user_is_reachable_without_grants() {
        let c = CrossUserSendConfig::default();
        assert_eq!(reach(&c, "paco--francis", "paco--dali"), Reach::SameUser);
        assert_eq!(reach(&c, "paco--francis", "paco--francis"), Reach::SameUser);
        assert_eq!(reach(&c, "main", "main"), Reach::SameUser);
    }

    #[test]
    fn other_users_are_denied_by_default() {
        let c = CrossUserSendConfig::default();
        assert_eq!(reach(&c, "paco--francis", "pepito--atlas"), Reach::Denied);
        assert_eq!(reach(&c, "paco--francis", "paco2--dali"), Reach::Denied);
        assert_eq!(reach(&c, "paco--francis", "main"), Reach::Denied);
        assert_eq!(reach(&c, "main", "paco--dali"), Reach::Denied);
        assert_eq!(reach(&c, "paco", "paco--dali"), Reach::Denied);
        assert_eq!(reach(&c, "main", "ops"), Reach::Denied);
    }

    #[test]
    fn grants_match_exact_ids_and_user_patterns() {
        let c = cfg(json!({
            "paco--francis": { "pepito--atlas": "allow" },
            "main": { "paco--*": "ask" },
        }));
        assert_eq!(
            reach(&c, "paco--francis", "pepito--atlas"),
            Reach::Granted(Access::Allow)
        );
        assert_eq!(reach(&c, "paco--dali", "pepito--atlas"), Reach::Denied);
        assert_eq!(
            reach(&c, "pepito--atlas", "paco--francis"),
            Reach::Denied,
            "grants are one-way"
        );
        assert_eq!(reach(&c, "main", "paco--dali"), Reach::Granted(Access::Ask));
        assert_eq!(
            reach(&c, "main", "paco2--dali"),
            Reach::Denied,
            "paco--* is not paco2"
        );
        assert_eq!(
            reach(&c, "main", "paco"),
            Reach::Denied,
            "paco--* needs the -- form"
        );
    }

    #[test]
    fn the_most_restrictive_matching_grant_wins() {
        let c = cfg(json!({
            "paco--*": { "pepito--*": "allow" },
            "paco--francis": { "pepito--atlas": "ask" },
        }));
        assert_eq!(
            reach(&c, "paco--francis", "pepito--atlas"),
            Reach::Granted(Access::Ask)
        );
        assert_eq!(
            reach(&c, "paco--dali", "pepito--atlas"),
            Reach::Granted(Access::Allow)
        );
    }

    #[test]
    fn grant_patterns_are_validated() {
        for good in ["paco--francis", "main", "paco--*", "paco-x--*", "x--"] {
            assert!(
                cfg(json!({ good: { "main": "allow" } })).validate().is_ok(),
                "{good}"
            );
            assert!(
                cfg(json!({ "main": { good: "ask" } })).validate().is_ok(),
                "{good}"
            );
        }
        for bad in [
            "Paco--francis",
            "*",
            "--*",
            "paco---*",
            "a--b--*",
            " main",
            "",
            "pa co",
        ] {
            let e = cfg(json!({ bad: { "main": "allow" } }))
                .validate()
                .unwrap_err();
            assert!(e.starts_with("rules.crossUserSend.grants: "), "{e}");
        }
        assert!(serde_json::from_value::<CrossUserSendConfig>(
            json!({ "grants": { "a": { "b": "deny" } } })
        )
        .is_err());
    }

    #[test]
    fn send_target_prefers_the_session_key_like_openclaw() {
        let t = send_target(&params(json!({"agentId": "Paco--Dali"}))).unwrap();
        assert_eq!((t.agent.as_str(), t.by_session_key), ("paco--dali", false));
        let t = send_target(&params(
            json!({"sessionKey": "agent:pepito--atlas:main", "agentId": "paco--dali"}),
        ))
        .unwrap();
        assert_eq!(t.agent, "pepito--atlas");
        assert_eq!(t.also.as_deref(), Some("paco--dali"));
        let t = send_target(&params(
            json!({"session_key": "agent:paco--dali:x", "agent_id": "paco--dali"}),
        ))
        .unwrap();
        assert_eq!(t.agent, "paco--dali");
        let t = send_target(&params(json!({"sessionKey": 7, "agentId": "paco--dali"}))).unwrap();
        assert_eq!(
            t.agent, "paco--dali",
            "a non-string sessionKey is ignored, as OpenClaw does"
        );
    }

    #[test]
    fn unresolvable_send_targets_are_named() {
        let cases = [
            (json!({"label": "research"}), Unresolved::NoTarget),
            (json!({"message": "hi"}), Unresolved::NoTarget),
            (json!({"agentId": "  "}), Unresolved::NoTarget),
            (
                json!({"sessionKey": "main"}),
                Unresolved::UnscopedSessionKey,
            ),
            (
                json!({"sessionKey": "4f2a1c9e-1111-2222-3333-444455556666", "agentId": "paco--dali"}),
                Unresolved::UnscopedSessionKey,
            ),
            (json!({"agentId": "!!!"}), Unresolved::BadAgentId),
        ];
        for (p, want) in cases {
            assert_eq!(send_target(&params(p.clone())), Err(want), "{p}");
        }
    }

    #[test]
    fn spawn_target_is_optional() {
        assert_eq!(spawn_target(&params(json!({"task": "x"}))), Ok(None));
        assert_eq!(
            spawn_target(&params(json!({"agentId": "PACO--DALI"}))),
            Ok(Some("paco--dali".into()))
        );
        assert_eq!(
            spawn_target(&params(json!({"agentId": "@@"}))),
            Err(Unresolved::BadAgentId)
        );
    }

    #[test]
    fn reasons_start_with_the_rule_id_and_say_what_to_do() {
        let r = denied_reason("sessions_send", "paco--francis", "pepito--atlas");
        assert!(r.starts_with("cross-user-send: "), "{r}");
        assert!(r.contains("paco--*") && r.contains("Do not retry"), "{r}");
        for why in [
            Unresolved::NoTarget,
            Unresolved::UnscopedSessionKey,
            Unresolved::BadAgentId,
        ] {
            let r = unresolved_reason("sessions_send", why);
            assert!(
                r.starts_with("cross-user-send: ") && r.contains("agentId"),
                "{r}"
            );
        }
        let (title, description) = approval("sessions_send", "paco--francis", "pepito--atlas");
        assert!(title.chars().count() <= 80 && description.chars().count() <= 512);
    }
}
