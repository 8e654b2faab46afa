//! Posture: can any agent reach the token map, OpenClaw's config or code the
//! gateway runs? The layer's promise rests on containment that OpenClaw and
//! the kernel enforce when a file is opened, not on the path guard's
//! prediction of what a tool will open. An agent is *contained* when one of
//! these holds:
//!
//! - **sandbox**: every session it runs is in a sandbox whose backend keeps
//!   the secrets out: this plugin's own (`claw-identity`, which masks every
//!   protected location), or Docker/Podman when no bind, no dangerous flag
//!   and no mounted workspace exposes a protected location or OpenClaw's
//!   config and state; and nothing it may do leaves the sandbox (exec routed
//!   to the gateway or a node, elevated exec, a tool that runs on the host
//!   whatever the sandbox);
//! - **host**: its sessions run on the host with `tools.fs.workspaceOnly:
//!   true` (OpenClaw's fs-safe root handles), no tool that starts a host
//!   process, runs code in the gateway or reads files outside
//!   `workspaceOnly`'s cover, a workspace that holds no secret location, and
//!   no sandboxed command of any agent that can write into that workspace.
//!
//! Any agent that reaches the map reaches every token, so the layer judges
//! every agent OpenClaw can run, the default one and those without a token
//! included. Under `posture: "enforce"` (the default) it serves no token
//! while one is exposed, and every owned call is refused with a reason that
//! names the agents and the config that contains each. What OpenClaw can
//! change per chat (an admin switching the sandbox off for one chat,
//! `/exec host=`, `permissionMode: "full"`) is checked per call instead
//! ([`Drift`]).
//!
//! The facts come from OpenClaw's config as OpenClaw resolves it
//! (`crate::openclaw`); the tool policy through [`ToolOffer`].

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::openclaw::agent::{self, AgentSettings};
use crate::paths;
use crate::redact::shown;
use crate::rules::map_access::{AgentFsTable, Guard, Location};

/// The id block reasons of this check start with.
pub const RULE_ID: &str = "posture";

/// This plugin's sandbox backend (`crate::sandbox::BACKEND_ID`).
const OWN_BACKEND: &str = crate::sandbox::BACKEND_ID;

/// `posture`: what the layer does while an agent is not contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Serve no token until every agent is contained.
    #[default]
    Enforce,
    /// Serve tokens, and say what is exposed.
    Warn,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Warn => "warn",
        }
    }
}

/// How an agent is kept from the secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Containment {
    /// Every session in a sandbox that keeps the secrets out.
    Sandbox,
    /// On the host, confined to its workspace, with no tool that leaves it.
    Host,
}

/// One way an agent reaches the secrets, and the config key it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    /// In the operator's terms: "exec runs shell commands on the gateway's host".
    pub what: String,
    /// The config key that makes it so, or that closes it.
    pub key: String,
}

/// The posture of one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPosture {
    pub agent_id: String,
    pub containment: Result<Containment, Vec<Exposure>>,
    /// The config that contains it, as `openclaw config set` commands
    /// (only for an exposed agent).
    pub fix: Option<String>,
}

impl AgentPosture {
    pub fn is_contained(&self) -> bool {
        self.containment.is_ok()
    }
}

/// What the layer knows of the agents' containment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posture {
    pub mode: Mode,
    /// `None`: the layer was given no OpenClaw config, so nobody judged it
    /// (the JS API used on its own); tokens are then served as before.
    pub agents: Option<Vec<AgentPosture>>,
}

/// How an agent id is shown: [`UNLISTED`] by what it stands for.
pub fn display(agent_id: &str) -> String {
    if agent_id == UNLISTED {
        "agents the roster doesn't list".to_owned()
    } else {
        shown(agent_id)
    }
}

/// The most agents a block reason names; `claw-identity doctor` lists all.
const NAMED_IN_A_REASON: usize = 4;

impl Posture {
    pub fn unjudged(mode: Mode) -> Posture {
        Posture { mode, agents: None }
    }

    pub fn judged(&self) -> bool {
        self.agents.is_some()
    }

    /// The agents that are not contained.
    pub fn exposed(&self) -> impl Iterator<Item = &AgentPosture> {
        self.agents.iter().flatten().filter(|a| !a.is_contained())
    }

    /// The posture of `agent`, if it was judged.
    pub fn agent(&self, agent: &str) -> Option<&AgentPosture> {
        self.agents.iter().flatten().find(|a| a.agent_id == agent)
    }

    /// The posture a call of `agent` runs under: its own, else that of the
    /// agents the roster doesn't list (an id OpenClaw runs with the
    /// defaults only, or no id at all), else, without a roster, the
    /// implicit agent's (which is the defaults too).
    pub fn of_call(&self, agent: Option<&str>) -> Option<&AgentPosture> {
        agent
            .and_then(|a| self.agent(a))
            .or_else(|| self.agent(UNLISTED))
            .or_else(|| match self.agents.as_deref() {
                Some([only]) => Some(only),
                _ => None,
            })
    }

    /// Whether tokens are served: always under `"warn"` or unjudged;
    /// under `"enforce"` only while every agent is contained.
    pub fn serves_tokens(&self) -> bool {
        self.mode == Mode::Warn || self.exposed().next().is_none()
    }

