//! One agent's settings as OpenClaw 2026.9.6 resolves them from its config,
//! for the posture (`crate::posture`): its sandbox, where its `exec` runs,
//! whether it may run elevated, and whether its file tools are confined to
//! its workspace. Each value comes with the config key it was read from, so
//! a finding can name the line to change.
//!
//! Followed functions (dist/, hashed chunk names):
//! - `resolveSandboxConfigForAgent`, `resolveSandboxDockerConfig`,
//!   `resolveSandboxBrowserConfig` (`config-*.mjs`), `resolveSandboxScope`
//!   (`config-contract-*.mjs`);
//! - `resolveExecConfigState` (`exec-defaults-*.mjs`) and `normalizeExecTarget`;
//! - the elevated check of `resolveSandboxWorkspaceAuthority`
//!   (`runtime-*.mjs`, `src/agents/sandbox/workspace-authority.ts`), which is
//!   OpenClaw's own test of a confined sandbox;
//! - `resolveToolFsConfig` (`tool-fs-policy-*.mjs`).

use serde_json::{Map, Value};

/// A resolved value and the config key it was read from (the key that
/// would change it, where it was left to its default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub key: String,
}

/// An agent's sandbox, merged from `agents.defaults.sandbox` and its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// `"off"`, `"non-main"` or `"all"` (anything else OpenClaw's schema refuses).
    pub mode: Setting<String>,
    /// Trimmed and lowercased; OpenClaw's default `"docker"`.
    pub backend: Setting<String>,
    /// `"agent"`, `"session"` or `"shared"`.
    pub scope: String,
    /// `"none"`, `"ro"` or `"rw"`.
    pub workspace_access: Setting<String>,
    /// `docker.binds` (the defaults' then the agent's; the agent's are left
    /// out under scope `"shared"`), each with its key.
    pub binds: Vec<Setting<String>>,
    /// `browser.binds` (the browser container's).
    pub browser_binds: Vec<Setting<String>>,
    pub browser_host_control: Setting<bool>,
    /// The `dangerouslyAllow*` docker flags that are `true`, by key.
    pub dangerous: Vec<String>,
}

/// What the posture reads of one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSettings {
    pub sandbox: Sandbox,
    /// `tools.exec.host` in force: `"auto"` (the default), `"sandbox"`,
    /// `"gateway"` or `"node"`.
    pub exec_host: Setting<String>,
    /// Elevated exec may be asked for: `tools.elevated.enabled` is `true`
    /// and the agent's is not `false`.
    pub elevated: Setting<bool>,
    /// `tools.fs.workspaceOnly` in force is `true`.
    pub workspace_only: Setting<bool>,
}

fn object(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn at<'v>(m: Option<&'v Map<String, Value>>, path: &[&str]) -> Option<&'v Value> {
    let (last, parents) = path.split_last()?;
    let mut o = m?;
    for k in parents {
        o = object(o.get(*k))?;
    }
    o.get(*last)
}

