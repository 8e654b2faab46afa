//! The `rules` option: each rule's configuration, its defaults and its
//! validation. It sits with the other options, below the rules that read it
//! (`crate::rules`), so parsing the options imports no rule.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::openclaw::agent_ids::{normalize_agent_id, same_user, user_prefix};

pub const DEFAULT_BOARD_PREFIX: &str = "wb_";

/// Workboard's board id grammar: `^[a-z0-9][a-z0-9._-]{0,79}$`.
pub fn is_board_id(id: &str) -> bool {
    let b = id.as_bytes();
    !b.is_empty()
        && b.len() <= 80
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"._-".contains(c))
}

pub const DEFAULT_PARAM: &str = "_conversation_id";

/// What a grant allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Allow,
    /// Ask the user (OpenClaw `requireApproval`) on every call.
    Ask,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CrossUserSendConfig {
    pub enabled: bool,
    /// `{ "<from>": { "<to>": "allow" | "ask" } }`; each side is an agent id
    /// or `<userprefix>--*` (every agent of that user).
    pub grants: BTreeMap<String, BTreeMap<String, Access>>,
}

impl Default for CrossUserSendConfig {
    fn default() -> Self {
        CrossUserSendConfig {
            enabled: true,
            grants: BTreeMap::new(),
        }
    }
}

impl CrossUserSendConfig {
    pub fn validate(&self) -> Result<(), String> {
        for (from, tos) in &self.grants {
            check_pattern(from)?;
            for to in tos.keys() {
                check_pattern(to)?;
            }
        }
        Ok(())
    }

    /// The grant from `caller` to `target`, if any. When several grants
    /// match, the most restrictive wins: one `ask` outweighs any `allow`.
    pub fn grant(&self, caller: &str, target: &str) -> Option<Access> {
        let mut found = None;
        for (from, tos) in &self.grants {
            if !matches(from, caller) {
                continue;
            }
            for (to, access) in tos {
                if matches(to, target) {
                    if *access == Access::Ask {
                        return Some(Access::Ask);
                    }
                    found = Some(Access::Allow);
                }
            }
        }
        found
    }
}

/// The verdict of this rule for one caller → target pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The caller itself, or another agent of the same user.
    SameUser,
    Granted(Access),
    Denied,
}

pub fn reach(cfg: &CrossUserSendConfig, caller: &str, target: &str) -> Reach {
    if caller == target || same_user(caller, target) {
        return Reach::SameUser;
    }
    match cfg.grant(caller, target) {
        Some(a) => Reach::Granted(a),
        None => Reach::Denied,
    }
}

fn matches(pattern: &str, agent: &str) -> bool {
    match pattern.strip_suffix("--*") {
        Some(prefix) => user_prefix(agent) == Some(prefix),
        None => pattern == agent,
    }
}

