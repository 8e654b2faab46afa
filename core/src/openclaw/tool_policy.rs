//! Can OpenClaw ever offer agent A tool T? The layers of OpenClaw's tool
//! policy that apply to every session of an agent, mirrored.
//!
//! OpenClaw builds a run's tools (`createOpenClawCodingToolsInternal`,
//! `agent-tools-*.mjs`; the gateway-scoped surfaces in
//! `resolveGatewayScopedTools`, `tool-resolution-*.mjs`) and filters them
//! through one pipeline of layers (`buildConversationToolPolicyPipelineSteps`,
//! `conversation-tool-policy-pipeline-*.mjs`; `applyToolPolicyPipeline`,
//! `tool-policy-pipeline-*.mjs`). Each layer is a filter: a tool survives
//! only if every layer allows it, so a layer can only narrow.
//!
//! The layers that apply to every session of an agent
//! (`resolveEffectiveToolPolicy`, `agent-tools.policy-*.mjs`):
//! 1. the profile: the agent's `tools.profile ?? tools.profile`, its allow list
//!    extended by `tools.alsoAllow` (the agent's when it has the key, else the
//!    global one) and by plugin tools whose manifest lists the profile;
//! 2. `tools.allow`/`alsoAllow`/`deny` (`pickSandboxToolPolicy`,
//!    `sandbox-tool-policy-*.mjs`);
//! 3. the agent's `tools.allow`/`alsoAllow`/`deny` ([`roster::agent_tools`]).
//!
//! Not counted as a denial, because they apply to some sessions only:
//! `tools.byProvider` and the agent's (a session's model decides which entry
//! applies, and a session can switch model: `sessions.patch`, `/model`,
//! `sessions_spawn`, fallbacks; no key matches every provider), the group and
//! channel policy, `toolsBySender`, the sandbox policy (pushed only for
//! sandboxed sessions), `tools.subagents.tools` and the inherited caps, the
//! owner-only deny for non-owner senders, and a run's `toolsAllow`. They are
//! more filters of the same pipeline, so they never widen these three.
//!
//! What does widen them, from OpenClaw's source:
//! - `message` is added to the profile's allow list when the message tool
//!   owns the visible reply or a run's `toolsAllow` names it, and
//!   `heartbeat_respond` in heartbeat runs (`runtimeProfileAlsoAllow`,
//!   `agent-tools-*.mjs`): for these two the profile never denies.
//! - Tool Search's controls are added to every allow list
//!   (`toolSearchControlAllowlist`, `agent-tools-*.mjs`): only a deny denies
//!   them.
//! - A plugin's sub-agent run may add that plugin's own tools to the profile
//!   (`resolvePluginSubagentToolsAlsoAllow`, `server-plugin-runtime-client-*.mjs`;
//!   core tools refused): for a plugin tool outside this catalog the profile
//!   is not a denial. No bundled plugin does it.
//! - Code Mode's `exec`/`wait` and the onboarding `openclaw` tool are added
//!   after the policy and bypass it entirely; they are not the tools this
//!   answers for (see [`super::tools`]).
//!
//! A config value of the wrong type: OpenClaw's gateway refuses a config its
//! schema rejects (`zod-schema.agent-runtime-*.mjs`: these lists are arrays
//! of strings, `profile` one of four names, `allow` and `alsoAllow` not both
//! non-empty in one scope), at startup and on reload, so a running gateway
//! has a valid one. Where a value is wrong anyway (a config file mid-edit),
//! this reads it as OpenClaw's resolvers do: a list that isn't an array is
//! absent, an entry that isn't a string is blank and dropped, a profile that
//! isn't one of the four filters nothing. Each of these reads leaves more
//! offered, never less.

use std::fmt;

use serde_json::{Map, Value};

use super::roster;
use super::tools::{self, GROUP_PLUGINS, POLICY_FAMILIES};

/// A tool as policy sees it: its normalized name and, for a plugin tool, the
/// plugin that registers it (policy entries naming the plugin id or
/// `group:plugins` match it too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRef {
    pub name: String,
    pub plugin: Option<String>,
}

