//! The tool policy of an agent's sandboxed sessions: OpenClaw's
//! `resolveSandboxToolPolicyForAgent` (`tool-policy-*.mjs`,
//! `src/agents/sandbox/tool-policy.ts`), with its defaults
//! (`DEFAULT_TOOL_ALLOW`, `DEFAULT_TOOL_DENY`, `constants-*.mjs`). A
//! sandboxed session gets a tool only when this policy allows it as well as
//! every layer [`super::tool_policy`] reads.

use serde_json::{Map, Value};

use super::roster;
use super::tool_policy::{ToolPolicy, ToolRef, Verdict};

/// `DEFAULT_TOOL_ALLOW`: what a sandboxed session is offered by default.
pub const DEFAULT_ALLOW: &[&str] = &[
    "exec",
    "process",
    "read",
    "ls",
    "write",
    "edit",
    "apply_patch",
    "view_image",
    "sessions_list",
    "sessions_history",
    "sessions_search",
    "sessions_send",
    "sessions_spawn",
    "sessions_yield",
    "subagents",
    "session_status",
];

/// `DEFAULT_TOOL_DENY` without the channel ids (chat channels are no tool
/// that reaches the host).
pub const DEFAULT_DENY: &[&str] = &[
    "browser",
    "canvas",
    "computer",
    "mobile_ui",
    "nodes",
    "automations",
    "gateway",
];

fn list(section: Option<&Map<String, Value>>, field: &str) -> Option<Vec<String>> {
    section?.get(field)?.as_array().map(|a| {
        a.iter()
            .map(|v| v.as_str().unwrap_or("").to_owned())
            .collect()
    })
}

/// The sandbox policy for `agent_id`: each of `allow`, `alsoAllow` and
/// `deny` is the agent's `tools.sandbox.tools.<field>` when that is an
/// array, else the global one (`pickConfiguredList`); `allow` merged with
/// `alsoAllow` over the defaults (`mergeAllowlist`); a configured `deny`
/// replaces the default one, which otherwise loses what `allow`/`alsoAllow`
/// name explicitly (`filterDefaultDenyForExplicitAllows`). The keys the
/// lists came from are in [`SandboxPolicy::keys`].
pub fn policy(config: &Map<String, Value>, agent_id: &str) -> SandboxPolicy {
    let agent = roster::agent_tools(config, agent_id);
    let agent_section = agent
        .as_ref()
        .and_then(|(_, t)| t.get("sandbox"))
        .and_then(|s| s.get("tools"))
        .and_then(Value::as_object);
    let global_section = config
        .get("tools")
        .and_then(|t| t.get("sandbox"))
        .and_then(|s| s.get("tools"))
        .and_then(Value::as_object);
    let agent_key = agent
        .as_ref()
        .map(|(path, _)| format!("{path}.sandbox.tools"));
    let mut keys = Vec::new();
    let mut pick = |field: &str| match list(agent_section, field) {
        Some(v) => {
            keys.push(format!("{}.{field}", agent_key.clone().unwrap_or_default()));
            Some(v)
        }
        None => list(global_section, field).inspect(|_| {
            keys.push(format!("tools.sandbox.tools.{field}"));
        }),
    };
    let allow = pick("allow");
    let also = pick("alsoAllow");
    let deny = pick("deny");
    let defaults = || DEFAULT_ALLOW.iter().map(|s| (*s).to_owned());
    let merged_allow: Vec<String> = match (&allow, &also) {
        (Some(base), _) if base.is_empty() => Vec::new(),
        (Some(base), Some(extra)) if !extra.is_empty() => {
            base.iter().chain(extra).cloned().collect()
        }
        (Some(base), _) => base.clone(),
        (None, Some(extra)) if !extra.is_empty() => defaults().chain(extra.clone()).collect(),
        (None, _) => defaults().collect(),
    };
    let explicit: Vec<String> = allow
        .iter()
        .flatten()
        .chain(also.iter().flatten())
        .cloned()
        .collect();
    let deny = match deny {
        Some(d) => d,
        None => {
            let re_allowed = ToolPolicy {
                allow: Some(explicit.clone()),
                deny: Vec::new(),
            };
            DEFAULT_DENY
                .iter()
                .filter(|d| {
                    explicit.is_empty() || re_allowed.verdict(&ToolRef::new(d)) != Verdict::Allowed
                })
                .map(|d| (*d).to_owned())
                .collect()
        }
    };
    SandboxPolicy {
        policy: ToolPolicy {
            allow: Some(merged_allow),
            deny,
        },
        keys,
    }
}