    /// One line per exposed agent: its exposures and what contains it.
    pub fn describe_exposed(&self) -> Vec<String> {
        self.exposed()
            .map(|a| {
                let Err(exposures) = &a.containment else {
                    unreachable!("exposed() yields exposed agents")
                };
                let what: Vec<String> = exposures
                    .iter()
                    .map(|e| format!("{} ({})", e.what, e.key))
                    .collect();
                format!(
                    "{}: {}; contain it with: {}",
                    display(&a.agent_id),
                    what.join("; "),
                    a.fix.as_deref().unwrap_or("see claw-identity doctor")
                )
            })
            .collect()
    }

    /// The reason every owned call is refused with, under `"enforce"` while
    /// an agent is exposed; `None` while tokens are served.
    pub fn block_reason(&self) -> Option<String> {
        if self.serves_tokens() {
            return None;
        }
        let lines = self.describe_exposed();
        let more = lines.len().saturating_sub(NAMED_IN_A_REASON);
        let mut named = lines
            .into_iter()
            .take(NAMED_IN_A_REASON)
            .collect::<Vec<_>>()
            .join(" | ");
        if more > 0 {
            named.push_str(&format!(" | and {more} more"));
        }
        Some(format!(
            "{RULE_ID}: claw-identity serves no token while an agent's own tools can reach the token map or OpenClaw's config, since any agent that reaches the map reaches every agent's token. Do not retry; tell the operator. Not contained: {named}. The operator runs claw-identity doctor for every finding, or sets posture \"warn\" to serve tokens anyway."
        ))
    }
}

/// A posture with its block reason, made once (every owned call reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub posture: Posture,
    /// The reason owned calls are refused with; `None` while tokens are served.
    pub block: Option<String>,
}

impl Judged {
    pub fn new(posture: Posture) -> Judged {
        let block = posture.block_reason();
        Judged { posture, block }
    }
}

/// Host tools that no other route reads: routed (under `"enforce"`) only
/// so that [`drift`] sees their calls.
pub const UNROUTED_HOST_TOOLS: [&str; 4] = ["portal", "computer", "mobile_ui", "gateway"];

/// What a call's tool reaches, for the per-chat check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// A shell: where it runs depends on the chat's exec overrides too.
    Shell,
    /// Host files or programs, outside a sandbox or `workspaceOnly`.
    Host,
}

fn reach(tool: &str, rule: &str) -> Option<Reach> {
    match tool {
        "exec" | "bash" | "process" => Some(Reach::Shell),
        "automations" => Some(Reach::Host),
        _ if rule == crate::rules::map_access::RULE_ID
            || rule == crate::rules::layer_controls::RULE_ID
            || rule == RULE_ID =>
        {
            Some(Reach::Host)
        }
        _ => None,
    }
}

/// The per-chat check: what OpenClaw lets an admin change for one chat can
/// take a contained agent's tools out of their containment (a chat's
/// sandbox switched off, `/exec host=`, elevated exec, `permissionMode:
/// "full"` lifting `workspaceOnly`). A call that would then reach the host
/// is refused, read fresh from OpenClaw at every such call. `None`: the
/// call goes on to its rule.
pub fn drift<'a>(
    j: &Judged,
    call: &crate::rules::ToolCall<'_>,
    rule: &str,
    host: &dyn crate::sessions::Host,
) -> Option<crate::rules::Decision<'a>> {
    use crate::rules::Decision;
    let p = &j.posture;
    if p.mode != Mode::Enforce || !p.judged() {
        return None;
    }
    let reach = reach(call.tool, rule)?;
    let a = p.of_call(call.agent_id)?;
    // An exposed agent gets no token anyway, and its tools are its own.
    let how = *a.containment.as_ref().ok()?;
    let agent = call.agent_id.unwrap_or("");
    let tool = shown(call.tool);
    let refuse = |why: String| {
        Some(Decision::block(
            RULE_ID,
            crate::redact::scrub(&format!(
                "{RULE_ID}: {tool} refused: {why}, where it would reach the token map and OpenClaw's config. Do not retry; the operator can restore this chat's containment."
            )),
        ))
    };
    let now = match host.session_now(agent, call.session_key.unwrap_or("")) {
        Ok(Some(now)) => now,
        Ok(None) => return None,
        Err(e) => {
            return refuse(format!(
                "OpenClaw could not say whether this chat runs in the sandbox ({})",
                crate::redact::scrub(&e)
            ))
        }
    };
    let who = display(&a.agent_id);
    match how {
        Containment::Sandbox => {
            if !now.sandboxed {
                return refuse(format!(
                    "agent {who} is contained by its sandbox, but this chat runs outside it (no session key, or an admin switched the sandbox off for it), so it would run on the gateway's host"
                ));
            }
            if reach == Reach::Shell {
                let host_override = now
                    .exec_host
                    .as_deref()
                    .map(|h| h.trim().to_ascii_lowercase())
                    .filter(|h| h == "gateway" || h == "node");
                if let Some(h) = host_override {
                    return refuse(format!(
                        "this chat routes exec to \"{h}\" (/exec host=), out of agent {who}'s sandbox"
                    ));
                }
                if now
                    .exec_node
                    .as_deref()
                    .is_some_and(|n| !n.trim().is_empty())
                {
                    return refuse(format!(
                        "this chat binds exec to a node, out of agent {who}'s sandbox"
                    ));
                }
                if now
                    .elevated
                    .as_deref()
                    .is_some_and(|l| !l.trim().eq_ignore_ascii_case("off"))
                {
                    return refuse(format!(
                        "this chat allows elevated exec, which runs out of agent {who}'s sandbox"
                    ));
                }
            }
        }
        Containment::Host => {
            if now.permission_mode.as_deref().map(str::trim) == Some("full") {
                return refuse(format!(
                    "this chat's permission mode is \"full\", which lifts tools.fs.workspaceOnly for agent {who}"
                ));
            }
        }
    }
    None
}

