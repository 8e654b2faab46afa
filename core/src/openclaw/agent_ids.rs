//! OpenClaw's agent-id and session-key grammar, mirrored exactly, plus the
//! one convention claw-identity adds on top: an agent named
//! `<userprefix>--<agent>` belongs to the user `<userprefix>`.
//!
//! The rules decide on what OpenClaw will resolve, not on what the model
//! wrote: a target of `" Paco--Dali "` is `paco--dali` to OpenClaw, so it is
//! `paco--dali` here too.

use crate::paths::js_trim;

/// The longest agent id OpenClaw keeps (`normalizeAgentIdStrict` cuts at 64).
const MAX_AGENT_ID: usize = 64;

/// `normalizeAgentIdStrict` from OpenClaw's `agent-id.ts`: trim, lowercase;
/// an id outside `^[a-z0-9][a-z0-9_-]{0,63}$` has every run of other
/// characters replaced by one `-`, leading and trailing dashes removed, and
/// is cut to 64 characters. `None` when nothing is left ("unrepresentable").
pub fn normalize_agent_id(raw: &str) -> Option<String> {
    let trimmed = js_trim(raw);
    let valid_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let is_valid = !trimmed.is_empty()
        && trimmed.len() <= MAX_AGENT_ID
        && trimmed.starts_with(|c: char| c.is_ascii_alphanumeric())
        && trimmed.chars().all(valid_char);
    // JS `toLowerCase` also folds non-ASCII letters; those become `-` below
    // anyway, so ASCII folding gives the same result.
    let lower = trimmed.to_lowercase();
    if is_valid {
        return Some(lower);
    }
    let mut out = String::with_capacity(lower.len());
    let mut in_run = false;
    for c in lower.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    let out: String = out.trim_matches('-').chars().take(MAX_AGENT_ID).collect();
    (!out.is_empty()).then_some(out)
}

/// A session key as OpenClaw compares and stores it
/// (`normalizeSessionKeyPreservingOpaquePeerIds`): trimmed and lowercased.
/// OpenClaw keeps the case of Signal group ids and Matrix room ids inside a
/// key; the parts these rules read (`agent:`, the agent id, `main`,
/// `delegation:<escaped>`, `subagent:`) are lowercased either way, so every
/// comparison of those parts goes through this.
pub fn normalize_session_key(key: &str) -> String {
    js_trim(key).to_lowercase()
}

/// Which user an agent belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<'a> {
    /// `<prefix>--<agent>`: the part before the first `--`.
    User(&'a str),
    /// An id without a usable `--` (`main`, `x--`): it belongs to no user and
    /// is alone in its own space.
    Unscoped(&'a str),
}

/// The owner of a normalized agent id. The prefix is everything before the
/// FIRST `--`, and both sides must be non-empty: `paco--team--dali` belongs to
/// `paco`, `a---b` to `a`, while `x--` and `main` belong to no user.
pub fn owner_of(agent_id: &str) -> Owner<'_> {
    match agent_id.find("--") {
        Some(i) if i > 0 && i + 2 < agent_id.len() => Owner::User(&agent_id[..i]),
        _ => Owner::Unscoped(agent_id),
    }
}

/// The user prefix of a normalized agent id, if it has one.
pub fn user_prefix(agent_id: &str) -> Option<&str> {
    match owner_of(agent_id) {
        Owner::User(p) => Some(p),
        Owner::Unscoped(_) => None,
    }
}

/// Whether two normalized agent ids belong to the same user. Prefixes are
/// compared whole (`paco` is not `paco2`); an unscoped agent shares a user
/// only with itself.
pub fn same_user(a: &str, b: &str) -> bool {
    match (owner_of(a), owner_of(b)) {
        (Owner::User(x), Owner::User(y)) => x == y,
        (Owner::Unscoped(x), Owner::Unscoped(y)) => x == y,
        _ => false,
    }
}

/// An agent-scoped session key split as OpenClaw's `parseAgentSessionKey`
/// splits it: `agent:<agentId>:<rest>`, the `agent:` prefix in any case, a
/// non-empty agent part (trimmed) and a non-empty rest that does not start
/// with `:`. `None` for anything else (`main`, a session id, `current`).
pub fn split_session_key(key: &str) -> Option<(&str, &str)> {
    let key = js_trim(key);
    // `get`: the first six bytes may end inside a multi-byte character.
    if !key.get(..6)?.eq_ignore_ascii_case("agent:") {
        return None;
    }
    let after = &key[6..];
    let end = after.find(':')?;
    let agent = js_trim(&after[..end]);
    let rest = &after[end + 1..];
    if agent.is_empty() || rest.is_empty() || rest.starts_with(':') {
        return None;
    }
    Some((agent, rest))
}

