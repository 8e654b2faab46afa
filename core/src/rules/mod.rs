//! The identity rules. Each rule is a pure function from a tool call to a
//! verdict (pass, rewrite or block), with no N-API types, so `cargo test`
//! covers every rule without Node. The engine (`crate::engine`) runs them in
//! a fixed order.

pub mod agent_ids;
pub mod auth_token;
pub mod conversation_id;
pub mod cross_user_send;
pub mod delegation_session;
pub mod layer_controls;
pub mod map_access;
pub mod sandbox_pty;
pub mod session_access;
pub mod spawn_redirect;
pub mod token_text;
pub mod workboard_scope;

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::options::Options;
use crate::redact::results::{Hits, Redactor};
use crate::route::Route;
use crate::token_map::{Token, TokenMap};

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
    /// `event.derivedPaths`: the absolute paths OpenClaw derived from the
    /// params for the policy tier (apply_patch's targets), when the route
    /// asks for them.
    pub derived_paths: &'a [String],
}

/// The state of the map at decision time.
pub struct MapView<'a> {
    pub map: &'a TokenMap,
    /// Counts the maps put in force (`Context::generation`).
    pub generation: u64,
    pub loaded: bool,
    pub stale: bool,
    /// The tokens to take out of text one agent hands another.
    pub redactor: Option<&'a Redactor>,
}

/// What a rule may consult besides the call itself: the options, the map
/// in force, and what the layer learnt of OpenClaw (who spawned which
/// session; the agents' workspaces).
/// A decision borrows from the call and the map (`'a`), never from the
/// context itself (`'c`).
pub struct Context<'c, 'a> {
    pub opts: &'c Options,
    pub view: &'c MapView<'a>,
    pub sessions: &'c crate::sessions::Known,
    pub fs: &'c map_access::Facts,
    /// OpenClaw and Node, for what only they know (`crate::sessions::Host`).
    pub host: &'c dyn crate::sessions::Host,
    /// How many times the map in force changed: stale facts about the
    /// map's files are made again after a change.
    pub generation: u64,
    /// Whether the agents are contained (`crate::posture`).
    pub posture: &'c crate::posture::Judged,
}

/// A rule's decision for one call, given the route that sent it there (the
/// params it reads).
pub type Decide = for<'c, 'a> fn(&Context<'c, 'a>, &ToolCall<'a>, &Route) -> Decision<'a>;

/// A value a rule puts into the call's params.
#[derive(Debug, Clone, PartialEq)]
pub enum Set<'a> {
    /// `tokenParam`: the calling agent's token, borrowed from the map in force.
    Token(&'a Token),
    /// The conversation-id param: usually the caller's own session key, borrowed.
    Conversation(Cow<'a, str>),
    /// Any other param (a session key, a board id, a redacted message).
    Param(&'static str, Value),
}

/// The params one decision changes. The owned-tool slots (`token`,
/// `conversation`) are fields of their own, so the hot path builds its
/// rewrite without an allocation; a slot is `Keep` (untouched), `Clear`
/// (taken out: defined as `undefined`, so the model's value never reaches
/// the server) or a value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Patch<'a> {
    pub token: Slot<&'a Token>,
    pub conversation: Slot<Cow<'a, str>>,
    /// Other params, set in this order.
    pub params: Vec<(&'static str, Value)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Slot<T> {
    #[default]
    Keep,
    Clear,
    Set(T),
}

impl<T> Slot<T> {
    pub fn is_keep(&self) -> bool {
        matches!(self, Slot::Keep)
    }
}

impl<'a> Patch<'a> {
    pub fn is_empty(&self) -> bool {
        self.token.is_keep() && self.conversation.is_keep() && self.params.is_empty()
    }

    /// Whether it sets a value (rather than only taking values out).
    pub fn sets_anything(&self) -> bool {
        matches!(self.token, Slot::Set(_))
            || matches!(self.conversation, Slot::Set(_))
            || !self.params.is_empty()
    }

    /// Sets `param` (replacing an earlier value of it).
    pub fn set(&mut self, param: &'static str, value: Value) {
        self.params.retain(|(k, _)| *k != param);
        self.params.push((param, value));
    }

    pub fn param(param: &'static str, value: Value) -> Patch<'a> {
        Patch {
            params: vec![(param, value)],
            ..Patch::default()
        }
    }

    /// Every param this patch sets, by name, in order (the slots first), and
    /// the params it takes out: for reports and tests.
    pub fn entries(&self, opts: &Options) -> (Vec<(String, Value)>, Vec<String>) {
        let (mut set, mut clear) = (Vec::new(), Vec::new());
        match &self.token {
            Slot::Set(t) => set.push((opts.token_param.clone(), Value::String(t.expose().into()))),
            Slot::Clear => clear.push(opts.token_param.clone()),
            Slot::Keep => {}
        }
        let conversation = &opts.rules.conversation_id.param;
        match &self.conversation {
            Slot::Set(c) => set.push((conversation.clone(), Value::String(c.to_string()))),
            Slot::Clear => clear.push(conversation.clone()),
            Slot::Keep => {}
        }
        set.extend(
            self.params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone())),
        );
        (set, clear)
    }
}

/// What the rules decided for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict<'a> {
    Pass,
    /// Run the call with these params changed.
    Rewrite(Patch<'a>),
    /// Refuse the call; the reason starts with the rule id and is shown to the
    /// model. Rules may quote params in it: the engine scrubs every verdict.
    Block(String),
    /// Ask the user before running the call, then run it with `then`.
    RequireApproval {
        title: String,
        description: String,
        then: Patch<'a>,
    },
}

/// What the map said about the calling agent, for logs and stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStatus<'a> {
    /// The tool is not one that carries a token.
    NotOwned,
    Injected(&'a Token),
    Missing(auth_token::Missing),
}

/// A session the JS side must act on: OpenClaw's session store is reachable
/// only from there (`api.runtime.agent.session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    pub agent_id: String,
    pub session_key: String,
}

/// Create `session` if it does not exist before the call runs (OpenClaw
/// refuses a send to a non-main key that doesn't exist); if that fails,
/// block the call with `failure_reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsureSession {
    pub session: SessionRef,
    pub failure_reason: String,
}

