//! `claw-identity explain`: the decision the layer would take for one call.
//!
//! It builds an `Engine` from the options the plugin runs with (the config's
//! `plugins.entries.claw-identity.config`, `--map` replacing the path), loads
//! the map through the plugin's gate and parser, and asks `Engine::decide`,
//! the very function the hook and the trusted policy call, with the params the
//! hook would pass. Tokens show only as fingerprints; the call's own params
//! are never printed.

use std::path::Path;

use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;

use crate::call::Missing;
use crate::layer::Layer;
use crate::log::Log;
use crate::openclaw::config::{self, OpenClawConfig};
use crate::options::Options;
use crate::pipeline::{self, Host, SessionEntry};
use crate::redact::{self, shown};
use crate::rules::{Decision, Params, TokenStatus, ToolCall, Verdict};
use crate::token_map::is_token;

pub struct ExplainArgs<'a> {
    pub map: Option<&'a str>,
    pub config: Option<&'a Path>,
    /// `ctx.agentId`; `None` explains a call without one.
    pub agent: Option<&'a str>,
    pub tool: &'a str,
    pub session_key: Option<&'a str>,
    pub params: &'a Params,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MapState {
    pub path: String,
    pub loaded: bool,
    pub agents: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    /// `injected`, `missing` or `not-needed` (the tool carries no token).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    pub why: String,
}

#[derive(Debug, Serialize)]
pub struct SetParam {
    pub param: String,
    /// The value as shown: a token as `sha256:<fingerprint>`.
    pub value: String,
}

#[derive(Debug, Serialize)]
pub struct Approval {
    pub title: String,
    pub description: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub tool: String,
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    pub map: MapState,
    pub token: TokenInfo,
    /// `pass`, `rewrite`, `block` or `ask`.
    pub decision: &'static str,
    /// The rule that decided (for a rewrite, the first that contributed).
    pub rule: Option<&'static str>,
    pub why: String,
    pub sets: Vec<SetParam>,
    /// Params the model wrote that the call runs without (set to undefined).
    pub clears: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// A session the plugin creates before the call runs, if it is missing
    /// (`agent:<id>:...`); the call is blocked if that fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ensures_session: Option<String>,
    /// What explain could not know that the plugin in a gateway would.
    pub notes: Vec<String>,
    /// The call runs, with its agent's token when it needs one.
    pub ok: bool,
}

fn shown_value(v: &Value, proxy: Option<&str>) -> String {
    match v {
        Value::String(s) if is_token(s) => format!("sha256:{}", redact::fingerprint(s)),
        // A handle is worth nothing once shown, and nothing to the operator:
        // what matters is where the token goes.
        Value::String(s) if s.starts_with(crate::proxy::handles::PREFIX) => format!(
            "a single-use handle ({}…), which the MCP proxy turns into the token in {}",
            crate::proxy::handles::PREFIX,
            proxy.unwrap_or("the upstream's credential")
        ),
        Value::String(s) => format!("\"{}\"", shown(s)),
        other => shown(&other.to_string()),
    }
}

fn prefixes(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|p| format!("\"{}\"", shown(p))).collect();
    match quoted.len() {
        1 => quoted[0].clone(),
        _ => format!("any of {}", quoted.join(", ")),
    }
}

/// A session store that knows nothing, and notes what the pipeline asked it.
struct Unknown(std::cell::RefCell<Vec<String>>);

impl Host for Unknown {
    fn session(&self, _: &str, session_key: &str) -> Result<Option<SessionEntry>, String> {
        self.0.borrow_mut().push(format!(
            "the entry of session {} (who spawned it, its cwd) is in OpenClaw's session store, which explain cannot read; explained as if it had none",
            shown(session_key)
        ));
        Ok(None)
    }
}

