//! Where an injected token still travels after claw-identity's policy set
//! it, as far as the config and OpenClaw's own plugin list tell:
//! - `diagnostics.otel.captureContent` exports each tool call's final params
//!   (the token) and its raw output to the OTEL collector;
//! - every other plugin's `after_tool_call` hook, every ordinary
//!   `before_tool_call` hook (they all run after the trusted tier) and an
//!   installed plugin's trusted policy loaded later get the rewritten params;
//! - `tools.exec.notifyOnExit` (on by default) turns the end of a
//!   backgrounded command into a system event for the agent's next turn, not
//!   a tool result, so no result middleware sees its output.

use serde_json::Value;

use super::finding::{Finding, Scope, Severity};
use super::Live;
use crate::openclaw::config::{OpenClawConfig, PLUGIN_ID};
use crate::options::Options;
use crate::redact::shown;

/// The owned tools whose calls still carry the token: those of no server
/// behind the MCP proxy (whose calls carry a handle), as `toolPrefix`
/// names them; empty when the proxy serves every owned tool.
fn carrying_token(opts: &Options) -> Vec<&str> {
    let proxied: Vec<String> = opts
        .proxy
        .servers
        .keys()
        .map(|s| crate::openclaw::tool_names::server_prefix(s))
        .collect();
    opts.tool_prefixes
        .iter()
        .filter(|p| !proxied.iter().any(|q| p.starts_with(q.as_str())))
        .map(String::as_str)
        .collect()
}

/// Who gets a token in the params, said for the tools that carry one.
fn with_token(opts: &Options) -> Option<String> {
    let t = carrying_token(opts);
    if t.is_empty() {
        return None;
    }
    Some(if opts.proxy.servers.is_empty() {
        String::new()
    } else {
        format!(
            " (for the tools of {}, which are not behind claw-identity's MCP proxy; the proxied servers' calls carry single-use handles)",
            t.iter().map(|p| format!("\"{}*\"", shown(p))).collect::<Vec<_>>().join(", ")
        )
    })
}

/// How many characters of a backgrounded command's output OpenClaw puts in
/// its completion notice (`DEFAULT_NOTIFY_SNIPPET_CHARS`,
/// `bash-tools.exec-runtime-*.mjs`).
const NOTIFY_SNIPPET_CHARS: usize = 180;

fn on(v: Option<&Value>) -> bool {
    v == Some(&Value::Bool(true))
}