/// Whether OpenClaw's tool policy can offer a tool to an agent
/// (`crate::openclaw::tool_policy`).
pub trait ToolOffer {
    /// `None`: `tool` may be offered to some session of `agent` (to a
    /// sandboxed session when `sandboxed`); `Some(key)`: the config key that
    /// keeps it from every such session.
    fn denied(&self, agent: &str, tool: &str, sandboxed: bool) -> Option<String>;
}

/// OpenClaw's tool policy, read from its config (`crate::openclaw`).
pub struct ConfigTools<'a> {
    root: &'a Map<String, Value>,
}

impl<'a> ConfigTools<'a> {
    pub fn new(root: &'a Map<String, Value>) -> Self {
        ConfigTools { root }
    }
}

impl ToolOffer for ConfigTools<'_> {
    fn denied(&self, _agent: &str, _tool: &str, _sandboxed: bool) -> Option<String> {
        let _ = self.root;
        None // TEMPORARY until the tool-policy mirror lands: everything may be offered
    }
}

/// One agent as the roster gives it.
#[derive(Debug, Clone)]
pub struct RosterAgent {
    pub id: String,
    /// Where its entry is (`agents.entries.<id>`, `agents.list[<i>]`);
    /// `None` for the implicit `main` of a config without a roster.
    pub key: Option<String>,
    pub entry: Option<Map<String, Value>>,
    /// Its workspaces as OpenClaw resolves them (every one it may pick,
    /// where that depends on state OpenClaw keeps to itself).
    pub workspaces: Vec<PathBuf>,
}

/// What the posture is judged from.
pub struct Inputs<'a> {
    /// OpenClaw's config, as the gateway runs it.
    pub root: &'a Map<String, Value>,
    pub agents: Vec<RosterAgent>,
    /// The protected locations (the map's, and what controls the layer).
    pub protected: &'a [Location],
    /// OpenClaw's config and state directories: a sandbox must not show
    /// them (sessions, auth profiles, the exec-approvals socket).
    pub openclaw_dirs: Vec<PathBuf>,
    pub tools: &'a dyn ToolOffer,
    /// The claw-identity sandbox can run here (the fix names it first).
    pub own_sandbox_here: bool,
}

/// A tool that leaves a workspace-confined host session, and what it does.
struct HostTool {
    tool: &'static str,
    does: &'static str,
    /// It runs on the host even from a sandboxed session.
    escapes_sandbox: bool,
}

/// Tools that start a host process, run code in the gateway, or read files
/// outside `workspaceOnly`'s cover (containment.md's table, checked against
/// `tool-catalog-*.mjs` and each tool's factory).
const HOST_TOOLS: &[HostTool] = &[
    HostTool {
        tool: "exec",
        does: "runs shell commands on the gateway's host",
        escapes_sandbox: false,
    },
    HostTool {
        tool: "process",
        does: "drives exec's background processes on the host",
        escapes_sandbox: false,
    },
    HostTool {
        tool: "terminal",
        does: "types into host terminals the operator opened",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "portal",
        does: "exposes local apps of the host",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "browser",
        does: "runs Chromium on the host, which opens local files",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "nodes",
        does: "runs commands on paired nodes, which may be this host",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "computer",
        does: "drives a paired node's desktop",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "mobile_ui",
        does: "drives a paired device",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "file_fetch",
        does: "reads files on paired nodes, which may be this host",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "dir_list",
        does: "lists directories on paired nodes, which may be this host",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "dir_fetch",
        does: "reads directories on paired nodes, which may be this host",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "file_write",
        does: "writes files on paired nodes, which may be this host",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "plugins",
        does: "installs and enables plugins, whose code runs in the gateway",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "gateway",
        does: "updates and restarts OpenClaw",
        escapes_sandbox: true,
    },
    HostTool {
        tool: "openclaw",
        does: "has OpenClaw's system agent change its config",
        escapes_sandbox: true,
    },
];

/// `automations` can start a host command with the gateway's environment
/// (a `stream` schedule's source, `spawnSource` in `server-cron-*.mjs`),
/// unless `cron.triggers.enabled` is false, which removes stream, script
/// and trigger jobs.
fn automations_exposure(inp: &Inputs<'_>, agent: &str, sandboxed: bool) -> Option<Exposure> {
    if inp.tools.denied(agent, "automations", sandboxed).is_some() {
        return None;
    }
    let triggers = inp
        .root
        .get("cron")
        .and_then(|c| c.get("triggers"))
        .and_then(|t| t.get("enabled"));
    if triggers == Some(&Value::Bool(false)) {
        return None;
    }
    Some(exposure(
        "automations can start a host command with the gateway's environment (a stream job's source)",
        "cron.triggers.enabled",
    ))
}

/// The id the agents the roster doesn't list are judged under: OpenClaw
/// runs a session key's agent even when the roster doesn't list it
/// (`resolveSelectedSessionAgentId`, `agent-scope-*.mjs`), with
/// `agents.defaults` and the global settings only. No agent id has a `*`.
pub const UNLISTED: &str = "*";

