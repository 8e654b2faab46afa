//! Command-line model backends an agent can run on (`claude-cli`, ...):
//! their own tools run on the gateway's host, outside OpenClaw's sandbox and
//! `tools.fs.workspaceOnly` (`runCliAgent`, `cli-runner-*.mjs`;
//! `docs/gateway/cli-backends.md`). A backend is chosen by a model ref whose
//! provider is the backend (`claude-cli/claude-sonnet-5`), or by
//! `agentRuntime: { id }` on a model's entry in `agents.defaults.models` or
//! the agent's `models`; a session may select one directly only when
//! `modelPolicy.allow` admits it, and fallbacks run when the primary fails.
//!
//! Backends are registered by plugins (`api.registerCliBackend`): the
//! bundled ones are `claude-cli` (anthropic) and `google-gemini-cli`
//! (google). A plugin may register any id; by convention they end in
//! `-cli`, which is what is taken here besides the bundled ones.

use serde_json::{Map, Value};

/// The bundled backends' ids (`CLI_BACKEND_ID`, `cli-constants-*.mjs`).
pub const BUNDLED: &[&str] = &["claude-cli", "google-gemini-cli"];

/// Whether `id` names a command-line backend.
pub fn is_cli_backend(id: &str) -> bool {
    let id = crate::paths::js_trim(id).to_ascii_lowercase();
    BUNDLED.contains(&id.as_str()) || id.ends_with("-cli")
}

/// The provider of a model ref `provider/model` (a ref without a `/` has
/// none that config alone names).
fn provider(model_ref: &str) -> Option<&str> {
    model_ref.split_once('/').map(|(p, _)| p)
}

fn object(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

/// Every command-line backend `entry` (an agent's entry, or `None` for an
/// agent the roster doesn't list) can run on, each with the config key
/// that makes it so.
pub fn reachable(
    config: &Map<String, Value>,
    entry: Option<(&str, &Map<String, Value>)>,
) -> Vec<(String, String)> {
    let defaults = object(config.get("agents")).and_then(|a| object(a.get("defaults")));
    let mut out: Vec<(String, String)> = Vec::new();
    let mut note = |id: &str, key: String| {
        if is_cli_backend(id) && !out.iter().any(|(i, k)| i == id && *k == key) {
            out.push((id.to_owned(), key));
        }
    };
    // `model`: a ref, or `{ primary, fallbacks }`.
    let models = |model: Option<&Value>, key: &str, note: &mut dyn FnMut(&str, String)| match model
    {
        Some(Value::String(r)) => {
            if let Some(p) = provider(r) {
                note(p, key.to_owned());
            }
        }
        Some(Value::Object(m)) => {
            if let Some(p) = m.get("primary").and_then(Value::as_str).and_then(provider) {
                note(p, format!("{key}.primary"));
            }
            for r in m
                .get("fallbacks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if let Some(p) = provider(r) {
                    note(p, format!("{key}.fallbacks"));
                }
            }
        }
        _ => {}
    };
    // The models' own entries: a ref there may carry `agentRuntime: { id }`.
    let entries =
        |section: Option<&Map<String, Value>>, key: &str, note: &mut dyn FnMut(&str, String)| {
            for (r, m) in object(section.and_then(|s| s.get("models")))
                .into_iter()
                .flatten()
            {
                if let Some(id) = m
                    .get("agentRuntime")
                    .and_then(|a| a.get("id"))
                    .and_then(Value::as_str)
                {
                    note(id, format!("{key}.models.{r}.agentRuntime.id"));
                }
            }
            for r in object(section.and_then(|s| s.get("modelPolicy")))
                .and_then(|p| p.get("allow"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if let Some(p) = provider(r) {
                    note(p, format!("{key}.modelPolicy.allow"));
                }
            }
        };
    models(
        defaults.and_then(|d| d.get("model")),
        "agents.defaults.model",
        &mut note,
    );
    entries(defaults, "agents.defaults", &mut note);
    if let Some((key, e)) = entry {
        models(e.get("model"), &format!("{key}.model"), &mut note);
        entries(Some(e), key, &mut note);
        for field in ["agentRuntime", "runtime"] {
            if let Some(id) = e
                .get(field)
                .and_then(|r| r.get("id").or(Some(r)))
                .and_then(Value::as_str)
            {
                note(id, format!("{key}.{field}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(config: Value, agent: Option<&str>) -> Vec<String> {
        let c = config.as_object().unwrap();
        let entry = agent.map(|a| {
            (
                format!("agents.entries.{a}"),
                c["agents"]["entries"][a].as_object().unwrap().clone(),
            )
        });
        reachable(c, entry.as_ref().map(|(k, e)| (k.as_str(), e)))
            .into_iter()
            .map(|(id, key)| format!("{id} @ {key}"))
            .collect()
    }

    #[test]
    fn a_cli_backend_as_a_models_provider_fallback_or_runtime_is_found_with_its_key() {
        let c = json!({"agents": {
            "defaults": {"model": {"primary": "anthropic/opus", "fallbacks": ["claude-cli/sonnet"]},
                         "models": {"anthropic/opus": {"agentRuntime": {"id": "claude-cli"}}}},
            "entries": {"a": {"model": "google-gemini-cli/pro", "modelPolicy": {"allow": ["acme-cli/x"]}}}
        }});
        assert_eq!(
            found(c, Some("a")),
            [
                "claude-cli @ agents.defaults.model.fallbacks",
                "claude-cli @ agents.defaults.models.anthropic/opus.agentRuntime.id",
                "google-gemini-cli @ agents.entries.a.model",
                "acme-cli @ agents.entries.a.modelPolicy.allow",
            ]
        );
    }

    #[test]
    fn api_providers_are_no_cli_backend() {
        let c = json!({"agents": {"defaults": {"model": "openai/gpt-5", "models": {"anthropic/opus": {}}}, "entries": {"a": {}}}});
        assert!(found(c, Some("a")).is_empty());
    }
}