/// An agent's sandbox tool policy and the keys it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    pub policy: ToolPolicy,
    /// The config keys that set it; empty when the defaults apply.
    pub keys: Vec<String>,
}

impl SandboxPolicy {
    /// Whether a sandboxed session may be offered `tool` (the other layers
    /// aside): `isToolAllowed` (`tool-policy-*.mjs`). An allow list left
    /// empty by the config allows everything, as in OpenClaw.
    pub fn allows(&self, tool: &ToolRef) -> bool {
        self.policy.verdict(tool) == Verdict::Allowed
    }

    /// The key an operator changes to take a tool out of sandboxed sessions.
    pub fn key(&self) -> String {
        self.keys
            .iter()
            .find(|k| k.ends_with(".allow") || k.ends_with(".alsoAllow"))
            .cloned()
            .unwrap_or_else(|| "tools.sandbox.tools.allow".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn allows(config: Value, agent: &str, tool: &str) -> bool {
        policy(config.as_object().unwrap(), agent).allows(&ToolRef::new(tool))
    }

    #[test]
    fn by_default_a_sandbox_gets_its_shell_and_files_and_none_of_the_host_tools() {
        let c = json!({"agents": {"entries": {"a": {}}}});
        for t in [
            "exec",
            "process",
            "read",
            "write",
            "apply_patch",
            "sessions_send",
        ] {
            assert!(allows(c.clone(), "a", t), "{t}");
        }
        for t in [
            "browser",
            "nodes",
            "automations",
            "cron",
            "gateway",
            "plugins",
            "openclaw",
            "terminal",
            "message",
            "claw-os__notes",
        ] {
            assert!(!allows(c.clone(), "a", t), "{t}");
        }
    }

    #[test]
    fn also_allow_adds_to_the_defaults_and_lifts_their_deny() {
        let c = json!({"tools": {"sandbox": {"tools": {"alsoAllow": ["automations", "claw-os__*"]}}}, "agents": {"entries": {"a": {}}}});
        assert!(allows(c.clone(), "a", "automations"));
        assert!(allows(c.clone(), "a", "claw-os__notes"));
        assert!(allows(c.clone(), "a", "exec"));
        assert!(!allows(c, "a", "nodes"));
    }

    #[test]
    fn the_agents_list_replaces_the_global_one_and_a_configured_deny_replaces_the_default() {
        let c = json!({
            "tools": {"sandbox": {"tools": {"allow": ["read"]}}},
            "agents": {"entries": {"a": {"tools": {"sandbox": {"tools": {"allow": ["exec", "browser"], "deny": []}}}}, "b": {}}}
        });
        assert!(allows(c.clone(), "a", "exec") && allows(c.clone(), "a", "browser"));
        assert!(!allows(c.clone(), "a", "read"));
        assert!(allows(c.clone(), "b", "read") && !allows(c.clone(), "b", "exec"));
        let p = policy(c.as_object().unwrap(), "a");
        assert_eq!(p.key(), "agents.entries.a.tools.sandbox.tools.allow");
    }

    #[test]
    fn an_empty_allow_list_allows_everything_not_denied() {
        let c = json!({"tools": {"sandbox": {"tools": {"allow": []}}}, "agents": {"entries": {"a": {}}}});
        assert!(allows(c.clone(), "a", "exec"));
        assert!(!allows(c, "a", "gateway"), "the default deny stays");
    }
}