/// The agents OpenClaw may run, as `readAgentRosterProperty` and
/// `listAgentEntries` (`agent-scope-config-*.mjs`) read them: `agents.entries`,
/// else the legacy `agents.list`, else the implicit `main`; and, when there
/// is a roster, the agents it doesn't list ([`UNLISTED`]).
fn roster(root: &Map<String, Value>, table: &AgentFsTable) -> Vec<RosterAgent> {
    let agents = root.get("agents").and_then(Value::as_object);
    let mut out: Vec<RosterAgent> = Vec::new();
    let mut push = |id: String, key: Option<String>, entry: Option<&Map<String, Value>>| {
        if out.iter().any(|a| a.id == id) {
            return; // the first entry of an id is the one that counts
        }
        let workspaces = table.get(Some(&id)).workspaces.clone();
        out.push(RosterAgent {
            id,
            key,
            entry: entry.cloned(),
            workspaces,
        });
    };
    let entries = agents
        .and_then(|a| a.get("entries"))
        .filter(|e| !e.is_null());
    let list = agents.and_then(|a| a.get("list")).filter(|l| !l.is_null());
    if let Some(entries) = entries {
        for (k, e) in entries.as_object().into_iter().flatten() {
            let id =
                crate::rules::agent_ids::normalize_agent_id(k).unwrap_or_else(|| "main".into());
            push(id, Some(format!("agents.entries.{k}")), e.as_object());
        }
    } else if let Some(list) = list {
        for (i, e) in list.as_array().into_iter().flatten().enumerate() {
            let Some(id) = e.get("id").and_then(Value::as_str) else {
                continue;
            };
            let id =
                crate::rules::agent_ids::normalize_agent_id(id).unwrap_or_else(|| "main".into());
            push(id, Some(format!("agents.list[{i}]")), e.as_object());
        }
    } else {
        push("main".into(), None, None);
        return out;
    }
    let d = &table.default;
    let mut workspaces: Vec<PathBuf> = d.defaults_workspace.iter().cloned().collect();
    workspaces.extend(d.env_workspaces.iter().cloned());
    out.push(RosterAgent {
        id: UNLISTED.into(),
        key: None,
        entry: None,
        workspaces,
    });
    out
}

/// The one posture function: the layer (with the gateway's config), and
/// doctor, audit and explain (with a config file) all judge through it.
/// `table` is what the layer knows of each agent's workspace (OpenClaw's
/// own answer where the plugin has it); `protected` the protected locations.
pub fn of_config(
    mode: Mode,
    root: &Map<String, Value>,
    table: &AgentFsTable,
    protected: &[Location],
    tools: &dyn ToolOffer,
    own_sandbox_here: bool,
) -> Posture {
    let inp = Inputs {
        root,
        agents: roster(root, table),
        protected,
        openclaw_dirs: vec![paths::config_dir(), paths::state_dir()],
        tools,
        own_sandbox_here,
    };
    judge(mode, &inp)
}

/// Judges every agent of `inp`.
pub fn judge(mode: Mode, inp: &Inputs<'_>) -> Posture {
    let agents = inp.agents.iter().map(|a| judge_agent(inp, a)).collect();
    Posture {
        mode,
        agents: Some(agents),
    }
}

fn judge_agent(inp: &Inputs<'_>, a: &RosterAgent) -> AgentPosture {
    let s = agent::resolve(inp.root, a.entry.as_ref(), a.key.as_deref());
    let sandbox = sandbox_exposures(inp, a, &s);
    if sandbox.is_empty() {
        return contained(a, Containment::Sandbox);
    }
    let host = host_exposures(inp, a, &s);
    if host.is_empty() {
        return contained(a, Containment::Host);
    }
    // Report the way the operator chose: a sandbox when every session is
    // meant to be in one.
    let sandbox_chosen = s.sandbox.mode.value == "all";
    let fix = if sandbox_chosen || inp.own_sandbox_here {
        sandbox_fix(a, &s, &sandbox, inp.own_sandbox_here)
    } else {
        host_fix(a, &host)
    };
    AgentPosture {
        agent_id: a.id.clone(),
        containment: Err(if sandbox_chosen { sandbox } else { host }),
        fix: Some(fix),
    }
}

fn contained(a: &RosterAgent, how: Containment) -> AgentPosture {
    AgentPosture {
        agent_id: a.id.clone(),
        containment: Ok(how),
        fix: None,
    }
}

fn exposure(what: impl Into<String>, key: impl Into<String>) -> Exposure {
    Exposure {
        what: what.into(),
        key: key.into(),
    }
}