impl ToolRef {
    /// A tool by id or alias; its plugin is the catalog's, if it lists one.
    pub fn new(name: &str) -> ToolRef {
        let name = tools::normalize_tool_name(name);
        let plugin = tools::tool(&name).and_then(|t| t.plugin).map(str::to_owned);
        ToolRef { name, plugin }
    }

    /// A tool registered by `plugin` (a third-party plugin, or `bundle-mcp`
    /// for an MCP tool `<server>__<tool>`).
    pub fn plugin_tool(name: &str, plugin: &str) -> ToolRef {
        ToolRef {
            name: tools::normalize_tool_name(name),
            // Plugin ids are compared trimmed and lowercased, not aliased
            // (`buildPluginToolGroups`, `tool-policy-*.mjs`).
            plugin: Some(crate::paths::js_trim(plugin).to_lowercase()),
        }
    }
}

/// One allow/deny policy (`SandboxToolPolicy`), its entries as written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolPolicy {
    /// `None`: no allow list, everything not denied passes.
    pub allow: Option<Vec<String>>,
    pub deny: Vec<String>,
}

/// How one policy treats a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// A deny entry matches it (the entry as written).
    Denied(String),
    /// An allow list exists and nothing in it matches.
    NotAllowed,
}

impl ToolPolicy {
    /// `pickSandboxToolPolicy` (`sandbox-tool-policy-*.mjs`) for one
    /// `tools`-shaped section: `alsoAllow` extends a non-empty `allow`; an
    /// empty `allow`, or `alsoAllow` without `allow`, allows everything.
    /// `None` when the section sets no list.
    pub fn pick(section: &Value) -> Option<ToolPolicy> {
        Self::pick_map(section.as_object()?)
    }

    fn pick_map(section: &Map<String, Value>) -> Option<ToolPolicy> {
        let allow = strings(section.get("allow"));
        let also = strings(section.get("alsoAllow"));
        let deny = strings(section.get("deny"));
        let allow = match (allow, also) {
            (Some(allow), _) if allow.is_empty() => Some(allow),
            (Some(mut allow), Some(also)) => {
                allow.extend(also);
                Some(allow)
            }
            (Some(allow), None) => Some(allow),
            // `unionAllow(undefined, alsoAllow)` is `["*", ...alsoAllow]`.
            (None, Some(also)) if !also.is_empty() => Some(vec!["*".to_owned()]),
            (None, _) => None,
        };
        if allow.is_none() && deny.is_none() {
            return None;
        }
        Some(ToolPolicy {
            allow,
            deny: deny.unwrap_or_default(),
        })
    }

    /// `createToolPolicyMatcher(policy)` (`tool-policy-match-*.mjs`) after the
    /// pipeline's `expandPolicyWithPluginGroups` (`tool-policy-*.mjs`): a deny
    /// wins; an allow list with no entry left after normalizing allows
    /// everything; allowing `write` allows `apply_patch`.
    pub fn verdict(&self, tool: &ToolRef) -> Verdict {
        self.verdict_among(tool, &[])
    }

    /// [`Self::verdict`] where `plugins` are the ids of other plugins that
    /// may register tools. OpenClaw replaces an entry equal to such an id by
    /// that plugin's tools (`expandPluginGroups`), so the entry no longer
    /// names a core tool of the same name: `deny: ["exec"]` with a plugin
    /// `exec` installed leaves the shell's `exec` offered (checked with
    /// `applyToolPolicyPipeline`). Such a deny entry is read as not naming
    /// the tool; such an allow entry still does (it may not register any).
    pub fn verdict_among(&self, tool: &ToolRef, plugins: &[String]) -> Verdict {
        let shadowed = |e: &String| {
            plugins.contains(&tools::normalize_tool_name(e))
                && tool.plugin.as_deref() != Some(&tools::normalize_tool_name(e))
        };
        if let Some(entry) = self
            .deny
            .iter()
            .find(|e| !shadowed(e) && entry_matches(e, tool))
        {
            return Verdict::Denied(entry.clone());
        }
        let Some(allow) = &self.allow else {
            return Verdict::Allowed;
        };
        if allow
            .iter()
            .all(|e| tools::normalize_tool_name(e).is_empty())
        {
            return Verdict::Allowed;
        }
        let write = ToolRef::new("write");
        if allow.iter().any(|e| entry_matches(e, tool))
            || (tool.name == "apply_patch" && allow.iter().any(|e| entry_matches(e, &write)))
        {
            return Verdict::Allowed;
        }
        Verdict::NotAllowed
    }
}

