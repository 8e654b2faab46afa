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

use serde_json::{Map, Value};

use crate::agent_fs::AgentFsTable;
use crate::openclaw::agent::{self, AgentSettings};
use crate::openclaw::tools;
use crate::options::PostureMode as Mode;
use crate::paths;
use crate::protected::{Guard, Location};
use crate::redact::shown;

/// The id block reasons of this check start with.
pub const RULE_ID: &str = crate::call::rule_id::POSTURE;

/// This plugin's sandbox backend (`crate::sandbox::BACKEND_ID`).
const OWN_BACKEND: &str = crate::sandbox::BACKEND_ID;

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
    /// For a tool: the tool-policy entry that takes it away.
    pub deny: Option<String>,
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
        "the agents the roster doesn't list".to_owned()
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
            .or(match self.agents.as_deref() {
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
                crate::redact::scrub(&format!(
                    "{}: {}; contain it with: {}",
                    display(&a.agent_id),
                    summarize(exposures),
                    a.fix.as_deref().unwrap_or("see claw-identity doctor")
                ))
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
        Some(crate::redact::scrub(&format!(
            "{RULE_ID}: claw-identity serves no token while an agent's own tools can reach the token map or OpenClaw's config, since any agent that reaches the map reaches every agent's token. Do not retry; tell the operator. Not contained: {named}. The operator runs claw-identity doctor for every finding, or sets posture \"warn\" to serve tokens anyway."
        )))
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
        _ if rule == crate::call::rule_id::MAP_ACCESS
            || rule == crate::call::rule_id::LAYER_CONTROLS
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
    call: &crate::call::ToolCall<'_>,
    rule: &str,
    host: &dyn crate::sessions::Host,
) -> Option<crate::call::Decision<'a>> {
    use crate::call::Decision;
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
    let who = display(&a.agent_id);
    // The posture counts on such a tool never being offered to this agent:
    // a call of one means something offered it past the tool policy (a
    // command-line backend's own tools, a plugin's), and it is refused.
    if let Some(does) = tools::tool(call.tool).and_then(|t| leaves(t, how == Containment::Sandbox))
    {
        return refuse(format!(
            "agent {who} is contained only while it is never offered {tool}, which {does}"
        ));
    }
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

/// Exposures in one phrase: each setting with its key, and the tools that
/// leave the confinement named together.
pub fn summarize(exposures: &[Exposure]) -> String {
    let mut parts: Vec<String> = exposures
        .iter()
        .filter(|e| e.deny.is_none())
        .map(|e| format!("{} ({})", e.what, e.key))
        .collect();
    let tools: Vec<&str> = exposures
        .iter()
        .filter(|e| e.deny.is_some())
        .filter_map(|e| e.what.split(' ').next())
        .collect();
    if let Some(first) = exposures.iter().find(|e| e.deny.is_some()) {
        parts.push(format!(
            "it may be offered tools that reach the host outside its confinement: {} ({})",
            tools.join(", "),
            first.key
        ));
    }
    parts.join("; ")
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
    fn denied(&self, agent: &str, tool: &str, sandboxed: bool) -> Option<String> {
        use crate::openclaw::{sandbox_tools, tool_policy};
        let id = if agent == UNLISTED {
            unlisted_id(self.root)
        } else {
            agent.to_owned()
        };
        if let tool_policy::Availability::Denied(d) =
            tool_policy::availability(self.root, &id, tool)
        {
            return d.first().map(ToString::to_string);
        }
        if sandboxed {
            let p = sandbox_tools::policy(self.root, &id);
            if !p.allows(&tool_policy::ToolRef::new(tool)) {
                return Some(format!("{} leaves it out", p.key()));
            }
        }
        None
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
    /// `toolPrefix`: the owned MCP tools, which a sandboxed session is
    /// offered only where its tool policy allows them (a sandbox fix says so).
    pub owned: &'a [String],
}

/// What a catalog tool does that leaves a contained agent's confinement,
/// if anything (`crate::openclaw::tools`, each reach with its source):
/// `sandboxed` for a tool offered in a sandboxed session, where `exec` and
/// `process` run inside. `None`: it stays confined.
fn leaves(t: &tools::Tool, sandboxed: bool) -> Option<&'static str> {
    use tools::ReachKind::*;
    match t.id {
        // Run inside the sandbox when the session has one; on the host they
        // are a shell.
        "exec" | "process" if sandboxed => return None,
        // Its only way out is an ACP harness, which the layer itself
        // refuses under "enforce" (`map_access::spawn_runtime`).
        "sessions_spawn" => return None,
        // Judged on `cron.triggers.enabled` (`automations_exposure`).
        "automations" => return None,
        // Gated on their roots below (`reads_confined`).
        "message" | "memory_get" | "memory_search" => return None,
        // Proxies to a local port, or a fixed, hardened program on the
        // workspace: neither opens a host file of the agent's choosing.
        _ => {}
    }
    t.reach.iter().find_map(|r| match r.kind {
        HostProcess => Some("runs programs or code on the gateway's host, or in the gateway"),
        PairedNode => Some("acts on paired nodes, one of which may be this host"),
        ReadsOutsideWorkspaceOnly => Some("reads host files outside its workspace"),
        FixedHostProcess | HostNetwork | WorkspaceConfined | NoHostAccess => None,
    })
}

/// The deny entry that takes `t` away: its plugin's id for a plugin tool
/// (one entry for all of that plugin's tools), else its own name.
fn deny_entry(t: &tools::Tool) -> String {
    match t.plugin {
        Some(p) if !t.core => p.to_owned(),
        _ => t.id.to_owned(),
    }
}

/// `message` and the memory tools read host files outside `workspaceOnly`'s
/// cover, but only under fixed roots: `message` the media roots
/// (`getAgentScopedMediaLocalRootsForSources`, `local-roots-*.mjs`), the
/// memory tools `.md` files under `memory.search.extraPaths`
/// (`readMemoryFile`, `read-file-*.mjs`). They leave the confinement only
/// where a root holds a secret location.
fn roots_expose(inp: &Inputs<'_>, a: &RosterAgent, tool: &str) -> Option<String> {
    let state = crate::openclaw::paths::state_dir();
    let config = crate::openclaw::paths::config_dir();
    let roots: Vec<PathBuf> = match tool {
        "message" => {
            let mut r = vec![
                crate::openclaw::paths::resolve_user_path("/tmp/openclaw"),
                config.join("media"),
                state.join("media"),
                state.join("delivery-queue-media"),
                state.join("canvas"),
                state.join("workspace"),
            ];
            r.extend(a.workspaces.iter().cloned());
            r
        }
        _ => {
            let own = a
                .entry
                .as_ref()
                .and_then(|e| e.get("memory"))
                .and_then(|m| m.get("search"))
                .and_then(|s| s.get("extraPaths"));
            let defaults = inp
                .root
                .get("agents")
                .and_then(|x| x.get("defaults"))
                .and_then(|d| d.get("memorySearch"))
                .and_then(|m| m.get("extraPaths"));
            own.or(defaults)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(crate::openclaw::paths::resolve_user_path)
                .collect()
        }
    };
    roots.iter().find_map(|r| {
        inp.protected
            .iter()
            .filter(|l| l.secret)
            .find(|l| paths::key(&l.path).starts_with(&*paths::key(r)))
            .map(|l| {
                format!(
                    "{} ({}) under {}",
                    l.what,
                    paths::shown(&l.path),
                    paths::shown(r)
                )
            })
    })
}

/// Every tool of the catalog offered to `a` (in a sandboxed session when
/// `sandboxed`) that leaves its confinement, as exposures keyed to the
/// config that denies it.
fn tool_exposures(inp: &Inputs<'_>, a: &RosterAgent, sandboxed: bool, key: &str) -> Vec<Exposure> {
    let mut out = Vec::new();
    for t in tools::CATALOG {
        let does = match leaves(t, sandboxed) {
            Some(d) => d.to_owned(),
            None => match t.id {
                "message" | "memory_get" | "memory_search" => match roots_expose(inp, a, t.id) {
                    Some(hit) => format!("reads {hit}"),
                    None => continue,
                },
                _ => continue,
            },
        };
        if t.id == "tool_search_code" && !crate::openclaw::code_mode::tool_search_code(inp.root) {
            continue; // offered only where Tool Search runs in code mode
        }
        // A plugin's tools exist only while the plugin is enabled.
        if let Some(p) = t.plugin.filter(|p| *p != tools::BUNDLE_MCP) {
            if !crate::openclaw::plugins::bundled_enabled(inp.root, p) {
                continue;
            }
        }
        if inp.tools.denied(&a.id, t.id, sandboxed).is_some() {
            continue;
        }
        out.push(Exposure {
            what: format!("{} {does}", t.id),
            key: key.to_owned(),
            deny: Some(deny_entry(t)),
        });
    }
    out
}

/// Code Mode runs the model's own JavaScript in `node:vm` inside the
/// gateway (OpenClaw: "not a security boundary"), added after the tool
/// policy, so no deny list removes it (`crate::openclaw::code_mode`).
fn code_mode_exposure(inp: &Inputs<'_>, a: &RosterAgent) -> Option<Exposure> {
    let id = tool_policy_id(inp, a);
    let cm = crate::openclaw::code_mode::code_mode(inp.root, &id);
    if !cm.runs_in_gateway() {
        return None;
    }
    let key = cm
        .activations
        .iter()
        .find(|(act, _)| *act != crate::openclaw::code_mode::Activation::Off)
        .map(|(_, k)| k.clone())
        .unwrap_or_else(|| "tools.codeMode".into());
    Some(exposure(
        "Code Mode may run the model's own JavaScript inside the gateway (node:vm, which OpenClaw says is not a security boundary)",
        key,
    ))
}

/// A `MEDIA:` directive in a model's reply attaches a file from the media
/// roots without any tool call (`resolveAgentScopedOutboundMediaAccess`,
/// `read-capability-*.mjs`): no tool policy removes it, so no root may hold
/// a secret location.
fn media_reply_exposure(inp: &Inputs<'_>, a: &RosterAgent) -> Option<Exposure> {
    let hit = roots_expose(inp, a, "message")?;
    Some(exposure(
        format!("a MEDIA: line in its reply can attach {hit}"),
        "tokenMapPath",
    ))
}

/// A command-line model backend runs its own tools on the host, outside
/// the sandbox and `workspaceOnly` (`crate::openclaw::cli_backends`).
fn cli_backend_exposures(inp: &Inputs<'_>, a: &RosterAgent) -> Vec<Exposure> {
    let entry = match (&a.key, &a.entry) {
        (Some(k), Some(e)) => Some((k.as_str(), e)),
        _ => None,
    };
    crate::openclaw::cli_backends::reachable(inp.root, entry)
        .into_iter()
        .map(|(id, key)| {
            exposure(
                format!(
                    "it may run on the command-line backend {}, whose own tools run on the host, outside every sandbox and workspaceOnly",
                    shown(&id)
                ),
                key,
            )
        })
        .collect()
}

/// The id the tool policy mirror is asked about for `a`: for the agents
/// the roster doesn't list, an id it doesn't list either.
fn tool_policy_id(inp: &Inputs<'_>, a: &RosterAgent) -> String {
    if a.id != UNLISTED {
        return a.id.clone();
    }
    unlisted_id(inp.root)
}

/// An agent id `root`'s roster doesn't list: OpenClaw resolves such an id
/// to the defaults and the global settings only.
fn unlisted_id(root: &Map<String, Value>) -> String {
    let roster = crate::openclaw::roster::roster(root);
    let mut id = "claw-identity-unlisted".to_owned();
    while roster.knows(&id) {
        id.push('x');
    }
    id
}

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
                crate::openclaw::agent_ids::normalize_agent_id(k).unwrap_or_else(|| "main".into());
            push(id, Some(format!("agents.entries.{k}")), e.as_object());
        }
    } else if let Some(list) = list {
        for (i, e) in list.as_array().into_iter().flatten().enumerate() {
            let Some(id) = e.get("id").and_then(Value::as_str) else {
                continue;
            };
            let id =
                crate::openclaw::agent_ids::normalize_agent_id(id).unwrap_or_else(|| "main".into());
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

/// The posture when OpenClaw's config was given but can't be read (not an
/// object, or a value JSON can't hold): no agent's containment can be
/// judged, so none is contained.
pub fn unreadable(mode: Mode) -> Posture {
    Posture {
        mode,
        agents: Some(vec![AgentPosture {
            agent_id: UNLISTED.to_owned(),
            containment: Err(vec![exposure(
                "OpenClaw's config the plugin was given can't be read, so no agent's containment can be judged",
                "openclawConfig",
            )]),
            fix: Some("pass OpenClaw's config as an object (the plugin passes api.config)".to_owned()),
        }]),
    }
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
    owned: &[String],
) -> Posture {
    let inp = Inputs {
        root,
        agents: roster(root, table),
        protected,
        openclaw_dirs: vec![
            crate::openclaw::paths::config_dir(),
            crate::openclaw::paths::state_dir(),
        ],
        tools,
        own_sandbox_here,
        owned,
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
    let sandbox_chosen = s.sandbox.mode.value != "off";
    let fix = if sandbox_chosen || inp.own_sandbox_here {
        sandbox_fix(inp, a, &s, &sandbox, inp.own_sandbox_here)
    } else {
        host_fix(inp, a, &host)
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
        deny: None,
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
                let how = if b.value.split(':').skip(2).any(|o| o.split(',').any(|o| o == "ro")) {
                    Mounted::ReadOnly
                } else {
                    Mounted::Writable
                };
                if let Some(hit) = exposes(inp, &bind_source(&b.value), how) {
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
                    let how = if sb.workspace_access.value == "rw" {
                        Mounted::Writable
                    } else {
                        Mounted::ReadOnly
                    };
                    if let Some(hit) = exposes(inp, w, how) {
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
    out.extend(tool_exposures(inp, a, true, "tools.sandbox.tools.allow"));
    out.extend(automations_exposure(inp, &a.id, true));
    out.extend(code_mode_exposure(inp, a));
    out.extend(cli_backend_exposures(inp, a));
    out.extend(media_reply_exposure(inp, a));
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
    out.extend(tool_exposures(inp, a, false, &deny_key));
    out.extend(automations_exposure(inp, &a.id, false));
    out.extend(code_mode_exposure(inp, a));
    out.extend(cli_backend_exposures(inp, a));
    out.extend(media_reply_exposure(inp, a));
    for w in &a.workspaces {
        if let Some(hit) = exposes(inp, w, Mounted::HostWorkspace) {
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
    crate::openclaw::paths::resolve_user_path(host)
}

fn overlaps(a: &Path, b: &Path) -> bool {
    let (a, b) = (paths::key(a), paths::key(b));
    a.starts_with(&*b) || b.starts_with(&*a)
}

/// How a directory is reached, for [`exposes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mounted {
    /// Read only (a `:ro` bind, a `"ro"` workspace).
    ReadOnly,
    /// A sandbox writes it (a bind without `:ro`, an `"rw"` workspace).
    Writable,
    /// A host agent's own workspace: its confined tools read and write it,
    /// and no sandboxed command writes it (`host_exposures` checks that).
    HostWorkspace,
}

/// What `dir`, reached as `how`, would show of the secrets: a secret
/// location at or below it, the map's directory at, below or above it,
/// OpenClaw's config or state directory at, below or above it; and, for a
/// sandbox that writes it, code the gateway runs below it. A workspace's
/// own plugin folder doesn't count: OpenClaw loads no workspace plugin the
/// config doesn't enable (`workspace-disabled-by-default`,
/// `config-normalization-shared-*.mjs`), and on the host the path guard
/// keeps the file tools out of it.
fn exposes(inp: &Inputs<'_>, dir: &Path, how: Mounted) -> Option<String> {
    let dir_key = paths::key(dir);
    let workspace_plugins = dir.join(".openclaw").join("extensions");
    for loc in inp.protected {
        let p = paths::key(&loc.path);
        let code = how == Mounted::Writable
            && loc.guard == Guard::Layer
            && !loc.secret
            && loc.path != workspace_plugins;
        if p.starts_with(&*dir_key) && (loc.secret || code) {
            return Some(format!("{} ({})", loc.what, paths::shown(&loc.path)));
        }
        // A mount inside the map's directory shows part of it.
        if loc.guard == Guard::Map && loc.dir && dir_key.starts_with(&*p) {
            return Some(format!("{} ({})", loc.what, paths::shown(&loc.path)));
        }
    }
    for d in &inp.openclaw_dirs {
        // OpenClaw's own workspace folders inside its state (`<state>/workspace`,
        // `<state>/workspace-<id>`, their default place) hold none of it for
        // a host agent; anything else there, or a mount, shows every agent's
        // sessions and auth profiles.
        let default_place = paths::key(dir)
            .strip_prefix(&*paths::key(d))
            .ok()
            .and_then(|rest| rest.components().next())
            .is_some_and(|c| c.as_os_str().to_string_lossy().starts_with("workspace"));
        if overlaps(dir, d) && !(how == Mounted::HostWorkspace && default_place) {
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

/// Where `a`'s own settings go: its entry, or the defaults and the global
/// `tools` for an agent without one.
fn tools_key(a: &RosterAgent) -> String {
    match &a.key {
        Some(k) => format!("{k}.tools"),
        None => "tools".to_owned(),
    }
}

/// The line that denies `entries` to `a`, on top of what it denies already.
fn deny_line(inp: &Inputs<'_>, a: &RosterAgent, exposures: &[Exposure]) -> Option<String> {
    let existing = match &a.entry {
        Some(e) => e.get("tools").and_then(|t| t.get("deny")),
        None => inp.root.get("tools").and_then(|t| t.get("deny")),
    };
    let mut deny: Vec<Value> = existing
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let before = deny.len();
    for entry in exposures.iter().filter_map(|e| e.deny.as_ref()) {
        if !deny.iter().any(|d| d.as_str() == Some(entry)) {
            deny.push(Value::String(entry.clone()));
        }
    }
    (deny.len() > before).then(|| set(&format!("{}.deny", tools_key(a)), &Value::Array(deny)))
}

/// The lines that close the exposures no tool denial closes.
fn setting_lines(exposures: &[Exposure]) -> Vec<String> {
    let mut lines = Vec::new();
    for e in exposures.iter().filter(|e| e.deny.is_none()) {
        let k = e.key.as_str();
        if k.ends_with(".exec.host") {
            lines.push(set(k, &Value::String("sandbox".into())));
        } else if k.ends_with(".elevated.enabled")
            || k.ends_with(".allowHostControl")
            || k == "cron.triggers.enabled"
        {
            lines.push(set(k, &Value::Bool(false)));
        } else if k.ends_with(".fs.workspaceOnly") {
            lines.push(set(k, &Value::Bool(true)));
        } else if k.contains("codeMode") {
            lines.push(set("tools.codeMode", &Value::Bool(false)));
        } else if k.contains(".dangerously") {
            lines.push(set(k, &Value::Bool(false)));
        } else if k.ends_with(".binds") {
            lines.push(format!("remove it from {k} ({})", e.what));
        } else if k.ends_with(".sandbox.mode") || k.ends_with(".sandbox.backend") {
            // The sandbox line itself says it.
        } else {
            lines.push(format!("change {k} ({})", e.what));
        }
    }
    lines
}

/// The config that contains `a` in a sandbox: this plugin's where it runs
/// here, with each exposure that remains closed.
fn sandbox_fix(
    inp: &Inputs<'_>,
    a: &RosterAgent,
    s: &AgentSettings,
    exposures: &[Exposure],
    own: bool,
) -> String {
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
    // What the plugin's own backend masks needs no other change.
    let own_masks = |e: &&Exposure| {
        !(backend == OWN_BACKEND
            && (e.key.contains(".binds")
                || e.key.contains(".dangerously")
                || e.key.ends_with(".workspaceAccess")))
    };
    let rest: Vec<Exposure> = exposures.iter().filter(own_masks).cloned().collect();
    lines.extend(setting_lines(&rest));
    lines.extend(deny_line(inp, a, &rest));
    lines.extend(owned_allow_line(inp, a));
    lines.dedup();
    lines.join(" && ")
}

/// A sandboxed session is offered the owned MCP tools only where its tool
/// policy allows them (`DEFAULT_TOOL_ALLOW` has none): the line that keeps
/// them usable once the agent runs in the sandbox, where they are not.
fn owned_allow_line(inp: &Inputs<'_>, a: &RosterAgent) -> Option<String> {
    use crate::openclaw::{sandbox_tools, tool_policy::ToolRef, tools::BUNDLE_MCP};
    let id = tool_policy_id(inp, a);
    let policy = sandbox_tools::policy(inp.root, &id);
    let missing: Vec<String> = inp
        .owned
        .iter()
        .map(|p| format!("{p}*"))
        .filter(|glob| {
            !policy.allows(&ToolRef::plugin_tool(
                &glob.replace('*', "tool"),
                BUNDLE_MCP,
            ))
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    let key = policy
        .keys
        .iter()
        .find(|k| k.ends_with(".alsoAllow"))
        .cloned()
        .unwrap_or_else(|| "tools.sandbox.tools.alsoAllow".to_owned());
    let section = key.strip_suffix(".alsoAllow").unwrap_or(&key);
    let mut also: Vec<Value> = section
        .split('.')
        .try_fold(Some(inp.root), |m, k| {
            Some(m?.get(k).and_then(Value::as_object))
        })
        .flatten()
        .and_then(|s| s.get("alsoAllow"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    also.extend(missing.into_iter().map(Value::String));
    Some(set(&key, &Value::Array(also)))
}

/// The config that contains `a` on the host: `workspaceOnly`, and every
/// tool that leaves it denied.
fn host_fix(inp: &Inputs<'_>, a: &RosterAgent, exposures: &[Exposure]) -> String {
    let mut lines = setting_lines(exposures);
    lines.extend(deny_line(inp, a, exposures));
    lines.dedup();
    lines.join(" && ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tool policy for tests: the host offers only `host`; a sandboxed
    /// session only what it offers and `sandbox` lists.
    #[derive(Default)]
    struct Tools {
        host: Vec<&'static str>,
        sandbox: Vec<&'static str>,
    }

    impl ToolOffer for Tools {
        fn denied(&self, _agent: &str, tool: &str, sandboxed: bool) -> Option<String> {
            let offered = self.host.contains(&tool) && (!sandboxed || self.sandbox.contains(&tool));
            (!offered).then(|| "tools.deny".into())
        }
    }

    /// OpenClaw's default sandbox allow list, offered on the host too.
    fn sandbox_defaults() -> Tools {
        let d = crate::openclaw::sandbox_tools::DEFAULT_ALLOW.to_vec();
        Tools {
            host: d.clone(),
            sandbox: d,
        }
    }

    fn map_locations() -> Vec<Location> {
        crate::protected::map_locations(Path::new("/home/u/.config/micelclaw/agent-tokens.json"))
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

    /// `root` with Code Mode off, as every contained config needs.
    fn no_code_mode(mut root: Value) -> Value {
        merge(&mut root, json!({"tools": {"codeMode": false}}));
        root
    }

    fn judge_with(root: Value, tools: &dyn ToolOffer, own: bool) -> Posture {
        let protected = map_locations();
        let inp = Inputs {
            root: root.as_object().unwrap(),
            agents: roster(&root),
            protected: &protected,
            openclaw_dirs: vec![PathBuf::from("/home/u/.openclaw")],
            tools,
            own_sandbox_here: own,
            owned: &[],
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

    fn host_config(extra: Value) -> Value {
        let mut root = no_code_mode(json!({
            "tools": {"fs": {"workspaceOnly": true}},
            "agents": {"entries": {"a": {}}}
        }));
        merge(&mut root, extra);
        root
    }

    #[test]
    fn openclaws_defaults_are_not_contained_and_every_owned_call_is_refused_naming_the_agent() {
        let root = json!({"agents": {"entries": {"paco--francis": {}}}});
        let p = judge_with(root, &ConfigTools::new(&serde_json::Map::new()), false);
        let e = exposures(&p, "paco--francis");
        assert!(
            e.iter()
                .any(|e| e.what.starts_with("exec ") && e.deny.as_deref() == Some("exec")),
            "{e:?}"
        );
        assert!(e.iter().any(|e| e.key == "tools.fs.workspaceOnly"), "{e:?}");
        assert!(
            e.iter().any(|e| e.key.starts_with("tools.codeMode")),
            "{e:?}"
        );
        assert!(!p.serves_tokens());
        let reason = p.block_reason().unwrap();
        assert!(reason.starts_with("posture: "), "{reason}");
        assert!(reason.contains("paco--francis"), "{reason}");
        assert!(
            reason.contains("openclaw config set tools.fs.workspaceOnly 'true' --strict-json"),
            "{reason}"
        );
        assert!(
            reason.contains("openclaw config set tools.codeMode 'false' --strict-json"),
            "{reason}"
        );
        assert!(
            reason.contains(r#"agents.entries.paco--francis.tools.deny '["exec","process","#),
            "{reason}"
        );
    }

    #[test]
    fn a_reason_stays_short_enough_to_read() {
        let root = json!({"agents": {"entries": {"a": {}}}});
        let p = judge_with(root, &ConfigTools::new(&serde_json::Map::new()), false);
        let r = p.block_reason().unwrap();
        assert!(r.len() < 2500, "{} bytes: {r}", r.len());
        assert_eq!(r.matches("it may be offered tools").count(), 1, "{r}");
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
    fn a_host_agent_with_workspace_only_and_no_host_tool_is_contained() {
        let p = judge_with(host_config(json!({})), &Tools::default(), false);
        assert_eq!(p.agent("a").unwrap().containment, Ok(Containment::Host));
        assert!(p.serves_tokens());
    }

    #[test]
    fn each_catalog_tool_that_reaches_the_host_exposes_a_host_agent() {
        for t in [
            "exec",
            "process",
            "browser",
            "terminal",
            "gateway",
            "plugins",
            "openclaw",
            "nodes",
            "computer",
            "mobile_ui",
            "file_fetch",
            "dir_fetch",
            "canvas",
        ] {
            let p = judge_with(
                host_config(json!({})),
                &Tools {
                    host: vec![t],
                    ..Default::default()
                },
                false,
            );
            let e = exposures(&p, "a");
            assert!(
                e.iter()
                    .any(|e| e.what.starts_with(&format!("{t} ")) && e.deny.is_some()),
                "{t}: {e:?}"
            );
        }
        // Tools that stay in the workspace or reach nothing on the host.
        for t in [
            "read",
            "write",
            "edit",
            "apply_patch",
            "ls",
            "web_search",
            "sessions_send",
            "github_publish",
            "portal",
        ] {
            let p = judge_with(
                host_config(json!({})),
                &Tools {
                    host: vec![t],
                    ..Default::default()
                },
                false,
            );
            assert!(
                p.agent("a").unwrap().is_contained(),
                "{t}: {:?}",
                exposures(&p, "a")
            );
        }
    }

    #[test]
    fn a_disabled_plugins_tools_are_no_exposure() {
        // browser is on by default; memory-wiki only once config names it.
        let tools = Tools {
            host: vec!["browser", "wiki_get"],
            ..Default::default()
        };
        let e = exposures(&judge_with(host_config(json!({})), &tools, false), "a");
        assert!(e.iter().any(|e| e.what.starts_with("browser ")), "{e:?}");
        assert!(!e.iter().any(|e| e.what.starts_with("wiki_get ")), "{e:?}");
        let off = host_config(
            json!({"plugins": {"entries": {"browser": {"enabled": false}, "memory-wiki": {}}}}),
        );
        let e = exposures(&judge_with(off, &tools, false), "a");
        assert!(!e.iter().any(|e| e.what.starts_with("browser ")), "{e:?}");
        assert!(
            e.iter().any(
                |e| e.what.starts_with("wiki_get ") && e.deny.as_deref() == Some("memory-wiki")
            ),
            "{e:?}"
        );
    }

    #[test]
    fn message_and_memory_reach_the_host_only_where_their_roots_hold_a_secret() {
        let tools = Tools {
            host: vec!["message", "memory_get"],
            ..Default::default()
        };
        assert!(judge_with(host_config(json!({})), &tools, false)
            .agent("a")
            .unwrap()
            .is_contained());
        let extra = host_config(
            json!({"agents": {"entries": {"a": {"memory": {"search": {"extraPaths": ["/home/u/.config"]}}}}}}),
        );
        let e = exposures(&judge_with(extra, &tools, false), "a");
        assert!(
            e.iter()
                .any(|e| e.what.starts_with("memory_get reads the token map")),
            "{e:?}"
        );
    }

    #[test]
    fn code_mode_in_the_gateway_exposes_even_a_sandboxed_agent() {
        let root = json!({"agents": {"entries": {"a": {"sandbox": {"mode": "all", "backend": "claw-identity"}}}}});
        let e = exposures(&judge_with(root.clone(), &sandbox_defaults(), true), "a");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].key.starts_with("tools.codeMode"), "{e:?}");
        let quickjs = json!({"tools": {"codeMode": {"enabled": true, "executor": "quickjs"}}, "agents": root["agents"]});
        assert!(judge_with(quickjs, &sandbox_defaults(), true)
            .agent("a")
            .unwrap()
            .is_contained());
    }

    #[test]
    fn a_command_line_model_backend_exposes_the_agent_however_it_is_contained() {
        let sandboxed = no_code_mode(json!({"agents": {
            "defaults": {"model": {"primary": "openai/gpt", "fallbacks": ["claude-cli/sonnet"]}},
            "entries": {"a": {"sandbox": {"mode": "all", "backend": "claw-identity"}}}}}));
        let e = exposures(&judge_with(sandboxed, &sandbox_defaults(), true), "a");
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].key, "agents.defaults.model.fallbacks");
        assert!(e[0].what.contains("claude-cli"), "{e:?}");
        let host = host_config(json!({"agents": {"entries": {"a": {"model": "claude-cli/opus"}}}}));
        let e = exposures(&judge_with(host, &Tools::default(), false), "a");
        assert!(e.iter().any(|e| e.key == "agents.entries.a.model"), "{e:?}");
    }

    #[test]
    fn a_map_under_a_media_root_exposes_every_agent_since_a_reply_can_attach_it() {
        let protected =
            crate::protected::map_locations(Path::new("/tmp/openclaw/secrets/agent-tokens.json"));
        let root = host_config(json!({}));
        let inp = Inputs {
            root: root.as_object().unwrap(),
            agents: roster(&root),
            protected: &protected,
            openclaw_dirs: vec![],
            tools: &Tools::default(),
            own_sandbox_here: false,
            owned: &[],
        };
        let p = judge(Mode::Enforce, &inp);
        let e = exposures(&p, "a");
        assert!(
            e.iter().any(|e| e
                .what
                .starts_with("a MEDIA: line in its reply can attach the token map")),
            "{e:?}"
        );
    }

    #[test]
    fn automations_are_fine_once_cron_triggers_are_off() {
        let tools = Tools {
            host: vec!["automations"],
            ..Default::default()
        };
        let off = host_config(json!({"cron": {"triggers": {"enabled": false}}}));
        assert!(judge_with(off, &tools, false)
            .agent("a")
            .unwrap()
            .is_contained());
        let e = exposures(&judge_with(host_config(json!({})), &tools, false), "a");
        assert_eq!(e.len(), 1, "{e:?}");
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
            let root = host_config(json!({"agents": {"entries": {"a": {"workspace": ws}}}}));
            let e = exposures(&judge_with(root, &Tools::default(), false), "a");
            assert!(
                e.iter().any(|e| e.what.starts_with("its workspace")
                    && e.key == "agents.entries.a.workspace"),
                "{ws}: {e:?}"
            );
        }
    }

    #[test]
    fn a_workspace_in_openclaws_default_place_is_fine() {
        for ws in [
            "/home/u/.openclaw/workspace",
            "/home/u/.openclaw/workspace-a",
        ] {
            let root = host_config(json!({"agents": {"entries": {"a": {"workspace": ws}}}}));
            let p = judge_with(root, &Tools::default(), false);
            assert!(
                p.agent("a").unwrap().is_contained(),
                "{ws}: {:?}",
                exposures(&p, "a")
            );
        }
    }

    #[test]
    fn the_own_sandbox_for_every_session_is_contained() {
        let root = no_code_mode(
            json!({"agents": {"entries": {"a": {"sandbox": {"mode": "all", "backend": "claw-identity", "workspaceAccess": "rw"}}}}}),
        );
        let p = judge_with(root, &sandbox_defaults(), true);
        assert_eq!(p.agent("a").unwrap().containment, Ok(Containment::Sandbox));
    }

    #[test]
    fn moving_an_agent_into_the_sandbox_keeps_its_owned_tools_usable() {
        let root = no_code_mode(json!({"agents": {"entries": {"a": {}}}}));
        let protected = map_locations();
        let owned = ["claw-os__".to_owned()];
        let inp = Inputs {
            root: root.as_object().unwrap(),
            agents: roster(&root),
            protected: &protected,
            openclaw_dirs: vec![],
            tools: &Tools::default(),
            own_sandbox_here: true,
            owned: &owned,
        };
        let fix = judge(Mode::Enforce, &inp)
            .agent("a")
            .unwrap()
            .fix
            .clone()
            .unwrap();
        assert!(fix.contains(r#"openclaw config set tools.sandbox.tools.alsoAllow '["claw-os__*"]' --strict-json"#), "{fix}");
        // Where the sandbox allows them already, nothing is added.
        let mut allowed = root.clone();
        merge(
            &mut allowed,
            json!({"tools": {"sandbox": {"tools": {"alsoAllow": ["claw-os__*"]}}}}),
        );
        let inp = Inputs {
            root: allowed.as_object().unwrap(),
            agents: roster(&allowed),
            ..inp
        };
        let fix = judge(Mode::Enforce, &inp)
            .agent("a")
            .unwrap()
            .fix
            .clone()
            .unwrap();
        assert!(!fix.contains("alsoAllow"), "{fix}");
    }

    #[test]
    fn a_config_that_cant_be_read_serves_no_token_under_enforce() {
        let p = unreadable(Mode::Enforce);
        assert!(!p.serves_tokens());
        assert!(p.block_reason().unwrap().contains("can't be read"));
        assert!(unreadable(Mode::Warn).serves_tokens());
    }

    #[test]
    fn non_main_leaves_the_main_session_on_the_host() {
        let root = no_code_mode(
            json!({"agents": {"entries": {"a": {"sandbox": {"mode": "non-main", "backend": "claw-identity"}}}}}),
        );
        let p = judge_with(root, &sandbox_defaults(), true);
        let fix = p.agent("a").unwrap().fix.clone().unwrap();
        assert!(fix.contains(r#"openclaw config set agents.entries.a.sandbox '{"backend":"claw-identity","mode":"all"}' --strict-json"#), "{fix}");
        assert!(!p.serves_tokens());
    }

    #[test]
    fn what_leaves_a_sandbox_is_an_exposure_with_its_key() {
        let base = |extra: Value| {
            let mut a = json!({"sandbox": {"mode": "all", "backend": "claw-identity"}});
            merge(&mut a, extra);
            no_code_mode(json!({"agents": {"entries": {"a": a}}}))
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
            let e = exposures(
                &judge_with(base(extra.clone()), &sandbox_defaults(), true),
                "a",
            );
            assert!(e.iter().any(|e| e.key == key), "{extra}: {e:?}");
        }
        let mut root = base(json!({}));
        merge(&mut root, json!({"tools": {"elevated": {"enabled": true}}}));
        let e = exposures(&judge_with(root, &sandbox_defaults(), true), "a");
        assert!(
            e.iter()
                .any(|e| e.key == "agents.entries.a.tools.elevated.enabled"),
            "{e:?}"
        );
        for t in ["automations", "nodes", "gateway", "browser"] {
            let mut tools = sandbox_defaults();
            tools.host.push(t);
            tools.sandbox.push(t);
            assert!(
                !exposures(&judge_with(base(json!({})), &tools, true), "a").is_empty(),
                "{t} allowed in the sandbox"
            );
        }
    }

    #[test]
    fn docker_binds_and_mounted_workspaces_must_not_show_a_secret() {
        let root = |binds: Value, access: &str, ws: &str| {
            no_code_mode(json!({"agents": {"entries": {"a": {
            "workspace": ws,
            "sandbox": {"mode": "all", "backend": "docker", "workspaceAccess": access, "docker": {"binds": binds}}}}}}))
        };
        let ok = judge_with(
            root(json!(["/srv/data:/data:ro"]), "rw", "/home/u/ws/a"),
            &sandbox_defaults(),
            false,
        );
        assert!(ok.agent("a").unwrap().is_contained(), "{:?}", ok.agent("a"));
        for bind in [
            "/home/u/.config:/c:ro",
            "/home/u/.config/micelclaw/x:/x",
            "/home/u/.openclaw/agents:/s",
            "/home:/h",
        ] {
            let e = exposures(
                &judge_with(
                    root(json!([bind]), "none", "/home/u/ws/a"),
                    &sandbox_defaults(),
                    false,
                ),
                "a",
            );
            assert!(
                e.iter()
                    .any(|e| e.key == "agents.entries.a.sandbox.docker.binds"),
                "{bind}: {e:?}"
            );
        }
        let e = exposures(
            &judge_with(root(json!([]), "ro", "/home/u"), &sandbox_defaults(), false),
            "a",
        );
        assert!(
            e.iter()
                .any(|e| e.key == "agents.entries.a.sandbox.workspaceAccess"),
            "{e:?}"
        );
        // An unmounted workspace shows the sandbox nothing; a reply's MEDIA:
        // line still reads it from the host.
        let e = exposures(
            &judge_with(
                root(json!([]), "none", "/home/u"),
                &sandbox_defaults(),
                false,
            ),
            "a",
        );
        assert!(
            !e.iter().any(|e| e.key.ends_with(".workspaceAccess")),
            "{e:?}"
        );
        assert!(
            e.iter().any(|e| e.what.starts_with("a MEDIA: line")),
            "{e:?}"
        );
    }

    #[test]
    fn without_bubblewrap_here_a_docker_sandbox_is_fixed_by_taking_the_bind_out() {
        let root = no_code_mode(json!({"agents": {"entries": {"a": {
            "sandbox": {"mode": "all", "backend": "docker", "docker": {"binds": ["/home/u/.config:/c:ro"], "dangerouslyAllowExternalBindSources": true}}}}}}));
        let fix = judge_with(root, &sandbox_defaults(), false)
            .agent("a")
            .unwrap()
            .fix
            .clone()
            .unwrap();
        assert!(
            fix.contains("remove it from agents.entries.a.sandbox.docker.binds ("),
            "{fix}"
        );
        assert!(fix.contains("openclaw config set agents.entries.a.sandbox.docker.dangerouslyAllowExternalBindSources 'false' --strict-json"), "{fix}");
        assert!(!fix.contains("claw-identity"), "{fix}");
    }

    #[test]
    fn a_sandboxed_writer_of_a_host_agents_workspace_exposes_the_host_agent() {
        let root = no_code_mode(json!({
            "tools": {"fs": {"workspaceOnly": true}},
            "agents": {"entries": {
                "host": {"workspace": "/home/u/ws/shared"},
                "boxed": {"workspace": "/home/u/ws/shared", "sandbox": {"mode": "all", "backend": "claw-identity", "workspaceAccess": "rw"}}
            }}
        }));
        struct PerAgent;
        impl ToolOffer for PerAgent {
            fn denied(&self, agent: &str, tool: &str, sandboxed: bool) -> Option<String> {
                let offered = agent == "boxed" && sandboxed && tool == "exec";
                (!offered).then(|| "x".into())
            }
        }
        let p = judge_with(root, &PerAgent, true);
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

    /// The configs the demo and the install docs use, judged through
    /// OpenClaw's mirrored tool policy: contained, the agents the roster
    /// doesn't list included.
    #[test]
    fn the_documented_host_config_contains_every_agent_and_the_unlisted_ones() {
        let root = json!({
            "tools": {
                "fs": {"workspaceOnly": true},
                "codeMode": false,
                "deny": ["exec", "process", "browser", "terminal", "canvas", "gateway", "plugins", "openclaw",
                         "nodes", "computer", "mobile_ui", "file-transfer", "ollama"]
            },
            "cron": {"triggers": {"enabled": false}},
            "agents": {"entries": {"paco--francis": {}, "paco--dali": {}}}
        });
        let obj = root.as_object().unwrap();
        let table = crate::agent_fs::AgentFsTable::default();
        let p = of_config(
            Mode::Enforce,
            obj,
            &table,
            &map_locations(),
            &ConfigTools::new(obj),
            false,
            &[],
        );
        for a in p.agents.iter().flatten() {
            assert_eq!(a.containment, Ok(Containment::Host), "{a:?}");
        }
        assert!(p.agent(UNLISTED).is_some());
        // Denying on one agent only leaves the others, and the unlisted ones, exposed.
        let mut one = root.clone();
        one["tools"]["deny"] = json!([]);
        one["agents"]["entries"]["paco--dali"] = json!({"tools": {"deny": root["tools"]["deny"]}});
        let obj = one.as_object().unwrap();
        let p = of_config(
            Mode::Enforce,
            obj,
            &table,
            &map_locations(),
            &ConfigTools::new(obj),
            false,
            &[],
        );
        assert!(p.agent("paco--dali").unwrap().is_contained());
        assert!(!p.agent("paco--francis").unwrap().is_contained());
        assert!(!p.agent(UNLISTED).unwrap().is_contained());
    }

    /// The same through OpenClaw's mirrored sandbox policy.
    #[test]
    fn the_documented_sandbox_config_contains_every_agent() {
        let root = json!({
            "tools": {"codeMode": false, "sandbox": {"tools": {"alsoAllow": ["claw-os__*"]}}},
            "agents": {"defaults": {"sandbox": {"mode": "all", "backend": "claw-identity", "workspaceAccess": "rw"}},
                       "entries": {"paco--francis": {}, "paco--dali": {}}}
        });
        let obj = root.as_object().unwrap();
        let table = crate::agent_fs::AgentFsTable::default();
        let p = of_config(
            Mode::Enforce,
            obj,
            &table,
            &map_locations(),
            &ConfigTools::new(obj),
            true,
            &[],
        );
        for a in p.agents.iter().flatten() {
            assert_eq!(a.containment, Ok(Containment::Sandbox), "{a:?}");
        }
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

/// The per-chat check, through the engine as every call takes it.
#[cfg(test)]
mod drift_tests {
    use super::*;
    use crate::engine::Engine;
    use crate::options::Options;
    use crate::rules::{MapView, Params, ToolCall, Verdict};
    use crate::sessions::{Host, SessionEntry, SessionNow};
    use crate::token_map::TokenMap;

    struct Chat(Result<Option<SessionNow>, String>);

    impl Host for Chat {
        fn session(&self, _: &str, _: &str) -> Result<Option<SessionEntry>, String> {
            Ok(None)
        }
        fn session_now(&self, _: &str, _: &str) -> Result<Option<SessionNow>, String> {
            self.0.clone()
        }
    }

    fn engine(mode: Mode, how: Containment) -> Engine {
        let opts = Options::from_json(r#"{"tokenMapPath": "/nonexistent/m.json"}"#).unwrap();
        let e = Engine::new(opts);
        e.set_posture(Posture {
            mode,
            agents: Some(vec![AgentPosture {
                agent_id: "a".into(),
                containment: Ok(how),
                fix: None,
            }]),
        });
        e
    }

    /// The rule id of the block a call gets, if it is blocked.
    fn blocked_by(e: &Engine, tool: &str, chat: Chat) -> Option<&'static str> {
        let map = TokenMap::default();
        let view = MapView {
            map: &map,
            generation: 0,
            loaded: true,
            stale: false,
            redactor: None,
        };
        let params = Params::new();
        let call = ToolCall {
            tool,
            agent_id: Some("a"),
            session_key: Some("agent:a:main"),
            params: &params,
            derived_paths: &[],
            call_id: None,
        };
        let d = e.decide_call(&call, &view, &chat);
        matches!(d.verdict, Verdict::Block(_)).then(|| d.rule.unwrap_or(""))
    }

    fn now(sandboxed: bool) -> SessionNow {
        SessionNow {
            sandboxed,
            ..SessionNow::default()
        }
    }

    #[test]
    fn a_sandboxed_agents_host_tools_are_refused_in_a_chat_that_runs_outside_its_sandbox() {
        let e = engine(Mode::Enforce, Containment::Sandbox);
        for tool in ["exec", "process", "read", "write", "apply_patch", "portal"] {
            assert_eq!(
                blocked_by(&e, tool, Chat(Ok(Some(now(true))))),
                None,
                "{tool} in the sandbox"
            );
            assert_eq!(
                blocked_by(&e, tool, Chat(Ok(Some(now(false))))),
                Some(RULE_ID),
                "{tool} outside it"
            );
        }
        // Tools that reach no host file run anywhere.
        assert_eq!(
            blocked_by(&e, "session_status", Chat(Ok(Some(now(false))))),
            None
        );
    }

    #[test]
    fn a_chats_exec_overrides_take_exec_out_of_the_sandbox_and_are_refused() {
        let e = engine(Mode::Enforce, Containment::Sandbox);
        let cases = [
            SessionNow {
                exec_host: Some("gateway".into()),
                ..now(true)
            },
            SessionNow {
                exec_host: Some(" Node ".into()),
                ..now(true)
            },
            SessionNow {
                exec_node: Some("laptop".into()),
                ..now(true)
            },
            SessionNow {
                elevated: Some("on".into()),
                ..now(true)
            },
        ];
        for c in cases {
            assert_eq!(
                blocked_by(&e, "exec", Chat(Ok(Some(c.clone())))),
                Some(RULE_ID),
                "{c:?}"
            );
            assert_eq!(
                blocked_by(&e, "read", Chat(Ok(Some(c.clone())))),
                None,
                "{c:?}: read stays in the sandbox"
            );
        }
        let fine = SessionNow {
            exec_host: Some("sandbox".into()),
            elevated: Some("off".into()),
            ..now(true)
        };
        assert_eq!(blocked_by(&e, "exec", Chat(Ok(Some(fine)))), None);
    }

    #[test]
    fn a_chat_whose_permission_mode_lifts_workspace_only_refuses_a_host_agents_file_tools() {
        let e = engine(Mode::Enforce, Containment::Host);
        let full = SessionNow {
            permission_mode: Some("full".into()),
            ..now(false)
        };
        assert_eq!(
            blocked_by(&e, "read", Chat(Ok(Some(full.clone())))),
            Some(RULE_ID)
        );
        assert_eq!(blocked_by(&e, "write", Chat(Ok(Some(full)))), Some(RULE_ID));
        let ask = SessionNow {
            permission_mode: Some("ask".into()),
            ..now(false)
        };
        assert_eq!(blocked_by(&e, "read", Chat(Ok(Some(ask)))), None);
    }

    #[test]
    fn a_chat_openclaw_cant_describe_is_refused_and_one_without_a_store_is_not_checked() {
        let e = engine(Mode::Enforce, Containment::Sandbox);
        assert_eq!(
            blocked_by(&e, "exec", Chat(Err("store closed".into()))),
            Some(RULE_ID)
        );
        assert_eq!(blocked_by(&e, "exec", Chat(Ok(None))), None);
    }

    #[test]
    fn a_call_of_a_tool_the_posture_counts_on_being_denied_is_refused_whatever_the_chat() {
        let host = engine(Mode::Enforce, Containment::Host);
        for tool in ["exec", "process", "gateway", "browser", "nodes"] {
            assert_eq!(
                blocked_by(&host, tool, Chat(Ok(None))),
                Some(RULE_ID),
                "{tool}"
            );
        }
        assert_eq!(blocked_by(&host, "read", Chat(Ok(None))), None);
        let sandbox = engine(Mode::Enforce, Containment::Sandbox);
        assert_eq!(
            blocked_by(&sandbox, "exec", Chat(Ok(Some(now(true))))),
            None,
            "exec runs in the sandbox"
        );
        assert_eq!(
            blocked_by(&sandbox, "gateway", Chat(Ok(Some(now(true))))),
            Some(RULE_ID)
        );
    }

    #[test]
    fn under_warn_no_chat_is_checked() {
        let e = engine(Mode::Warn, Containment::Sandbox);
        assert_eq!(blocked_by(&e, "exec", Chat(Ok(Some(now(false))))), None);
    }
}