/// The findings the config alone gives: OTEL content capture, and exec
/// completion notices for agents with a shell on the host.
pub fn config_findings(c: &OpenClawConfig, opts: &Options) -> Vec<Finding> {
    let mut out = Vec::new();
    // resolveDiagnosticModelContentCapturePolicy (diagnostic-llm-content-*.mjs).
    if on(c.get(&["diagnostics", "otel", "captureContent"])) {
        let mut off = Vec::new();
        if c.get(&["diagnostics", "enabled"]) == Some(&Value::Bool(false)) {
            off.push("diagnostics.enabled is false");
        }
        if !on(c.get(&["diagnostics", "otel", "enabled"])) {
            off.push("diagnostics.otel.enabled is not true");
        }
        if c.get(&["diagnostics", "otel", "traces"]) == Some(&Value::Bool(false)) {
            off.push("diagnostics.otel.traces is false");
        }
        let fix = Some(
            "openclaw config set diagnostics.otel.captureContent false --strict-json".to_owned(),
        );
        match with_token(opts) {
            None => out.push(Finding {
                id: "otel_captures_handles",
                severity: Severity::Info,
                label: "token export",
                title: "",
                detail: "diagnostics.otel.captureContent is true: OpenClaw exports each tool call's final params and raw output to the OTEL collector; every owned tool is behind claw-identity's MCP proxy, so the params hold single-use handles, not tokens".into(),
                fix: None,
                scope: Scope::Both,
            }),
            Some(which) => {
                if off.is_empty() {
                    out.push(Finding {
                        id: "otel_captures_tokens",
                        severity: Severity::Critical,
                        label: "token export",
                        title: "OpenTelemetry content capture exports the tokens claw-identity injects",
                        detail: format!("diagnostics.otel.captureContent is true and OTEL tracing is on: OpenClaw exports each tool call's final params, the auth_token claw-identity set included{which}, and its raw output, before claw-identity's redaction, to the OTEL collector"),
                        fix,
                        scope: Scope::Both,
                    });
                } else {
                    out.push(Finding {
                        id: "otel_capture_inactive",
                        severity: Severity::Info,
                        label: "token export",
                        title: "OpenTelemetry content capture is set, but not active",
                        detail: format!("diagnostics.otel.captureContent is true but inactive ({}); once OTEL tracing is on, it exports every tool call's params, the injected tokens included", off.join(", ")),
                        fix,
                        scope: Scope::Both,
                    });
                }
            }
        }
    }

    let noticed: Vec<_> = c
        .exec_reach()
        .into_iter()
        .filter(|a| a.host_shell && a.notify_on_exit)
        .collect();
    if !noticed.is_empty() {
        let agents: Vec<String> = noticed
            .iter()
            .map(|a| format!("\"{}\"", shown(&a.agent_id)))
            .collect();
        let (who, have) = match agents.len() {
            1 => (format!("agent {}", agents[0]), "has"),
            _ => (format!("agents {}", agents.join(", ")), "have"),
        };
        let mut fix = "openclaw config set tools.exec.notifyOnExit false --strict-json".to_owned();
        for key in noticed.iter().filter_map(|a| a.notify_key.as_deref()) {
            fix += &format!(
                ", and openclaw config set {} false --strict-json",
                shown(key)
            );
        }
        fix += "; a backgrounded command's output then reaches the agent only through process poll or log, as a tool result claw-identity redacts";
        out.push(Finding {
            id: "exec_notify_on_exit",
            severity: Severity::Warn,
            label: "exec notices",
            title: "a backgrounded command's output reaches the model past claw-identity's redaction",
            detail: format!("{who} {have} a shell on the host and tools.exec.notifyOnExit is on (the default): when a backgrounded exec ends, OpenClaw hands up to {NOTIFY_SNIPPET_CHARS} characters of its output to the agent's next turn as a system event, not as a tool result, so the tool-result redaction never sees it, and a token the command printed (cat of the map, an env dump) can reach the model. claw-identity still redacts what is stored in the transcript"),
            fix: Some(fix),
            scope: Scope::Both,
        });
    }
    out
}

/// One loaded plugin from `openclaw plugins inspect --all --runtime --json`.
struct Seen<'a> {
    id: &'a str,
    bundled: bool,
    hooks: Vec<&'a str>,
    policies: bool,
}

fn seen(v: &Value) -> Option<Seen<'_>> {
    let plugin = v.get("plugin")?;
    let id = plugin.get("id")?.as_str()?;
    if plugin.get("status").and_then(Value::as_str) != Some("loaded") || id == PLUGIN_ID {
        return None;
    }
    Some(Seen {
        id,
        bundled: plugin.get("origin").and_then(Value::as_str) == Some("bundled"),
        hooks: v
            .get("typedHooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|h| h.get("name")?.as_str())
            .collect(),
        policies: plugin
            .pointer("/contracts/trustedToolPolicies")
            .and_then(Value::as_array)
            .is_some_and(|p| !p.is_empty()),
    })
}