/// One call's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision<'a> {
    pub verdict: Verdict<'a>,
    /// Id of the rule that decided the verdict (for a rewrite, the first rule
    /// that contributed to it); `None` for a pass nobody had an opinion on.
    pub rule: Option<&'static str>,
    pub token: TokenStatus<'a>,
    pub ensure_session: Option<EnsureSession>,
    /// Not a decision yet: this session's entry (its spawner, its cwd) must
    /// be looked up in OpenClaw's session store and the call decided again.
    /// The verdict is then `Pass` and means nothing; the pipeline does this.
    pub need_session: Option<SessionRef>,
    /// Pieces of tokens rule `token-text` took out of the params: a
    /// compromise signal the layer counts and logs.
    pub redaction: Hits,
}

impl<'a> Decision<'a> {
    pub fn new(verdict: Verdict<'a>, rule: Option<&'static str>) -> Self {
        Decision {
            verdict,
            rule,
            token: TokenStatus::NotOwned,
            ensure_session: None,
            need_session: None,
            redaction: Hits::default(),
        }
    }

    pub fn pass() -> Self {
        Decision::new(Verdict::Pass, None)
    }

    pub fn block(rule: &'static str, reason: String) -> Self {
        Decision::new(Verdict::Block(reason), Some(rule))
    }

    pub fn rewrite(rule: &'static str, patch: Patch<'a>) -> Self {
        if patch.is_empty() {
            return Decision::pass();
        }
        Decision::new(Verdict::Rewrite(patch), Some(rule))
    }

    /// Decide again once `session_key`'s entry is known.
    pub fn need_session(session_key: String, caller: Option<&str>) -> Self {
        let agent_id = agent_ids::session_key_agent(&session_key)
            .or_else(|| caller.map(str::to_owned))
            .unwrap_or_default();
        Decision {
            need_session: Some(SessionRef {
                agent_id,
                session_key,
            }),
            ..Decision::pass()
        }
    }

    /// The patch the call runs with if it runs (after an approval, too).
    pub fn patch(&self) -> Option<&Patch<'a>> {
        match &self.verdict {
            Verdict::Rewrite(p) | Verdict::RequireApproval { then: p, .. } => Some(p),
            Verdict::Pass | Verdict::Block(_) => None,
        }
    }

    pub fn is_block(&self) -> bool {
        matches!(self.verdict, Verdict::Block(_))
    }
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
    pub layer_controls: layer_controls::LayerControlsConfig,
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