/// Explains one call. Fails only when the plugin could not run with this
/// config at all (unreadable config, invalid options).
///
/// The layer is the plugin's own (`Layer::load`: the gate, the parser, the
/// redactor, and the workspace table from the same config), and the call
/// goes through `pipeline::decide`, the very function the hook calls, with
/// the params the hook would read.
pub fn run(args: &ExplainArgs<'_>) -> anyhow::Result<Explanation> {
    let config = args.config.map(OpenClawConfig::load).transpose()?;
    let opts = config::plugin_options(config.as_ref(), args.map)
        .context("the plugin's options are invalid")?;
    let layer = Layer::load(opts, Log::silent());
    if let Some(c) = &config {
        layer.use_openclaw_config(Some(c), &Default::default());
    }
    let stats = layer.stats();
    let opts = layer.engine().options();
    let error = if stats.loaded {
        None
    } else {
        stats.last_error.clone()
    };

    // The bridge reads only the params the call's route declares; so do we.
    let route = layer.engine().route(args.tool);
    let params: Params = args
        .params
        .iter()
        .filter(|(k, _)| {
            route.is_some_and(|r| r.reads.contains(&k.as_str()) || r.scans.contains(&k.as_str()))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let call = ToolCall {
        tool: args.tool,
        agent_id: args.agent,
        session_key: args.session_key,
        params: &params,
        derived_paths: &[],
        call_id: None,
    };
    let sessions = Unknown(Default::default());
    let explained = match route {
        Some(route) => pipeline::decide(&layer, route, &call, &sessions, |d, _| {
            explain(args, opts, d)
        }),
        // No rule concerns the tool: it runs untouched, as the hook leaves it.
        None => explain(args, opts, &Decision::pass()),
    };
    let (token, decision, rule, why, sets, clears, reason, approval, ensures_session) = explained;
    let ok = decision != "block" && token.status != "missing";
    Ok(Explanation {
        tool: shown(args.tool),
        agent: args.agent.map(shown),
        session_key: args.session_key.map(shown),
        map: MapState {
            path: opts.token_map_path.display().to_string(),
            loaded: stats.loaded,
            agents: stats.agents as usize,
            error,
        },
        token,
        decision,
        rule,
        why,
        sets,
        clears,
        reason,
        approval,
        ensures_session,
        notes: sessions.0.into_inner(),
        ok,
    })
}

type Explained = (
    TokenInfo,
    &'static str,
    Option<&'static str>,
    String,
    Vec<SetParam>,
    Vec<String>,
    Option<String>,
    Option<Approval>,
    Option<String>,
);

/// The report's view of one decision.
fn explain(args: &ExplainArgs<'_>, opts: &Options, d: &Decision<'_>) -> Explained {
    let agent = args.agent.map(shown);
    let agent_q = format!("agent \"{}\"", agent.as_deref().unwrap_or(""));
    let token = match d.token {
        TokenStatus::NotOwned => TokenInfo {
            status: "not-needed",
            fingerprint: None,
            why: format!(
                "{} does not start with {}",
                shown(args.tool),
                prefixes(&opts.tool_prefixes)
            ),
        },
        TokenStatus::Injected(t) => TokenInfo {
            status: "injected",
            fingerprint: Some(t.fingerprint()),
            why: format!(
                "{agent_q} has a token in the map (sha256:{})",
                t.fingerprint()
            ),
        },
        TokenStatus::Missing(why) => TokenInfo {
            status: "missing",
            fingerprint: None,
            why: match why {
                Missing::NoAgentId => "the call has no agent id, so no token can be chosen".into(),
                Missing::UnknownAgent => format!("{agent_q} has no token in the map"),
                Missing::NoMap => "the map could not be loaded, so no agent has a token".into(),
                Missing::Stale => "the map is stale (maxStaleSeconds)".into(),
                Missing::Uncontained => {
                    "an agent is not contained, and posture is \"enforce\"".into()
                }
            },
        },
    };
    let (set, cleared) = d.patch().map(|p| p.entries(opts)).unwrap_or_default();
    let place = crate::proxy::server_of(opts, args.tool)
        .and_then(|s| opts.proxy.servers.get(s))
        .map(|s| s.credential.describe(&opts.token_param));
    let sets: Vec<SetParam> = set
        .iter()
        .map(|(k, v)| SetParam {
            param: shown(k),
            value: shown_value(v, place.as_deref()),
        })
        .collect();
    // As the hook: only a param the call holds needs taking out.
    let clears: Vec<String> = cleared
        .iter()
        .filter(|k| args.params.contains_key(k.as_str()))
        .map(|k| shown(k))
        .collect();
    let mut reason = None;
    let mut approval = None;
    let (decision, why) = match &d.verdict {
        _ if matches!(d.token, TokenStatus::Missing(_)) && !d.is_block() => (
            if clears.is_empty() && sets.is_empty() { "pass" } else { "rewrite" },
            format!(
                "onMissingToken is \"pass\", so the call runs without a token: any {} the model wrote is taken out, and the server will refuse the call",
                opts.token_param
            ),
        ),
        Verdict::Pass => (
            "pass",
            "no rule changes this call; it runs as the model wrote it".into(),
        ),
        Verdict::Rewrite(_) if sets.is_empty() && clears.is_empty() => (
            "pass",
            "no rule changes this call; it runs as the model wrote it".into(),
        ),
        Verdict::Rewrite(_) if sets.is_empty() => (
            "rewrite",
            "no rule sets a param, but the call runs without the params below that the model wrote"
                .into(),
        ),
        Verdict::Rewrite(_) => (
            "rewrite",
            "the rule sets these params before the call runs, whatever the model wrote".into(),
        ),
        // The engine scrubbed the reason and the approval already, as it does for the hook.
        Verdict::Block(r) => {
            reason = Some(r.clone());
            (
                "block",
                "the call is not run; the model sees the reason below".into(),
            )
        }
        Verdict::RequireApproval {
            title, description, ..
        } => {
            approval = Some(Approval {
                title: title.clone(),
                description: description.clone(),
            });
            (
                "ask",
                "OpenClaw asks the user before the call runs; once approved, it runs with the params below set".into(),
            )
        }
    };
    let ensures = d
        .ensure_session
        .as_ref()
        .map(|e| shown(&e.session.session_key));
    (
        token, decision, d.rule, why, sets, clears, reason, approval, ensures,
    )
}

impl Explanation {
    pub fn render(&self) -> String {
        let mut out = String::from("claw-identity explain\n");
        let mut line = |k: &str, v: &str| out += &format!("  {k:<9} {v}\n");
        line("tool", &self.tool);
        line("agent", self.agent.as_deref().unwrap_or("(none)"));
        if let Some(s) = &self.session_key {
            line("session", s);
        }
        let map = match &self.map.error {
            None => format!(
                "{} (loaded, {} agent{})",
                self.map.path,
                self.map.agents,
                if self.map.agents == 1 { "" } else { "s" }
            ),
            Some(e) => format!("{} (not loaded: {e})", self.map.path),
        };
        line("map", &map);
        line(
            "token",
            &format!("{}: {}", self.token.status, self.token.why),
        );
        line("decision", self.decision);
        line("rule", self.rule.unwrap_or("(none)"));
        line("why", &self.why);
        for s in &self.sets {
            line("sets", &format!("{} = {}", s.param, s.value));
        }
        for c in &self.clears {
            line("removes", c);
        }
        if let Some(r) = &self.reason {
            line("reason", r);
        }
        if let Some(a) = &self.approval {
            line("asks", &format!("{}: {}", a.title, a.description));
        }
        if let Some(s) = &self.ensures_session {
            line(
                "creates",
                &format!("{s} first, if missing (the call is blocked if that fails)"),
            );
        }
        for n in &self.notes {
            line("note", n);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token_map::tests::T1;
    use std::path::PathBuf;

    /// A map and `config` in a directory of their own, removed with the
    /// first value.
    fn setup(name: &str, config: &str) -> (crate::testing::TempDir, PathBuf, PathBuf) {
        let d = crate::testing::TempDir::new(&format!("explain-{name}"));
        let m = d.write("m.json", format!(r#"{{"paco--francis": "{T1}"}}"#), 0o600);
        let c = d.write("openclaw.json", config, 0o600);
        (d, m, c)
    }

    fn explain(map: &Path, config: Option<&Path>, agent: &str, tool: &str) -> Explanation {
        run(&ExplainArgs {
            map: Some(map.to_str().unwrap()),
            config,
            agent: Some(agent),
            tool,
            session_key: None,
            params: &Params::new(),
        })
        .unwrap()
    }

    #[test]
    fn a_known_agent_gets_its_token_shown_as_a_fingerprint() {
        let (_dir, m, _) = setup("known", "{}");
        let e = explain(&m, None, "paco--francis", "claw-os__claw_notes");
        assert_eq!(
            (e.decision, e.rule, e.ok),
            ("rewrite", Some("auth-token"), true)
        );
        let fp = redact::fingerprint(T1);
        assert_eq!(e.sets[0].value, format!("sha256:{fp}"));
        let text = e.render();
        assert!(
            text.contains(&format!("  sets      auth_token = sha256:{fp}\n")),
            "{text}"
        );
        assert!(!text.contains(&T1[..16]));
    }

    #[test]
    fn a_proxied_tool_shows_where_the_proxy_puts_the_token_not_a_handle() {
        let (_dir, m, c) = setup(
            "proxied",
            "{ plugins: { entries: { 'claw-identity': { config: { posture: 'warn', proxy: { port: 9, servers: { 'claw-os': { upstream: { url: 'http://127.0.0.1:1/mcp' } } } } } } } } }",
        );
        let e = explain(&m, Some(&c), "paco--francis", "claw-os__claw_notes");
        assert_eq!(e.sets[0].param, "auth_token");
        assert_eq!(
            e.sets[0].value,
            "a single-use handle (clh1_…), which the MCP proxy turns into the token in the Authorization header (Bearer)"
        );
        assert!(!e.render().contains(&T1[..16]));
    }

    #[test]
    fn an_unknown_agent_passes_or_blocks_as_configured() {
        let (_dir, m, c) = setup(
            "unknown",
            "{ plugins: { entries: { 'claw-identity': { config: { onMissingToken: 'block', posture: 'warn' } } } } }",
        );
        let e = explain(&m, None, "ghost", "claw-os__x");
        assert_eq!(
            (e.decision, e.token.status, e.ok),
            ("pass", "missing", false)
        );
        let e = explain(&m, Some(&c), "ghost", "claw-os__x");
        assert_eq!((e.decision, e.rule), ("block", Some("auth-token")));
        assert!(e
            .reason
            .unwrap()
            .starts_with("auth-token: agent \"ghost\" has no token"));
    }

    #[test]
    fn with_a_config_whose_agents_are_not_contained_explain_shows_the_refusal_the_model_gets() {
        let (_dir, m, c) = setup(
            "posture",
            "{ agents: { entries: { 'paco--francis': {} } } }",
        );
        let e = explain(&m, Some(&c), "paco--francis", "claw-os__claw_notes");
        assert_eq!((e.decision, e.rule), ("block", Some("posture")));
        let reason = e.reason.unwrap();
        assert!(
            reason.starts_with("posture: claw-identity serves no token"),
            "{reason}"
        );
        assert!(reason.contains("paco--francis: "), "{reason}");
        assert!(!reason.contains(&T1[..16]), "{reason}");
    }

    #[test]
    fn an_unowned_tool_needs_no_token() {
        let (_dir, m, _) = setup("unowned", "{}");
        let e = explain(&m, None, "paco--francis", "exec");
        assert_eq!(
            (e.decision, e.rule, e.token.status, e.ok),
            ("pass", None, "not-needed", true)
        );
        assert_eq!(e.token.why, "exec does not start with \"claw-os__\"");
    }

    #[test]
    fn an_unloadable_map_is_shown_with_its_error() {
        let (_dir, m, _) = setup("nomap", "{}");
        let e = explain(
            &m.with_file_name("nope.json"),
            None,
            "paco--francis",
            "claw-os__x",
        );
        assert!(!e.map.loaded);
        assert!(e
            .map
            .error
            .as_deref()
            .unwrap()
            .ends_with("or set tokenMapPath"));
        assert_eq!(
            e.token.why,
            "the map could not be loaded, so no agent has a token"
        );
    }

    fn explain_call(
        map: &Path,
        agent: &str,
        session: &str,
        tool: &str,
        params: serde_json::Value,
    ) -> Explanation {
        let serde_json::Value::Object(params) = params else {
            panic!("params must be an object")
        };
        run(&ExplainArgs {
            map: Some(map.to_str().unwrap()),
            config: None,
            agent: Some(agent),
            tool,
            session_key: Some(session),
            params: &params,
        })
        .unwrap()
    }

    #[test]
    fn rules_that_read_params_get_them_as_from_the_hook() {
        let (_dir, m, _) = setup("params", "{}");
        let main = "agent:paco--francis:main";
        let e = explain_call(
            &m,
            "paco--francis",
            main,
            "sessions_send",
            serde_json::json!({"agentId": "pepito--atlas", "message": "hi"}),
        );
        assert_eq!(
            (e.decision, e.rule, e.ok),
            ("block", Some("cross-user-send"), false)
        );
        let e = explain_call(
            &m,
            "paco--francis",
            main,
            "sessions_send",
            serde_json::json!({"agentId": "paco--dali", "message": "hi"}),
        );
        assert_eq!(
            (e.decision, e.rule),
            ("rewrite", Some("delegation-session"))
        );
        assert_eq!(e.sets[0].param, "sessionKey");
        assert_eq!(
            e.ensures_session.as_deref(),
            Some(e.sets[0].value.trim_matches('"'))
        );
    }

    #[test]
    fn a_sub_agent_call_is_decided_as_with_no_recorded_spawner_and_says_so() {
        let (_dir, m, _) = setup("lineage", "{}");
        let e = explain_call(
            &m,
            "paco--francis",
            "agent:paco--francis:subagent:1",
            "claw-os__x",
            serde_json::json!({}),
        );
        assert_eq!(e.decision, "rewrite");
        assert_eq!(e.notes.len(), 1);
        assert!(e.render().contains("  note      the entry of session agent:paco--francis:subagent:1 (who spawned it, its cwd) is in OpenClaw's session store"));
    }

    #[test]
    fn invalid_plugin_options_are_an_error() {
        let (_dir, m, c) = setup(
            "badopts",
            "{ plugins: { entries: { 'claw-identity': { config: { nope: 1 } } } } }",
        );
        let err = run(&ExplainArgs {
            map: Some(m.to_str().unwrap()),
            config: Some(&c),
            agent: Some("a"),
            tool: "claw-os__x",
            session_key: None,
            params: &Params::new(),
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "the plugin's options are invalid");
        let err = format!("{err:#}");
        assert!(
            err.starts_with("the plugin's options are invalid: unknown option \"nope\""),
            "{err}"
        );
    }
}
