//! Rule `layer-controls`: nothing a model does with its own tools may weaken
//! the identity layer. OpenClaw 2026.9.6 hot-applies an edited config
//! (`plugins.entries.*` included), loads plugin code from files its file
//! tools can write, and gives agents tools that change its own setup. So:
//!
//! - the files that control the layer are protected locations of
//!   `map-access`'s path guard (the table in `crate::protected`): OpenClaw's
//!   config file and its `$include`s, the `.env` files OpenClaw loads and
//!   the secrets beside the config (these can't be read either: they hold
//!   the gateway's auth token and provider keys), and every place OpenClaw
//!   imports code or reads its start-up from (written by no tool);
//! - `plugins` may not disable, uninstall or reload this plugin, nor install
//!   or enable another (a plugin loaded later can register a trusted policy
//!   that runs after this one and rewrites the token);
//! - the `openclaw` delegate, which hands a message to OpenClaw's system
//!   agent and, with OpenClaw's default exec policy, applies a
//!   `config set …` in it without a human, is refused; inside the system
//!   agent's own turn, its config and plugin actions that touch `plugins`
//!   are refused.
//!
//! Where each fact comes from is in docs/rules.md.

use super::Reads;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Context, Decision, ToolCall};
use crate::openclaw::params::str_param;
use crate::paths;
use crate::redact::shown;

pub const RULE_ID: &str = crate::call::rule_id::LAYER_CONTROLS;

/// This plugin's id, as OpenClaw's `plugins` tool normalizes ids (lowercased).
pub const PLUGIN_ID: &str = "claw-identity";

/// The id of OpenClaw's system agent (`SYSTEM_AGENT_ID`).
pub const SYSTEM_AGENT_ID: &str = "openclaw";

fn refused<'a>(what: String) -> Decision<'a> {
    Decision::block(
        RULE_ID,
        format!("{RULE_ID}: {what} The operator does this, outside the agents' tools."),
    )
}

/// `plugins` (`createPluginsTool`, `openclaw-tools-*.mjs`): actions
/// `disable`, `uninstall` and `reload` of this plugin, and `install` and
/// `enable` of any plugin, are refused; `list`, `inspect`, `search` pass.
pub fn plugins<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    if !cx.opts.rules.layer_controls.enabled {
        return Decision::pass();
    }
    let action =
        str_param(call.params, "action", "action").map(|a| paths::js_trim(a).to_ascii_lowercase());
    let id = str_param(call.params, "pluginId", "plugin_id")
        .map(|p| paths::js_trim(p).to_ascii_lowercase());
    let ours = id.as_deref() == Some(PLUGIN_ID);
    match action.as_deref() {
        Some("disable" | "uninstall" | "reload") if ours || id.is_none() => refused(format!(
            "plugins {} of {PLUGIN_ID} was refused: it would switch off the identity layer that gives every agent its own token.",
            action.unwrap_or_default()
        )),
        Some(a @ ("install" | "enable")) => refused(format!(
            "plugins {a} was refused: a plugin the agents install or enable could run after {PLUGIN_ID} and undo the identity it sets."
        )),
        Some("list" | "inspect" | "search") | None => Decision::pass(),
        Some(other) if ours => refused(format!(
            "plugins {} of {PLUGIN_ID} was refused.",
            shown(other)
        )),
        Some(_) => Decision::pass(),
    }
}

/// `automations` jobs that run a host process, for every agent: the
/// gateway starts them as its own user, outside every agent's tools and
/// sandbox, and a stream source with the gateway's whole environment
/// (`spawnSource`, server-cron-*.mjs), so one could read the token map or
/// switch the layer off. OpenClaw's own `assertNoCronShellExecution`
/// (cron-tool-*.mjs) refuses only command payloads and on-exit schedules,
/// by a case-sensitive kind, and not for a management grant's update. The
/// call is read as OpenClaw canonicalizes it (`crate::openclaw::cron`).
pub fn automation<'a>(
    cx: &Context<'_, 'a>,
    call: &ToolCall<'a>,
    job: &crate::openclaw::cron::Call,
) -> Option<Decision<'a>> {
    if !cx.opts.rules.layer_controls.enabled {
        return None;
    }
    let what = job.host_process()?;
    Some(Decision::block(
        RULE_ID,
        format!(
            "{RULE_ID}: {} {} was refused: the job runs a host process ({what}), which the gateway starts as its own user with its own environment, outside every agent's tools and sandbox, where it could read the token map or switch the identity layer off. Agents may schedule agentTurn and systemEvent jobs; the operator can add this one with `openclaw cron add` or the Gateway's cron.add.",
            shown(call.tool),
            shown(&job.action)
        ),
    ))
}