/// The normalized agent that owns an agent-scoped session key.
pub fn session_key_agent(key: &str) -> Option<String> {
    split_session_key(key).and_then(|(agent, _)| normalize_agent_id(agent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openclaw::params::str_param;
    use serde_json::json;

    #[test]
    fn normalization_matches_openclaw() {
        let cases = [
            ("paco--dali", Some("paco--dali")),
            (" Paco--Dali ", Some("paco--dali")),
            ("PACO--DALI", Some("paco--dali")),
            ("paco dali", Some("paco-dali")),
            ("paco@@--dali", Some("paco---dali")),
            ("--x", Some("x")),
            ("x--", Some("x--")),
            ("_x", Some("_x")),
            ("é", None),
            ("", None),
            ("  ", None),
            ("!!!", None),
            ("a::b", Some("a-b")),
        ];
        for (raw, want) in cases {
            assert_eq!(normalize_agent_id(raw).as_deref(), want, "{raw:?}");
        }
        let long = "a".repeat(70);
        assert_eq!(normalize_agent_id(&long).unwrap().len(), 64);
    }

    #[test]
    fn prefix_is_before_the_first_double_dash_with_both_sides_non_empty() {
        assert_eq!(owner_of("paco--francis"), Owner::User("paco"));
        assert_eq!(owner_of("paco--team--dali"), Owner::User("paco"));
        assert_eq!(owner_of("a---b"), Owner::User("a"));
        assert_eq!(owner_of("main"), Owner::Unscoped("main"));
        assert_eq!(owner_of("x--"), Owner::Unscoped("x--"));
        assert_eq!(owner_of("--x"), Owner::Unscoped("--x"));
        assert_eq!(owner_of("paco-x--dali"), Owner::User("paco-x"));
    }

    #[test]
    fn users_compare_whole_prefixes_and_unscoped_ids_are_alone() {
        assert!(same_user("paco--francis", "paco--dali"));
        assert!(!same_user("paco--francis", "paco2--dali"));
        assert!(!same_user("paco2--francis", "paco--dali"));
        assert!(!same_user("paco--francis", "pepito--atlas"));
        assert!(
            !same_user("paco", "paco--dali"),
            "unscoped `paco` is not user paco"
        );
        assert!(same_user("main", "main"));
        assert!(!same_user("main", "ops"));
    }

    #[test]
    fn session_keys_split_like_openclaw() {
        assert_eq!(
            split_session_key("agent:paco--dali:main"),
            Some(("paco--dali", "main"))
        );
        assert_eq!(
            split_session_key("AGENT:Paco--Dali:x:y"),
            Some(("Paco--Dali", "x:y"))
        );
        assert_eq!(
            session_key_agent("AGENT: Paco--Dali :main").as_deref(),
            Some("paco--dali")
        );
        for bad in [
            "main",
            "agentéx:y",
            "é",
            "agent:",
            "agent:x",
            "agent::main",
            "agent:x:",
            "agent:x::y",
            "current",
        ] {
            assert_eq!(split_session_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn trimming_is_javascripts() {
        assert_eq!(js_trim("\u{feff} agent:x:main\u{2028}"), "agent:x:main");
        assert_eq!(js_trim("\u{85}x\u{85}"), "\u{85}x\u{85}");
        assert_eq!(
            split_session_key("\u{feff}agent:pepito--atlas:main"),
            Some(("pepito--atlas", "main"))
        );
        let p = json!({"sessionKey": "\u{feff}"});
        assert_eq!(
            str_param(p.as_object().unwrap(), "sessionKey", "session_key"),
            None
        );
        assert_eq!(
            normalize_session_key(" AGENT:Paco--Dali:DELEGATION:x "),
            "agent:paco--dali:delegation:x"
        );
    }

    #[test]
    fn string_params_read_camel_then_snake_trimmed() {
        let p = json!({"agent_id": " paco--dali ", "sessionKey": "  ", "label": 3});
        let p = p.as_object().unwrap();
        assert_eq!(str_param(p, "agentId", "agent_id"), Some("paco--dali"));
        assert_eq!(str_param(p, "sessionKey", "session_key"), None);
        assert_eq!(str_param(p, "label", "label"), None);
        assert_eq!(str_param(p, "missing", "missing"), None);
        let both = json!({"agentId": "a", "agent_id": "b"});
        assert_eq!(
            str_param(both.as_object().unwrap(), "agentId", "agent_id"),
            Some("a")
        );
    }
}
