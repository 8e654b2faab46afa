//! Rule `delegation-session`: a `sessions_send` to another agent goes to a
//! session dedicated to (the caller's conversation × that agent), instead of
//! the agent's main session where every conversation would pile up.
//!
//! The key is `agent:<specialist>:delegation:<conversation, escaped>`. It is
//! deterministic, and the conversation can be read back from it: a call made
//! inside the delegated session still knows which user conversation it
//! serves (see `conversation_id`). The escape keeps the conversation in one
//! colon-free, lowercase segment, so OpenClaw's key normalization (which
//! lowercases) can't change it and none of its shape checks (`:thread:`,
//! `acp`, `subagent:`, `cron:`) can match inside it:
//! `[a-z0-9-]` stay, `:` becomes `.`, every other byte becomes `_` + 2 hex.

use super::Params;
use crate::openclaw::agent_ids::{normalize_session_key, split_session_key};
use crate::openclaw::params::str_param;

pub const RULE_ID: &str = crate::call::rule_id::DELEGATION_SESSION;

/// The segment after the agent id that marks a delegation key.
pub const KEY_TAG: &str = "delegation";

/// The dedicated session of `conversation` with `specialist` (a normalized agent id).
pub fn delegation_key(specialist: &str, conversation: &str) -> String {
    let mut out = String::with_capacity(specialist.len() + conversation.len() + 24);
    out.push_str("agent:");
    out.push_str(specialist);
    out.push(':');
    out.push_str(KEY_TAG);
    out.push(':');
    for &b in conversation.as_bytes() {
        match b {
            b'a'..=b'z' | b'0'..=b'9' | b'-' => out.push(b as char),
            b':' => out.push('.'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push('_');
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
    }
    out
}

/// The conversation a delegation key was made for; `None` when `key` is not
/// a delegation key (or its escape is damaged). Read from the key as
/// OpenClaw normalizes it: `agent:x:DELEGATION:...` is the same session as
/// `agent:x:delegation:...` there, so it must be a delegation key here too.
pub fn conversation_of(key: &str) -> Option<String> {
    let key = normalize_session_key(key);
    let (_, rest) = split_session_key(&key)?;
    let escaped = rest.strip_prefix(KEY_TAG)?.strip_prefix(':')?;
    if escaped.is_empty() {
        return None;
    }
    let bytes = escaped.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'a'..=b'z' | b'0'..=b'9' | b'-' => out.push(bytes[i]),
            b'.' => out.push(b':'),
            b'_' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                if hex.bytes().any(|c| c.is_ascii_uppercase()) {
                    return None;
                }
                let b = u8::from_str_radix(hex, 16).ok()?;
                // Only bytes the escape would have escaped: one spelling per key.
                if matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-' | b':') {
                    return None;
                }
                out.push(b);
                i += 2;
            }
            _ => return None,
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Whether a send to `target` (another agent) is addressed in a way this
/// rule redirects: by `agentId` alone (no `sessionKey`, no `label`), by the
/// target's main session key, or by a delegation key (of any conversation:
/// it is normalized to the caller's). An explicit other session passes.
pub fn redirects(params: &Params) -> bool {
    match str_param(params, "sessionKey", "session_key") {
        None => str_param(params, "label", "label").is_none(),
        Some(key) => match split_session_key(key) {
            Some((_, rest)) => rest.eq_ignore_ascii_case("main") || conversation_of(key).is_some(),
            None => false,
        },
    }
}

/// Shown to the model when the session could not be created.
pub fn ensure_failed_reason(target: &str, key: &str) -> String {
    format!(
        "{RULE_ID}: the dedicated session {key} for {target} could not be created, so the message was not sent. Retry once; if it fails again, tell the user."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: serde_json::Value) -> Params {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn keys_are_deterministic_and_readable() {
        let k = delegation_key("paco--dali", "agent:paco--francis:main");
        assert_eq!(k, "agent:paco--dali:delegation:agent.paco--francis.main");
        assert_eq!(k, delegation_key("paco--dali", "agent:paco--francis:main"));
        assert_ne!(k, delegation_key("paco--dali", "agent:paco--francis:other"));
        assert_ne!(k, delegation_key("paco--atlas", "agent:paco--francis:main"));
    }

    #[test]
    fn the_conversation_round_trips_through_the_key() {
        for c in [
            "agent:paco--francis:main",
            "agent:main:slack:channel:C0ABC:thread:1712.5",
            "agent:paco--francis:signal:direct:+34600111222",
            "agent:x:a.b_c d/é:acp:subagent:",
            "main",
            "agent:paco--francis:delegation:agent.x.main",
        ] {
            let k = delegation_key("paco--dali", c);
            assert_eq!(conversation_of(&k).as_deref(), Some(c), "{k}");
            assert_eq!(k, k.to_lowercase(), "OpenClaw lowercases keys: {k}");
            let (_, rest) = split_session_key(&k).unwrap();
            assert_eq!(rest.matches(':').count(), 1, "one colon-free segment: {k}");
        }
    }

    #[test]
    fn keys_in_another_case_carry_the_conversation_openclaw_sees() {
        let k = delegation_key("paco--dali", "agent:paco--francis:other");
        for variant in [k.to_uppercase(), format!(" {k} "), format!("\u{feff}{k}")] {
            assert_eq!(
                conversation_of(&variant).as_deref(),
                Some("agent:paco--francis:other"),
                "{variant:?}"
            );
        }
        // `_3A` lowercases to `_3a`, an escaped `:`, which the escape never writes.
        assert_eq!(
            conversation_of("agent:paco--dali:delegation:agent_3A"),
            None
        );
    }

    #[test]
    fn other_keys_and_damaged_escapes_have_no_conversation() {
        for k in [
            "agent:paco--dali:main",
            "agent:paco--dali:delegation:",
            "agent:paco--dali:delegation:agent_3",
            "agent:paco--dali:delegation:agent_61",
            "agent:paco--dali:delegation:a:b",
            "agent:paco--dali:delegation:_ff",
            "agent:paco--dali:delegationx:agent.a.main",
            "delegation:agent.a.main",
        ] {
            assert_eq!(conversation_of(k), None, "{k}");
        }
    }

    #[test]
    fn redirects_agent_only_main_and_delegation_addressing() {
        let deleg = delegation_key("paco--dali", "agent:paco--francis:other");
        for p in [
            json!({"agentId": "paco--dali", "message": "m"}),
            json!({"agent_id": "paco--dali", "message": "m"}),
            json!({"sessionKey": "agent:paco--dali:main", "message": "m"}),
            json!({"sessionKey": "agent:paco--dali:MAIN", "message": "m"}),
            json!({"sessionKey": deleg, "message": "m"}),
            // OpenClaw lowercases and trims keys: these are delegation keys to it.
            json!({"sessionKey": "agent:paco--dali:DELEGATION:agent.paco--francis.other", "message": "m"}),
            json!({"sessionKey": "AGENT:paco--dali:Delegation:agent.paco--francis.other", "message": "m"}),
            json!({"sessionKey": "\u{feff}agent:paco--dali:delegation:agent.paco--francis.other", "message": "m"}),
            json!({"sessionKey": "agent:paco--dali:delegation:AGENT.PACO--FRANCIS.OTHER", "message": "m"}),
        ] {
            assert!(redirects(&params(p.clone())), "{p}");
        }
        for p in [
            json!({"agentId": "paco--dali", "label": "research", "message": "m"}),
            json!({"sessionKey": "agent:paco--dali:subagent:1234", "message": "m"}),
            json!({"sessionKey": "agent:paco--dali:openai:99", "message": "m"}),
        ] {
            assert!(!redirects(&params(p.clone())), "{p}");
        }
    }

    #[test]
    fn the_failure_reason_starts_with_the_rule_id() {
        let r = ensure_failed_reason("paco--dali", "agent:paco--dali:delegation:x");
        assert!(
            r.starts_with("delegation-session: ") && r.contains("Retry once"),
            "{r}"
        );
    }
}