/// What keeps `agent` from being contained by a sandbox; empty when it is.
fn sandbox_exposures(inp: &Inputs<'_>, a: &RosterAgent, s: &AgentSettings) -> Vec<Exposure> {
    let mut out = Vec::new();
    let sb = &s.sandbox;
    match sb.mode.value.as_str() {
        "all" => {}
        "non-main" => out.push(exposure(
            "its main session (direct chats, heartbeats) runs on the host, outside the sandbox",
            sb.mode.key.clone(),
        )),
        m => out.push(exposure(
            format!(
                "its sessions run on the host (sandbox mode \"{}\")",
                shown(m)
            ),
            sb.mode.key.clone(),
        )),
    }
    let backend = sb.backend.value.as_str();
    match backend {
        OWN_BACKEND => {}
        "docker" | "podman" => {
            for b in sb.binds.iter().chain(&sb.browser_binds) {
                if let Some(hit) = exposes(inp, &bind_source(&b.value)) {
                    out.push(exposure(
                        format!(
                            "its sandbox mounts {} (bind \"{}\"), which holds {hit}",
                            paths::shown(&bind_source(&b.value)),
                            shown(&b.value)
                        ),
                        b.key.clone(),
                    ));
                }
            }
            for key in &sb.dangerous {
                out.push(exposure(
                    "a dangerous Docker override lets the sandbox reach outside its mounts",
                    key.clone(),
                ));
            }
            if sb.workspace_access.value != "none" {
                for w in &a.workspaces {
                    if let Some(hit) = exposes(inp, w) {
                        out.push(exposure(
                            format!(
                                "its sandbox mounts its workspace {}, which holds {hit}",
                                paths::shown(w)
                            ),
                            sb.workspace_access.key.clone(),
                        ));
                    }
                }
            }
        }
        other => out.push(exposure(
            format!(
                "its sandbox backend \"{}\" is not one claw-identity can judge (it knows \"{OWN_BACKEND}\", \"docker\" and \"podman\")",
                shown(other)
            ),
            sb.backend.key.clone(),
        )),
    }
    let exec_offered = inp.tools.denied(&a.id, "exec", true).is_none();
    if exec_offered && !matches!(s.exec_host.value.as_str(), "auto" | "sandbox") {
        out.push(exposure(
            format!(
                "exec is routed out of the sandbox, to \"{}\"",
                shown(&s.exec_host.value)
            ),
            s.exec_host.key.clone(),
        ));
    }
    if exec_offered && s.elevated.value {
        out.push(exposure(
            "elevated exec runs on the gateway's host",
            s.elevated.key.clone(),
        ));
    }
    if sb.browser_host_control.value && inp.tools.denied(&a.id, "browser", true).is_none() {
        out.push(exposure(
            "its sandbox may drive the host's browser",
            sb.browser_host_control.key.clone(),
        ));
    }
    for t in HOST_TOOLS.iter().filter(|t| t.escapes_sandbox) {
        if inp.tools.denied(&a.id, t.tool, true).is_none() {
            out.push(exposure(
                format!("{} {} (even from the sandbox)", t.tool, t.does),
                "tools.sandbox.tools.allow",
            ));
        }
    }
    out.extend(automations_exposure(inp, &a.id, true));
    out
}

/// What keeps `agent` from being contained on the host; empty when it is.
fn host_exposures(inp: &Inputs<'_>, a: &RosterAgent, s: &AgentSettings) -> Vec<Exposure> {
    let mut out = Vec::new();
    if !s.workspace_only.value {
        out.push(exposure(
            "its file tools are not confined to its workspace",
            s.workspace_only.key.clone(),
        ));
    }
    let deny_key = match &a.key {
        Some(k) => format!("{k}.tools.deny"),
        None => "tools.deny".to_owned(),
    };
    for t in HOST_TOOLS {
        if inp.tools.denied(&a.id, t.tool, false).is_none() {
            out.push(exposure(format!("{} {}", t.tool, t.does), deny_key.clone()));
        }
    }
    out.extend(automations_exposure(inp, &a.id, false));
    for w in &a.workspaces {
        if let Some(hit) = exposes(inp, w) {
            out.push(exposure(
                format!("its workspace {} holds {hit}", paths::shown(w)),
                match &a.key {
                    Some(k) => format!("{k}.workspace"),
                    None => "agents.defaults.workspace".to_owned(),
                },
            ));
        }
    }
    // A sandboxed command that can write into this agent's workspace can
    // turn a file its host `read` checked into a link to the map before the
    // read opens it (OpenClaw's `read` checks, then opens).
    for other in &inp.agents {
        let os = agent::resolve(inp.root, other.entry.as_ref(), other.key.as_deref());
        let sandboxed_writer = os.sandbox.mode.value != "off"
            && os.sandbox.workspace_access.value == "rw"
            && inp.tools.denied(&other.id, "exec", true).is_none();
        if !sandboxed_writer {
            continue;
        }
        let shares = other
            .workspaces
            .iter()
            .any(|ow| a.workspaces.iter().any(|w| overlaps(w, ow)));
        if shares {
            out.push(exposure(
                format!(
                    "sandboxed commands of agent {} can write into its workspace while its host tools read it",
                    shown(&other.id)
                ),
                os.sandbox.workspace_access.key.clone(),
            ));
        }
    }
    out
}

/// The host path of a Docker bind (`host:container[:options]`).
fn bind_source(bind: &str) -> PathBuf {
    let host = bind.split(':').next().unwrap_or_default();
    paths::resolve_user_path(host)
}

fn overlaps(a: &Path, b: &Path) -> bool {
    let (a, b) = (paths::key(a), paths::key(b));
    a.starts_with(&*b) || b.starts_with(&*a)
}

/// What `dir`, mounted into a sandbox or searched by a confined tool,
/// would show of the secrets: a protected location at or below it, or
/// OpenClaw's config or state directory at, below or above it.
fn exposes(inp: &Inputs<'_>, dir: &Path) -> Option<String> {
    let dir_key = paths::key(dir);
    for loc in inp.protected {
        let p = paths::key(&loc.path);
        // Secrets under it are shown; code under it is what the gateway runs.
        if p.starts_with(&*dir_key) && (loc.secret || loc.guard == Guard::Layer) {
            return Some(format!("{} ({})", loc.what, paths::shown(&loc.path)));
        }
        // A mount inside the map's directory shows part of it.
        if loc.guard == Guard::Map && loc.dir && dir_key.starts_with(&*p) {
            return Some(format!("{} ({})", loc.what, paths::shown(&loc.path)));
        }
    }
    for d in &inp.openclaw_dirs {
        if overlaps(dir, d) {
            return Some(format!("OpenClaw's config and state ({})", paths::shown(d)));
        }
    }
    None
}

/// `openclaw config set` for one key.
fn set(key: &str, value: &Value) -> String {
    let v = value.to_string().replace('\'', "'\\''");
    format!("openclaw config set {key} '{v}' --strict-json")
}