/// Config paths the system agent may not set: what decides whether and
/// how plugins load (`plugins.*`, the whole config).
fn touches_plugins(path: &str) -> bool {
    let p = paths::js_trim(path)
        .trim_start_matches('.')
        .to_ascii_lowercase();
    p.is_empty() || p == "plugins" || p.starts_with("plugins.") || p.starts_with("plugins[")
}

/// `openclaw`: the delegate a regular agent gets (`{message}`, handed to
/// the system agent, which with OpenClaw's default exec policy applies what
/// it is told without a human) is refused; in the system agent's own turn
/// (`ctx.agentId` "openclaw", the ring-zero tool), setting anything under
/// `plugins` and installing, activating or uninstalling a plugin are refused.
pub fn openclaw<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    if !cx.opts.rules.layer_controls.enabled {
        return Decision::pass();
    }
    if call.agent_id != Some(SYSTEM_AGENT_ID) {
        return refused(format!(
            "the openclaw tool was refused for agent {}: it asks OpenClaw's system agent to change the gateway's own setup (its config and plugins, the identity layer among them), which agents may not do.",
            shown(call.agent_id.unwrap_or("(unknown)"))
        ));
    }
    let action = str_param(call.params, "action", "action")
        .map(paths::js_trim)
        .unwrap_or("");
    match action {
        "config_set" | "config_set_ref" => {
            let path = str_param(call.params, "path", "path").unwrap_or("");
            if touches_plugins(path) {
                return refused(format!(
                    "openclaw {action} of \"{}\" was refused: plugin settings decide whether the identity layer runs.",
                    shown(path)
                ));
            }
            Decision::pass()
        }
        "plugin_install" | "plugin_activate_artifact" | "plugin_uninstall" => refused(format!(
            "openclaw {action} was refused: plugins decide whether the identity layer runs."
        )),
        _ => Decision::pass(),
    }
}

/// The params these rules read.
pub const PLUGINS_READS: &[&str] = &["action", "pluginId", "plugin_id"];
pub const OPENCLAW_READS: &[&str] = &["action", "path", "message"];

/// A config value's `$include`s, as OpenClaw resolves them
/// (`includes-*.mjs`): a string or a list of strings, relative to the
/// including file, at any depth of the object.
pub fn includes_of(value: &Value, including: &Path, out: &mut Vec<PathBuf>) {
    match value {
        Value::Object(o) => {
            match o.get("$include") {
                Some(Value::String(s)) => {
                    out.push(paths::resolve(&paths::parent_of(including), Path::new(s)))
                }
                Some(Value::Array(a)) => {
                    for s in a.iter().filter_map(Value::as_str) {
                        out.push(paths::resolve(&paths::parent_of(including), Path::new(s)));
                    }
                }
                _ => {}
            }
            for (k, v) in o {
                if k != "$include" {
                    includes_of(v, including, out);
                }
            }
        }
        Value::Array(a) => {
            for v in a {
                includes_of(v, including, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn includes_are_found_at_any_depth_relative_to_their_file() {
        let mut out = Vec::new();
        includes_of(
            &json!({"$include": "a.json5", "agents": {"$include": ["b.json", "/abs/c.json"]}}),
            Path::new("/home/u/.openclaw/openclaw.json"),
            &mut out,
        );
        assert_eq!(
            out,
            vec![
                PathBuf::from("/home/u/.openclaw/a.json5"),
                PathBuf::from("/home/u/.openclaw/b.json"),
                PathBuf::from("/abs/c.json")
            ]
        );
    }

    #[test]
    fn plugin_paths_of_the_config_are_recognised() {
        for p in [
            "plugins",
            "plugins.entries.claw-identity.enabled",
            " .plugins.allow",
            "Plugins.deny",
            "",
        ] {
            assert!(touches_plugins(p), "{p}");
        }
        for p in ["agents.defaults.model", "pluginsx", "tools.fs"] {
            assert!(!touches_plugins(p), "{p}");
        }
    }
}
