//! The rule engine on arbitrary calls (tool name, agent id, session key,
//! params) against an arbitrary map and options. Invariants, whatever the
//! input:
//! - the token param is only ever set to the calling agent's own token;
//! - no other rewritten param carries a map token the caller did not send;
//! - no block reason or approval text holds 16 characters of any map token.
#![no_main]

use arbitrary::Arbitrary;
use claw_identity_core::engine::Engine;
use claw_identity_core::options::Options;
use claw_identity_core::redact::results::Redactor;
use claw_identity_core::rules::{Decision, MapView, Params, Patch, ToolCall, Verdict};
use claw_identity_core::sessions::NoHost;
use claw_identity_core::token_map::parse;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    /// Picks one of `PRESETS`.
    preset: u8,
    /// Merged in as the `rules` option when the result is valid.
    rules_json: String,
    tool: String,
    /// Picks a map agent (so known agents are hit often), else `agent`.
    agent_pick: u8,
    agent: Option<String>,
    session_key: Option<String>,
    params_json: String,
    map: Vec<(String, [u8; 32])>,
    loaded: bool,
    stale: bool,
}

const PRESETS: &[&str] = &[
    r#"{"tokenMapPath": "/fuzz/map.json"}"#,
    r#"{"tokenMapPath": "/fuzz/map.json", "onMissingToken": "block"}"#,
    r#"{"tokenMapPath": "/fuzz/map.json", "toolPrefix": ["claw-os__", "x"], "tokenParam": "tok"}"#,
];

fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn has_run_of(text: &str, token: &str) -> bool {
    (0..=token.len() - 16).any(|i| text.contains(&token[i..i + 16]))
}

fuzz_target!(|input: Input| {
    let preset = PRESETS[input.preset as usize % PRESETS.len()];
    let opts = serde_json::from_str::<serde_json::Value>(&input.rules_json)
        .ok()
        .filter(serde_json::Value::is_object)
        .and_then(|rules| {
            let mut o: serde_json::Value = serde_json::from_str(preset).unwrap();
            o["rules"] = rules;
            Options::from_json(&o.to_string()).ok()
        })
        .unwrap_or_else(|| Options::from_json(preset).unwrap());
    let token_param = opts.token_param.clone();
    let engine = Engine::new(opts);

    // A map where two agents hold one token is refused by design (its owner
    // would be ambiguous), so each token is given to its first agent only.
    let mut seen = std::collections::HashSet::new();
    let doc: serde_json::Map<String, serde_json::Value> = input
        .map
        .iter()
        .take(16)
        .filter(|(_, t)| seen.insert(*t))
        .map(|(a, t)| (a.clone(), serde_json::Value::String(hex(t))))
        .collect();
    let map = parse(serde_json::Value::Object(doc).to_string().as_bytes())
        .expect("a map of string values, one token per agent, always parses")
        .map;
    let all: Vec<(String, String)> = map
        .sorted()
        .into_iter()
        .map(|(a, t)| (a.to_owned(), t.expose().to_owned()))
        .collect();

    let agent = match all.get(input.agent_pick as usize) {
        Some((a, _)) => Some(a.as_str()),
        None => input.agent.as_deref(),
    };
    let params: Params = match serde_json::from_str(&input.params_json) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => Params::new(),
    };
    let call = ToolCall {
        tool: &input.tool,
        agent_id: agent,
        session_key: input.session_key.as_deref(),
        params: &params,
        derived_paths: &[],
        call_id: None,
    };
    let redactor = Redactor::new(all.iter().map(|(_, t)| t.as_str()));
    let view = MapView {
        map: &map,
        generation: 0,
        loaded: input.loaded,
        stale: input.stale,
        redactor: Some(&redactor),
    };
    // As the hook does: route the call once and decide it by its row; a
    // tool no row names passes untouched.
    let d = match engine.route(call.tool) {
        Some(route) => engine.decide(route, &call, &view, &NoHost),
        None => Decision::pass(),
    };

    // What the caller sent may legitimately come back in a rewrite.
    let sent = format!(
        "{} {:?} {:?} {}",
        input.tool, agent, input.session_key, input.params_json
    );
    // Every param a patch sets: the token param only ever to the caller's
    // own token, from a loaded, fresh map; no other param a map token the
    // caller did not send.
    let check_patch = |patch: &Patch<'_>| {
        let (set, _cleared) = patch.entries(engine.options());
        for (key, value) in &set {
            let text = value.to_string();
            if *key == token_param {
                let own = agent.and_then(|a| map.get(a)).map(|t| t.expose());
                assert_eq!(
                    value.as_str(),
                    own,
                    "the token param was set to something other than the caller's own token"
                );
                assert!(
                    input.loaded && !input.stale,
                    "injected from an unloaded or stale map"
                );
            } else {
                for (owner, token) in &all {
                    assert!(
                        !text.contains(token.as_str()) || sent.contains(token.as_str()),
                        "param {key} carries the token of {owner}"
                    );
                }
            }
        }
    };
    match &d.verdict {
        Verdict::Pass => {}
        Verdict::Rewrite(patch) => check_patch(patch),
        Verdict::Block(reason) => {
            for (owner, token) in &all {
                assert!(
                    !has_run_of(reason, token),
                    "block reason holds part of the token of {owner}"
                );
            }
        }
        Verdict::RequireApproval {
            title,
            description,
            then,
        } => {
            for (owner, token) in &all {
                assert!(
                    !has_run_of(title, token) && !has_run_of(description, token),
                    "approval text holds part of the token of {owner}"
                );
            }
            check_patch(then);
        }
    }
});