/// The config that contains `a` in a sandbox: this plugin's where it runs
/// here, with each exposure that remains closed.
fn sandbox_fix(a: &RosterAgent, s: &AgentSettings, exposures: &[Exposure], own: bool) -> String {
    let base = a.key.clone().unwrap_or_else(|| "agents.defaults".into());
    let mut lines = Vec::new();
    let backend = if own || s.sandbox.backend.value == OWN_BACKEND {
        OWN_BACKEND
    } else {
        s.sandbox.backend.value.as_str()
    };
    if s.sandbox.mode.value != "all" || backend != s.sandbox.backend.value {
        lines.push(set(
            &format!("{base}.sandbox"),
            &serde_json::json!({"mode": "all", "backend": backend}),
        ));
    }
    for e in exposures {
        if e.key.ends_with(".exec.host") {
            lines.push(set(&e.key, &Value::String("sandbox".into())));
        } else if e.key.ends_with(".elevated.enabled") {
            lines.push(set(&e.key, &Value::Bool(false)));
        } else if e.key.ends_with(".allowHostControl") {
            lines.push(set(&e.key, &Value::Bool(false)));
        } else if e.key.contains(".binds") || e.key.contains(".dangerously") {
            if backend != OWN_BACKEND {
                lines.push(format!("remove it from {}", e.key));
            }
        } else if e.key == "cron.triggers.enabled" {
            lines.push(set(&e.key, &Value::Bool(false)));
        } else if e.key == "tools.sandbox.tools.allow" {
            lines.push(format!(
                "remove {} from tools.sandbox.tools.allow/alsoAllow",
                e.what.split(' ').next().unwrap_or("")
            ));
        }
    }
    lines.dedup();
    lines.join(" && ")
}

