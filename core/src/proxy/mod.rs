//! The loopback MCP proxy's decisions (`docs/design.md`, "The MCP proxy").
//! For a server the `proxy` option names, the real token never enters the
//! tool pipeline:
//! - the owned-tool rule's token goes into the call as a single-use
//!   [handle](handles) instead ([`with_handle`], from the one pipeline);
//! - the proxy (`lib/proxy.js`, in the gateway) hands each `tools/call` to
//!   [`redeem`], which spends the handle and gives the arguments to forward
//!   and the agent's credential in the form its upstream takes;
//! - `tools/list` goes through [`schema::strip`]: the model never sees the
//!   credential param or the params the layer fills;
//! - only the gateway's own sockets get an answer ([`peer`]).
//!
//! JS carries bytes; what is forwarded, with which credential, is decided
//! here.

pub mod handles;
pub mod peer;
pub mod schema;

use std::time::Duration;

use serde_json::{Map, Value};

use crate::call::{Decision, Patch, TokenStatus, ToolCall, Verdict};
use crate::layer::Layer;
use crate::openclaw::tool_names;
pub use crate::options::proxy::{Credential, ProxyOptions, ProxyServer, Upstream};
use crate::options::Options;
use crate::redact::shown;
pub use handles::{Grant, Refused};

/// Rule id of the proxy's refusals.
pub const RULE_ID: &str = crate::call::rule_id::PROXY;

/// The proxied server `tool` (an id as the hook sees it) belongs to: the
/// one with the longest matching prefix.
pub fn server_of<'o>(opts: &'o Options, tool: &str) -> Option<&'o str> {
    opts.proxy
        .servers
        .iter()
        .filter(|(_, s)| tool.starts_with(s.tool_prefix.as_str()))
        .max_by_key(|(_, s)| s.tool_prefix.len())
        .map(|(name, _)| name.as_str())
}

/// `d` for a call to a proxied server: the token it injects becomes a
/// fresh handle. A handle that can't be minted refuses the call (it is
/// never sent with the token instead).
pub fn with_handle<'a>(layer: &Layer, call: &ToolCall<'_>, mut d: Decision<'a>) -> Decision<'a> {
    let opts = layer.engine().options();
    if opts.proxy.servers.is_empty() || !matches!(d.token, TokenStatus::Injected(_)) {
        return d;
    }
    let (Some(server), Some(agent)) = (server_of(opts, call.tool), call.agent_id) else {
        return d;
    };
    let Verdict::Rewrite(patch) = &mut d.verdict else {
        return d;
    };
    let grant = Grant {
        agent: agent.to_owned(),
        server: server.to_owned(),
        tool: call.tool.to_owned(),
        call_id: call.call_id.map(str::to_owned),
    };
    match handles::store().mint(grant, Duration::from_millis(opts.proxy.handle_ttl_ms)) {
        Some(h) => {
            patch.handle = Some(h);
            d
        }
        None => {
            crate::log_error!(
                layer.log(),
                "cannot mint a proxy handle for tool={tool} (no system randomness, or {cap} handles live): the call was refused",
                tool = %shown(call.tool),
                cap = handles::CAP,
            );
            Decision::block(RULE_ID, format!("{RULE_ID}: claw-identity could not make a handle for {}, so it was not called; do not retry it now. The operator will find why in the gateway log.", shown(call.tool)))
        }
    }
}

/// What the proxy forwards for one redeemed call.
#[derive(Debug, Clone, PartialEq)]
pub struct Redeemed {
    pub agent: String,
    /// The agent's token's fingerprint: the proxy keeps one upstream
    /// connection per (server, agent, fingerprint), so a rotated token
    /// opens a new one.
    pub fingerprint: String,
    /// The call's arguments, handle taken out (and, in the argument mode,
    /// the token put in).
    pub arguments: Map<String, Value>,
    /// The header or env var that carries the token, and its value.
    pub credential: Option<(Credential, String)>,
    pub call_id: Option<String>,
}

/// Why a call through the proxy was not forwarded: shown to the model as
/// the tool's error result, and logged.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal(pub String);

