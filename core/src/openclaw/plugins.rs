//! Whether a bundled plugin is enabled, as OpenClaw 2026.9.6 decides it
//! from config (`resolvePluginActivationDecisionShared`,
//! `config-normalization-shared-*.mjs`): a plugin's tools exist only while
//! it is. Where config alone can't tell (an activation by the presence of
//! a config path or a command), it is taken as enabled: the posture then
//! asks for a deny it may not need, never the reverse.

use serde_json::{Map, Value};

/// The bundled plugins of the tool catalog whose manifest says
/// `"enabledByDefault": true` (`dist/extensions/<id>/openclaw.plugin.json`).
pub const ENABLED_BY_DEFAULT: &[&str] = &[
    "browser",
    "canvas",
    "file-transfer",
    "ollama",
    "talk-voice",
    "xai",
];

/// The memory slot's default plugin (`DEFAULT_SLOT_BY_KEY`, `slots-*.mjs`).
pub const DEFAULT_MEMORY_SLOT: &str = "memory-core";

/// `normalizePluginPolicyId`: trimmed, lowercased.
fn policy_id(id: &str) -> String {
    crate::paths::js_trim(id).to_lowercase()
}

fn ids(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(policy_id)
        .collect()
}

/// Whether bundled plugin `id` may be enabled under `config`.
pub fn bundled_enabled(config: &Map<String, Value>, id: &str) -> bool {
    let id = policy_id(id);
    let plugins = config.get("plugins").and_then(Value::as_object);
    let get = |k: &str| plugins.and_then(|p| p.get(k));
    if get("enabled") == Some(&Value::Bool(false)) {
        return false;
    }
    if ids(get("deny")).contains(&id) {
        return false;
    }
    let entry = get("entries").and_then(|e| e.get(&id));
    if entry.and_then(|e| e.get("enabled")) == Some(&Value::Bool(false)) {
        return false;
    }
    // The memory slot's plugin is enabled; the slot defaults to
    // "memory-core" (`DEFAULT_SLOT_BY_KEY`, `slots-*.mjs`).
    let memory_slot = get("slots")
        .and_then(|s| s.get("memory"))
        .and_then(Value::as_str)
        .map(policy_id)
        .unwrap_or_else(|| DEFAULT_MEMORY_SLOT.to_owned());
    if memory_slot == id {
        return true;
    }
    let allow = ids(get("allow"));
    if !allow.is_empty() && !allow.contains(&id) {
        return false;
    }
    // Enabled in config, selected by a config entry or a config path, or on
    // by default: config alone can't tell an activation by config path from
    // an absent one, so any entry counts.
    entry.is_some() || ENABLED_BY_DEFAULT.contains(&id.as_str()) || config.contains_key(&id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn enabled(c: Value, id: &str) -> bool {
        bundled_enabled(c.as_object().unwrap(), id)
    }

    #[test]
    fn a_plugin_on_by_default_is_on_until_config_turns_it_off() {
        assert!(enabled(json!({}), "browser"));
        assert!(!enabled(json!({"plugins": {"enabled": false}}), "browser"));
        assert!(!enabled(
            json!({"plugins": {"deny": [" Browser "]}}),
            "browser"
        ));
        assert!(!enabled(
            json!({"plugins": {"entries": {"browser": {"enabled": false}}}}),
            "browser"
        ));
        assert!(!enabled(
            json!({"plugins": {"allow": ["claw-identity"]}}),
            "browser"
        ));
    }

    #[test]
    fn a_plugin_off_by_default_is_on_once_config_names_it() {
        assert!(!enabled(json!({}), "memory-wiki"));
        assert!(enabled(
            json!({"plugins": {"entries": {"memory-wiki": {}}}}),
            "memory-wiki"
        ));
        assert!(enabled(
            json!({"plugins": {"slots": {"memory": "memory-wiki"}}}),
            "memory-wiki"
        ));
        assert!(!enabled(
            json!({"plugins": {"entries": {"memory-wiki": {"enabled": false}}}}),
            "memory-wiki"
        ));
    }

    #[test]
    fn the_memory_slot_s_plugin_is_on_and_memory_core_by_default() {
        assert!(enabled(json!({}), "memory-core"));
        assert!(!enabled(
            json!({"plugins": {"slots": {"memory": "memory-wiki"}}}),
            "memory-core"
        ));
    }
}
