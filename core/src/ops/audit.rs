//! Findings for `openclaw security audit`: what in the gateway's config or
//! on disk weakens the identity layer, each with its fix. It reuses doctor's
//! checks (enablement, the map's permission gate, map exposure) and adds the
//! settings that widen what an agent can reach: OpenClaw's session reach,
//! `onMissingToken: "pass"` with a map out of step with the config, and
//! `allowGroupReadable`. Tokens appear nowhere, not even as fingerprints.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::doctor::{self, Status};
use super::{after_hook, mcp, Found, Live};
use crate::openclaw::agent_ids::user_prefix;
use crate::openclaw::config::{self, OpenClawConfig, PLUGIN_ID};
use crate::options::OnMissingToken;
use crate::redact::shown;
use crate::token_map::{self, MapErrorKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
    Critical,
}

/// One finding, in OpenClaw's `SecurityAuditFinding` shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub check_id: String,
    pub severity: Severity,
    pub title: String,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remediation: Option<String>,
}

fn finding(
    id: &str,
    severity: Severity,
    title: &str,
    detail: String,
    fix: Option<String>,
) -> Finding {
    Finding {
        check_id: format!("{PLUGIN_ID}.{id}"),
        severity,
        title: title.into(),
        detail,
        remediation: fix,
    }
}

/// A finding doctor and audit share, as audit reports it (`None` if all is well).
fn as_finding(f: Found) -> Option<Finding> {
    Some(finding(f.id, f.severity?, f.title, f.detail, f.fix))
}