/// The config that contains `a` on the host: `workspaceOnly`, and every
/// tool that leaves it denied.
fn host_fix(a: &RosterAgent, exposures: &[Exposure]) -> String {
    let base = a.key.clone();
    let tools = base
        .as_ref()
        .map(|k| format!("{k}.tools"))
        .unwrap_or_else(|| "tools".into());
    let mut lines = Vec::new();
    let mut deny: Vec<Value> = a
        .entry
        .as_ref()
        .and_then(|e| e.get("tools"))
        .and_then(|t| t.get("deny"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for e in exposures {
        if e.key == "cron.triggers.enabled" {
            lines.push(set(&e.key, &Value::Bool(false)));
        } else if e.key.ends_with(".fs.workspaceOnly") {
            lines.push(set(
                &format!("{tools}.fs.workspaceOnly"),
                &Value::Bool(true),
            ));
        } else if e.key.ends_with(".tools.deny") || e.key == "tools.deny" {
            let tool = e.what.split(' ').next().unwrap_or("").to_owned();
            if !deny.iter().any(|d| d.as_str() == Some(&tool)) {
                deny.push(Value::String(tool));
            }
        } else {
            lines.push(format!("change {} ({})", e.key, e.what));
        }
    }
    if !deny.is_empty() {
        lines.push(set(&format!("{tools}.deny"), &Value::Array(deny)));
    }
    lines.dedup();
    lines.join(" && ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tool policy for tests: the host denies `host_denied`; a sandboxed
    /// session also denies everything but OpenClaw's default sandbox allow
    /// list (`DEFAULT_TOOL_ALLOW`, `constants-*.mjs`) plus `sandbox_allowed`.
    #[derive(Default)]
    struct Tools {
        host_denied: Vec<&'static str>,
        sandbox_allowed: Vec<&'static str>,
    }

    const SANDBOX_DEFAULT: &[&str] = &[
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

    impl ToolOffer for Tools {
        fn denied(&self, _agent: &str, tool: &str, sandboxed: bool) -> Option<String> {
            if self.host_denied.contains(&tool) {
                return Some("tools.deny".into());
            }
            if sandboxed
                && !SANDBOX_DEFAULT.contains(&tool)
                && !self.sandbox_allowed.contains(&tool)
            {
                return Some("tools.sandbox.tools".into());
            }
            None
        }
    }

    const HOST_DENIED: &[&str] = &[
        "exec",
        "process",
        "terminal",
        "portal",
        "browser",
        "nodes",
        "computer",
        "mobile_ui",
        "file_fetch",
        "dir_list",
        "dir_fetch",
        "file_write",
        "plugins",
        "gateway",
        "openclaw",
        "automations",
    ];

    fn map_locations() -> Vec<Location> {
        crate::rules::map_access::map_locations(Path::new(
            "/home/u/.config/micelclaw/agent-tokens.json",
        ))
    }

    fn roster(root: &Value) -> Vec<RosterAgent> {
        root["agents"]["entries"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(id, e)| RosterAgent {
                id: id.clone(),
                key: Some(format!("agents.entries.{id}")),
                entry: e.as_object().cloned(),
                workspaces: e
                    .get("workspace")
                    .and_then(Value::as_str)
                    .map(|w| vec![PathBuf::from(w)])
                    .unwrap_or_else(|| vec![PathBuf::from(format!("/home/u/ws/{id}"))]),
            })
            .collect()
    }

    fn judge_with(root: Value, tools: &Tools, own: bool) -> Posture {
        let protected = map_locations();
        let inp = Inputs {
            root: root.as_object().unwrap(),
            agents: roster(&root),
            protected: &protected,
            openclaw_dirs: vec![PathBuf::from("/home/u/.openclaw")],
            tools,
            own_sandbox_here: own,
        };
        judge(Mode::Enforce, &inp)
    }

    fn exposures(p: &Posture, id: &str) -> Vec<Exposure> {
        p.agent(id)
            .unwrap()
            .containment
            .clone()
            .err()
            .unwrap_or_default()
    }

    #[test]
    fn openclaws_defaults_are_not_contained_and_every_owned_call_is_refused_naming_the_agent() {
        let p = judge_with(
            json!({"agents": {"entries": {"paco--francis": {}}}}),
            &Tools::default(),
            false,
        );
        let e = exposures(&p, "paco--francis");
        assert!(
            e.iter().any(|e| e.what.starts_with("exec ")
                && e.key == "agents.entries.paco--francis.tools.deny"),
            "{e:?}"
        );
        assert!(e.iter().any(|e| e.key == "tools.fs.workspaceOnly"), "{e:?}");
        assert!(!p.serves_tokens());
        let reason = p.block_reason().unwrap();
        assert!(reason.starts_with("posture: "), "{reason}");
        assert!(reason.contains("paco--francis"), "{reason}");
        assert!(reason.contains("openclaw config set agents.entries.paco--francis.tools.fs.workspaceOnly 'true' --strict-json"), "{reason}");
        assert!(
            reason.contains("\"group:runtime\"") || reason.contains("\"exec\""),
            "{reason}"
        );
    }

    #[test]
    fn under_warn_tokens_are_served_and_the_exposure_is_still_described() {
        let mut p = judge_with(
            json!({"agents": {"entries": {"a": {}}}}),
            &Tools::default(),
            false,
        );
        p.mode = Mode::Warn;
        assert!(p.serves_tokens());
        assert!(p.block_reason().is_none());
        assert_eq!(p.describe_exposed().len(), 1);
    }

    #[test]
    fn nobody_judged_means_tokens_are_served() {
        let p = Posture::unjudged(Mode::Enforce);
        assert!(p.serves_tokens() && !p.judged());
    }

    #[test]
    fn a_host_agent_with_workspace_only_and_every_host_tool_denied_is_contained() {
        let root = json!({
            "tools": {"fs": {"workspaceOnly": true}},
            "cron": {"triggers": {"enabled": false}},
            "agents": {"entries": {"a": {}}}
        });
        let p = judge_with(
            root,
            &Tools {
                host_denied: HOST_DENIED.to_vec(),
                ..Default::default()
            },
            false,
        );
        assert_eq!(p.agent("a").unwrap().containment, Ok(Containment::Host));
        assert!(p.serves_tokens());
    }

    #[test]
    fn each_host_tool_left_to_the_agent_exposes_it() {
        for t in HOST_DENIED {
            let denied: Vec<&str> = HOST_DENIED.iter().copied().filter(|d| d != t).collect();
            let root =
                json!({"tools": {"fs": {"workspaceOnly": true}}, "agents": {"entries": {"a": {}}}});
            let p = judge_with(
                root,
                &Tools {
                    host_denied: denied,
                    ..Default::default()
                },
                false,
            );
            let e = exposures(&p, "a");
            assert!(
                e.iter().any(|e| e.what.starts_with(&format!("{t} "))),
                "{t}: {e:?}"
            );
        }
    }

    #[test]
    fn automations_are_fine_once_cron_triggers_are_off() {
        let denied: Vec<&str> = HOST_DENIED
            .iter()
            .copied()
            .filter(|d| *d != "automations")
            .collect();
        let root = |triggers: bool| json!({"tools": {"fs": {"workspaceOnly": true}}, "cron": {"triggers": {"enabled": triggers}}, "agents": {"entries": {"a": {}}}});
        let tools = Tools {
            host_denied: denied,
            ..Default::default()
        };
        assert!(judge_with(root(false), &tools, false)
            .agent("a")
            .unwrap()
            .is_contained());
        let e = exposures(&judge_with(root(true), &tools, false), "a");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].key, "cron.triggers.enabled");
    }

    #[test]
    fn a_workspace_that_holds_the_maps_directory_or_openclaws_state_is_an_exposure() {
        for ws in [
            "/home/u",
            "/home/u/.config",
            "/home/u/.openclaw",
            "/home/u/.config/micelclaw/sub",
        ] {
            let root = json!({"tools": {"fs": {"workspaceOnly": true}}, "cron": {"triggers": {"enabled": false}},
                              "agents": {"entries": {"a": {"workspace": ws}}}});
            let p = judge_with(
                root,
                &Tools {
                    host_denied: HOST_DENIED.to_vec(),
                    ..Default::default()
                },
                false,
            );
            let e = exposures(&p, "a");
            assert!(
                e.iter().any(|e| e.what.starts_with("its workspace")
                    && e.key == "agents.entries.a.workspace"),
                "{ws}: {e:?}"
            );
        }
    }

    #[test]
    fn the_own_sandbox_for_every_session_is_contained() {
        let root = json!({"agents": {"entries": {"a": {"sandbox": {"mode": "all", "backend": "claw-identity", "workspaceAccess": "rw"}}}}});
        let p = judge_with(root, &Tools::default(), true);
        assert_eq!(p.agent("a").unwrap().containment, Ok(Containment::Sandbox));
    }

    #[test]
    fn non_main_leaves_the_main_session_on_the_host() {
        let root = json!({"agents": {"entries": {"a": {"sandbox": {"mode": "non-main", "backend": "claw-identity"}}}}});
        let p = judge_with(root, &Tools::default(), true);
        let fix = p.agent("a").unwrap().fix.clone().unwrap();
        assert!(fix.contains(r#"openclaw config set agents.entries.a.sandbox '{"backend":"claw-identity","mode":"all"}' --strict-json"#), "{fix}");
        assert!(!p.serves_tokens());
    }

    #[test]
    fn what_leaves_a_sandbox_is_an_exposure_with_its_key() {
        let base = |extra: Value| {
            let mut a = json!({"sandbox": {"mode": "all", "backend": "claw-identity"}});
            crate::posture::tests::merge(&mut a, extra);
            json!({"agents": {"entries": {"a": a}}})
        };
        let cases = [
            (
                json!({"tools": {"exec": {"host": "gateway"}}}),
                "agents.entries.a.tools.exec.host",
            ),
            (
                json!({"tools": {"exec": {"host": "node"}}}),
                "agents.entries.a.tools.exec.host",
            ),
            (
                json!({"sandbox": {"backend": "ssh"}}),
                "agents.entries.a.sandbox.backend",
            ),
        ];
        for (extra, key) in cases {
            let p = judge_with(base(extra.clone()), &Tools::default(), true);
            let e = exposures(&p, "a");
            assert!(e.iter().any(|e| e.key == key), "{extra}: {e:?}");
        }
        let mut root = base(json!({}));
        root["tools"] = json!({"elevated": {"enabled": true}});
        let e = exposures(&judge_with(root, &Tools::default(), true), "a");
        assert!(
            e.iter()
                .any(|e| e.key == "agents.entries.a.tools.elevated.enabled"),
            "{e:?}"
        );
        for t in ["automations", "nodes", "gateway", "browser"] {
            let p = judge_with(
                base(json!({})),
                &Tools {
                    sandbox_allowed: vec![t],
                    ..Default::default()
                },
                true,
            );
            assert!(!exposures(&p, "a").is_empty(), "{t} allowed in the sandbox");
        }
    }

    #[test]
    fn docker_binds_and_mounted_workspaces_must_not_show_a_secret() {
        let root = |binds: Value, access: &str, ws: &str| {
            json!({"agents": {"entries": {"a": {
            "workspace": ws,
            "sandbox": {"mode": "all", "backend": "docker", "workspaceAccess": access, "docker": {"binds": binds}}}}}})
        };
        let ok = judge_with(
            root(json!(["/srv/data:/data:ro"]), "rw", "/home/u/ws/a"),
            &Tools::default(),
            false,
        );
        assert!(ok.agent("a").unwrap().is_contained(), "{:?}", ok.agent("a"));
        for bind in [
            "/home/u/.config:/c:ro",
            "/home/u/.config/micelclaw/x:/x",
            "/home/u/.openclaw/agents:/s",
            "/home:/h",
        ] {
            let p = judge_with(
                root(json!([bind]), "none", "/home/u/ws/a"),
                &Tools::default(),
                false,
            );
            let e = exposures(&p, "a");
            assert!(
                e.iter()
                    .any(|e| e.key == "agents.entries.a.sandbox.docker.binds"),
                "{bind}: {e:?}"
            );
        }
        let p = judge_with(root(json!([]), "ro", "/home/u"), &Tools::default(), false);
        assert!(exposures(&p, "a")
            .iter()
            .any(|e| e.key == "agents.entries.a.sandbox.workspaceAccess"));
        let p = judge_with(root(json!([]), "none", "/home/u"), &Tools::default(), false);
        assert!(
            p.agent("a").unwrap().is_contained(),
            "an unmounted workspace shows nothing"
        );
    }

    #[test]
    fn a_sandboxed_writer_of_a_host_agents_workspace_exposes_the_host_agent() {
        let root = json!({
            "tools": {"fs": {"workspaceOnly": true}},
            "cron": {"triggers": {"enabled": false}},
            "agents": {"entries": {
                "host": {"workspace": "/home/u/ws/shared", "tools": {"deny": ["group:runtime"]}},
                "boxed": {"workspace": "/home/u/ws/shared", "sandbox": {"mode": "all", "backend": "claw-identity", "workspaceAccess": "rw"}}
            }}
        });
        struct PerAgent;
        impl ToolOffer for PerAgent {
            fn denied(&self, agent: &str, tool: &str, _: bool) -> Option<String> {
                (agent == "host" && HOST_DENIED.contains(&tool))
                    .then(|| "x".into())
                    .or_else(|| {
                        (agent == "boxed" && tool != "exec" && HOST_DENIED.contains(&tool))
                            .then(|| "x".into())
                    })
            }
        }
        let protected = map_locations();
        let inp = Inputs {
            root: root.as_object().unwrap(),
            agents: roster(&root),
            protected: &protected,
            openclaw_dirs: vec![],
            tools: &PerAgent,
            own_sandbox_here: true,
        };
        let p = judge(Mode::Enforce, &inp);
        let e = exposures(&p, "host");
        assert!(
            e.iter()
                .any(|e| e.what.contains("sandboxed commands of agent boxed")),
            "{e:?}"
        );
        assert_eq!(
            p.agent("boxed").unwrap().containment,
            Ok(Containment::Sandbox)
        );
    }

    #[test]
    fn a_reason_names_at_most_a_few_agents() {
        let entries: serde_json::Map<String, Value> =
            (0..10).map(|i| (format!("a{i}"), json!({}))).collect();
        let p = judge_with(
            json!({"agents": {"entries": entries}}),
            &Tools::default(),
            false,
        );
        let r = p.block_reason().unwrap();
        assert!(r.contains("and 6 more"), "{r}");
    }

    pub(super) fn merge(a: &mut Value, b: Value) {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }
}
