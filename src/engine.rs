//! Runs the rules for one tool call, in a fixed order, and merges what they
//! decide into one decision. Used by the hook, the trusted policy and
//! `claw-identity explain` alike, so all three always agree.

use serde_json::Value;

use crate::options::{OnMissingToken, Options};
use crate::redact::shown;
use crate::rules::auth_token::{self, Missing};
use crate::rules::{ToolCall, Verdict};
use crate::token_map::{Token, TokenMap};

/// What the map said about the calling agent, for logs and stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStatus<'m> {
    /// The tool is not one that carries a token.
    NotOwned,
    Injected(&'m Token),
    Missing(Missing),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision<'m> {
    pub verdict: Verdict,
    /// Id of the rule that decided the verdict (for a rewrite, the first rule
    /// that contributed to it); `None` for a pass nobody had an opinion on.
    pub rule: Option<&'static str>,
    pub token: TokenStatus<'m>,
}

/// What the JS side must forward to the engine: tool names with these
/// prefixes or in `tools`. Everything else is passed in JS without a native
/// call, which keeps unowned tools near free.
#[derive(Debug, Clone, PartialEq)]
pub struct Interest {
    pub prefixes: Vec<String>,
    /// Exact tool names some rule reads the params of.
    pub tools: Vec<String>,
    /// The params that hot-path rules set to strings, in a fixed order: a
    /// rewrite of only these is sent to JS as their values alone.
    pub slots: Vec<String>,
}

pub struct Engine {
    opts: Options,
    interest: Interest,
}

/// The state of the map at decision time.
pub struct MapView<'m> {
    pub map: &'m TokenMap,
    pub loaded: bool,
    pub stale: bool,
}

impl Engine {
    pub fn new(opts: Options) -> Engine {
        let interest = Interest {
            prefixes: opts.tool_prefixes.clone(),
            tools: Vec::new(),
            slots: vec![opts.token_param.clone()],
        };
        Engine { opts, interest }
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    pub fn interest(&self) -> &Interest {
        &self.interest
    }

    /// Whether the rules need `params` for this tool (the JS side then passes them as JSON).
    pub fn needs_params(&self, tool: &str) -> bool {
        self.interest.tools.iter().any(|t| t == tool)
    }

    pub fn decide<'m>(&self, call: &ToolCall<'_>, view: &MapView<'m>) -> Decision<'m> {
        let mut patch: Vec<(String, Value)> = Vec::new();
        let mut first_rule: Option<&'static str> = None;

        let outcome = auth_token::evaluate(
            call,
            &self.opts.tool_prefixes,
            view.map,
            view.loaded,
            view.stale,
        );
        let token = match outcome {
            auth_token::Outcome::NotOwned => TokenStatus::NotOwned,
            auth_token::Outcome::Inject(t) => {
                patch.push((
                    self.opts.token_param.clone(),
                    Value::String(t.expose().to_owned()),
                ));
                first_rule.get_or_insert(auth_token::RULE_ID);
                TokenStatus::Injected(t)
            }
            auth_token::Outcome::Missing(why) => {
                if self.opts.on_missing_token == OnMissingToken::Block {
                    return Decision {
                        verdict: Verdict::Block(self.missing_reason(call, why)),
                        rule: Some(auth_token::RULE_ID),
                        token: TokenStatus::Missing(why),
                    };
                }
                TokenStatus::Missing(why)
            }
        };

        let verdict = if patch.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Rewrite(patch)
        };
        Decision {
            verdict,
            rule: first_rule,
            token,
        }
    }

    fn missing_reason(&self, call: &ToolCall<'_>, why: Missing) -> String {
        let path = self.opts.token_map_path.display();
        let tool = shown(call.tool);
        match why {
            Missing::NoAgentId => format!(
                "{}: the call to {tool} has no calling agent id, so no token can be injected; do not retry it. The operator must run it from an agent listed in the token map {path}.",
                auth_token::RULE_ID
            ),
            Missing::UnknownAgent => format!(
                "{}: agent \"{}\" has no token in the token map {path}, so {tool} was not called; do not retry it. Tell the user this agent is not provisioned; the operator can check with: claw-identity doctor --map {path}",
                auth_token::RULE_ID,
                shown(call.agent_id.unwrap_or_default())
            ),
            Missing::NoMap => format!(
                "{}: the token map {path} could not be loaded, so {tool} was not called; do not retry it. The operator can see why with: claw-identity doctor --map {path}",
                auth_token::RULE_ID
            ),
            Missing::Stale => format!(
                "{}: the token map {path} has been unreadable for longer than maxStaleSeconds, so {tool} was not called; do not retry it. The operator can see why with: claw-identity doctor --map {path}",
                auth_token::RULE_ID
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Params;
    use crate::token_map::{parse, tests::T1};

    fn engine(json: &str) -> Engine {
        Engine::new(Options::from_json(json).unwrap())
    }

    #[test]
    fn injects_under_the_configured_param_name() {
        let map = parse(format!(r#"{{"a": "{T1}"}}"#).as_bytes()).unwrap().map;
        let e = engine(r#"{"tokenMapPath": "/m.json", "tokenParam": "tok"}"#);
        let p = Params::new();
        let call = ToolCall {
            tool: "claw-os__x",
            agent_id: Some("a"),
            session_key: None,
            params: &p,
        };
        let d = e.decide(
            &call,
            &MapView {
                map: &map,
                loaded: true,
                stale: false,
            },
        );
        assert_eq!(
            d.verdict,
            Verdict::Rewrite(vec![("tok".into(), Value::String(T1.into()))])
        );
        assert_eq!(d.rule, Some("auth-token"));
    }

    #[test]
    fn missing_blocks_only_when_asked_and_names_rule_agent_and_path() {
        let map = TokenMap::default();
        let p = Params::new();
        let call = ToolCall {
            tool: "claw-os__x",
            agent_id: Some("ghost"),
            session_key: None,
            params: &p,
        };
        let view = MapView {
            map: &map,
            loaded: true,
            stale: false,
        };
        assert_eq!(
            engine(r#"{"tokenMapPath": "/m.json"}"#)
                .decide(&call, &view)
                .verdict,
            Verdict::Pass
        );
        let d = engine(r#"{"tokenMapPath": "/m.json", "onMissingToken": "block"}"#)
            .decide(&call, &view);
        let Verdict::Block(reason) = d.verdict else {
            panic!("{d:?}")
        };
        assert!(
            reason.starts_with("auth-token: agent \"ghost\""),
            "{reason}"
        );
        assert!(reason.contains("/m.json"), "{reason}");
    }
}
