//! Rule `spawn-redirect`: `sessions_spawn { agentId: <another agent> }` makes
//! a child that runs with the CALLER's tools under the other agent's name,
//! so "dali" spawned by francis is not dali. Such a spawn is blocked, and the
//! reason spells out the `sessions_send` call that reaches the real agent in
//! its dedicated session (rule `delegation-session`), so the model can retry
//! correctly in the same turn. A spawn without `agentId`, or with the
//! caller's own id, is the caller's own worker and passes.

use serde_json::{json, Value};

use super::Params;
use crate::openclaw::params::str_param;
use crate::redact::{scrub, shown};

pub const RULE_ID: &str = crate::call::rule_id::SPAWN_REDIRECT;

/// A task longer than this is not repeated in the reason (the model still
/// has it); the reason then asks for it unchanged.
pub const MAX_QUOTED_TASK_CHARS: usize = 4000;

/// The block reason for a spawn of `target`. `session_key` is the dedicated
/// session the send will use (left out when unknown, or when it can't be
/// printed as is).
pub fn reason(target: &str, session_key: Option<&str>, params: &Params) -> String {
    let mut call = serde_json::Map::new();
    call.insert("agentId".into(), Value::String(target.to_owned()));
    if let Some(key) = session_key.filter(|k| shown(k) == *k) {
        call.insert("sessionKey".into(), Value::String(key.to_owned()));
    }
    // The task is the model's own text; scrub it anyway, a reason is output.
    let task = str_param(params, "task", "task").map(scrub);
    let quoted = match &task {
        Some(t) if t.chars().count() <= MAX_QUOTED_TASK_CHARS => {
            call.insert("message".into(), Value::String(t.clone()));
            true
        }
        _ => false,
    };
    let mut out = format!(
        "{RULE_ID}: sessions_spawn can't hand work to {target}: a spawned child runs with your tools, not {target}'s. Call sessions_send instead, now, with exactly these arguments: {}",
        json!(call)
    );
    if !quoted {
        out.push_str(" plus \"message\": your task text, unchanged");
    }
    out.push_str(". It waits for the reply; for your own background worker, call sessions_spawn without agentId.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Params {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_reason_holds_the_exact_send_call() {
        let p = params(json!({"agentId": "paco--dali", "task": "Draw a \"cat\"\nplease"}));
        let r = reason(
            "paco--dali",
            Some("agent:paco--dali:delegation:agent.paco--francis.main"),
            &p,
        );
        assert!(r.starts_with("spawn-redirect: "), "{r}");
        let start = r.find('{').unwrap();
        let end = r.rfind('}').unwrap();
        let call: Value = serde_json::from_str(&r[start..=end]).unwrap();
        assert_eq!(
            call,
            json!({
                "agentId": "paco--dali",
                "sessionKey": "agent:paco--dali:delegation:agent.paco--francis.main",
                "message": "Draw a \"cat\"\nplease",
            })
        );
    }

    #[test]
    fn a_long_task_is_asked_for_not_repeated() {
        let p = params(json!({"task": "x".repeat(MAX_QUOTED_TASK_CHARS + 1)}));
        let r = reason("paco--dali", None, &p);
        assert!(r.contains("your task text, unchanged"), "{r}");
        assert!(r.len() < 1000);
    }

    #[test]
    fn nothing_that_looks_like_a_token_is_repeated() {
        let secret = "ab".repeat(32);
        let p = params(json!({"task": format!("use {secret}")}));
        let key = format!("agent:paco--dali:delegation:{secret}");
        let r = reason("paco--dali", Some(&key), &p);
        assert!(!r.contains(&secret[..16]), "{r}");
        assert!(
            !r.contains("sessionKey"),
            "an unprintable key is left out: {r}"
        );
    }
}