/// Redeems the handle in `arguments` of a `tools/call` of `tool` (the
/// upstream's name) on `server`: spends it, checks it was minted for this
/// server and tool and is live, and reads the agent's token from the map
/// in force now. Logs the outcome either way.
pub fn redeem(
    layer: &Layer,
    server: &str,
    tool: &str,
    arguments: Value,
) -> Result<Redeemed, Refusal> {
    let out = redeem_quiet(layer, server, tool, arguments);
    match &out {
        Ok(r) => crate::log_info!(
            layer.log(),
            "proxy: {server}/{tool} for agent={agent} with its token sha256:{fp} in {place}{call}",
            server = %shown(server),
            tool = %shown(tool),
            agent = %shown(&r.agent),
            fp = %r.fingerprint,
            place = %place(layer, r),
            call = %r.call_id.as_deref().map(|c| format!(" (call {})", shown(c))).unwrap_or_default(),
        ),
        Err(Refusal(why)) => crate::log_warn!(layer.log(), "{why}", why = %why),
    }
    out
}

fn place(layer: &Layer, r: &Redeemed) -> String {
    let opts = layer.engine().options();
    match &r.credential {
        Some((c, _)) => c.describe(&opts.token_param),
        None => Credential::Argument.describe(&opts.token_param),
    }
}

fn redeem_quiet(
    layer: &Layer,
    server: &str,
    tool: &str,
    arguments: Value,
) -> Result<Redeemed, Refusal> {
    let opts = layer.engine().options();
    let refuse = |why: String| {
        Refusal(format!(
            "{RULE_ID}: {}/{} was not called: {why}",
            shown(server),
            shown(tool)
        ))
    };
    let Some(config) = opts.proxy.servers.get(server) else {
        return Err(refuse(
            "claw-identity proxies no server of that name".into(),
        ));
    };
    let mut arguments = match arguments {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => return Err(refuse("its arguments are not an object".into())),
    };
    // The handle is taken out whatever happens next: it never reaches the upstream.
    let handle = arguments.remove(&opts.token_param);
    let Some(Value::String(handle)) = handle else {
        return Err(refuse(format!(
            "it carries no claw-identity handle in {}; only a call OpenClaw ran through claw-identity's policy can use the proxy; do not retry it",
            opts.token_param
        )));
    };
    let safe = tool_names::fragment(server, "mcp", Some(tool_names::SERVER_MAX));
    let tool_id = tool_names::tool_id(&safe, tool).to_lowercase();
    let grant = handles::store()
        .redeem(&handle, server, &tool_id)
        .map_err(|r| {
            refuse(match r {
                Refused::Unknown => "its handle is unknown or already spent (a handle is good for one call); do not retry it".into(),
                Refused::Expired => format!("its handle expired (after {} ms); ask the user to run the request again", opts.proxy.handle_ttl_ms),
                Refused::Mismatch => "its handle was made for another tool; do not retry it".into(),
            })
        })?;
    if let Some(block) = layer.engine().posture().block.clone() {
        return Err(Refusal(block));
    }
    let token = layer.with_view(|view| {
        if view.stale || !view.loaded {
            return None;
        }
        view.map.get(&grant.agent).cloned()
    });
    let Some(token) = token else {
        return Err(refuse(format!(
            "agent \"{}\" has no token in the token map in force now; do not retry it",
            shown(&grant.agent)
        )));
    };
    // The conversation is claw-identity's param for claw-os's contract
    // (the argument mode); an upstream that takes its credential out of
    // band never declared it, and gets no session key of OpenClaw's.
    if config.credential != Credential::Argument {
        arguments.remove(&opts.rules.conversation_id.param);
    }
    let credential = match &config.credential {
        Credential::Argument => {
            arguments.insert(
                opts.token_param.clone(),
                Value::String(token.expose().to_owned()),
            );
            None
        }
        c => Some((c.clone(), token.expose().to_owned())),
    };
    Ok(Redeemed {
        agent: grant.agent,
        fingerprint: token.fingerprint(),
        arguments,
        credential,
        call_id: grant.call_id,
    })
}

/// The connection a request with no handle (`initialize`, `tools/list`,
/// resources, prompts) goes through: `listAs`'s agent and credential, or
/// none. Never the argument mode's token: a request with no tool call has
/// no argument to carry it.
pub fn list_identity(layer: &Layer, server: &str) -> Result<Option<Redeemed>, Refusal> {
    let opts = layer.engine().options();
    let refuse = |why: String| Refusal(format!("{RULE_ID}: {}: {why}", shown(server)));
    let Some(config) = opts.proxy.servers.get(server) else {
        return Err(refuse(
            "claw-identity proxies no server of that name".into(),
        ));
    };
    let Some(agent) = &config.list_as else {
        return Ok(None);
    };
    if let Some(block) = layer.engine().posture().block.clone() {
        return Err(Refusal(block));
    }
    let token = layer.with_view(|v| {
        (v.loaded && !v.stale)
            .then(|| v.map.get(agent).cloned())
            .flatten()
    });
    let Some(token) = token else {
        return Err(refuse(format!(
            "listAs agent \"{}\" has no token in the token map in force",
            shown(agent)
        )));
    };
    Ok(Some(Redeemed {
        agent: agent.clone(),
        fingerprint: token.fingerprint(),
        arguments: Map::new(),
        credential: match &config.credential {
            Credential::Argument => None,
            c => Some((c.clone(), token.expose().to_owned())),
        },
        call_id: None,
    }))
}