fn string(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The agent's own value at `path` if it has one, else the global one at
/// `global`, else `default`; with the key it came from (the agent's key
/// when neither is set: that is the line that changes it for this agent
/// alone).
fn layered<T>(
    agent: (Option<&Map<String, Value>>, &str),
    global: (Option<&Map<String, Value>>, &str),
    path: &[&str],
    read: impl Fn(&Value) -> Option<T>,
    default: T,
) -> Setting<T> {
    let dotted = path.join(".");
    if let Some(v) = at(agent.0, path).and_then(&read) {
        return Setting {
            value: v,
            key: format!("{}.{dotted}", agent.1),
        };
    }
    if let Some(v) = at(global.0, path).and_then(&read) {
        return Setting {
            value: v,
            key: format!("{}.{dotted}", global.1),
        };
    }
    Setting {
        value: default,
        key: format!("{}.{dotted}", global.1),
    }
}

/// Resolves agent `entry`'s settings. `key` is where its entry lives
/// (`agents.entries.<id>`, `agents.list[<i>]`), `None` for an agent the
/// roster doesn't list, which gets the defaults only
/// (`resolveAgentConfig`, `agent-scope-config-*.mjs`).
pub fn resolve(
    root: &Map<String, Value>,
    entry: Option<&Map<String, Value>>,
    key: Option<&str>,
) -> AgentSettings {
    let defaults = object(at(Some(root), &["agents", "defaults"]));
    let tools = object(root.get("tools"));
    let own_tools = object(entry.and_then(|e| e.get("tools")));
    let agent_key = key.unwrap_or("agents.defaults");
    let agent_tools_key = format!("{agent_key}.tools");
    let own_sandbox = object(entry.and_then(|e| e.get("sandbox")));
    let sandbox_key = format!("{agent_key}.sandbox");
    let text = |v: &Value| v.as_str().map(str::to_owned);

    // resolveSandboxConfigForAgent: each field the agent's, else the defaults'.
    let sb = |path: &[&str], default: &str| {
        layered(
            (own_sandbox, &sandbox_key),
            (
                object(defaults.and_then(|d| d.get("sandbox"))),
                "agents.defaults.sandbox",
            ),
            path,
            text,
            default.to_owned(),
        )
    };
    let mode = sb(&["mode"], "off");
    // `agentSandbox?.backend?.trim() || agent?.backend?.trim() || "docker"`:
    // an empty backend falls through; the backend registry is keyed lowercased.
    let backend = layered(
        (own_sandbox, &sandbox_key),
        (
            object(defaults.and_then(|d| d.get("sandbox"))),
            "agents.defaults.sandbox",
        ),
        &["backend"],
        |v| {
            v.as_str()
                .map(crate::paths::js_trim)
                .filter(|b| !b.is_empty())
                .map(str::to_ascii_lowercase)
        },
        "docker".to_owned(),
    );
    let default_sandbox = object(defaults.and_then(|d| d.get("sandbox")));
    // resolveSandboxScope: `scope`, else the legacy `perSession`, else "agent".
    let scope = string(at(own_sandbox, &["scope"]))
        .or_else(|| string(at(default_sandbox, &["scope"])))
        .map(str::to_owned)
        .or_else(|| {
            at(own_sandbox, &["perSession"])
                .or_else(|| at(default_sandbox, &["perSession"]))
                .and_then(Value::as_bool)
                .map(|p| if p { "session" } else { "shared" }.to_owned())
        })
        .unwrap_or_else(|| "agent".to_owned());
    let shared = scope == "shared";
    let list = |path: &[&str]| {
        let mut out: Vec<Setting<String>> = strings(at(default_sandbox, path))
            .into_iter()
            .map(|b| Setting {
                value: b,
                key: format!("agents.defaults.sandbox.{}", path.join(".")),
            })
            .collect();
        if !shared {
            out.extend(strings(at(own_sandbox, path)).into_iter().map(|b| Setting {
                value: b,
                key: format!("{sandbox_key}.{}", path.join(".")),
            }));
        }
        out
    };
    let own_scoped = if shared { None } else { own_sandbox };
    let browser_host_control = layered(
        (own_scoped, &sandbox_key),
        (default_sandbox, "agents.defaults.sandbox"),
        &["browser", "allowHostControl"],
        Value::as_bool,
        false,
    );
    let dangerous = DANGEROUS_DOCKER_KEYS
        .iter()
        .filter_map(|k| {
            let own = at(own_scoped, &["docker", k]).and_then(Value::as_bool);
            let global = at(default_sandbox, &["docker", k]).and_then(Value::as_bool);
            match (own, global) {
                (Some(true), _) => Some(format!("{sandbox_key}.docker.{k}")),
                (None, Some(true)) => Some(format!("agents.defaults.sandbox.docker.{k}")),
                _ => None,
            }
        })
        .collect();
    let sandbox = Sandbox {
        mode,
        backend,
        scope,
        workspace_access: sb(&["workspaceAccess"], "none"),
        binds: list(&["docker", "binds"]),
        browser_binds: list(&["browser", "binds"]),
        browser_host_control,
        dangerous,
    };

    // resolveExecConfigState: the session's override, else the agent's, else the global, else "auto".
    let exec_host = layered(
        (own_tools, &agent_tools_key),
        (tools, "tools"),
        &["exec", "host"],
        |v| {
            v.as_str()
                .map(|h| crate::paths::js_trim(h).to_ascii_lowercase())
        },
        "auto".to_owned(),
    );
    // resolveSandboxWorkspaceAuthority: "can request host-level elevated
    // execution" when `tools.elevated.enabled === true` and the agent's is not false.
    let global_elevated = at(tools, &["elevated", "enabled"]) == Some(&Value::Bool(true));
    let agent_off = at(own_tools, &["elevated", "enabled"]) == Some(&Value::Bool(false));
    let elevated = Setting {
        value: global_elevated && !agent_off,
        key: if global_elevated {
            format!("{agent_tools_key}.elevated.enabled")
        } else {
            "tools.elevated.enabled".to_owned()
        },
    };
    // resolveToolFsConfig: the agent's `tools.fs.workspaceOnly ?? tools.fs.workspaceOnly`, on only when `=== true`.
    let workspace_only = layered(
        (own_tools, &agent_tools_key),
        (tools, "tools"),
        &["fs", "workspaceOnly"],
        Value::as_bool,
        false,
    );
    AgentSettings {
        sandbox,
        exec_host,
        elevated,
        workspace_only,
    }
}

/// `DANGEROUS_SANDBOX_DOCKER_BOOLEAN_KEYS` (`config-*.mjs`).
pub const DANGEROUS_DOCKER_KEYS: [&str; 3] = [
    "dangerouslyAllowReservedContainerTargets",
    "dangerouslyAllowExternalBindSources",
    "dangerouslyAllowContainerNamespaceJoin",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(root: Value, id: &str) -> AgentSettings {
        let root = root.as_object().unwrap().clone();
        let entry = root["agents"]["entries"][id].as_object().cloned();
        resolve(&root, entry.as_ref(), Some(&format!("agents.entries.{id}")))
    }

    #[test]
    fn an_agent_without_settings_gets_openclaws_defaults_and_the_keys_that_change_them() {
        let s = settings(json!({"agents": {"entries": {"a": {}}}}), "a");
        assert_eq!(s.sandbox.mode.value, "off");
        assert_eq!(s.sandbox.mode.key, "agents.defaults.sandbox.mode");
        assert_eq!(s.sandbox.backend.value, "docker");
        assert_eq!(s.sandbox.scope, "agent");
        assert_eq!(s.sandbox.workspace_access.value, "none");
        assert_eq!(s.exec_host.value, "auto");
        assert!(!s.elevated.value);
        assert!(!s.workspace_only.value);
        assert_eq!(s.workspace_only.key, "tools.fs.workspaceOnly");
    }

    #[test]
    fn the_agents_own_value_wins_over_the_defaults_and_names_its_key() {
        let s = settings(
            json!({
                "agents": {
                    "defaults": {"sandbox": {"mode": "non-main", "backend": "docker"}},
                    "entries": {"a": {"sandbox": {"mode": "all", "backend": " Claw-Identity "},
                                      "tools": {"fs": {"workspaceOnly": true}, "exec": {"host": "Gateway"}}}}
                },
                "tools": {"fs": {"workspaceOnly": false}, "exec": {"host": "sandbox"}}
            }),
            "a",
        );
        assert_eq!(
            (s.sandbox.mode.value.as_str(), s.sandbox.mode.key.as_str()),
            ("all", "agents.entries.a.sandbox.mode")
        );
        assert_eq!(s.sandbox.backend.value, "claw-identity");
        assert!(s.workspace_only.value);
        assert_eq!(
            s.workspace_only.key,
            "agents.entries.a.tools.fs.workspaceOnly"
        );
        assert_eq!(s.exec_host.value, "gateway");
        assert_eq!(s.exec_host.key, "agents.entries.a.tools.exec.host");
    }

    #[test]
    fn an_empty_backend_falls_through_to_the_next_one() {
        let s = settings(
            json!({"agents": {"defaults": {"sandbox": {"backend": "podman"}}, "entries": {"a": {"sandbox": {"backend": "  "}}}}}),
            "a",
        );
        assert_eq!(s.sandbox.backend.value, "podman");
    }

    #[test]
    fn binds_are_the_defaults_then_the_agents_except_under_a_shared_scope() {
        let cfg = |scope: &str| {
            json!({"agents": {
                "defaults": {"sandbox": {"scope": scope, "docker": {"binds": ["/d:/d"]}}},
                "entries": {"a": {"sandbox": {"docker": {"binds": ["/a:/a"], "dangerouslyAllowExternalBindSources": true}}}}
            }})
        };
        let s = settings(cfg("agent"), "a");
        let binds: Vec<_> = s.sandbox.binds.iter().map(|b| b.value.as_str()).collect();
        assert_eq!(binds, ["/d:/d", "/a:/a"]);
        assert_eq!(
            s.sandbox.binds[1].key,
            "agents.entries.a.sandbox.docker.binds"
        );
        assert_eq!(
            s.sandbox.dangerous,
            ["agents.entries.a.sandbox.docker.dangerouslyAllowExternalBindSources"]
        );
        let shared = settings(cfg("shared"), "a");
        assert_eq!(shared.sandbox.binds.len(), 1);
        assert!(shared.sandbox.dangerous.is_empty());
    }

    #[test]
    fn the_legacy_per_session_flag_sets_the_scope() {
        let s = settings(
            json!({"agents": {"entries": {"a": {"sandbox": {"perSession": false}}}}}),
            "a",
        );
        assert_eq!(s.sandbox.scope, "shared");
    }

    #[test]
    fn elevated_counts_only_when_enabled_explicitly_and_not_off_for_the_agent() {
        let on = json!({"tools": {"elevated": {"enabled": true}}, "agents": {"entries": {"a": {}, "b": {"tools": {"elevated": {"enabled": false}}}}}});
        assert!(settings(on.clone(), "a").elevated.value);
        assert_eq!(
            settings(on.clone(), "a").elevated.key,
            "agents.entries.a.tools.elevated.enabled"
        );
        assert!(!settings(on, "b").elevated.value);
        assert!(
            !settings(json!({"agents": {"entries": {"a": {}}}}), "a")
                .elevated
                .value
        );
    }
}
