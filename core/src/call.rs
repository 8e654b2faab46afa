//! One tool call and what is decided about it: the data every rule, the
//! posture, the pipeline and `explain` share. It sits below them all, so
//! none of them imports another to name a call or a decision.

use std::borrow::Cow;

use serde_json::Value;

use crate::openclaw::agent_ids;
use crate::options::Options;
use crate::redact::results::Hits;
use crate::token_map::Token;

pub use crate::openclaw::params::Params;

/// Every rule's id: the first word of its block reasons, and the name logs,
/// stats and `explain` give it (docs/rules.md). One table, below the rules,
/// so the posture and the protected-location model name the rule that
/// refuses without importing it.
pub mod rule_id {
    pub const AUTH_TOKEN: &str = "auth-token";
    pub const CONVERSATION_ID: &str = "conversation-id";
    pub const CROSS_USER_SEND: &str = "cross-user-send";
    pub const DELEGATION_SESSION: &str = "delegation-session";
    pub const LAYER_CONTROLS: &str = "layer-controls";
    pub const MAP_ACCESS: &str = "map-access";
    pub const SANDBOX_PTY: &str = "sandbox-pty";
    pub const SPAWN_REDIRECT: &str = "spawn-redirect";
    pub const TOKEN_TEXT: &str = "token-text";
    pub const WORKBOARD_SCOPE: &str = "workboard-scope";
    pub const POSTURE: &str = "posture";
    pub const PROXY: &str = "proxy";
}

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
    /// `ctx.toolCallId`, read only for a call to a proxied server (its
    /// handle is bound to it, for the log).
    pub call_id: Option<&'a str>,
}

/// Why an owned call has no token to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// `ctx.agentId` was absent or not a string: the caller is unknown and not trusted.
    NoAgentId,
    /// No map was ever loaded (missing file, refused by the gate, invalid).
    NoMap,
    /// The agent is not in the map.
    UnknownAgent,
    /// The map has been unreadable for longer than `maxStaleSeconds`.
    Stale,
    /// An agent is not contained and `posture` is `"enforce"`: no token is
    /// served to anyone (`crate::posture`).
    Uncontained,
}

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
    /// For a proxied server (`crate::proxy`): what `token` writes instead
    /// of the token, a single-use handle.
    pub handle: Option<String>,
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
            Slot::Set(t) => {
                let value = self.handle.as_deref().unwrap_or(t.expose());
                set.push((opts.token_param.clone(), Value::String(value.into())))
            }
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
    Missing(Missing),
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