/// Every finding for the config at `config_path` (the gateway's own), and,
/// with `live` (`audit --mcp`), the owned MCP servers' tool schemas and the
/// other plugins that get the injected token.
pub fn run(config_path: &Path, live: Option<&Live>) -> Vec<Finding> {
    let c = match OpenClawConfig::load(config_path) {
        Ok(c) => c,
        Err(e) => {
            return vec![finding(
                "config_unreadable",
                Severity::Warn,
                "claw-identity could not read the gateway's config",
                e,
                Some("check that the file is readable JSON5; run openclaw config validate".into()),
            )]
        }
    };
    let mut out = Vec::new();
    for p in c.enablement_problems() {
        out.push(finding(
            "not_enabled",
            Severity::Critical,
            "claw-identity does not run: no agent gets its token and no identity rule holds",
            p.problem,
            Some(p.fix),
        ));
    }
    let opts = match config::plugin_options(Some(&c), None) {
        Ok(o) => o,
        Err(e) => {
            out.push(finding(
                "config_invalid",
                Severity::Critical,
                "claw-identity's config is invalid, so the plugin does not start",
                format!("plugins.entries.{PLUGIN_ID}.config: {e}"),
                Some("correct it against the configSchema in the plugin's openclaw.plugin.json; claw-identity doctor --config names the problem".into()),
            ));
            return out;
        }
    };
    let map_path = &opts.token_map_path;
    let config_key = format!("plugins.entries.{PLUGIN_ID}.config");

    // The map's file, through the plugin's own gate.
    let mut map_agents = None;
    match token_map::read_map(map_path, &opts.gate()) {
        Err(e) => {
            let (problem, fix) = doctor::gate_problem(&e, map_path);
            let (id, severity, title) = if e.kind == MapErrorKind::Unsafe {
                (
                    "map_permissions",
                    Severity::Critical,
                    "the token map's permissions or owner are unsafe, so the plugin refuses it",
                )
            } else {
                (
                    "map_unreadable",
                    Severity::Warn,
                    "the plugin cannot read the token map, so no agent gets its token",
                )
            };
            out.push(finding(id, severity, title, problem, Some(fix)));
        }
        Ok(file) => {
            for w in file.warnings {
                out.push(finding(
                    "map_group_readable",
                    Severity::Warn,
                    "the token map is readable by other users on the host",
                    w,
                    Some(format!("chmod 600 {}", map_path.display())),
                ));
            }
            if let Ok(parsed) = token_map::parse(&file.bytes) {
                map_agents = Some(
                    parsed
                        .map
                        .sorted()
                        .into_iter()
                        .map(|(id, _)| id.to_owned())
                        .collect::<Vec<_>>(),
                );
            }
        }
    }
    if opts.allow_group_readable {
        out.push(finding(
            "allow_group_readable",
            Severity::Warn,
            "allowGroupReadable is on: the plugin accepts a token map that other users can read",
            format!("{config_key}.allowGroupReadable is true, so a map readable by group or others ({}) is used with only a warning", map_path.display()),
            Some(format!("chmod 600 {} and openclaw config unset {config_key}.allowGroupReadable (for a Kubernetes secret volume, set defaultMode: 0400)", map_path.display())),
        ));
    }

    let configured = c.agents();
    if opts.on_missing_token == OnMissingToken::Pass {
        if let (Some(agents), Some(in_map)) = (&configured, &map_agents) {
            let unknown: Vec<String> = in_map
                .iter()
                .filter(|a| !agents.contains(a))
                .map(|a| format!("\"{}\"", shown(a)))
                .collect();
            if !unknown.is_empty() {
                out.push(finding(
                    "pass_with_unknown_agents",
                    Severity::Warn,
                    "onMissingToken is \"pass\" while the map and the config disagree on the agents",
                    format!(
                        "the map has agents that agents.entries does not ({}): the map is out of step with the config, and with \"pass\" an agent that has no token (renamed, or added without one) calls the MCP tools without any token instead of being refused",
                        unknown.join(", ")
                    ),
                    Some(format!("openclaw config set {config_key}.onMissingToken block; and remove the agents that are gone from the map (claw-identity write-map)")),
                ));
            }
        }
    }

    // OpenClaw's session reach between the agents of different users.
    let users: BTreeSet<&str> = configured
        .iter()
        .flatten()
        .map(|a| user_prefix(a).unwrap_or(a))
        .collect();
    if users.len() > 1 {
        let visibility = match c.get(&["tools", "sessions", "visibility"]) {
            Some(Value::String(v)) => v.as_str(),
            _ => "all",
        };
        let a2a = c.get(&["tools", "agentToAgent", "enabled"]) != Some(&Value::Bool(false));
        let mut open = Vec::new();
        if visibility == "all" || visibility == "tree" {
            open.push(format!(
                "tools.sessions.visibility is \"{}\"",
                shown(visibility)
            ));
        }
        if a2a {
            open.push("tools.agentToAgent.enabled is true (the default)".to_owned());
        }
        if !open.is_empty() {
            let users: Vec<String> = users.iter().map(|u| shown(u).to_string()).collect();
            let reach = format!(
                "agents of {} users ({}) share this gateway and {}",
                users.len(),
                users.join(", "),
                open.join(" and ")
            );
            let fix = "openclaw config set tools.sessions.visibility agent; and openclaw config set tools.agentToAgent.enabled false --strict-json (or list the allowed pairs in tools.agentToAgent.allow)";
            let (severity, title, detail, fix) = if opts.rules.cross_user_send.enabled {
                (
                    Severity::Info,
                    "OpenClaw lets agents reach other users' sessions; claw-identity's guard holds the session tools",
                    format!("{reach}: rule cross-user-send holds sessions_send, sessions_spawn and the session-reading tools to the caller's own user, but only where before_tool_call runs (not the Codex app-server harness, not the claude-cli backend's MCP tools)"),
                    format!("narrow it in OpenClaw too: {fix}"),
                )
            } else {
                (
                    Severity::Warn,
                    "any agent can read and message other users' sessions: rule cross-user-send is off",
                    format!("{reach}, and {config_key}.rules.crossUserSend.enabled is false, so nothing holds the session tools to the caller's own user"),
                    format!("openclaw config unset {config_key}.rules.crossUserSend.enabled; or {fix}"),
                )
            };
            out.push(finding(
                "cross_user_session_reach",
                severity,
                title,
                detail,
                Some(fix),
            ));
        }
    }

    let guarded = doctor::guarded(&opts, Some(&c));
    if !opts.rules.layer_controls.enabled {
        out.push(finding(
            "layer_controls_off",
            Severity::Warn,
            "the agents' own tools can switch the identity layer off",
            format!("{config_key}.rules.layerControls.enabled is false: the agents' file tools can change OpenClaw's config and the plugin's files, and their plugins and openclaw tools can disable the plugin"),
            Some(format!("openclaw config unset {config_key}.rules.layerControls")),
        ));
    }
    out.push(finding(
        "guarded_locations",
        Severity::Info,
        "what the agents' own tools can't reach",
        guarded
            .iter()
            .map(|g| {
                format!(
                    "{} ({}): {} refused by {}",
                    g.what, g.path, g.refused, g.rule
                )
            })
            .chain(std::iter::once(
                crate::openclaw::config::PROCESS_LOCATIONS.to_owned(),
            ))
            .collect::<Vec<_>>()
            .join("; "),
        Some("Nothing to change: this lists what is guarded. To see why a given call is refused, run claw-identity explain --tool <tool> --agent <id> --params '<json>' --config <openclaw.json>.".to_owned()),
    ));

    let probe = doctor::sandbox_probe(&c, &opts);
    for check in doctor::sandbox_checks(&c, &opts.sandbox, &probe) {
        match check.status {
            Status::Fail => out.push(finding(
                "sandbox_unavailable",
                Severity::Warn,
                "an agent's claw-identity sandbox can't run here, so its turns fail",
                check.message,
                check.fix,
            )),
            Status::Warn => out.push(finding(
                "sandbox_network_host",
                Severity::Warn,
                "sandboxed commands share the host's network",
                check.message,
                check.fix,
            )),
            _ => {}
        }
    }
    let posture = doctor::posture_of(&c, &opts, probe.result.is_ok());
    out.extend(
        doctor::posture_findings(&posture)
            .into_iter()
            .filter_map(as_finding),
    );
    out.extend(
        after_hook::config_findings(&c)
            .into_iter()
            .filter_map(as_finding),
    );
    if let Some(live) = live {
        out.extend(
            mcp::findings(&c, &opts, &live.servers)
                .into_iter()
                .filter_map(as_finding),
        );
        out.extend(
            after_hook::plugin_findings(live)
                .into_iter()
                .filter_map(as_finding),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token_map::tests::{T1, T2};
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    fn setup(name: &str, map_mode: u32, plugin: &str, extra: &str) -> (PathBuf, PathBuf) {
        // Code Mode off: with it (OpenClaw's default) no agent is contained.
        let extra = if extra.contains("tools: {") {
            extra.replace("tools: {", "tools: { codeMode: false,")
        } else {
            format!("{extra}, tools: {{ codeMode: false }}")
        };
        let extra = extra.as_str();
        let dir = std::env::temp_dir().join(format!("claw-audit-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        let map = dir.join("map.json");
        fs::write(
            &map,
            format!(r#"{{"paco--francis":"{T1}","gone--agent":"{T2}"}}"#),
        )
        .unwrap();
        fs::set_permissions(&map, fs::Permissions::from_mode(map_mode)).unwrap();
        let cfg = dir.join("openclaw.json");
        fs::write(
            &cfg,
            format!(
                r#"{{ plugins: {{ entries: {{ "claw-identity": {{ enabled: true, config: {{ tokenMapPath: "{}" {plugin} }} }} }} }},
                     agents: {{ defaults: {{ sandbox: {{ mode: "all" }} }}, entries: {{ "paco--francis": {{}}, "pepito--atlas": {{}} }} }} {extra} }}"#,
                map.display()
            ),
        )
        .unwrap();
        (cfg, map)
    }

    /// The findings but the listing of what is guarded, which every audit has.
    fn ids(f: &[Finding]) -> Vec<(&str, Severity)> {
        f.iter()
            .filter(|f| f.check_id != "claw-identity.guarded_locations")
            .map(|f| (f.check_id.as_str(), f.severity))
            .collect()
    }

    #[test]
    fn defaults_with_two_users_report_session_reach_and_a_map_out_of_step() {
        let (cfg, _) = setup("defaults", 0o600, "", "");
        let f = run(&cfg, None);
        assert_eq!(
            ids(&f),
            [
                ("claw-identity.pass_with_unknown_agents", Severity::Warn),
                ("claw-identity.cross_user_session_reach", Severity::Info),
            ]
        );
        assert!(f[0].detail.contains("\"gone--agent\""), "{}", f[0].detail);
        for x in &f {
            assert!(!x.detail.contains(T1) && !x.detail.contains(T2));
        }
    }

    #[test]
    fn every_audit_says_what_the_agents_tools_cant_reach() {
        let (cfg, map) = setup("guarded", 0o600, "", "");
        let f = run(&cfg, None);
        let g = f
            .iter()
            .find(|f| f.check_id == "claw-identity.guarded_locations")
            .unwrap();
        assert_eq!(g.severity, Severity::Info);
        assert!(
            g.detail.contains(&format!(
                "the token map ({}): read, write refused by map-access",
                map.display()
            )),
            "{}",
            g.detail
        );
        assert!(
            g.detail.contains("OpenClaw's config file") && g.detail.contains("by layer-controls"),
            "{}",
            g.detail
        );
        let (off, _) = setup(
            "guarded-off",
            0o600,
            r#", rules: { layerControls: { enabled: false } }"#,
            "",
        );
        assert!(
            ids(&run(&off, None)).contains(&("claw-identity.layer_controls_off", Severity::Warn))
        );
    }

    #[test]
    fn a_hardened_config_has_no_finding() {
        let (cfg, _) = setup(
            "hardened",
            0o600,
            r#", onMissingToken: "block""#,
            r#", tools: { sessions: { visibility: "agent" }, agentToAgent: { enabled: false } }"#,
        );
        assert_eq!(ids(&run(&cfg, None)), []);
    }

    #[test]
    fn group_readable_map_allowed_and_rule_off_are_findings() {
        let (cfg, _) = setup(
            "loose",
            0o640,
            r#", onMissingToken: "block", allowGroupReadable: true, rules: { crossUserSend: { enabled: false } }"#,
            "",
        );
        assert_eq!(
            ids(&run(&cfg, None)),
            [
                ("claw-identity.map_group_readable", Severity::Warn),
                ("claw-identity.allow_group_readable", Severity::Warn),
                ("claw-identity.cross_user_session_reach", Severity::Warn),
            ]
        );
    }

    #[test]
    fn an_unsafe_map_and_a_plugin_not_enabled_are_critical() {
        let (cfg, _) = setup(
            "unsafe",
            0o640,
            r#", onMissingToken: "block""#,
            r#", tools: { sessions: { visibility: "self" }, agentToAgent: { enabled: false } }"#,
        );
        let text = fs::read_to_string(&cfg)
            .unwrap()
            .replace("enabled: true, config", "config");
        fs::write(&cfg, text).unwrap();
        let f = run(&cfg, None);
        assert_eq!(
            ids(&f),
            [
                ("claw-identity.not_enabled", Severity::Critical),
                ("claw-identity.map_permissions", Severity::Critical),
            ]
        );
        assert!(
            f[1].remediation.as_deref().unwrap().contains("chmod"),
            "{:?}",
            f[1]
        );
    }

    #[test]
    fn an_agent_whose_own_tools_reach_the_map_is_critical_under_enforce_and_a_warning_under_warn() {
        for (mode, severity) in [
            ("", Severity::Critical),
            (r#", posture: "warn""#, Severity::Warn),
        ] {
            let (cfg, _) = setup(
                &format!("exposure{}", severity as u8),
                0o600,
                &format!(r#", onMissingToken: "block"{mode}"#),
                r#", tools: { sessions: { visibility: "agent" }, agentToAgent: { enabled: false } }"#,
            );
            let text = fs::read_to_string(&cfg)
                .unwrap()
                .replace(r#"mode: "all""#, r#"mode: "off""#);
            fs::write(&cfg, text).unwrap();
            let f = run(&cfg, None);
            // Both agents, and the ones the roster doesn't list; the same shells
            // on the host get a backgrounded command's output past the redaction.
            assert_eq!(
                ids(&f),
                [
                    ("claw-identity.posture_exposed", severity),
                    ("claw-identity.posture_exposed", severity),
                    ("claw-identity.posture_exposed", severity),
                    ("claw-identity.exec_notify_on_exit", Severity::Warn)
                ]
            );
            let francis = f
                .iter()
                .find(|f| f.detail.starts_with("agent paco--francis "))
                .unwrap();
            assert!(francis.detail.contains("exec"), "{}", francis.detail);
            assert!(
                francis
                    .remediation
                    .as_deref()
                    .unwrap()
                    .contains("openclaw config set"),
                "{:?}",
                francis.remediation
            );
        }
    }

    #[test]
    fn with_what_mcp_gathered_the_schema_and_plugin_findings_are_reported() {
        let (cfg, _) = setup(
            "live",
            0o600,
            r#", onMissingToken: "block""#,
            r#", tools: { sessions: { visibility: "agent" }, agentToAgent: { enabled: false } },
               mcp: { servers: { "claw-os": { command: "node" } } }"#,
        );
        let live: Live = serde_json::from_value(serde_json::json!({
            "servers": [{ "server": "claw-os", "tools": [
                { "name": "ok", "inputSchema": { "properties": { "auth_token": {}, "_conversation_id": {} } } },
                { "name": "bare", "inputSchema": { "properties": {} } }] }],
            "plugins": [{ "plugin": { "id": "tracer", "status": "loaded" }, "typedHooks": [{ "name": "after_tool_call" }] }]
        }))
        .unwrap();
        assert_eq!(
            ids(&run(&cfg, Some(&live))),
            [
                (
                    "claw-identity.mcp_token_param_undeclared",
                    Severity::Critical
                ),
                (
                    "claw-identity.mcp_conversation_param_undeclared",
                    Severity::Warn
                ),
                ("claw-identity.token_readers", Severity::Info),
            ]
        );
    }

    #[test]
    fn a_selected_sandbox_that_cant_run_is_a_finding() {
        let (cfg, _) = setup(
            "sandbox",
            0o600,
            r#", onMissingToken: "block", sandbox: { bwrap: "/nonexistent/bwrap", network: "host" }"#,
            r#", tools: { sessions: { visibility: "agent" }, agentToAgent: { enabled: false } }"#,
        );
        let text = fs::read_to_string(&cfg)
            .unwrap()
            .replace(r#"mode: "all""#, r#"mode: "all", backend: "claw-identity""#);
        fs::write(&cfg, text).unwrap();
        let f = run(&cfg, None);
        assert_eq!(
            ids(&f),
            [
                ("claw-identity.sandbox_unavailable", Severity::Warn),
                ("claw-identity.sandbox_network_host", Severity::Warn),
            ]
        );
        let unavailable = f
            .iter()
            .find(|f| f.check_id == "claw-identity.sandbox_unavailable")
            .unwrap();
        assert!(
            unavailable
                .detail
                .contains("sandbox.bwrap is /nonexistent/bwrap"),
            "{}",
            unavailable.detail
        );
    }
}
