//! The identity rules. Each rule is a pure function from a tool call to a
//! verdict (pass, rewrite or block), with no N-API types, so `cargo test`
//! covers every rule without Node. The engine (`crate::engine`) runs them in
//! a fixed order.

pub mod agent_ids;
pub mod auth_token;
pub mod conversation_id;
pub mod cross_user_send;
pub mod delegation_session;
pub mod map_access;
pub mod session_access;
pub mod spawn_redirect;
pub mod workboard_scope;

use serde::Deserialize;
use serde_json::Value;

/// Tool parameters as JSON. Only rules that read params get them; on the hot
/// path (an MCP tool call) the map is empty and unused.
pub type Params = serde_json::Map<String, Value>;

/// What a rule sees of one tool call.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    /// `event.toolName`, as OpenClaw normalised it (lowercased, aliased).
    pub tool: &'a str,
    /// `ctx.agentId`, when it was a string.
    pub agent_id: Option<&'a str>,
    /// `ctx.sessionKey`, when it was a string.
    pub session_key: Option<&'a str>,
    pub params: &'a Params,
}

/// What one rule decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass,
    /// Set these params (a patch over the caller's params).
    Rewrite(Vec<(String, Value)>),
    /// Refuse the call; the reason starts with the rule id and is shown to the
    /// model. Rules may quote params in it: the engine scrubs every verdict.
    Block(String),
    /// Ask the user before running the call.
    RequireApproval {
        title: String,
        description: String,
    },
}

/// Configuration of every rule, under the `rules` option. Every rule is on
/// by default; `{ "enabled": false }` switches one off.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RulesConfig {
    pub cross_user_send: cross_user_send::CrossUserSendConfig,
    pub spawn_redirect: spawn_redirect::SpawnRedirectConfig,
    pub delegation_session: delegation_session::DelegationSessionConfig,
    pub workboard_scope: workboard_scope::WorkboardScopeConfig,
    pub conversation_id: conversation_id::ConversationIdConfig,
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
