//! Checks of the gateway's config: can it be read, does OpenClaw load the
//! plugin, are its options valid, and which settings widen what an agent can
//! reach (OpenClaw's session reach, the rules turned off).

use std::collections::BTreeSet;

use serde_json::Value;

use super::Inputs;
use crate::openclaw::agent_ids::user_prefix;
use crate::openclaw::config::{PLUGIN_ID, PROCESS_LOCATIONS};
use crate::ops::finding::{Finding, Severity};
use crate::redact::shown;

fn config_key() -> String {
    format!("plugins.entries.{PLUGIN_ID}.config")
}

/// The config can be read (and, for doctor, whether it includes others).
pub(super) fn readable(i: &Inputs<'_>) -> Vec<Finding> {
    match &i.config {
        None => Vec::new(),
        Some(Err(e)) => vec![Finding::new(
            "config_unreadable",
            Severity::Fail,
            "config",
            "claw-identity could not read the gateway's config",
            format!("{e:#}"),
            Some("pass the gateway's config file (OPENCLAW_CONFIG_PATH; by default ~/.openclaw/openclaw.json), readable JSON5: openclaw config validate checks it".into()),
        )],
        Some(Ok(c)) if c.uses_include() => vec![Finding::doctor(
            "config_include",
            Severity::Warn,
            "config",
            "it uses $include; doctor reads only this file",
            Some("check the included files by hand for the plugin entry and agents".into()),
        )],
        Some(Ok(_)) => Vec::new(),
    }
}

/// OpenClaw loads the plugin at all: one that is not loaded injects nothing.
pub(super) fn enabled(i: &Inputs<'_>) -> Vec<Finding> {
    let Some(c) = i.config() else {
        return Vec::new();
    };
    let problems = c.enablement_problems();
    if problems.is_empty() {
        return vec![Finding::new(
            "plugin_enabled",
            Severity::Pass,
            "plugin enabled",
            "",
            format!("plugins.entries.{PLUGIN_ID}.enabled is true"),
            None,
        )];
    }
    problems
        .into_iter()
        .map(|p| {
            Finding::new(
                "not_enabled",
                Severity::Critical,
                "plugin enabled",
                "claw-identity does not run: no agent gets its token and no identity rule holds",
                p.problem,
                Some(p.fix),
            )
        })
        .collect()
}

/// The plugin's options validate against its schema.
pub(super) fn options(i: &Inputs<'_>) -> Vec<Finding> {
    let (Some(c), Some(plugin)) = (i.config(), &i.plugin) else {
        return Vec::new();
    };
    vec![match plugin {
        Ok(o) => Finding::new(
            "plugin_config",
            Severity::Pass,
            "plugin config",
            "",
            format!(
                "{}; the plugin reads {}",
                if c.plugin_options().is_some() {
                    "valid"
                } else {
                    "not set, so the defaults apply"
                },
                crate::paths::shown(&o.token_map_path)
            ),
            None,
        ),
        Err(e) => Finding::new(
            "config_invalid",
            Severity::Critical,
            "plugin config",
            "claw-identity's config is invalid, so the plugin does not start",
            format!("{} is invalid: {e:#}", config_key()),
            Some("correct it against the configSchema in the plugin's openclaw.plugin.json (OpenClaw validates it there)".into()),
        ),
    }]
}

/// OpenClaw's session reach between the agents of different users.
pub(super) fn session_reach(i: &Inputs<'_>) -> Vec<Finding> {
    let Some(c) = i.config() else {
        return Vec::new();
    };
    let users: BTreeSet<&str> = i
        .configured
        .iter()
        .flatten()
        .map(|a| user_prefix(a).unwrap_or(a))
        .collect();
    if users.len() < 2 {
        return Vec::new();
    }
    let visibility = match c.get(&["tools", "sessions", "visibility"]) {
        Some(Value::String(v)) => v.as_str(),
        _ => "all",
    };
    let mut open = Vec::new();
    if visibility == "all" || visibility == "tree" {
        open.push(format!(
            "tools.sessions.visibility is \"{}\"",
            shown(visibility)
        ));
    }
    if c.get(&["tools", "agentToAgent", "enabled"]) != Some(&Value::Bool(false)) {
        open.push("tools.agentToAgent.enabled is true (the default)".to_owned());
    }
    if open.is_empty() {
        return Vec::new();
    }
    let users: Vec<String> = users.iter().map(|u| shown(u).to_string()).collect();
    let reach = format!(
        "agents of {} users ({}) share this gateway and {}",
        users.len(),
        users.join(", "),
        open.join(" and ")
    );
    let fix = "openclaw config set tools.sessions.visibility agent; and openclaw config set tools.agentToAgent.enabled false --strict-json (or list the allowed pairs in tools.agentToAgent.allow)";
    let key = config_key();
    vec![if i.opts.rules.cross_user_send.enabled {
        Finding::audit(
            "cross_user_session_reach",
            Severity::Info,
            "OpenClaw lets agents reach other users' sessions; claw-identity's guard holds the session tools",
            format!("{reach}: rule cross-user-send holds sessions_send, sessions_spawn and the session-reading tools to the caller's own user, but only where before_tool_call runs (not the Codex app-server harness, not the claude-cli backend's MCP tools)"),
            Some(format!("narrow it in OpenClaw too: {fix}")),
        )
    } else {
        Finding::audit(
            "cross_user_session_reach",
            Severity::Warn,
            "any agent can read and message other users' sessions: rule cross-user-send is off",
            format!("{reach}, and {key}.rules.crossUserSend.enabled is false, so nothing holds the session tools to the caller's own user"),
            Some(format!("openclaw config unset {key}.rules.crossUserSend.enabled; or {fix}")),
        )
    }]
}

/// Rule layer-controls, which keeps the agents' tools off the layer itself.
pub(super) fn layer_controls(i: &Inputs<'_>) -> Vec<Finding> {
    if i.config().is_none() || i.opts.rules.layer_controls.enabled {
        return Vec::new();
    }
    let key = config_key();
    vec![Finding::audit(
        "layer_controls_off",
        Severity::Warn,
        "the agents' own tools can switch the identity layer off",
        format!("{key}.rules.layerControls.enabled is false: the agents' file tools can change OpenClaw's config and the plugin's files, and their plugins and openclaw tools can disable the plugin"),
        Some(format!("openclaw config unset {key}.rules.layerControls")),
    )]
}

/// What the agents' own tools can't reach (doctor lists it in its report).
pub(super) fn guarded_locations(i: &Inputs<'_>) -> Vec<Finding> {
    if i.config().is_none() {
        return Vec::new();
    }
    let listed = i
        .guarded
        .iter()
        .map(|g| {
            format!(
                "{} ({}): {} refused by {}",
                g.what, g.path, g.refused, g.rule
            )
        })
        .chain(std::iter::once(PROCESS_LOCATIONS.to_owned()))
        .collect::<Vec<_>>()
        .join("; ");
    vec![Finding::audit(
        "guarded_locations",
        Severity::Info,
        "what the agents' own tools can't reach",
        listed,
        Some("Nothing to change: this lists what is guarded. To see why a given call is refused, run claw-identity explain --tool <tool> --agent <id> --params '<json>' --config <openclaw.json>.".to_owned()),
    )]
}
