//! Operator tools: `claw-identity doctor`, `audit`, `explain` and the
//! atomic map writer (`writeTokenMap`, `claw-identity write-map`). Pure Rust
//! over the very gate, parser and engine the plugin uses, so what they report
//! is what the plugin does; `lib.rs` wraps them for JavaScript.

pub mod after_hook;
pub mod audit;
pub mod checks;
pub mod doctor;
pub mod explain;
pub mod finding;
pub mod mcp;
pub mod render;
pub mod writer;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::redact::scrub;

/// What an operator tool shows, last: every string of its text and of its
/// report (keys too) with each run of 16 or more hex digits shown by its
/// fingerprint only (`redact::scrub`, the rule `redact::shown` applies to
/// ids). doctor, audit and explain echo what the config, the map and the
/// operator gave them (agent ids, binds, option values, params), and a
/// token pasted into any of them would be printed as it is. Token-blind on
/// purpose: it hides a token of this map, a piece of one, a token of
/// another map or one not minted into any map yet alike, and needs no map
/// (audit never reads one; doctor may not be able to). The tools' own
/// fingerprints are 12 digits, and nothing an operator needs from them is
/// 16 hex digits in a row.
pub fn shown_report<T: Serialize>(text: &str, report: &T) -> anyhow::Result<(String, Value)> {
    let mut value = serde_json::to_value(report).context("cannot encode the report")?;
    shown_value(&mut value);
    Ok((scrub(text), value))
}

/// [`shown_report`] on a report that is data only.
pub fn shown_value(value: &mut Value) {
    match value {
        Value::String(s) => *s = scrub(s),
        Value::Array(items) => items.iter_mut().for_each(shown_value),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                shown_value(&mut v);
                map.insert(scrub(&k), v);
            }
        }
        _ => {}
    }
}

/// What only a live system can tell, gathered by the JS side for
/// `doctor --mcp` and `audit --mcp` (lib/probe.js): each owned MCP server's
/// tool list, and OpenClaw's own list of loaded plugins with their hooks.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Live {
    /// One answer per server of [`mcp::plan`], by server name.
    #[serde(default)]
    pub servers: Vec<mcp::Probe>,
    /// `openclaw plugins inspect --all --runtime --json`, as it printed it.
    #[serde(default)]
    pub plugins: Option<Vec<Value>>,
    /// Why `plugins` is missing, when OpenClaw was asked and did not answer.
    #[serde(default)]
    pub plugins_error: Option<String>,
    /// Each proxied server's tool list as the gateway's own proxy serves it
    /// (the `claw-identity.proxy` gateway method): what the model sees.
    /// `None` when no gateway was asked.
    #[serde(default)]
    pub proxied: Option<Vec<mcp::Probe>>,
    /// Why `proxied` is missing, when a gateway was asked and did not answer.
    #[serde(default)]
    pub proxied_error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;

    /// A token pasted where doctor, audit and explain echo what they read.
    const P: &str = "5b97e5cf762f6106612a771fa2b42f9afc2458e2932e8598133c798f9782e8b9";

    fn leaks(text: &str) -> bool {
        let t = text.to_ascii_lowercase();
        (0..=48).any(|i| t.contains(&P[i..i + 16]))
    }

    #[test]
    fn every_string_of_a_report_is_shown_without_a_token_keys_too() {
        let mut v = json!({"agentId": P, "list": [format!("bind /srv/{P}:/x"), 3], P: {"k": "sha256:0123456789ab"}});
        shown_value(&mut v);
        assert!(!leaks(&v.to_string()), "{}", scrub(&v.to_string()));
        assert_eq!(v["list"][1], 3);
        assert_eq!(
            v["list"][0].as_str().unwrap().split(' ').next(),
            Some("bind")
        );
        assert!(v
            .as_object()
            .unwrap()
            .values()
            .any(|x| x["k"] == "sha256:0123456789ab"));
    }

    #[test]
    fn doctor_audit_and_explain_print_no_token_pasted_into_an_id_a_bind_an_option_or_a_param() {
        let d = crate::testing::TempDir::new("ops-shown");
        let map = d.join("agent-tokens.json");
        let t1 = crate::token_map::tests::T1;
        std::fs::write(&map, format!(r#"{{"{P}": "{t1}"}}"#)).unwrap();
        std::fs::set_permissions(&map, std::fs::Permissions::from_mode(0o600)).unwrap();
        let config = |plugin: serde_json::Value| {
            let c = json!({
                "agents": {"entries": {
                    P: {"sandbox": {"mode": "all", "docker": {"binds": [format!("/srv/{P}:/x:ro")]}}},
                    "paco--francis": {"workspace": format!("/w/{P}"), "tools": {"exec": {"host": P}}},
                }},
                "plugins": {"entries": {"claw-identity": {"enabled": true, "config": plugin}}},
            });
            let path = d.join("openclaw.json");
            std::fs::write(&path, c.to_string()).unwrap();
            path
        };
        let m = map.to_str().unwrap();
        for plugin in [
            json!({"tokenMapPath": m}),
            json!({"tokenMapPath": m, "tokenParam": P}),
            json!({"tokenMapPath": m, "toolPrefix": P}),
            json!({"tokenMapPath": m, "onMissingToken": P}),
            json!({"tokenMapPath": format!("{m}{P}")}),
        ] {
            let cfg = config(plugin.clone());
            // Failure messages show the case and the output scrubbed: no token printed.
            let case = scrub(&plugin.to_string());
            let r = doctor::run(&doctor::DoctorArgs {
                map: None,
                config: Some(&cfg),
                live: None,
            })
            .unwrap();
            let (text, json) = shown_report(&r.render(), &r).unwrap();
            assert!(
                !leaks(&text) && !leaks(&json.to_string()),
                "doctor, {case}: {}",
                scrub(&text)
            );
            let mut findings =
                serde_json::to_value(render::audit_findings(&audit::run(&cfg, None))).unwrap();
            shown_value(&mut findings);
            assert!(!leaks(&findings.to_string()), "audit, {case}");
            let params = serde_json::Map::from_iter([("note".to_owned(), json!(P))]);
            match explain::run(&explain::ExplainArgs {
                map: None,
                config: Some(&cfg),
                agent: Some(P),
                tool: P,
                session_key: Some(&format!("agent:{P}:main")),
                params: &params,
            }) {
                Ok(e) => {
                    let (text, json) = shown_report(&e.render(), &e).unwrap();
                    assert!(
                        !leaks(&text) && !leaks(&json.to_string()),
                        "explain, {case}: {}",
                        scrub(&text)
                    );
                }
                Err(e) => {
                    let e = format!("{e:#}");
                    assert!(!leaks(&e), "explain, {case}: {}", scrub(&e))
                }
            }
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
