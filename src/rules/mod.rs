//! The identity rules. Each rule is a pure function from a tool call to a
//! verdict (pass, rewrite or block), with no N-API types, so `cargo test`
//! covers every rule without Node. The engine (`crate::engine`) runs them in
//! a fixed order.

pub mod auth_token;

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
    /// Refuse the call; the reason starts with the rule id and is shown to the model.
    Block(String),
    /// Ask the user before running the call.
    RequireApproval {
        title: String,
        description: String,
    },
}

/// Configuration of every rule, under the `rules` option.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RulesConfig {}

impl RulesConfig {
    pub fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}