fn check_pattern(p: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "rules.crossUserSend.grants: \"{}\" {why}; write an agent id (\"paco--francis\") or every agent of a user (\"paco--*\")",
            crate::redact::shown(p)
        ))
    };
    if let Some(prefix) = p.strip_suffix("--*") {
        if prefix.is_empty()
            || normalize_agent_id(prefix).as_deref() != Some(prefix)
            || prefix.contains("--")
            || prefix.ends_with('-')
        {
            return bad("is not a valid <userprefix>--* pattern (the prefix is what comes before the first --)");
        }
        return Ok(());
    }
    if normalize_agent_id(p).as_deref() != Some(p) {
        return bad("is not an agent id in OpenClaw's canonical form (lowercase a-z, 0-9, _ and -, at most 64)");
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SpawnRedirectConfig {
    pub enabled: bool,
}

impl Default for SpawnRedirectConfig {
    fn default() -> Self {
        SpawnRedirectConfig { enabled: true }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DelegationSessionConfig {
    pub enabled: bool,
}

impl Default for DelegationSessionConfig {
    fn default() -> Self {
        DelegationSessionConfig { enabled: true }
    }
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ConversationIdConfig {
    pub enabled: bool,
    /// The tool parameter that carries the conversation.
    pub param: String,
}

impl Default for ConversationIdConfig {
    fn default() -> Self {
        ConversationIdConfig {
            enabled: true,
            param: DEFAULT_PARAM.to_owned(),
        }
    }
}

impl ConversationIdConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.param.is_empty() || self.param == "__proto__" {
            return Err(format!(
                "rules.conversationId.param \"{}\" is not a usable parameter name",
                crate::redact::shown(&self.param)
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LayerControlsConfig {
    pub enabled: bool,
}

impl Default for LayerControlsConfig {
    fn default() -> Self {
        LayerControlsConfig { enabled: true }
    }
}

/// Configuration of every rule, under the `rules` option. Every rule is on
/// by default; `{ "enabled": false }` switches one off.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RulesConfig {
    pub cross_user_send: CrossUserSendConfig,
    pub spawn_redirect: SpawnRedirectConfig,
    pub delegation_session: DelegationSessionConfig,
    pub workboard_scope: WorkboardScopeConfig,
    pub conversation_id: ConversationIdConfig,
    pub layer_controls: LayerControlsConfig,
}

impl RulesConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.cross_user_send.validate()?;
        self.workboard_scope.validate()?;
        self.conversation_id.validate()
    }

    /// Checks that do not fit `validate` because they involve other options.
    pub fn validate_with(&self, token_param: &str) -> Result<(), String> {
        if self.conversation_id.enabled && self.conversation_id.param == token_param {
            return Err(format!(
                "rules.conversationId.param and tokenParam are both \"{}\"; they must differ",
                crate::redact::shown(token_param)
            ));
        }
        Ok(())
    }

    /// Whether any rule reads `sessions_send` / `sessions_spawn` params.
    pub fn reads_session_tools(&self) -> bool {
        self.cross_user_send.enabled
            || self.spawn_redirect.enabled
            || self.delegation_session.enabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<RulesConfig, String> {
        let c: RulesConfig = serde_json::from_value(v).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn every_rule_is_on_by_default() {
        let c = parse(json!({})).unwrap();
        assert!(c.cross_user_send.enabled && c.cross_user_send.grants.is_empty());
        assert!(c.spawn_redirect.enabled);
        assert!(c.delegation_session.enabled);
        assert!(c.workboard_scope.enabled);
        assert_eq!(c.workboard_scope.board_prefix, "wb_");
        assert!(c.conversation_id.enabled);
        assert_eq!(c.conversation_id.param, "_conversation_id");
        assert_eq!(c, RulesConfig::default());
    }

    #[test]
    fn each_rule_can_be_switched_off_alone() {
        let c = parse(json!({"spawnRedirect": {"enabled": false}})).unwrap();
        assert!(!c.spawn_redirect.enabled);
        assert!(c.cross_user_send.enabled && c.delegation_session.enabled);
        let off = parse(json!({
            "crossUserSend": {"enabled": false},
            "spawnRedirect": {"enabled": false},
            "delegationSession": {"enabled": false},
            "workboardScope": {"enabled": false},
            "conversationId": {"enabled": false},
        }))
        .unwrap();
        assert!(!off.reads_session_tools());
    }

    #[test]
    fn unknown_keys_are_errors_at_every_level() {
        for bad in [
            json!({"crossUser": {}}),
            json!({"crossUserSend": {"enable": false}}),
            json!({"workboardScope": {"prefix": "x"}}),
            json!({"conversationId": true}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_conversation_param_must_differ_from_the_token_param() {
        let c = parse(json!({"conversationId": {"param": "auth_token"}})).unwrap();
        assert!(c.validate_with("auth_token").is_err());
        assert!(c.validate_with("tok").is_ok());
        let off =
            parse(json!({"conversationId": {"enabled": false, "param": "auth_token"}})).unwrap();
        assert!(off.validate_with("auth_token").is_ok());
    }
}