/// Whether one policy entry names `tool`: `normalizeToolPolicyName`, the
/// shipped renames (`update_plan` → `progress_card`, `canvas` also
/// `show_widget`), the plugin expansions (`group:plugins`, a plugin id), the
/// core groups (`expandToolGroups`), then the glob (`compileGlobPattern`,
/// `glob-pattern-*.mjs`: `*` is any run of characters, the rest literal).
fn entry_matches(entry: &str, tool: &ToolRef) -> bool {
    let name = tools::normalize_tool_name(entry);
    if name.is_empty() {
        return false;
    }
    let family: Vec<&str> = POLICY_FAMILIES
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, members)| members.to_vec())
        .unwrap_or_else(|| vec![name.as_str()]);
    family.into_iter().any(|name| {
        if name == GROUP_PLUGINS || tool.plugin.as_deref() == Some(name) {
            return tool.plugin.is_some();
        }
        match tools::group_members(name) {
            Some(members) => members.contains(&tool.name.as_str()),
            None => glob_matches(name, &tool.name),
        }
    })
}

/// `^<pattern>$` with each `*` as `.*` and everything else literal.
fn glob_matches(pattern: &str, name: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == name;
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// An array's entries as strings: a non-string entry is blank (OpenClaw's
/// `normalizeToolPolicyName` turns it into `""`, which every list drops).
/// `None` when the value is not an array (`Array.isArray` false: absent).
fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    value.and_then(Value::as_array).map(|a| {
        a.iter()
            .map(|v| v.as_str().unwrap_or("").to_owned())
            .collect()
    })
}

/// Why an agent can never be offered a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The config key that denies it, e.g. `agents.entries.paco--dali.tools.deny`,
    /// `tools.allow` or `tools.profile`.
    pub path: String,
    pub how: DenialKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenialKind {
    /// The deny list has this entry (as written), which names the tool.
    Listed(String),
    /// The allow list names neither the tool nor a group, glob or plugin
    /// that contains it.
    NotAllowed,
    /// The built-in profile (`minimal`, `coding` or `messaging`) leaves it
    /// out, and no `alsoAllow` adds it.
    Profile(&'static str),
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.how {
            DenialKind::Listed(entry) => write!(f, "{} lists {entry:?}", self.path),
            DenialKind::NotAllowed => write!(f, "{} does not allow it", self.path),
            DenialKind::Profile(p) => write!(f, "{} is {p:?}, which leaves it out", self.path),
        }
    }
}

/// Whether any session of the agent can be offered the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// No layer that covers every session denies it. Whether a given
    /// session gets it still depends on that session's narrower layers and
    /// on the tool's own conditions (a plugin enabled, a node paired, ...).
    Offered,
    /// Every layer that denies it, in OpenClaw's order (profile, global,
    /// agent). Never empty.
    Denied(Vec<Denial>),
}

impl Availability {
    pub fn is_offered(&self) -> bool {
        matches!(self, Availability::Offered)
    }
}

/// Tool Search's controls, which OpenClaw adds to every allow list when it
/// enables them (`TOOL_SEARCH_CONTROL_TOOL_NAMES`, `local-model-lean-*.mjs`).
const TOOL_SEARCH_CONTROLS: &[&str] = &[
    "tool_search",
    "tool_describe",
    "tool_call",
    "tool_search_code",
];

/// Tools OpenClaw adds to the profile's allow list for some runs
/// (`runtimeProfileAlsoAllow`, `agent-tools-*.mjs`).
const PROFILE_WIDENED: &[&str] = &["message", "heartbeat_respond"];

