//! `claw-identity doctor`: is the identity layer why an agent gets no token?
//!
//! doctor's view of the checks (`ops::checks`): every check's line, passed
//! or not, and the map's agents by fingerprint. It reads the map through
//! the plugin's own permission gate and parser, with the gate options the
//! plugin derives from its config, and, given an OpenClaw config, checks
//! that OpenClaw will load the plugin at all and that every configured
//! agent has a token. Each problem comes with its fix. Tokens appear only as
//! fingerprints. The output is deterministic (sorted, no clock) so it can be
//! diffed; `ops::render` writes it.

use std::path::Path;

use super::checks::{self, Inputs};
use super::finding::Severity;
pub use super::render::{AgentRow, Report};
use super::Live;

pub struct DoctorArgs<'a> {
    /// `--map`: the map to check instead of the one the plugin reads.
    pub map: Option<&'a str>,
    /// `--config`: the gateway's `openclaw.json`.
    pub config: Option<&'a Path>,
    /// `--mcp`: what the owned MCP servers and OpenClaw's plugin list said.
    pub live: Option<&'a Live>,
}

/// Runs every check once. Fails only when there is no map path to check
/// (no `--map`, and `~` cannot be expanded).
pub fn run(args: &DoctorArgs<'_>) -> anyhow::Result<Report> {
    let inputs = Inputs::gather(args.config, args.map, args.live)?;
    let checks: Vec<_> = checks::all(&inputs)
        .into_iter()
        .filter(|f| f.in_doctor())
        .collect();
    let problems = checks.iter().filter(|c| c.severity.fails()).count();
    let warnings = checks
        .iter()
        .filter(|c| c.severity == Severity::Warn)
        .count();
    let map = crate::paths::shown(inputs.map_path()).to_string();
    Ok(Report {
        ok: problems == 0,
        problems,
        warnings,
        uid: crate::sys::euid().unwrap_or(u32::MAX),
        map,
        config: args.config.map(|p| crate::paths::shown(p).to_string()),
        map_loaded: inputs.map().is_some(),
        agents: agent_rows(&inputs),
        checks,
        guarded: inputs.guarded.clone(),
    })
}