/// Whether `patch` writes a handle (for reports).
pub fn writes_handle(patch: &Patch<'_>) -> bool {
    patch.handle.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::Slot;
    use crate::log::tests::collecting;
    use crate::rules::Params;
    use crate::testing::{TempDir, T1, T2};
    use serde_json::json;

    /// A layer over a map of francis (T1) and dali (T2), proxying `server` with `credential`.
    fn layer(dir: &TempDir, credential: Value) -> (Layer, crate::log::tests::Lines) {
        let map = dir.map(format!(
            r#"{{"paco--francis": "{T1}", "paco--dali": "{T2}"}}"#
        ));
        let opts = json!({
            "tokenMapPath": map,
            "posture": "warn",
            "proxy": {"port": 9, "servers": {
                "claw-os": {"upstream": {"url": "http://127.0.0.1:1/mcp"}, "credential": credential},
            }},
        });
        let (log, lines) = collecting();
        (
            Layer::load(Options::from_json(&opts.to_string()).unwrap(), log),
            lines,
        )
    }

    /// The params the one pipeline writes for `tool` called by `agent`.
    fn run(layer: &Layer, tool: &str, agent: &str) -> Map<String, Value> {
        let params = Params::new();
        let call = ToolCall {
            tool,
            agent_id: Some(agent),
            session_key: Some("agent:paco--francis:main"),
            params: &params,
            derived_paths: &[],
            call_id: Some("call_7"),
        };
        let route = layer.engine().route(tool).expect("owned");
        crate::pipeline::decide(layer, route, &call, &crate::sessions::NoHost, |d, _| {
            let patch = d.patch().expect("a rewrite");
            assert!(matches!(patch.token, Slot::Set(_)));
            patch
                .entries(layer.engine().options())
                .0
                .into_iter()
                .collect()
        })
    }

    #[test]
    fn a_proxied_call_carries_a_handle_that_redeems_once_to_its_agents_credential() {
        for (credential, want) in [
            (json!({"in": "argument"}), None),
            (json!({"in": "bearer"}), Some(Credential::Bearer)),
            (
                json!({"in": "header", "name": "X-Api-Key"}),
                Some(Credential::Header("x-api-key".into())),
            ),
        ] {
            let dir = TempDir::new("proxy-redeem");
            let (l, lines) = layer(&dir, credential);
            let params = run(&l, "claw-os__claw_notes", "paco--dali");
            let handle = params["auth_token"].as_str().unwrap().to_owned();
            assert!(handle.starts_with(handles::PREFIX), "{handle}");
            let mut args = params.clone();
            args.insert("note".into(), json!("hi"));
            let r = redeem(&l, "claw-os", "claw_notes", Value::Object(args.clone())).unwrap();
            assert_eq!(r.agent, "paco--dali");
            assert_eq!(r.call_id.as_deref(), Some("call_7"));
            assert_eq!(r.arguments["note"], "hi");
            match &want {
                None => {
                    assert_eq!(r.arguments["auth_token"], T2);
                    assert_eq!(r.credential, None);
                }
                Some(c) => {
                    assert!(
                        !r.arguments.contains_key("auth_token"),
                        "the handle is taken out"
                    );
                    assert_eq!(r.credential, Some((c.clone(), T2.to_owned())));
                }
            }
            // Spent: the same arguments again get nothing.
            let again = redeem(&l, "claw-os", "claw_notes", Value::Object(args)).unwrap_err();
            assert!(again.0.contains("unknown or already spent"), "{}", again.0);
            let log = format!("{:?}", lines.lock());
            assert!(!log.contains(T2), "a token in the log: {log}");
            assert!(
                log.contains("agent=paco--dali") && log.contains("call call_7"),
                "{log}"
            );
        }
    }

    #[test]
    fn a_call_without_a_live_handle_for_that_tool_is_never_forwarded() {
        let dir = TempDir::new("proxy-refuse");
        let (l, lines) = layer(&dir, json!({"in": "argument"}));
        for args in [
            json!({}),
            json!({"auth_token": T1}),
            json!({"auth_token": 5}),
            json!("x"),
        ] {
            let e = redeem(&l, "claw-os", "claw_notes", args.clone()).unwrap_err();
            assert!(
                e.0.starts_with("proxy: claw-os/claw_notes was not called"),
                "{args}: {}",
                e.0
            );
        }
        // A handle for one tool does not call another, and is spent by trying.
        let h = run(&l, "claw-os__claw_notes", "paco--francis")["auth_token"].clone();
        let e = redeem(&l, "claw-os", "claw_audio", json!({"auth_token": h})).unwrap_err();
        assert!(e.0.contains("made for another tool"), "{}", e.0);
        assert!(redeem(&l, "claw-os", "claw_notes", json!({"auth_token": h})).is_err());
        // Nor does it call another server.
        let h = run(&l, "claw-os__claw_notes", "paco--francis")["auth_token"].clone();
        assert!(redeem(&l, "elsewhere", "claw_notes", json!({"auth_token": h})).is_err());
        let log = format!("{:?}", lines.lock());
        assert!(!log.contains(T1), "a token in the log");
    }

    #[test]
    fn the_credential_is_read_when_the_handle_is_redeemed_so_a_rotation_or_revocation_wins() {
        let dir = TempDir::new("proxy-rotate");
        let (l, _) = layer(&dir, json!({"in": "bearer"}));
        l.watch().unwrap();
        let h1 = run(&l, "claw-os__claw_notes", "paco--francis")["auth_token"].clone();
        let h2 = run(&l, "claw-os__claw_notes", "paco--francis")["auth_token"].clone();
        let before = l.stats().reloads;
        crate::testing::write(
            &dir.join("agent-tokens.json.tmp"),
            format!(r#"{{"paco--francis": "{T2}"}}"#),
            0o600,
        );
        std::fs::rename(
            dir.join("agent-tokens.json.tmp"),
            dir.join("agent-tokens.json"),
        )
        .unwrap();
        let t = std::time::Instant::now();
        while l.stats().reloads == before && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let r = redeem(&l, "claw-os", "claw_notes", json!({"auth_token": h1})).unwrap();
        assert_eq!(r.credential, Some((Credential::Bearer, T2.to_owned())));
        crate::testing::write(
            &dir.join("agent-tokens.json.tmp"),
            r#"{"paco--dali": "3333333333333333333333333333333333333333333333333333333333333333"}"#,
            0o600,
        );
        let before = l.stats().reloads;
        std::fs::rename(
            dir.join("agent-tokens.json.tmp"),
            dir.join("agent-tokens.json"),
        )
        .unwrap();
        while l.stats().reloads == before && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let e = redeem(&l, "claw-os", "claw_notes", json!({"auth_token": h2})).unwrap_err();
        assert!(
            e.0.contains("has no token in the token map in force now"),
            "{}",
            e.0
        );
        l.close();
    }

    #[test]
    fn a_tool_of_a_server_the_proxy_does_not_serve_still_gets_its_token() {
        let dir = TempDir::new("proxy-direct");
        let map = dir.map(format!(r#"{{"paco--francis": "{T1}"}}"#));
        let opts = json!({"tokenMapPath": map, "posture": "warn", "toolPrefix": ["claw-os__", "notes__"],
            "proxy": {"port": 9, "servers": {"notes": {"upstream": {"url": "http://h/"}}}}});
        let l = Layer::load(
            Options::from_json(&opts.to_string()).unwrap(),
            crate::log::Log::silent(),
        );
        assert_eq!(
            run(&l, "claw-os__claw_notes", "paco--francis")["auth_token"],
            T1
        );
        assert!(run(&l, "notes__search", "paco--francis")["auth_token"]
            .as_str()
            .unwrap()
            .starts_with(handles::PREFIX));
        // A proxied server's tools are owned without a toolPrefix for them.
        let opts = json!({"tokenMapPath": dir.join("agent-tokens.json"), "proxy": {"port": 9, "servers": {"My Notes": {"upstream": {"url": "http://h/"}}}}});
        let o = Options::from_json(&opts.to_string()).unwrap();
        assert_eq!(o.tool_prefixes, vec!["claw-os__", "my-notes__"]);
        assert_eq!(server_of(&o, "my-notes__search"), Some("My Notes"));
    }
}