/// The plugin ids a config names (`plugins.entries` keys, `plugins.allow`),
/// trimmed and lowercased as OpenClaw keys plugin tools
/// (`buildPluginToolGroups`). A plugin loaded from `plugins.load.paths`
/// without an entry is not among them: config doesn't say its id.
fn configured_plugin_ids(config: &Map<String, Value>) -> Vec<String> {
    let plugins = config.get("plugins");
    let entries = plugins
        .and_then(|p| p.get("entries"))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|e| e.keys().map(String::as_str));
    let allow = plugins
        .and_then(|p| p.get("allow"))
        .and_then(Value::as_array)
        .into_iter()
        .flat_map(|a| a.iter().filter_map(Value::as_str));
    entries
        .chain(allow)
        .map(|id| crate::paths::js_trim(id).to_lowercase())
        .filter(|id| !id.is_empty())
        .collect()
}

/// Can any session of `agent_id` be offered `tool` (an id or alias; its
/// plugin, if any, from the catalog)?
pub fn availability(config: &Map<String, Value>, agent_id: &str, tool: &str) -> Availability {
    availability_of(config, agent_id, &ToolRef::new(tool))
}

/// [`availability`] for any tool, a third-party plugin's or an MCP server's
/// included ([`ToolRef::plugin_tool`]).
pub fn availability_of(
    config: &Map<String, Value>,
    agent_id: &str,
    tool: &ToolRef,
) -> Availability {
    let agent = roster::agent_tools(config, agent_id);
    let agent_tools = agent.as_ref().and_then(|(_, t)| t.as_object());
    let global_tools = config.get("tools").and_then(Value::as_object);
    let search_control = TOOL_SEARCH_CONTROLS.contains(&tool.name.as_str());
    let plugins = configured_plugin_ids(config);
    let mut denials = Vec::new();

    // 1. The profile: `agentTools?.profile ?? tools.profile` (a JSON
    // `null` is nullish too).
    let agent_profile = agent_tools
        .and_then(|t| t.get("profile"))
        .filter(|v| !v.is_null());
    let (profile_path, profile_value) = match (&agent, agent_profile) {
        (Some((path, _)), Some(value)) => (format!("{path}.profile"), Some(value)),
        _ => (
            "tools.profile".to_owned(),
            global_tools.and_then(|t| t.get("profile")),
        ),
    };
    let profile = profile_value
        .and_then(Value::as_str)
        .and_then(tools::Profile::parse);
    let profile_can_deny = !search_control
        && !PROFILE_WIDENED.contains(&tool.name.as_str())
        // A plugin outside the catalog may add its own tools to the profile
        // for its sub-agent runs; MCP tools belong to no registered plugin.
        && match tool.plugin.as_deref() {
            None | Some(tools::BUNDLE_MCP) => true,
            Some(_) => tools::tool(&tool.name).is_some_and(|t| t.plugin.is_some()),
        };
    if let Some(profile) = profile.filter(|p| *p != tools::Profile::Full && profile_can_deny) {
        // `resolveExplicitProfileAlsoAllow(agentTools) ?? (global)`: the
        // agent's array, even an empty one, replaces the global one.
        let also = strings(agent_tools.and_then(|t| t.get("alsoAllow")))
            .or_else(|| strings(global_tools.and_then(|t| t.get("alsoAllow"))))
            .unwrap_or_default();
        let allow: Vec<String> = profile
            .allow()
            .into_iter()
            .chain(profile.manifest_tools())
            .map(str::to_owned)
            .chain(also)
            .collect();
        let policy = ToolPolicy {
            allow: Some(allow),
            deny: Vec::new(),
        };
        if policy.verdict(tool) != Verdict::Allowed {
            denials.push(Denial {
                path: profile_path,
                how: DenialKind::Profile(profile.as_str()),
            });
        }
    }

    // 2. and 3.: the global section, then the agent's.
    let sections = [
        global_tools.map(|t| ("tools", t)),
        agent
            .as_ref()
            .and_then(|(path, _)| agent_tools.map(|t| (path.as_str(), t))),
    ];
    for (path, section) in sections.into_iter().flatten() {
        let Some(mut policy) = ToolPolicy::pick_map(section) else {
            continue;
        };
        if search_control {
            policy.allow = None;
        }
        match policy.verdict_among(tool, &plugins) {
            Verdict::Allowed => {}
            Verdict::Denied(entry) => denials.push(Denial {
                path: format!("{path}.deny"),
                how: DenialKind::Listed(entry),
            }),
            Verdict::NotAllowed => denials.push(Denial {
                path: format!("{path}.allow"),
                how: DenialKind::NotAllowed,
            }),
        }
    }

    if denials.is_empty() {
        Availability::Offered
    } else {
        Availability::Denied(denials)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn denied_by(a: &Availability) -> Vec<String> {
        match a {
            Availability::Offered => Vec::new(),
            Availability::Denied(d) => d.iter().map(|d| d.to_string()).collect(),
        }
    }

    fn offered(c: &Map<String, Value>, agent: &str, tool: &str) -> bool {
        availability(c, agent, tool).is_offered()
    }

    #[test]
    fn an_empty_config_offers_every_tool() {
        let c = cfg(json!({}));
        for t in ["exec", "browser", "nodes", "openclaw", "message"] {
            assert!(offered(&c, "main", t), "{t}");
        }
    }

    #[test]
    fn deny_wins_over_allow() {
        let c = cfg(json!({"tools": {"allow": ["exec"], "deny": ["exec"]}}));
        assert_eq!(
            denied_by(&availability(&c, "main", "exec")),
            vec![r#"tools.deny lists "exec""#]
        );
    }

    #[test]
    fn an_allow_list_denies_what_it_does_not_name() {
        let c = cfg(json!({"tools": {"allow": ["read"]}}));
        assert!(offered(&c, "main", "read"));
        assert_eq!(
            denied_by(&availability(&c, "main", "exec")),
            vec!["tools.allow does not allow it"]
        );
    }

    #[test]
    fn an_empty_allow_list_allows_everything() {
        for allow in [json!([]), json!(["", "  "]), json!([42])] {
            let c = cfg(json!({"tools": {"allow": allow}}));
            assert!(offered(&c, "main", "exec"), "{allow}");
        }
    }

    #[test]
    fn also_allow_alone_allows_everything() {
        let c = cfg(json!({"tools": {"alsoAllow": ["browser"]}}));
        assert!(offered(&c, "main", "exec"));
        assert!(offered(&c, "main", "browser"));
    }

    #[test]
    fn also_allow_extends_a_non_empty_allow() {
        let c = cfg(json!({"tools": {"allow": ["read"], "alsoAllow": ["exec"]}}));
        assert!(offered(&c, "main", "exec"));
        assert!(!offered(&c, "main", "process"));
    }

    #[test]
    fn also_allow_extends_the_profile() {
        let without = cfg(json!({"tools": {"profile": "coding"}}));
        assert_eq!(
            denied_by(&availability(&without, "main", "browser")),
            vec![r#"tools.profile is "coding", which leaves it out"#]
        );
        let with = cfg(json!({"tools": {"profile": "coding", "alsoAllow": ["browser"]}}));
        assert!(offered(&with, "main", "browser"));
        assert!(offered(&with, "main", "exec"));
    }

    #[test]
    fn an_agents_also_allow_replaces_the_global_one_for_the_profile() {
        let c = cfg(json!({
            "tools": {"profile": "coding", "alsoAllow": ["browser"]},
            "agents": {"entries": {"a": {"tools": {"alsoAllow": []}}, "b": {}}}
        }));
        assert!(!offered(&c, "a", "browser"));
        assert!(offered(&c, "b", "browser"));
    }

    #[test]
    fn allowing_write_allows_apply_patch() {
        let c = cfg(json!({"tools": {"allow": ["write"]}}));
        assert!(offered(&c, "main", "apply_patch"));
        let read_only = cfg(json!({"tools": {"allow": ["read"]}}));
        assert!(!offered(&read_only, "main", "apply_patch"));
    }

    #[test]
    fn denying_write_does_not_deny_apply_patch() {
        let c = cfg(json!({"tools": {"deny": ["write"]}}));
        assert!(!offered(&c, "main", "write"));
        assert!(offered(&c, "main", "apply_patch"));
    }

    #[test]
    fn group_runtime_denies_exec_and_process() {
        let c = cfg(json!({"tools": {"deny": ["group:runtime"]}}));
        for t in ["exec", "process", "code_execution", "secrets"] {
            assert_eq!(
                denied_by(&availability(&c, "main", t)),
                vec![r#"tools.deny lists "group:runtime""#],
                "{t}"
            );
        }
        assert!(offered(&c, "main", "read"));
    }

    #[test]
    fn group_openclaw_leaves_the_shell_alone() {
        let c = cfg(json!({"tools": {"deny": ["group:openclaw"]}}));
        assert!(!offered(&c, "main", "gateway"));
        assert!(!offered(&c, "main", "browser"));
        assert!(offered(&c, "main", "exec"));
        assert!(offered(&c, "main", "read"));
    }

    #[test]
    fn globs_match_whole_names() {
        let c = cfg(json!({"tools": {"deny": ["*_spawn", "e*c", "pro*ss"]}}));
        assert!(!offered(&c, "main", "sessions_spawn"));
        assert!(!offered(&c, "main", "exec"));
        assert!(!offered(&c, "main", "process"));
        assert!(offered(&c, "main", "sessions_send"));
        assert!(offered(&c, "main", "progress_card"));
        let all = cfg(json!({"tools": {"deny": ["*"]}}));
        assert!(!offered(&all, "main", "read"));
    }

    #[test]
    fn aliases_and_case_are_normalized_on_both_sides() {
        let c = cfg(json!({"tools": {"deny": [" BASH ", "Cron", "apply-patch"]}}));
        assert!(!offered(&c, "main", "exec"));
        assert!(!offered(&c, "main", "automations"));
        assert!(!offered(&c, "main", "apply_patch"));
        let by_id = cfg(json!({"tools": {"deny": ["exec"]}}));
        assert!(!offered(&by_id, "main", "Bash"));
    }

    #[test]
    fn shipped_renames_and_families_apply() {
        let c = cfg(json!({"tools": {"deny": ["canvas", "update_plan"]}}));
        assert!(!offered(&c, "main", "show_widget"));
        assert!(!offered(&c, "main", "progress_card"));
        let allow = cfg(json!({"tools": {"allow": ["canvas"]}}));
        assert!(offered(&allow, "main", "show_widget"));
    }

    #[test]
    fn a_per_agent_deny_applies_to_that_agent_only() {
        let c = cfg(json!({"agents": {"entries": {
            "paco--dali": {"tools": {"deny": ["exec"]}},
            "main": {}
        }}}));
        assert_eq!(
            denied_by(&availability(&c, "paco--dali", "exec")),
            vec![r#"agents.entries.paco--dali.tools.deny lists "exec""#]
        );
        assert!(offered(&c, "main", "exec"));
        // The id is normalized as OpenClaw does.
        assert!(!offered(&c, " Paco--Dali ", "exec"));
    }

    #[test]
    fn a_per_agent_allow_narrows_the_global_one() {
        let c = cfg(json!({
            "tools": {"allow": ["read", "exec"]},
            "agents": {"entries": {"a": {"tools": {"allow": ["read"]}}}}
        }));
        assert!(offered(&c, "a", "read"));
        assert_eq!(
            denied_by(&availability(&c, "a", "exec")),
            vec!["agents.entries.a.tools.allow does not allow it"]
        );
    }

    #[test]
    fn a_per_agent_allow_cannot_widen_the_global_one() {
        let c = cfg(json!({
            "tools": {"deny": ["exec"]},
            "agents": {"entries": {"a": {"tools": {"allow": ["exec"]}}}}
        }));
        assert_eq!(
            denied_by(&availability(&c, "a", "exec")),
            vec![r#"tools.deny lists "exec""#]
        );
    }

    #[test]
    fn the_agents_profile_replaces_the_global_one() {
        let c = cfg(json!({
            "tools": {"profile": "messaging"},
            "agents": {"entries": {"coder": {"tools": {"profile": "coding"}}, "chat": {}}}
        }));
        assert!(offered(&c, "coder", "exec"));
        assert_eq!(
            denied_by(&availability(&c, "chat", "exec")),
            vec![r#"tools.profile is "messaging", which leaves it out"#]
        );
        let agent_only =
            cfg(json!({"agents": {"entries": {"chat": {"tools": {"profile": "messaging"}}}}}));
        assert_eq!(
            denied_by(&availability(&agent_only, "chat", "read")),
            vec![r#"agents.entries.chat.tools.profile is "messaging", which leaves it out"#]
        );
    }

    #[test]
    fn the_messaging_profile_has_no_shell_and_no_files() {
        let c = cfg(json!({"tools": {"profile": "messaging"}}));
        for t in [
            "exec",
            "process",
            "read",
            "write",
            "apply_patch",
            "automations",
            "plugins",
            "browser",
        ] {
            assert!(!offered(&c, "main", t), "{t}");
        }
        for t in ["message", "sessions_spawn", "gateway", "session_status"] {
            assert!(offered(&c, "main", t), "{t}");
        }
    }

    #[test]
    fn the_minimal_profile_keeps_session_status_and_gateway() {
        let c = cfg(json!({"tools": {"profile": "minimal"}}));
        assert!(offered(&c, "main", "session_status"));
        assert!(offered(&c, "main", "gateway"));
        assert!(!offered(&c, "main", "exec"));
        assert!(!offered(&c, "main", "sessions_spawn"));
    }

    #[test]
    fn the_full_profile_and_an_unknown_one_filter_nothing() {
        for profile in [json!("full"), json!("Coding"), json!(5), json!(null)] {
            let c = cfg(json!({"tools": {"profile": profile}}));
            assert!(offered(&c, "main", "nodes"), "{profile}");
        }
    }

    #[test]
    fn plugin_manifest_profiles_extend_the_profile() {
        let c = cfg(json!({"tools": {"profile": "messaging"}}));
        assert!(offered(&c, "main", "intent"));
        assert!(!offered(&c, "main", "crabbox"));
        let coding = cfg(json!({"tools": {"profile": "coding"}}));
        assert!(offered(&coding, "main", "crabbox"));
    }

    #[test]
    fn the_profile_never_denies_message_or_heartbeat_respond() {
        let c = cfg(json!({"tools": {"profile": "coding"}}));
        assert!(offered(&c, "main", "message"));
        assert!(offered(&c, "main", "heartbeat_respond"));
        let allow = cfg(json!({"tools": {"allow": ["read"]}}));
        assert!(!offered(&allow, "main", "message"));
    }

    #[test]
    fn tool_search_controls_are_denied_only_by_a_deny() {
        let c = cfg(json!({"tools": {"profile": "minimal", "allow": ["read"]}}));
        assert!(offered(&c, "main", "tool_search_code"));
        let deny = cfg(json!({"tools": {"deny": ["tool_search_code"]}}));
        assert!(!offered(&deny, "main", "tool_search_code"));
    }

    #[test]
    fn plugin_ids_and_group_plugins_name_plugin_tools() {
        let c = cfg(json!({"tools": {"deny": ["group:plugins"]}}));
        assert!(!offered(&c, "main", "browser"));
        assert!(!offered(&c, "main", "memory_get"));
        assert!(!offered(&c, "main", "file_fetch"));
        assert!(offered(&c, "main", "exec"));
        let by_id = cfg(json!({"tools": {"deny": ["memory-core", "XAI"]}}));
        assert!(!offered(&by_id, "main", "memory_search"));
        assert!(!offered(&by_id, "main", "intent"));
        assert!(!offered(&by_id, "main", "code_execution"));
        assert!(offered(&by_id, "main", "browser"));
    }

    #[test]
    fn mcp_and_third_party_tools_match_their_plugin() {
        let mcp = ToolRef::plugin_tool("claw-os__notes", "bundle-mcp");
        let allow_read = cfg(json!({"tools": {"allow": ["read"]}}));
        assert!(!availability_of(&allow_read, "main", &mcp).is_offered());
        // `coding` and `messaging` allow every MCP tool, `minimal` none.
        let minimal = cfg(json!({"tools": {"profile": "minimal"}}));
        assert!(!availability_of(&minimal, "main", &mcp).is_offered());
        let coding = cfg(json!({"tools": {"profile": "coding"}}));
        assert!(availability_of(&coding, "main", &mcp).is_offered());
        for allow in [
            json!(["bundle-mcp"]),
            json!(["claw-os__*"]),
            json!(["group:plugins"]),
        ] {
            let c = cfg(json!({"tools": {"allow": allow}}));
            assert!(availability_of(&c, "main", &mcp).is_offered(), "{allow}");
        }
        // A third-party plugin may add its own tools to the profile of its
        // sub-agent runs: the profile is no denial for them.
        let other = ToolRef::plugin_tool("shipit", "deployer");
        let coding = cfg(json!({"tools": {"profile": "minimal"}}));
        assert!(availability_of(&coding, "main", &other).is_offered());
        let deny = cfg(json!({"tools": {"deny": ["Deployer"]}}));
        assert!(!availability_of(&deny, "main", &other).is_offered());
    }

    #[test]
    fn a_plugin_named_like_the_tool_turns_the_deny_entry_into_its_own() {
        let c = cfg(json!({
            "tools": {"deny": ["exec", "process"]},
            "plugins": {"entries": {"Exec": {"enabled": true}}}
        }));
        assert!(offered(&c, "main", "exec"));
        assert!(offered(&c, "main", "bash"));
        assert!(!offered(&c, "main", "process"));
        // The plugin's own tools are what the entry denies.
        let own = ToolRef::plugin_tool("deploy_run", "exec");
        assert!(!availability_of(&c, "main", &own).is_offered());
        let allowed = cfg(json!({"tools": {"deny": ["exec"]}, "plugins": {"allow": ["exec"]}}));
        assert!(offered(&allowed, "main", "exec"));
    }

    #[test]
    fn every_denying_layer_is_reported_in_openclaws_order() {
        let c = cfg(json!({
            "tools": {"profile": "messaging", "deny": ["group:runtime"]},
            "agents": {"entries": {"a": {"tools": {"deny": ["exec"]}}}}
        }));
        assert_eq!(
            denied_by(&availability(&c, "a", "exec")),
            vec![
                r#"tools.profile is "messaging", which leaves it out"#,
                r#"tools.deny lists "group:runtime""#,
                r#"agents.entries.a.tools.deny lists "exec""#,
            ]
        );
    }

    #[test]
    fn an_unlisted_agent_gets_the_global_layers_only() {
        let c = cfg(json!({
            "agents": {"defaults": {"tools": {"deny": ["exec"]}},
                       "entries": {"a": {"tools": {"deny": ["exec"]}}}}
        }));
        assert!(offered(&c, "zed", "exec"));
    }

    #[test]
    fn without_a_roster_the_defaults_tools_apply() {
        let c = cfg(json!({"agents": {"defaults": {"tools": {"deny": ["exec"]}}}}));
        assert_eq!(
            denied_by(&availability(&c, "main", "exec")),
            vec![r#"agents.defaults.tools.deny lists "exec""#]
        );
    }

    #[test]
    fn a_legacy_list_entry_is_named_by_index() {
        let c = cfg(
            json!({"agents": {"list": [{"id": "x"}, {"id": "a", "tools": {"deny": ["exec"]}}]}}),
        );
        assert_eq!(
            denied_by(&availability(&c, "a", "exec")),
            vec![r#"agents.list[1].tools.deny lists "exec""#]
        );
    }

    #[test]
    fn layers_for_some_sessions_only_are_no_denial() {
        let c = cfg(json!({"tools": {
            "byProvider": {"openai": {"deny": ["exec"]}, "anthropic/claude": {"profile": "minimal"}},
            "toolsBySender": {"u": {"deny": ["exec"]}},
            "sandbox": {"tools": {"deny": ["exec"]}},
            "subagents": {"tools": {"deny": ["exec"]}}
        }}));
        assert!(offered(&c, "main", "exec"));
    }

    #[test]
    fn the_sandbox_allow_list_widens_nothing_on_the_host() {
        let c = cfg(
            json!({"tools": {"profile": "coding", "sandbox": {"tools": {"allow": ["browser"]}}}}),
        );
        assert!(!offered(&c, "main", "browser"));
    }

    #[test]
    fn lists_of_the_wrong_type_are_absent() {
        let c = cfg(json!({"tools": {"deny": "exec", "allow": {"read": true}}}));
        assert!(offered(&c, "main", "exec"));
        let mixed = cfg(json!({"tools": {"deny": [42, null, "exec"]}}));
        assert!(!offered(&mixed, "main", "exec"));
        let agent = cfg(json!({"agents": {"entries": {"a": {"tools": "none"}}}}));
        assert!(offered(&agent, "a", "exec"));
    }
}