/// The map's agents by fingerprint, and the configured agents without a
/// token, sorted by id.
fn agent_rows(i: &Inputs<'_>) -> Vec<AgentRow> {
    let Some(map) = i.map() else {
        return Vec::new();
    };
    let configured = i.configured.as_ref();
    let mut rows: Vec<AgentRow> = map
        .sorted()
        .into_iter()
        .map(|(id, t)| AgentRow {
            agent_id: id.to_owned(),
            fingerprint: Some(t.fingerprint()),
            configured: configured.map(|c| c.iter().any(|a| a == id)),
        })
        .collect();
    if let Some(agents) = configured {
        rows.extend(
            agents
                .iter()
                .filter(|a| map.get(a).is_none())
                .map(|a| AgentRow {
                    agent_id: a.clone(),
                    fingerprint: None,
                    configured: Some(true),
                }),
        );
        rows.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::finding::Finding;
    use crate::token_map::tests::{T1, T2};
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn tmpdir(name: &str) -> crate::testing::TempDir {
        crate::testing::TempDir::new(&format!("doctor-{name}"))
    }

    fn write(path: &Path, mode: u32, body: &str) {
        fs::write(path, body).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn doctor(map: &Path, config: Option<&Path>) -> Report {
        run(&DoctorArgs {
            map: Some(map.to_str().unwrap()),
            config,
            live: None,
        })
        .unwrap()
    }

    fn failed(r: &Report) -> Vec<(&'static str, &str)> {
        r.checks
            .iter()
            .filter(|c| c.severity.fails())
            .map(|c| (c.label, c.detail.as_str()))
            .collect()
    }

    #[test]
    fn a_healthy_map_passes_and_lists_agents_by_fingerprint_only() {
        let d = tmpdir("ok");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"b": "{T2}", "a": "{T1}"}}"#));
        let r = doctor(&p, None);
        assert!(r.ok, "{}", r.render());
        let ids: Vec<_> = r.agents.iter().map(|a| a.agent_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(
            r.agents[0].fingerprint.as_deref(),
            Some(crate::redact::fingerprint(T1).as_str())
        );
        let text = r.render();
        assert!(
            !text.contains(&T1[..16]) && !text.contains(&T2[..16]),
            "{text}"
        );
        assert!(
            text.ends_with("healthy: nothing found stops token injection\n"),
            "{text}"
        );
    }

    #[test]
    fn each_gate_refusal_is_one_problem_with_its_fix() {
        let d = tmpdir("gate");
        let p = d.join("m.json");
        let r = doctor(&p, None);
        assert_eq!(
            failed(&r),
            [(
                "map file",
                format!("{}: not found", crate::paths::shown(&p)).as_str()
            )]
        );
        assert!(r.checks[0]
            .fix
            .as_ref()
            .unwrap()
            .starts_with("create it: claw-identity write-map"));
        assert_eq!(r.checks[1].severity, Severity::Skip);

        write(&p, 0o644, "{}");
        let r = doctor(&p, None);
        assert_eq!(
            r.checks[0].detail,
            format!(
                "{}: is readable by group or others (mode 0644); refusing to load it",
                crate::paths::shown(&p)
            )
        );
        assert!(r.checks[0]
            .fix
            .as_ref()
            .unwrap()
            .starts_with(&format!("chmod 600 {}", crate::paths::shown(&p))));

        write(&p, 0o600, "{}");
        fs::set_permissions(&d, fs::Permissions::from_mode(0o757)).unwrap();
        let r = doctor(&p, None);
        assert_eq!(
            r.checks[0].fix.as_deref(),
            Some(format!("chmod go-w {}", crate::paths::shown(&d)).as_str())
        );
    }

    #[test]
    fn content_problems_are_reported_with_fixes() {
        let d = tmpdir("content");
        let p = d.join("m.json");
        write(&p, 0o600, "{");
        assert_eq!(failed(&doctor(&p, None))[0].0, "map content");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}", "a": "{T2}"}}"#));
        let r = doctor(&p, None);
        assert!(r.checks[1]
            .fix
            .as_ref()
            .unwrap()
            .starts_with("keep one entry per agent"));
        write(
            &p,
            0o600,
            &format!(r#"{{"paco--francis": "{T1}", "pepito--atlas": "{T1}"}}"#),
        );
        let r = doctor(&p, None);
        assert_eq!(r.checks[1].severity, Severity::Fail);
        assert!(r.checks[1].detail.starts_with(
            "agents \"paco--francis\" and \"pepito--atlas\" have the same token (sha256:"
        ));
        assert!(r.checks[1]
            .fix
            .as_ref()
            .unwrap()
            .starts_with("mint a token for each agent"));
        assert!(!r.map_loaded && r.agents.is_empty());
        write(
            &p,
            0o600,
            &format!(r#"{{"a": "{T1}", "B": "{T2}", "c": 1}}"#),
        );
        let r = doctor(&p, None);
        assert_eq!(failed(&r).len(), 2);
        assert_eq!(r.agents.len(), 1);
        write(&p, 0o600, "{}");
        assert_eq!(
            failed(&doctor(&p, None)),
            [(
                "map content",
                "the map holds no agents, so no call gets a token"
            )]
        );
    }

    #[test]
    fn the_config_drives_enablement_options_and_configured_agents() {
        let d = tmpdir("config");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}", "old": "{T2}"}}"#));
        let c = d.join("openclaw.json");
        fs::write(
            &c,
            format!(
                "{{ plugins: {{ entries: {{ 'claw-identity': {{ enabled: true, config: {{ tokenMapPath: '{}', posture: 'warn' }} }} }} }},
                   agents: {{ entries: {{ a: {{}}, ghost: {{}} }} }} }}",
                crate::paths::shown(&p)
            ),
        )
        .unwrap();
        let r = run(&DoctorArgs {
            map: None,
            config: Some(&c),
            live: None,
        })
        .unwrap();
        assert_eq!(r.map, crate::paths::shown(&p).to_string());
        assert_eq!(
            failed(&r),
            [(
                "configured agent",
                "agent \"ghost\" is in agents.entries but has no token in the map"
            )]
        );
        let rows: Vec<_> = r
            .agents
            .iter()
            .map(|a| (a.agent_id.as_str(), a.fingerprint.is_some(), a.configured))
            .collect();
        assert_eq!(
            rows,
            [
                ("a", true, Some(true)),
                ("ghost", false, Some(true)),
                ("old", true, Some(false))
            ]
        );
        // "old" is not configured; "a" and "ghost" have exec on the host,
        // where a backgrounded command's output reaches them as a notice;
        // neither is contained, nor are the agents the roster doesn't list
        // (posture "warn": warnings).
        let mut warned: Vec<&str> = r
            .checks
            .iter()
            .filter(|c| c.severity == Severity::Warn)
            .map(|c| c.label)
            .collect();
        warned.sort_unstable();
        assert_eq!(
            warned,
            ["exec notices", "map agent", "posture", "posture", "posture"],
            "{}",
            r.render()
        );

        let other = d.join("other.json");
        write(
            &other,
            0o600,
            &format!(r#"{{"a": "{T1}", "ghost": "{T2}"}}"#),
        );
        let r = doctor(&other, Some(&c));
        assert!(r.ok, "{}", r.render());
        assert!(r
            .checks
            .iter()
            .any(|c| c.label == "map path" && c.severity == Severity::Warn));
    }

    #[test]
    fn a_missing_or_broken_config_is_a_problem() {
        let d = tmpdir("badconfig");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}"}}"#));
        let r = doctor(&p, Some(&d.join("nope.json")));
        assert_eq!(failed(&r)[0].0, "config");
        let c = d.join("openclaw.json");
        fs::write(&c, "{ plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMap: 1 } } } } }").unwrap();
        let r = doctor(&p, Some(&c));
        assert_eq!(failed(&r)[0].0, "plugin config");
        assert!(r.map_loaded, "the map is still checked");
    }

    #[test]
    fn with_mcp_doctor_names_each_schema_problem_and_the_plugins_that_get_the_token() {
        let d = tmpdir("mcp");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}"}}"#));
        let c = d.join("openclaw.json");
        let body = |otel: bool| {
            format!(
                r#"{{ plugins: {{ entries: {{ 'claw-identity': {{ enabled: true, config: {{ tokenMapPath: "{}" }} }} }} }},
                   tools: {{ codeMode: false }},
                   diagnostics: {{ otel: {{ enabled: true, captureContent: {otel} }} }},
                   agents: {{ defaults: {{ sandbox: {{ mode: "all" }} }}, entries: {{ a: {{}} }} }},
                   mcp: {{ servers: {{ "claw-os": {{ command: "node" }} }} }} }}"#,
                crate::paths::shown(&p)
            )
        };
        fs::write(&c, body(false)).unwrap();
        let live: Live = serde_json::from_value(serde_json::json!({ "servers": [{ "server": "claw-os", "tools": [
            { "name": "notes", "inputSchema": { "properties": { "auth_token": {}, "_conversation_id": {} } } },
            { "name": "legacy", "inputSchema": { "properties": { "auth_token": {}, "_conversation_id": {} }, "required": ["auth_token"] } }] }] }))
        .unwrap();
        let r = run(&DoctorArgs {
            map: None,
            config: Some(&c),
            live: Some(&live),
        })
        .unwrap();
        let text = r.render();
        assert!(r.ok, "{text}");
        assert!(text.contains("ok    mcp tool: claw-os__notes (server \"claw-os\") declares auth_token and _conversation_id, optional"), "{text}");
        assert!(
            text.contains(
                "warn  mcp tool: claw-os__legacy (server \"claw-os\") lists auth_token in required"
            ),
            "{text}"
        );
        assert!(
            text.contains("info  token readers: this command runs without OpenClaw"),
            "{text}"
        );
        assert!(
            text.ends_with("healthy (1 warning): nothing found stops token injection\n"),
            "{text}"
        );

        // An OTEL export fails doctor, and the verdict says why.
        fs::write(&c, body(true)).unwrap();
        let r = run(&DoctorArgs {
            map: None,
            config: Some(&c),
            live: None,
        })
        .unwrap();
        let text = r.render();
        assert!(!r.ok);
        assert!(
            text.contains("FAIL  token export: diagnostics.otel.captureContent is true"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "1 problem found, and a token leaves the gateway; fix it and run doctor again\n"
            ),
            "{text}"
        );
        assert!(
            !text.contains("mcp tool"),
            "no --mcp, no schema checks: {text}"
        );
    }

    #[test]
    fn a_leftover_temp_file_is_a_warning_not_a_problem() {
        let d = tmpdir("temp");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}"}}"#));
        write(&d.join(".m.json.tmp-7-0-00000000"), 0o600, "{");
        let r = doctor(&p, None);
        assert!(r.ok);
        assert_eq!(r.warnings, 1);
        assert!(r.render().contains("healthy (1 warning)"));
    }

    #[test]
    fn every_agent_that_is_not_contained_is_a_problem_with_the_config_that_contains_it() {
        let d = tmpdir("exposure");
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"shell": "{T1}"}}"#));
        let c = d.join("openclaw.json");
        let body = |posture: &str| {
            format!(
                r#"{{ plugins: {{ entries: {{ 'claw-identity': {{ enabled: true, config: {{ posture: "{posture}" }} }} }} }},
                   tools: {{ codeMode: false }},
                   agents: {{ defaults: {{ sandbox: {{ mode: "all", backend: "claw-identity" }} }}, entries: {{
                     shell: {{ sandbox: {{ mode: "non-main" }} }},
                     boxed: {{}},
                     mounted: {{ sandbox: {{ backend: "docker", docker: {{ binds: ["{}:/m:ro"] }} }} }},
                   }} }} }}"#,
                crate::paths::shown(&d)
            )
        };
        fs::write(&c, body("enforce")).unwrap();
        let r = doctor(&p, Some(&c));
        let found: Vec<(Severity, &str, &str)> = r
            .checks
            .iter()
            .filter(|c| c.label == "posture")
            .map(|c| {
                (
                    c.severity,
                    c.detail.as_str(),
                    c.fix.as_deref().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        let (st, msg, fix) = found[0];
        assert_eq!(st, Severity::Critical);
        assert!(
            msg.starts_with("agent mounted is not contained: its sandbox mounts"),
            "{msg}"
        );
        assert!(msg.contains("which holds the token map ("), "{msg}");
        // bubblewrap works here or not: its own backend masks the map; else the bind goes.
        assert!(
            fix.contains(r#"openclaw config set agents.entries.mounted.sandbox '{"backend":"claw-identity","mode":"all"}'"#)
                || fix.contains("remove it from agents.entries.mounted.sandbox.docker.binds"),
            "{fix}"
        );
        let (st, msg, fix) = found[1];
        assert_eq!(st, Severity::Critical);
        assert!(msg.starts_with("agent shell is not contained: its main session (direct chats, heartbeats) runs on the host, outside the sandbox (agents.entries.shell.sandbox.mode)"), "{msg}");
        assert!(
            fix.contains("openclaw config set agents.entries.shell.sandbox '"),
            "{fix}"
        );
        assert!(!r.ok, "no token is served: doctor fails");

        fs::write(&c, body("warn")).unwrap();
        let r = doctor(&p, Some(&c));
        let statuses: Vec<Severity> = r
            .checks
            .iter()
            .filter(|c| c.label == "posture")
            .map(|c| c.severity)
            .collect();
        assert_eq!(statuses, [Severity::Warn, Severity::Warn]);
    }

    #[test]
    fn a_contained_config_is_one_ok_line_naming_how_each_agent_is_contained() {
        let d = tmpdir("contained");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}"}}"#));
        let c = d.join("openclaw.json");
        fs::write(
            &c,
            r#"{ plugins: { entries: { 'claw-identity': { enabled: true } } },
                 tools: { codeMode: false },
                 agents: { defaults: { sandbox: { mode: "all", backend: "claw-identity" } }, entries: { a: {} } } }"#,
        )
        .unwrap();
        let r = doctor(&p, Some(&c));
        let posture: Vec<&Finding> = r.checks.iter().filter(|c| c.label == "posture").collect();
        assert_eq!(posture.len(), 1, "{posture:#?}");
        assert_eq!(posture[0].severity, Severity::Pass);
        assert_eq!(
            posture[0].detail,
            "every agent is contained: a (sandbox), the agents the roster doesn't list (sandbox)"
        );
    }
}
