//! The two tools that run model-written JavaScript outside the tool policy's
//! reach, from config: Code Mode's `exec` and Tool Search's
//! `tool_search_code`.
//!
//! - Code Mode (`docs/tools/code-mode/*.md`) replaces a run's tools with its
//!   own `exec` and `wait`, added after the tool policy
//!   (`resolveAgentToolSurfacePlan`, `applyAgentToolSurfaceCatalog`,
//!   `tool-surface-bridge-*.mjs`): no allow or deny list removes them. Its
//!   `exec` evaluates the model's JavaScript in the selected executor; the
//!   default, `node`, is `node:vm` in a worker thread of the gateway, which
//!   OpenClaw documents as "not a security boundary" (`executors.md`). Cron
//!   `script` payloads and trigger scripts run in the same executor
//!   (`createCronScriptRuntime`, `server-cron-*.mjs`).
//! - `tool_search_code` runs the model's JavaScript in a Node subprocess under
//!   `node --permission` (`runCodeModeChild`, `local-model-lean-*.mjs`),
//!   offered when Tool Search resolves to mode `code`
//!   (`resolveToolSearchConfig`). OpenClaw adds it to every allow list of the
//!   runs it enables it for, so only a deny entry removes it
//!   ([`super::tool_policy`]).

use serde_json::{Map, Value};

use super::roster;

/// `readEnabled` (`tool-surface-bridge-*.mjs`): `true`, `false` or `"auto"`;
/// anything else is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    Off,
    On,
    /// Engages only for models whose catalog entry has
    /// `compat.codeMode: "preferred"` (`isCodeModeEngagedForModel`), which
    /// config alone doesn't tell.
    Auto,
}

impl Activation {
    fn read(value: &Value) -> Activation {
        match value {
            Value::Bool(true) => Activation::On,
            Value::String(s) if s == "auto" => Activation::Auto,
            _ => Activation::Off,
        }
    }
}

/// `readExecutor`: where Code Mode runs the model's JavaScript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Executor {
    /// `node:vm` in a worker thread of the gateway (the default).
    Node,
    /// QuickJS-WASI in a worker, from the bundled `code-mode-quickjs` plugin.
    QuickJs,
    /// Any other value: OpenClaw throws, and every engaged run fails.
    Invalid(String),
}

/// What config says about Code Mode for one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeMode {
    /// Every activation some model of the agent can resolve to, each with
    /// the config key it comes from. A model no key names gets the last one.
    pub activations: Vec<(Activation, String)>,
    /// The executor, and the key it comes from (`None`: the default).
    pub executor: (Executor, Option<String>),
}

impl CodeMode {
    /// Whether Code Mode can engage for some session of the agent (an
    /// `"auto"` counts: the model catalog decides).
    pub fn may_engage(&self) -> bool {
        self.activations.iter().any(|(a, _)| *a != Activation::Off)
    }

    /// Whether an engaged run executes the model's JavaScript inside the
    /// gateway process.
    pub fn runs_in_gateway(&self) -> bool {
        self.may_engage() && self.executor.0 == Executor::Node
    }
}

/// `normalizeCodeModeRawConfig`: `true`/`false`/`"auto"` are shorthand for
/// `{enabled}`; an object is itself; anything else is absent.
fn raw(value: Option<&Value>) -> Option<Map<String, Value>> {
    match value? {
        Value::Bool(_) => Some(Map::from_iter([("enabled".to_owned(), value?.clone())])),
        Value::String(s) if s == "auto" => {
            Some(Map::from_iter([("enabled".to_owned(), value?.clone())]))
        }
        Value::Object(map) => Some(map.clone()),
        _ => None,
    }
}

