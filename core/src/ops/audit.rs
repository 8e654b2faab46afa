//! Findings for `openclaw security audit`: audit's view of the checks
//! (`ops::checks`), what in the gateway's config or on disk weakens the
//! identity layer, each with its fix. It leaves out what only says whether
//! tokens are served (the map's content, agents without a token), and adds
//! the settings that widen what an agent can reach: OpenClaw's session reach,
//! `onMissingToken: "pass"` with a map out of step with the config, and
//! `allowGroupReadable`. Tokens appear nowhere, not even as fingerprints.

use std::path::Path;

use super::checks::{self, Inputs};
use super::finding::Finding;
use super::Live;

/// Every finding for the config at `config_path` (the gateway's own), and,
/// with `live` (`audit --mcp`), the owned MCP servers' tool schemas and the
/// other plugins that get the injected token; `ops::render::audit_findings`
/// keeps those audit reports, in OpenClaw's shape.
pub fn run(config_path: &Path, live: Option<&Live>) -> Vec<Finding> {
    let inputs = match Inputs::gather(Some(config_path), None, live) {
        Ok(i) => i,
        // No map path at all (`~` cannot be expanded): the config's checks
        // still run on a config read alone.
        Err(e) => {
            return vec![Finding::new(
                "config_invalid",
                super::finding::Severity::Critical,
                "plugin config",
                "claw-identity's config is invalid, so the plugin does not start",
                format!("{e:#}"),
                Some("correct it against the configSchema in the plugin's openclaw.plugin.json (OpenClaw validates it there)".into()),
            )]
        }
    };
    // A plugin that can't start has no options to judge the rest by.
    let starts = matches!(inputs.plugin, Some(Ok(_)));
    if starts {
        checks::all(&inputs)
    } else {
        checks::config_only(&inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::render::{audit_findings, AuditFinding};
    use crate::token_map::tests::{T1, T2};
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    fn setup(
        name: &str,
        map_mode: u32,
        plugin: &str,
        extra: &str,
    ) -> (crate::testing::TempDir, PathBuf, PathBuf) {
        // Code Mode off: with it (OpenClaw's default) no agent is contained.
        let extra = if extra.contains("tools: {") {
            extra.replace("tools: {", "tools: { codeMode: false,")
        } else {
            format!("{extra}, tools: {{ codeMode: false }}")
        };
        let extra = extra.as_str();
        let dir = crate::testing::TempDir::new(&format!("audit-{name}"));
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
        (dir, cfg, map)
    }

    /// The findings but the listing of what is guarded, which every audit has.
    fn ids<'a>(f: &'a [AuditFinding<'_>]) -> Vec<(&'a str, &'static str)> {
        f.iter()
            .filter(|f| f.check_id != "claw-identity.guarded_locations")
            .map(|f| (f.check_id.as_str(), f.severity))
            .collect()
    }

    #[test]
    fn defaults_with_two_users_report_session_reach_and_a_map_out_of_step() {
        let (_dir, cfg, _) = setup("defaults", 0o600, "", "");
        let all = run(&cfg, None);
        let f = audit_findings(&all);
        assert_eq!(
            ids(&f),
            [
                ("claw-identity.pass_with_unknown_agents", "warn"),
                ("claw-identity.cross_user_session_reach", "info"),
            ]
        );
        assert!(f[0].detail.contains("\"gone--agent\""), "{}", f[0].detail);
        for x in &f {
            assert!(!x.detail.contains(T1) && !x.detail.contains(T2));
        }
    }

    #[test]
    fn every_audit_says_what_the_agents_tools_cant_reach() {
        let (_dir, cfg, map) = setup("guarded", 0o600, "", "");
        let all = run(&cfg, None);
        let f = audit_findings(&all);
        let g = f
            .iter()
            .find(|f| f.check_id == "claw-identity.guarded_locations")
            .unwrap();
        assert_eq!(g.severity, "info");
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
        let (_dir, off, _) = setup(
            "guarded-off",
            0o600,
            r#", rules: { layerControls: { enabled: false } }"#,
            "",
        );
        assert!(ids(&audit_findings(&run(&off, None)))
            .contains(&("claw-identity.layer_controls_off", "warn")));
    }

    #[test]
    fn a_hardened_config_has_no_finding() {
        let (_dir, cfg, _) = setup(
            "hardened",
            0o600,
            r#", onMissingToken: "block""#,
            r#", tools: { sessions: { visibility: "agent" }, agentToAgent: { enabled: false } }"#,
        );
        assert_eq!(ids(&audit_findings(&run(&cfg, None))), []);
    }

    #[test]
    fn group_readable_map_allowed_and_rule_off_are_findings() {
        let (_dir, cfg, _) = setup(
            "loose",
            0o640,
            r#", onMissingToken: "block", allowGroupReadable: true, rules: { crossUserSend: { enabled: false } }"#,
            "",
        );
        assert_eq!(
            ids(&audit_findings(&run(&cfg, None))),
            [
                ("claw-identity.map_group_readable", "warn"),
                ("claw-identity.allow_group_readable", "warn"),
                ("claw-identity.cross_user_session_reach", "warn"),
            ]
        );
    }

    #[test]
    fn an_unsafe_map_and_a_plugin_not_enabled_are_critical() {
        let (_dir, cfg, _) = setup(
            "unsafe",
            0o640,
            r#", onMissingToken: "block""#,
            r#", tools: { sessions: { visibility: "self" }, agentToAgent: { enabled: false } }"#,
        );
        let text = fs::read_to_string(&cfg)
            .unwrap()
            .replace("enabled: true, config", "config");
        fs::write(&cfg, text).unwrap();
        let all = run(&cfg, None);
        let f = audit_findings(&all);
        assert_eq!(
            ids(&f),
            [
                ("claw-identity.not_enabled", "critical"),
                ("claw-identity.map_permissions", "critical"),
            ]
        );
        assert!(f[1].remediation.unwrap().contains("chmod"), "{:?}", f[1]);
    }

    #[test]
    fn an_agent_whose_own_tools_reach_the_map_is_critical_under_enforce_and_a_warning_under_warn() {
        for (mode, severity) in [("", "critical"), (r#", posture: "warn""#, "warn")] {
            let (_dir, cfg, _) = setup(
                &format!("exposure-{severity}"),
                0o600,
                &format!(r#", onMissingToken: "block"{mode}"#),
                r#", tools: { sessions: { visibility: "agent" }, agentToAgent: { enabled: false } }"#,
            );
            let text = fs::read_to_string(&cfg)
                .unwrap()
                .replace(r#"mode: "all""#, r#"mode: "off""#);
            fs::write(&cfg, text).unwrap();
            let all = run(&cfg, None);
            let f = audit_findings(&all);
            // Both agents, and the ones the roster doesn't list; the same shells
            // on the host get a backgrounded command's output past the redaction.
            assert_eq!(
                ids(&f),
                [
                    ("claw-identity.posture_exposed", severity),
                    ("claw-identity.posture_exposed", severity),
                    ("claw-identity.posture_exposed", severity),
                    ("claw-identity.exec_notify_on_exit", "warn")
                ]
            );
            let francis = f
                .iter()
                .find(|f| f.detail.starts_with("agent paco--francis "))
                .unwrap();
            assert!(francis.detail.contains("exec"), "{}", francis.detail);
            assert!(
                francis.remediation.unwrap().contains("openclaw config set"),
                "{:?}",
                francis.remediation
            );
        }
    }

    #[test]
    fn with_what_mcp_gathered_the_schema_and_plugin_findings_are_reported() {
        let (_dir, cfg, _) = setup(
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
            ids(&audit_findings(&run(&cfg, Some(&live)))),
            [
                ("claw-identity.mcp_token_param_undeclared", "critical"),
                ("claw-identity.mcp_conversation_param_undeclared", "warn"),
                ("claw-identity.token_readers", "info"),
            ]
        );
    }

    #[test]
    fn a_selected_sandbox_that_cant_run_is_a_finding() {
        let (_dir, cfg, _) = setup(
            "sandbox",
            0o600,
            r#", onMissingToken: "block", sandbox: { bwrap: "/nonexistent/bwrap", network: "host" }"#,
            r#", tools: { sessions: { visibility: "agent" }, agentToAgent: { enabled: false } }"#,
        );
        let text = fs::read_to_string(&cfg)
            .unwrap()
            .replace(r#"mode: "all""#, r#"mode: "all", backend: "claw-identity""#);
        fs::write(&cfg, text).unwrap();
        let all = run(&cfg, None);
        let f = audit_findings(&all);
        assert_eq!(
            ids(&f),
            [
                ("claw-identity.sandbox_unavailable", "warn"),
                ("claw-identity.sandbox_network_host", "warn"),
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