fn list(ids: &[&str]) -> String {
    ids.iter()
        .map(|i| format!("\"{}\"", shown(i)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which other loaded plugins get the params after the rewrite, from what
/// OpenClaw itself lists (`typedHooks`, `contracts.trustedToolPolicies`).
/// A plugin's hook matcher is not listed, so a hook may skip the owned tools.
pub fn plugin_findings(live: &Live, opts: &Options) -> Vec<Finding> {
    let Some(plugins) = &live.plugins else {
        let why = match &live.plugins_error {
            Some(e) => format!("OpenClaw did not list its plugins: {}", crate::redact::scrub(e)),
            None => "this command runs without OpenClaw, so it can't ask which plugins are loaded with which hooks".to_owned(),
        };
        return vec![Finding {
            id: "token_readers_unchecked",
            severity: Severity::Info,
            label: "token readers",
            title: "which other plugins get the injected token was not checked",
            detail: why,
            fix: Some("run openclaw claw-identity doctor --mcp (or audit --mcp): it asks OpenClaw (openclaw plugins inspect --all --runtime --json)".into()),
            scope: Scope::Both,
        }];
    };
    let seen: Vec<Seen<'_>> = plugins.iter().filter_map(seen).collect();
    let with = |hook: &str| -> Vec<&str> {
        seen.iter()
            .filter(|s| s.hooks.contains(&hook))
            .map(|s| s.id)
            .collect()
    };
    let after = with("after_tool_call");
    let before = with("before_tool_call");
    let policies: Vec<&str> = seen
        .iter()
        .filter(|s| s.policies && !s.bundled)
        .map(|s| s.id)
        .collect();
    let mut parts = Vec::new();
    if !after.is_empty() {
        parts.push(format!(
            "after_tool_call hooks, which get every call's params and result once it ran: {}",
            list(&after)
        ));
    }
    if !before.is_empty() {
        parts.push(format!("ordinary before_tool_call hooks, which all run after the trusted tier, on the rewritten params: {}", list(&before)));
    }
    if !policies.is_empty() {
        parts.push(format!("trusted tool policies of installed plugins, which run in load order, possibly after claw-identity's: {}", list(&policies)));
    }
    let mut readers: Vec<&str> = after
        .iter()
        .chain(&before)
        .chain(&policies)
        .copied()
        .collect();
    readers.sort_unstable();
    readers.dedup();
    if readers.is_empty() {
        return vec![Finding {
            id: "token_readers",
            severity: Severity::Pass,
            label: "token readers",
            title: "",
            detail: format!("of the {} plugins OpenClaw has loaded, none but claw-identity registers a hook that gets a tool call's params", seen.len() + 1),
            fix: None,
            scope: Scope::Both,
        }];
    }
    let Some(which) = with_token(opts) else {
        return vec![Finding {
            id: "token_readers",
            severity: Severity::Pass,
            label: "token readers",
            title: "",
            detail: format!("other loaded plugins get the params of the owned calls ({}), and every owned tool is behind claw-identity's MCP proxy: they see single-use handles, never a token", parts.join("; ")),
            fix: None,
            scope: Scope::Both,
        }];
    };
    vec![Finding {
        id: "token_readers",
        severity: Severity::Info,
        label: "token readers",
        title: "other loaded plugins get the params after claw-identity set the token",
        detail: format!("OpenClaw hands these plugins the params with the real auth_token in them{which}: {}. OpenClaw does not list a hook's matcher, so some may never see the owned tools; any that does can read, log or pass on the token", parts.join("; ")),
        fix: Some(format!("keep only plugins you trust with every agent's token; disable the others: openclaw plugins disable {}", readers.join(" "))),
        scope: Scope::Both,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_proxy() -> Options {
        Options::from_json("{}").unwrap()
    }

    fn ids(f: &[Finding]) -> Vec<(&str, Severity)> {
        f.iter().map(|f| (f.id, f.severity)).collect()
    }

    fn cfg(text: &str) -> OpenClawConfig {
        OpenClawConfig::from_text(text)
    }

    const SANDBOXED: &str =
        r#"agents: { defaults: { sandbox: { mode: "all" } }, entries: { a: {} } }"#;

    #[test]
    fn content_capture_with_otel_on_is_a_critical_token_export() {
        let f = config_findings(
            &cfg(&format!(
            "{{ diagnostics: {{ otel: {{ enabled: true, captureContent: true }} }}, {SANDBOXED} }}"
        )),
            &no_proxy(),
        );
        assert_eq!(ids(&f), [("otel_captures_tokens", Severity::Critical)]);
        assert!(f[0].detail.contains("final params"), "{}", f[0].detail);
        assert_eq!(
            f[0].fix.as_deref(),
            Some("openclaw config set diagnostics.otel.captureContent false --strict-json")
        );
        for off in [
            "enabled: false, otel: { enabled: true, captureContent: true }",
            "otel: { captureContent: true }",
            "otel: { enabled: true, traces: false, captureContent: true }",
        ] {
            let f = config_findings(
                &cfg(&format!("{{ diagnostics: {{ {off} }}, {SANDBOXED} }}")),
                &no_proxy(),
            );
            assert_eq!(
                ids(&f),
                [("otel_capture_inactive", Severity::Info)],
                "{off}"
            );
        }
        assert!(config_findings(
            &cfg(&format!(
                "{{ diagnostics: {{ otel: {{ enabled: true }} }}, {SANDBOXED} }}"
            )),
            &no_proxy()
        )
        .is_empty());
    }

    #[test]
    fn notify_on_exit_is_a_warning_for_agents_with_a_shell_on_the_host() {
        // The defaults: no sandbox, exec allowed, notifyOnExit on.
        let f = config_findings(
            &cfg(r#"{ agents: { entries: { "paco--francis": {}, "paco--dali": {} } } }"#),
            &no_proxy(),
        );
        assert_eq!(ids(&f), [("exec_notify_on_exit", Severity::Warn)]);
        assert!(
            f[0].detail
                .starts_with("agents \"paco--dali\", \"paco--francis\" have a shell on the host"),
            "{}",
            f[0].detail
        );
        assert!(f[0]
            .fix
            .as_deref()
            .unwrap()
            .starts_with("openclaw config set tools.exec.notifyOnExit false --strict-json;"));
        // Sandboxed, no shell, exec denied, exec routed to the sandbox, or notices off: nothing to say.
        for quiet in [
            SANDBOXED.to_owned(),
            r#"agents: { entries: { a: { tools: { deny: ["group:runtime"] } } } }"#.into(),
            r#"tools: { exec: { security: "deny" } }, agents: { entries: { a: {} } }"#.into(),
            r#"tools: { exec: { host: "sandbox" } }, agents: { entries: { a: {} } }"#.into(),
            r#"tools: { exec: { notifyOnExit: false } }, agents: { entries: { a: {} } }"#.into(),
        ] {
            assert_eq!(
                ids(&config_findings(
                    &cfg(&format!("{{ {quiet} }}")),
                    &no_proxy()
                )),
                [],
                "{quiet}"
            );
        }
        // An agent's own setting wins over the global one, both ways.
        let f = config_findings(
            &cfg(
                r#"{ tools: { exec: { notifyOnExit: false } }, agents: { defaults: { sandbox: { mode: "all" } },
                 entries: { loud: { tools: { exec: { notifyOnExit: true } }, sandbox: { mode: "off" } },
                            quiet: { sandbox: { mode: "off" }, tools: { exec: { notifyOnExit: false } } },
                            routed: { tools: { exec: { host: "gateway", notifyOnExit: true } } } } } }"#,
            ),
            &no_proxy(),
        );
        assert_eq!(ids(&f), [("exec_notify_on_exit", Severity::Warn)]);
        assert!(
            f[0].detail.starts_with("agents \"loud\", \"routed\" have"),
            "{}",
            f[0].detail
        );
        assert!(f[0]
            .fix
            .as_deref()
            .unwrap()
            .contains("agents.entries.loud.tools.exec.notifyOnExit false"));
    }

    #[test]
    fn behind_the_proxy_the_params_hold_handles_and_only_the_tools_outside_it_are_named() {
        // A sandboxed default: no host shell, so only the export is found.
        let otel = cfg(
            r#"{ diagnostics: { otel: { enabled: true, captureContent: true } }, agents: { defaults: { sandbox: { mode: "all" } } } }"#,
        );
        let all = Options::from_json(
            r#"{"proxy": {"port": 9, "servers": {"claw-os": {"upstream": {"url": "http://h/"}}}}}"#,
        )
        .unwrap();
        assert_eq!(
            ids(&config_findings(&otel, &all)),
            [("otel_captures_handles", Severity::Info)]
        );
        let some = Options::from_json(r#"{"toolPrefix": ["claw-os__", "notes__"], "proxy": {"port": 9, "servers": {"claw-os": {"upstream": {"url": "http://h/"}}}}}"#).unwrap();
        let f = config_findings(&otel, &some);
        assert_eq!(ids(&f), [("otel_captures_tokens", Severity::Critical)]);
        assert!(
            f[0].detail
                .contains("for the tools of \"notes__*\", which are not behind"),
            "{}",
            f[0].detail
        );
        let live = Live {
            plugins: Some(vec![inspected(
                "audit-stamp",
                "config",
                "loaded",
                &["after_tool_call"],
                &[],
            )]),
            ..Live::default()
        };
        assert_eq!(
            ids(&plugin_findings(&live, &all)),
            [("token_readers", Severity::Pass)]
        );
        assert_eq!(
            ids(&plugin_findings(&live, &some)),
            [("token_readers", Severity::Info)]
        );
        assert_eq!(
            ids(&plugin_findings(&live, &no_proxy())),
            [("token_readers", Severity::Info)]
        );
    }

    fn inspected(id: &str, origin: &str, status: &str, hooks: &[&str], policies: &[&str]) -> Value {
        json!({ "plugin": { "id": id, "origin": origin, "status": status, "contracts": { "trustedToolPolicies": policies } },
                "typedHooks": hooks.iter().map(|h| json!({ "name": h, "priority": 0 })).collect::<Vec<_>>() })
    }

    #[test]
    fn other_plugins_that_get_the_params_are_named() {
        let live = Live {
            plugins: Some(vec![
                inspected(
                    PLUGIN_ID,
                    "config",
                    "loaded",
                    &["before_tool_call", "tool_result_persist"],
                    &[PLUGIN_ID],
                ),
                inspected(
                    "audit-stamp",
                    "config",
                    "loaded",
                    &["before_tool_call"],
                    &[],
                ),
                inspected(
                    "tracer",
                    "global",
                    "loaded",
                    &["after_tool_call", "session_end"],
                    &[],
                ),
                inspected("gate", "config", "loaded", &[], &["gate"]),
                inspected(
                    "onepassword",
                    "bundled",
                    "loaded",
                    &["tool_result_persist"],
                    &["onepassword"],
                ),
                inspected("sleeper", "config", "disabled", &["after_tool_call"], &[]),
            ]),
            ..Live::default()
        };
        let f = plugin_findings(&live, &no_proxy());
        assert_eq!(ids(&f), [("token_readers", Severity::Info)]);
        let d = &f[0].detail;
        assert!(d.contains("after_tool_call hooks, which get every call's params and result once it ran: \"tracer\""), "{d}");
        assert!(d.contains("before_tool_call hooks, which all run after the trusted tier, on the rewritten params: \"audit-stamp\""), "{d}");
        assert!(
            d.contains("possibly after claw-identity's: \"gate\""),
            "{d}"
        );
        assert!(
            !d.contains("onepassword")
                && !d.contains("sleeper")
                && !d.contains(&format!("\"{PLUGIN_ID}\"")),
            "{d}"
        );
        assert!(f[0]
            .fix
            .as_deref()
            .unwrap()
            .ends_with("openclaw plugins disable audit-stamp gate tracer"));

        let alone = Live {
            plugins: Some(vec![inspected(
                PLUGIN_ID,
                "config",
                "loaded",
                &["before_tool_call"],
                &[],
            )]),
            ..Live::default()
        };
        assert_eq!(
            ids(&plugin_findings(&alone, &no_proxy())),
            [("token_readers", Severity::Pass)]
        );
        let f = plugin_findings(&Live::default(), &no_proxy());
        assert_eq!(ids(&f), [("token_readers_unchecked", Severity::Info)]);
        assert!(f[0].detail.contains("runs without OpenClaw"));
        let failed = Live {
            plugins_error: Some("exit 1".into()),
            ..Live::default()
        };
        assert!(plugin_findings(&failed, &no_proxy())[0]
            .detail
            .ends_with("did not list its plugins: exit 1"));
    }
}