/// `resolveCodeModeConfig` / `readCodeModeRawConfig` (`tool-surface-bridge-*.mjs`)
/// over every model an agent can run: a run's activation is
/// `agent.models[<model>].codeMode ?? agent tools.codeMode.enabled ??
/// agents.defaults.models[<model>].codeMode ?? tools.codeMode.enabled`, where
/// an absent `tools.codeMode` is `"auto"` and an object without `enabled` is
/// off. The executor is the agent's `tools.codeMode.executor`, else the
/// global one, else `node`.
pub fn code_mode(config: &Map<String, Value>, agent_id: &str) -> CodeMode {
    let global = config.get("tools").and_then(|t| t.get("codeMode"));
    let global_raw = raw(global)
        .unwrap_or_else(|| Map::from_iter([("enabled".to_owned(), Value::from("auto"))]));
    let roster = roster::roster(config);
    let entry = roster.entry(agent_id);
    // `resolveAgentConfig(config, agentId)?.tools?.codeMode`: the per-agent
    // `tools` of the roster entry (no `agents.defaults.tools` fallback here).
    let agent_key = entry.map(|e| format!("{}.tools.codeMode", e.path));
    let agent_raw = entry.and_then(|e| raw(e.get("tools").and_then(|t| t.get("codeMode"))));

    let mut activations = Vec::new();
    let per_model = |models: Option<&Value>, prefix: &str, out: &mut Vec<(Activation, String)>| {
        for (model, entry) in models.and_then(Value::as_object).into_iter().flatten() {
            if let Some(value) = entry.get("codeMode").filter(|v| !v.is_null()) {
                out.push((
                    Activation::read(value),
                    format!("{prefix}.{model}.codeMode"),
                ));
            }
        }
    };
    if let Some(e) = entry {
        per_model(
            e.get("models"),
            &format!("{}.models", e.path),
            &mut activations,
        );
    }
    match agent_raw
        .as_ref()
        .and_then(|r| r.get("enabled"))
        .filter(|v| !v.is_null())
    {
        Some(enabled) => activations.push((
            Activation::read(enabled),
            format!("{}.enabled", agent_key.clone().unwrap_or_default()),
        )),
        None => {
            let defaults_models = config
                .get("agents")
                .and_then(|a| a.get("defaults"))
                .and_then(|d| d.get("models"));
            per_model(defaults_models, "agents.defaults.models", &mut activations);
            // A value that is neither a boolean, `"auto"` nor an object
            // reads as absent, so as `"auto"` too.
            let global_key = match raw(global) {
                None => "tools.codeMode (absent: \"auto\")".to_owned(),
                Some(_) => "tools.codeMode.enabled".to_owned(),
            };
            let enabled = global_raw.get("enabled").cloned().unwrap_or(Value::Null);
            activations.push((Activation::read(&enabled), global_key));
        }
    }

    let (executor_value, executor_key) = match agent_raw.as_ref().and_then(|r| r.get("executor")) {
        Some(v) => (Some(v), agent_key.map(|k| format!("{k}.executor"))),
        None => match global_raw.get("executor") {
            Some(v) => (Some(v), Some("tools.codeMode.executor".to_owned())),
            None => (None, None),
        },
    };
    let executor = match executor_value {
        None => Executor::Node,
        Some(Value::String(s)) if s == "node" => Executor::Node,
        Some(Value::String(s)) if s == "quickjs" => Executor::QuickJs,
        Some(other) => Executor::Invalid(other.to_string()),
    };
    CodeMode {
        activations,
        executor: (executor, executor_key),
    }
}

/// Whether Tool Search offers `tool_search_code` (`readToolSearchConfig` and
/// `resolveToolSearchConfig`, `local-model-lean-*.mjs`): `tools.toolSearch`
/// absent means mode `tools` (no code tool); `true` means enabled with the
/// default mode, `code`; an object is enabled when it says so or sets any
/// other key, and its `mode` defaults to `code`. OpenClaw falls back to
/// `tools` when no Node with `--permission` is installed, which config
/// doesn't tell: this answers for a host that has one.
pub fn tool_search_code(config: &Map<String, Value>) -> bool {
    let Some(search) = config.get("tools").and_then(|t| t.get("toolSearch")) else {
        return false;
    };
    let raw = match search {
        Value::Bool(true) => Map::from_iter([("enabled".to_owned(), Value::Bool(true))]),
        Value::Bool(false) => return false,
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let configured = raw.keys().any(|k| k != "enabled");
    let enabled = raw
        .get("enabled")
        .and_then(Value::as_bool)
        .unwrap_or(configured);
    // Any `mode` but `tools` and `directory` (an unknown or absent one) is `code`.
    let code = !matches!(
        raw.get("mode").and_then(Value::as_str),
        Some("tools" | "directory")
    );
    enabled && code
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn absent_code_mode_is_auto_on_the_node_executor() {
        let c = code_mode(&cfg(json!({})), "main");
        assert_eq!(
            c.activations,
            vec![(
                Activation::Auto,
                "tools.codeMode (absent: \"auto\")".to_owned()
            )]
        );
        assert_eq!(c.executor, (Executor::Node, None));
        assert!(c.may_engage());
        assert!(c.runs_in_gateway());
    }

    #[test]
    fn an_object_without_enabled_is_off() {
        let c = code_mode(
            &cfg(json!({"tools": {"codeMode": {"executor": "node"}}})),
            "main",
        );
        assert!(!c.may_engage());
        assert!(!code_mode(&cfg(json!({"tools": {"codeMode": false}})), "main").may_engage());
    }

    #[test]
    fn quickjs_keeps_code_mode_out_of_the_gateway_process() {
        let c = code_mode(
            &cfg(json!({"tools": {"codeMode": {"enabled": true, "executor": "quickjs"}}})),
            "main",
        );
        assert!(c.may_engage());
        assert!(!c.runs_in_gateway());
        assert_eq!(
            c.executor,
            (
                Executor::QuickJs,
                Some("tools.codeMode.executor".to_owned())
            )
        );
    }

    #[test]
    fn the_agents_setting_overrides_the_global_one() {
        let c = cfg(json!({
            "tools": {"codeMode": false},
            "agents": {"entries": {"a": {"tools": {"codeMode": {"enabled": "auto", "executor": "quickjs"}}}, "b": {}}}
        }));
        let a = code_mode(&c, "a");
        assert_eq!(
            a.activations,
            vec![(
                Activation::Auto,
                "agents.entries.a.tools.codeMode.enabled".to_owned()
            )]
        );
        assert_eq!(a.executor.0, Executor::QuickJs);
        assert!(!code_mode(&c, "b").may_engage());
    }

    #[test]
    fn a_per_model_setting_can_switch_it_on() {
        let c = cfg(json!({
            "tools": {"codeMode": false},
            "agents": {"defaults": {"models": {"openai/gpt-5.5": {"codeMode": true}}}}
        }));
        let m = code_mode(&c, "main");
        assert!(m.may_engage());
        assert!(m.activations.contains(&(
            Activation::On,
            "agents.defaults.models.openai/gpt-5.5.codeMode".to_owned()
        )));
        // The agent's own `enabled` hides the defaults' per-model settings,
        // but not the agent's own per-model ones.
        let own = cfg(json!({
            "agents": {"defaults": {"models": {"x/y": {"codeMode": true}}},
                       "entries": {"a": {"tools": {"codeMode": false}, "models": {"p/q": {"codeMode": "auto"}}}}}
        }));
        let a = code_mode(&own, "a");
        assert_eq!(
            a.activations,
            vec![
                (
                    Activation::Auto,
                    "agents.entries.a.models.p/q.codeMode".to_owned()
                ),
                (
                    Activation::Off,
                    "agents.entries.a.tools.codeMode.enabled".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn an_unknown_executor_is_invalid() {
        let c = code_mode(
            &cfg(json!({"tools": {"codeMode": {"enabled": true, "executor": "deno"}}})),
            "main",
        );
        assert_eq!(c.executor.0, Executor::Invalid("\"deno\"".to_owned()));
    }

    #[test]
    fn tool_search_code_needs_mode_code() {
        assert!(!tool_search_code(&cfg(json!({}))));
        assert!(tool_search_code(&cfg(
            json!({"tools": {"toolSearch": true}})
        )));
        assert!(tool_search_code(&cfg(
            json!({"tools": {"toolSearch": {"mode": "code"}}})
        )));
        assert!(!tool_search_code(&cfg(
            json!({"tools": {"toolSearch": {"mode": "tools"}}})
        )));
        assert!(!tool_search_code(&cfg(
            json!({"tools": {"toolSearch": {}}})
        )));
        assert!(!tool_search_code(&cfg(
            json!({"tools": {"toolSearch": {"enabled": false, "mode": "code"}}})
        )));
        assert!(!tool_search_code(&cfg(
            json!({"tools": {"toolSearch": false}})
        )));
    }
}
