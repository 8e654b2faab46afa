//! OpenClaw's tool catalog: every tool an agent of OpenClaw 2026.9.6 can be
//! offered, the policy groups and built-in profiles that name it, the aliases
//! its policy accepts, and what each tool can reach on the gateway's host.
//!
//! The ids, sections, profiles and `group:openclaw` membership are
//! `CORE_TOOL_DEFINITIONS` (`tool-catalog-*.mjs`); the groups are
//! `buildCoreToolGroupMap` there; the profiles `CORE_TOOL_PROFILES` there; the
//! aliases `TOOL_NAME_ALIASES` (`tool-policy-shared-*.mjs`) and the shipped
//! renames `expandShippedCoreToolPolicyNames` (`tool-policy-*.mjs`). Tools a
//! bundled plugin registers are its manifest's `contracts.tools`
//! (`dist/extensions/<plugin>/openclaw.plugin.json`), with the profiles its
//! `toolMetadata` declares (`resolveManifestToolProfileNames`,
//! `conversation-capability-profile-*.mjs`). Tools outside the catalog that
//! OpenClaw itself builds are in `createOpenClawTools` (`openclaw-tools-*.mjs`)
//! and the Tool Search and Code Mode surfaces (`local-model-lean-*.mjs`,
//! `code-mode-control-tools-*.mjs`).
//!
//! Each tool's [`Reach`] entries say what it can do on the host, with the
//! place in OpenClaw's source that shows it. They are facts for a posture to
//! weigh, not decisions.

/// A built-in tool profile (`tools.profile`, `ToolProfileSchema` in
/// `zod-schema.agent-runtime-*.mjs`: exactly these four).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    Minimal,
    Coding,
    Messaging,
    /// `full`, whose allow list is `["*"]`: it filters nothing, like an unset
    /// profile.
    Full,
}

impl Profile {
    /// `resolveCoreToolProfilePolicy(profile)`: only these four ids name a
    /// profile; any other value (another string, a non-string) resolves to no
    /// profile policy at all, which filters nothing.
    pub fn parse(raw: &str) -> Option<Profile> {
        match raw {
            "minimal" => Some(Profile::Minimal),
            "coding" => Some(Profile::Coding),
            "messaging" => Some(Profile::Messaging),
            "full" => Some(Profile::Full),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Minimal => "minimal",
            Profile::Coding => "coding",
            Profile::Messaging => "messaging",
            Profile::Full => "full",
        }
    }

    /// The profile's allow list (`CORE_TOOL_PROFILES`): the catalog tools
    /// that list it, plus `bundle-mcp` (every MCP tool) for `coding` and
    /// `messaging`; `full` is `["*"]`.
    pub fn allow(self) -> Vec<&'static str> {
        if self == Profile::Full {
            return vec!["*"];
        }
        let mut allow: Vec<&'static str> = CATALOG
            .iter()
            .filter(|t| t.core && t.profiles.contains(&self))
            .map(|t| t.id)
            .collect();
        if matches!(self, Profile::Coding | Profile::Messaging) {
            allow.push(BUNDLE_MCP);
        }
        allow
    }

    /// Plugin tools whose manifest `toolMetadata.<tool>.profiles` lists this
    /// profile: `resolveManifestToolProfileNames` adds them to the profile's
    /// allow list.
    pub fn manifest_tools(self) -> Vec<&'static str> {
        CATALOG
            .iter()
            .filter(|t| !t.core && t.profiles.contains(&self))
            .map(|t| t.id)
            .collect()
    }
}

/// The plugin id OpenClaw gives every MCP server tool (`<server>__<tool>`,
/// `agent-bundle-mcp-materialize-*.mjs`); the `coding` and `messaging`
/// profiles allow it.
pub const BUNDLE_MCP: &str = "bundle-mcp";

/// The policy entry that names every plugin tool (`expandPluginGroups`,
/// `tool-policy-*.mjs`): MCP tools and bundled plugins' tools included.
pub const GROUP_PLUGINS: &str = "group:plugins";

/// What a tool can do on the gateway's host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReachKind {
    /// Runs a program or code of the agent's choosing on the gateway's host
    /// or in the gateway process, or drives something that does (a host
    /// terminal, the host desktop, the system agent, plugin installs).
    HostProcess,
    /// Starts a fixed host program (git, 1Password's `op`) with arguments the
    /// agent influences; no shell, no program of the agent's choosing.
    FixedHostProcess,
    /// Reads host files that `tools.fs.workspaceOnly: true` does not confine.
    ReadsOutsideWorkspaceOnly,
    /// Acts on paired nodes (devices running OpenClaw's node host). A node
    /// may run on the gateway's own machine (the macOS app, `openclaw node`).
    PairedNode,
    /// Connects to services on the host's loopback or local network.
    HostNetwork,
    /// Host files only, and only inside the workspace (plus read-only extra
    /// roots) when `tools.fs.workspaceOnly` is on.
    WorkspaceConfined,
    /// Nothing on the host of its own: gateway state, other sessions, model
    /// or remote services.
    NoHostAccess,
}

/// One thing a tool can reach, and where OpenClaw's source shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    pub kind: ReachKind,
    /// The function and `file-*.mjs` (or the doc) that shows it, and the
    /// config that changes it.
    pub source: &'static str,
}

/// One tool an agent can be offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// The id policy matches (lowercase).
    pub id: &'static str,
    /// In `CORE_TOOL_DEFINITIONS`: it has a section (and so a `group:<section>`)
    /// and profiles. `false` for plugin tools and the tools OpenClaw builds
    /// outside the catalog; their `profiles` are their manifest's.
    pub core: bool,
    /// `group:<section>` membership (core tools only).
    pub section: Option<&'static str>,
    /// The built-in profiles that include it.
    pub profiles: &'static [Profile],
    /// `includeInOpenClawGroup`: a member of `group:openclaw`.
    pub openclaw_group: bool,
    /// The plugin that registers it, if any: then policy entries naming that
    /// plugin id, or `group:plugins`, match it too.
    pub plugin: Option<&'static str>,
    /// What it can do on the host.
    pub reach: &'static [Reach],
}

impl Tool {
    /// The core groups (`group:<section>`, `group:openclaw`) it belongs to.
    pub fn groups(&self) -> Vec<String> {
        let mut groups = Vec::new();
        if let Some(section) = self.section {
            groups.push(format!("group:{section}"));
        }
        if self.openclaw_group {
            groups.push("group:openclaw".to_owned());
        }
        groups
    }

    pub fn reaches(&self, kind: ReachKind) -> bool {
        self.reach.iter().any(|r| r.kind == kind)
    }
}

/// `TOOL_NAME_ALIASES` (`tool-policy-shared-*.mjs`): a policy entry or a
/// call naming the alias means the tool.
pub const ALIASES: &[(&str, &str)] = &[
    ("bash", "exec"),
    ("apply-patch", "apply_patch"),
    ("cron", "automations"),
];

/// `SHIPPED_CORE_POLICY_RENAMES` and `SHIPPED_PLUGIN_POLICY_FAMILY_CORE_TOOLS`
/// (`tool-policy-*.mjs`): a policy entry naming the key also names these.
pub const POLICY_FAMILIES: &[(&str, &[&str])] = &[
    ("update_plan", &["progress_card"]),
    ("canvas", &["canvas", "show_widget"]),
];

/// `normalizeToolPolicyName`: trimmed (JS `trim`), lowercased, aliased.
pub fn normalize_tool_name(raw: &str) -> String {
    let lower = crate::paths::js_trim(raw).to_lowercase();
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == lower)
        .map(|(_, tool)| (*tool).to_owned())
        .unwrap_or(lower)
}

/// The catalog entry of a tool id or alias.
pub fn tool(name: &str) -> Option<&'static Tool> {
    let id = normalize_tool_name(name);
    CATALOG.iter().find(|t| t.id == id)
}

/// The members of a core group (`CORE_TOOL_GROUPS`), `None` for anything
/// else. `group:plugins` is not a core group: it expands to the plugin tools
/// present ([`GROUP_PLUGINS`]).
pub fn group_members(group: &str) -> Option<Vec<&'static str>> {
    let members: Vec<&'static str> = if group == "group:openclaw" {
        CATALOG
            .iter()
            .filter(|t| t.core && t.openclaw_group)
            .map(|t| t.id)
            .collect()
    } else {
        let section = group.strip_prefix("group:")?;
        CATALOG
            .iter()
            .filter(|t| t.core && t.section == Some(section))
            .map(|t| t.id)
            .collect()
    };
    (!members.is_empty()).then_some(members)
}

const C: Profile = Profile::Coding;
const M: Profile = Profile::Messaging;
const MIN: Profile = Profile::Minimal;

use ReachKind::*;

macro_rules! reach {
    ($($kind:ident: $source:expr),+ $(,)?) => {
        &[$(Reach { kind: $kind, source: $source }),+]
    };
}

const fn core(
    id: &'static str,
    section: &'static str,
    profiles: &'static [Profile],
    openclaw_group: bool,
    plugin: Option<&'static str>,
    reach: &'static [Reach],
) -> Tool {
    Tool {
        id,
        core: true,
        section: Some(section),
        profiles,
        openclaw_group,
        plugin,
        reach,
    }
}

const fn extra(
    id: &'static str,
    profiles: &'static [Profile],
    plugin: Option<&'static str>,
    reach: &'static [Reach],
) -> Tool {
    Tool {
        id,
        core: false,
        section: None,
        profiles,
        openclaw_group: false,
        plugin,
        reach,
    }
}

const SESSION_STATE: &[Reach] = reach!(NoHostAccess: "gateway session state through gateway methods (`createOpenClawTools`, `openclaw-tools-*.mjs`)");
const WORKBOARD: &[Reach] = reach!(NoHostAccess: "board state in the workboard plugin's store, guarded by `guardWorkboardToolsForWorkspaceAccess` (`runtime-api-*.mjs`); `workboard_dispatch` starts worker runs, which are agent sessions under their own policy");
const WIKI: &[Reach] = reach!(ReadsOutsideWorkspaceOnly: "the memory-wiki vault, a host directory set in `plugins.entries.memory-wiki.config` (`extensions/memory-wiki/index.js`), read and written without `ctx.fsPolicy`");

/// Every tool OpenClaw 2026.9.6 can offer an agent (the catalog, the tools
/// `createOpenClawTools` adds outside it, Tool Search and Code Mode controls,
/// and the bundled plugins' `contracts.tools`). Third-party plugin tools, MCP
/// tools (`<server>__<tool>`) and channel plugins' agent tools are not listed:
/// policy matches them by name, their plugin id and `group:plugins`.
pub static CATALOG: &[Tool] = &[
    // group:fs
    core(
        "ls",
        "fs",
        &[C],
        false,
        None,
        reach!(WorkspaceConfined: "fs-safe `root.list` behind `wrapToolWorkspaceRootGuardWithOptions` when `workspaceOnly` (`createCoreCodingTools`, `core-coding-tools-*.mjs`)"),
    ),
    core(
        "read",
        "fs",
        &[C],
        false,
        None,
        reach!(WorkspaceConfined: "`assertSandboxPath` guard before `readRegularFile` when `workspaceOnly`; extra read roots: skill directories and the sub-agent attachment root (`createCoreCodingTools`, `core-coding-tools-*.mjs`; `fsPolicy.readOnlyRoots`, `agent-tools-*.mjs`)"),
    ),
    core(
        "write",
        "fs",
        &[C],
        false,
        None,
        reach!(WorkspaceConfined: "`createHostWriteOperations` through an fs-safe `root(workspace)` when `workspaceOnly` (`core-coding-tools-*.mjs`)"),
    ),
    core(
        "edit",
        "fs",
        &[C],
        false,
        None,
        reach!(WorkspaceConfined: "`createHostEditOperations` through an fs-safe `root(workspace)` when `workspaceOnly` (`core-coding-tools-*.mjs`)"),
    ),
    core(
        "apply_patch",
        "fs",
        &[C],
        false,
        None,
        reach!(WorkspaceConfined: "fs-safe root; `tools.exec.applyPatch.workspaceOnly` (default true) confines it even without `tools.fs.workspaceOnly` (`resolveConfiguredApplyPatchPolicy`, `agent-tools-*.mjs`)"),
    ),
    // group:runtime
    core(
        "exec",
        "runtime",
        &[C],
        false,
        None,
        reach!(HostProcess: "a shell on the host unless the exec host resolves to an active sandbox (`resolveExecTarget`, `bash-tools.exec-runtime-*.mjs`); `node` runs it on a paired node; `tools.fs.workspaceOnly` does not apply"),
    ),
    core(
        "process",
        "runtime",
        &[C],
        false,
        None,
        reach!(HostProcess: "stdin, send-keys and kill for exec's background processes (`createCoreCodingTools`, `core-coding-tools-*.mjs`)"),
    ),
    core(
        "code_execution",
        "runtime",
        &[C],
        true,
        Some("xai"),
        reach!(NoHostAccess: "runs on xAI's servers (`extensions/xai`, `docs/tools/code-execution.md`)"),
    ),
    core(
        "secrets",
        "runtime",
        &[C, M],
        true,
        None,
        reach!(NoHostAccess: "asks the user for a write-only credential and stores it through `question.request`/`secrets.store.*` gateway methods; the value never reaches the model (`createSecretsTool`, `openclaw-tools-*.mjs`)"),
    ),
    // group:web
    core(
        "web_search",
        "web",
        &[C],
        true,
        None,
        reach!(NoHostAccess: "a search provider over the network (`createWebSearchTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "web_fetch",
        "web",
        &[C],
        true,
        None,
        reach!(NoHostAccess: "HTTP(S) fetch; private and loopback addresses refused unless `tools.web.fetch.ssrfPolicy` allows them (`createWebFetchTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "x_search",
        "web",
        &[C],
        true,
        Some("xai"),
        reach!(NoHostAccess: "xAI's X search (`extensions/xai`)"),
    ),
    // group:memory
    core(
        "memory_search",
        "memory",
        &[C],
        true,
        Some("memory-core"),
        reach!(ReadsOutsideWorkspaceOnly: "searches the agent's memory index: workspace memory files plus every `memorySearch.extraPaths` entry, anywhere on the host; takes no `ctx.fsPolicy` (`resolveMemoryToolOptions`, `extensions/memory-core/index.js`)"),
    ),
    core(
        "memory_get",
        "memory",
        &[C],
        true,
        Some("memory-core"),
        reach!(ReadsOutsideWorkspaceOnly: "reads `.md` memory files in the workspace and under `memorySearch.extraPaths` (agent's `memory.search.extraPaths` or `agents.defaults.memorySearch.extraPaths`), anywhere on the host; no `ctx.fsPolicy` (`readMemoryFile`, `read-file-*.mjs`)"),
    ),
    // group:sessions
    core(
        "sessions",
        "sessions",
        &[C, M],
        true,
        None,
        reach!(NoHostAccess: "patches session label/icon/group/pin/archive and the session's `model`/`thinkingLevel` overrides through `sessions.patch` (`createSessionsTool`, `openclaw-tools-*.mjs`): a model override can select a CLI backend or harness"),
    ),
    core(
        "sessions_list",
        "sessions",
        &[C, M],
        true,
        None,
        SESSION_STATE,
    ),
    core(
        "sessions_history",
        "sessions",
        &[C, M],
        true,
        None,
        SESSION_STATE,
    ),
    core(
        "sessions_search",
        "sessions",
        &[C, M],
        true,
        None,
        SESSION_STATE,
    ),
    core(
        "conversations_list",
        "sessions",
        &[C, M],
        true,
        None,
        SESSION_STATE,
    ),
    core(
        "conversations_send",
        "sessions",
        &[C, M],
        true,
        None,
        SESSION_STATE,
    ),
    core(
        "conversations_turn",
        "sessions",
        &[C, M],
        true,
        None,
        SESSION_STATE,
    ),
    core(
        "sessions_send",
        "sessions",
        &[C, M],
        true,
        None,
        reach!(NoHostAccess: "a message into another session, which runs under its own agent's policy (`createSessionsSendTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "sessions_spawn",
        "sessions",
        &[C, M],
        true,
        None,
        reach!(HostProcess: "`runtime: \"acp\"` starts an ACP harness on the host; refused only from sandboxed requesters (`resolveSpawnSandboxError`, `subagent-spawn-ownership-*.mjs`); `acp.enabled: false` turns ACP off. Native sub-agents run under the target agent's own policy and sandbox"),
    ),
    core(
        "github_identity_status",
        "sessions",
        &[C],
        true,
        None,
        SESSION_STATE,
    ),
    core(
        "github_publish",
        "sessions",
        &[C],
        true,
        None,
        reach!(FixedHostProcess: "the gateway runs git on the session's workspace (`sessions.github.publish`); hooks, fsmonitor, attributes and code-running config keys are neutralized (`github-repository-publication-snapshot-*.mjs`)"),
    ),
    core("agents_wait", "sessions", &[C], true, None, SESSION_STATE),
    core(
        "sessions_yield",
        "sessions",
        &[C, M],
        true,
        None,
        SESSION_STATE,
    ),
    core("subagents", "sessions", &[C, M], true, None, SESSION_STATE),
    core(
        "session_status",
        "sessions",
        &[MIN, C, M],
        true,
        None,
        reach!(NoHostAccess: "session status; can set the session's model override (`resolveModelOverride`, `openclaw-tools-*.mjs`)"),
    ),
    core("suggest_task", "sessions", &[C], true, None, SESSION_STATE),
    core("dismiss_task", "sessions", &[C], true, None, SESSION_STATE),
    // group:ui
    core(
        "browser",
        "ui",
        &[],
        true,
        Some("browser"),
        reach!(HostProcess: "launches and drives Chromium on the host unless the sandbox browser is used, or attaches to the user's own browser profile; uploads only from the browser upload dir and inbound media (`resolveExistingUploadPaths`, `paths-*.mjs`); `file:` navigation refused (`assertBrowserNavigationAllowed`, `chrome-*.mjs`)"),
    ),
    core(
        "screen",
        "ui",
        &[C],
        true,
        None,
        reach!(NoHostAccess: "presentation commands to the requester's Control UI (`ui.command`, `createScreenTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "theme",
        "ui",
        &[C, M],
        true,
        None,
        reach!(NoHostAccess: "the requester's appearance settings (`createThemeTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "dashboard",
        "ui",
        &[C],
        true,
        None,
        reach!(NoHostAccess: "board widgets through `board.*` gateway methods (`createDashboardTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "terminal",
        "ui",
        &[C],
        true,
        None,
        reach!(HostProcess: "reads and types into host terminals the operator opened from the chat's Control UI; input needs a one-time approval unless the exec mode is `full`, refused when it is `deny`; not offered when sandboxed (`createTerminalTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "portal",
        "ui",
        &[C],
        true,
        None,
        reach!(HostNetwork: "proxies HTTP and WebSockets from a gateway route to a local port the agent names (`createPortalTool`, `sessions-spawn-tool-*.mjs`; `PORTAL_TOOL_DESCRIPTION`, `portal-tool-contract-*.mjs`); not offered when sandboxed"),
    ),
    core(
        "canvas",
        "ui",
        &[],
        false,
        Some("canvas"),
        reach!(PairedNode: "present, hide or navigate the widget panel of a paired macOS node (`createLazyCanvasTool`, `extensions/canvas/index.js`)"),
    ),
    core(
        "show_widget",
        "ui",
        &[],
        true,
        None,
        reach!(NoHostAccess: "widgets through `board.widget.put` (`createShowWidgetTool`, `openclaw-tools-*.mjs`)"),
    ),
    // group:messaging
    core(
        "message",
        "messaging",
        &[M],
        true,
        None,
        reach!(ReadsOutsideWorkspaceOnly: "attachments from the media local roots, not `ctx.fsPolicy`: OpenClaw's tmp dir (`/tmp/openclaw`, also the default log dir), `<config>/media`, `<state>/media`, `<state>/delivery-queue-media`, `<state>/canvas`, `<state>/workspace` (unsandboxed) and the agent's workspace; with `workspaceOnly` off and `read` allowed, the parent directory of any requested path too (`getAgentScopedMediaLocalRootsForSources`, `local-roots-*.mjs`; `resolveAgentScopedOutboundMediaAccess`, `read-capability-*.mjs`)"),
    ),
    // group:automation
    core(
        "heartbeat_respond",
        "automation",
        &[],
        true,
        None,
        reach!(NoHostAccess: "records a heartbeat outcome (`createHeartbeatResponseTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "automations",
        "automation",
        &[C],
        true,
        None,
        reach!(HostProcess: "an agent may create `schedule.kind: \"stream\"` jobs: the gateway spawns their `command` argv with its own environment, never sandboxed (`spawnSource`, `server-cron-*.mjs`; neither `assertNoCronShellExecution`, `cron-tool-*.mjs`, nor `cron.add`, `cron-*.mjs`, refuses them); `payload.kind: \"script\"` and trigger scripts run in the Code Mode executor, `node:vm` in the gateway by default (`createCronScriptRuntime`, `server-cron-*.mjs`); `cron.triggers.enabled: false` refuses all three (`assertStreamScheduleSupport`, `jobs-*.mjs`); `command` payloads and `on-exit` schedules are refused to the agent tool"),
    ),
    core(
        "gateway",
        "automation",
        &[MIN, C, M],
        true,
        None,
        reach!(HostProcess: "`update.run` reinstalls and restarts OpenClaw, for an owner sender or an operator schedule (`createGatewayTool`, `openclaw-tools-*.mjs`)", ReadsOutsideWorkspaceOnly: "`config.get` returns the gateway's config (`createGatewayTool`), unless the profile withholds config reads (`profileAllowsGatewayConfigReads`, `agent-tools.policy-*.mjs`)"),
    ),
    core(
        "plugins",
        "automation",
        &[C],
        true,
        None,
        reach!(HostProcess: "`plugins.install` installs plugin code that runs in the gateway (`createPluginsTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "openclaw",
        "automation",
        &[],
        true,
        None,
        reach!(HostProcess: "delegates setup and repair (config, plugins, channels, restarts) to the system agent; without approval when not `workspaceOnly`, exec host not `sandbox`, exec `security: \"full\"` and `ask: \"off\"`; not offered when sandboxed or to the `openclaw` agent itself (`createOpenClawDelegateToolsForRun`, `openclaw-tools-*.mjs`)"),
    ),
    // group:nodes
    core(
        "nodes",
        "nodes",
        &[],
        true,
        None,
        reach!(PairedNode: "node commands (camera, screen, location, notifications, raw `invoke` except `system.run`), and approving node pairing requests (`createNodesTool`, `BLOCKED_INVOKE_COMMANDS`, `openclaw-tools-*.mjs`); path params guarded by `applyNodesToolWorkspaceGuard`"),
    ),
    core(
        "computer",
        "nodes",
        &[],
        true,
        None,
        reach!(HostProcess: "keyboard, mouse and screen of the gateway's desktop when configured, else a paired computer node (`createComputerTool`, `computer-tool-*.mjs`)"),
    ),
    core(
        "mobile_ui",
        "nodes",
        &[],
        true,
        None,
        reach!(PairedNode: "observes and controls a paired Android app (`createMobileUiTool`, `openclaw-tools-*.mjs`)"),
    ),
    // group:agents
    core("agents_list", "agents", &[], true, None, SESSION_STATE),
    core("get_goal", "agents", &[C], true, None, SESSION_STATE),
    core("create_goal", "agents", &[C], true, None, SESSION_STATE),
    core("update_goal", "agents", &[C], true, None, SESSION_STATE),
    core("progress_card", "agents", &[C], true, None, SESSION_STATE),
    core("ask_user", "agents", &[C, M], true, None, SESSION_STATE),
    core(
        "skill_workshop",
        "agents",
        &[C],
        true,
        None,
        reach!(NoHostAccess: "drafts skills for review; not offered when sandboxed (`createConfiguredSkillWorkshopTool`, `openclaw-tools-*.mjs`)"),
    ),
    // group:media
    core(
        "view_image",
        "media",
        &[C],
        true,
        None,
        reach!(WorkspaceConfined: "local images limited to the workspace and `fsPolicy.readOnlyRoots` when `workspaceOnly` (`createImageTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "image_generate",
        "media",
        &[C],
        true,
        None,
        reach!(WorkspaceConfined: "reference images limited like `view_image` (`createImageGenerateTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "music_generate",
        "media",
        &[C],
        true,
        None,
        reach!(WorkspaceConfined: "references limited like `view_image` (`createMusicGenerateTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "video_generate",
        "media",
        &[C],
        true,
        None,
        reach!(WorkspaceConfined: "references limited like `view_image` (`createVideoGenerateTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "tts",
        "media",
        &[],
        true,
        None,
        reach!(NoHostAccess: "text to the configured speech provider (`createTtsTool`, `openclaw-tools-*.mjs`)"),
    ),
    core(
        "pdf",
        "media",
        &[],
        true,
        None,
        reach!(WorkspaceConfined: "local PDFs limited like `view_image` (`createPdfTool`, `openclaw-tools-*.mjs`)"),
    ),
    // Built by OpenClaw outside the catalog: no group, no profile.
    extra(
        "transcripts",
        &[],
        None,
        reach!(NoHostAccess: "meeting transcript captures kept by the gateway; off with `transcripts.enabled: false` (`resolveTranscriptsTool`, `openclaw-tools-*.mjs`)"),
    ),
    extra(
        "structured_output",
        &[],
        None,
        reach!(NoHostAccess: "a swarm collector's result (`createOpenClawSwarmToolGroups`, `openclaw-tools-*.mjs`)"),
    ),
    extra(
        "tool_search",
        &[],
        None,
        reach!(NoHostAccess: "searches the run's catalog of already allowed tools (`createToolSearchTools`, `local-model-lean-*.mjs`)"),
    ),
    extra(
        "tool_describe",
        &[],
        None,
        reach!(NoHostAccess: "describes a catalog tool (`createToolSearchTools`, `local-model-lean-*.mjs`)"),
    ),
    extra(
        "tool_call",
        &[],
        None,
        reach!(NoHostAccess: "calls a catalog tool, which passed the same policy (`createToolSearchTools`, `local-model-lean-*.mjs`)"),
    ),
    extra(
        "tool_search_code",
        &[],
        None,
        reach!(HostProcess: "runs the model's JavaScript in a Node subprocess on the host (`node --permission`, empty env, `node:vm`; `runCodeModeChild`, `local-model-lean-*.mjs`); offered when `tools.toolSearch` resolves to mode `code` (`true`, or an object without `mode`), not by default (`resolveToolSearchConfig`)"),
    ),
    extra(
        "wait",
        &[],
        None,
        reach!(NoHostAccess: "resumes a suspended Code Mode cell (`code-mode-control-tools-*.mjs`); Code Mode's own `exec`, which shares the shell's id, is outside the policy: see `super::code_mode`"),
    ),
    // Bundled plugins' tools (their manifest's `contracts.tools`).
    extra(
        "crabbox",
        &[C],
        Some("crabbox"),
        reach!(NoHostAccess: "commands on a remote Crabbox machine from `cloudWorkers.profiles`; not offered when sandboxed (`createCrabboxTool`, `extensions/crabbox/index.js`)"),
    ),
    extra(
        "file_fetch",
        &[],
        Some("file-transfer"),
        reach!(PairedNode: "reads any file on a paired node (`createFileFetchTool`, `file-fetch-tool-*.mjs`)", ReadsOutsideWorkspaceOnly: "a node on the gateway's machine serves host files outside `workspaceOnly`"),
    ),
    extra(
        "dir_list",
        &[],
        Some("file-transfer"),
        reach!(PairedNode: "lists directories on a paired node (`createDirListTool`, `dir-list-tool-*.mjs`)", ReadsOutsideWorkspaceOnly: "a node on the gateway's machine lists host directories"),
    ),
    extra(
        "dir_fetch",
        &[],
        Some("file-transfer"),
        reach!(PairedNode: "fetches a directory from a paired node (`descriptors-*.mjs`)", ReadsOutsideWorkspaceOnly: "a node on the gateway's machine serves host files"),
    ),
    extra(
        "file_write",
        &[],
        Some("file-transfer"),
        reach!(PairedNode: "writes files on a paired node (`createFileWriteTool`, `file-write-tool-*.mjs`)"),
    ),
    extra(
        "llm-task",
        &[],
        Some("llm-task"),
        reach!(NoHostAccess: "a model call (`extensions/llm-task`); optional: offered only when allowlisted"),
    ),
    extra(
        "intent",
        &[C, M],
        Some("memory-core"),
        reach!(NoHostAccess: "standing intents in gateway state (`standing-intents-tool-*.mjs`)"),
    ),
    extra("wiki_apply", &[], Some("memory-wiki"), WIKI),
    extra("wiki_get", &[], Some("memory-wiki"), WIKI),
    extra("wiki_lint", &[], Some("memory-wiki"), WIKI),
    extra("wiki_search", &[], Some("memory-wiki"), WIKI),
    extra("wiki_status", &[], Some("memory-wiki"), WIKI),
    extra(
        "node_inference",
        &[],
        Some("ollama"),
        reach!(PairedNode: "model inference on a paired node's Ollama (`extensions/ollama`)"),
    ),
    extra(
        "onepassword",
        &[],
        Some("onepassword"),
        reach!(FixedHostProcess: "runs the trusted 1Password `op` CLI to broker credentials (`resolveTrustedOnePasswordCli`, `extensions/onepassword/index.js`)"),
    ),
    extra(
        "talk_voice",
        &[],
        Some("talk-voice"),
        reach!(NoHostAccess: "voice settings (`extensions/talk-voice`)"),
    ),
    extra("workboard_list", &[], Some("workboard"), WORKBOARD),
    extra("workboard_create", &[], Some("workboard"), WORKBOARD),
    extra("workboard_link", &[], Some("workboard"), WORKBOARD),
    extra("workboard_read", &[], Some("workboard"), WORKBOARD),
    extra("workboard_claim", &[], Some("workboard"), WORKBOARD),
    extra("workboard_heartbeat", &[], Some("workboard"), WORKBOARD),
    extra("workboard_complete", &[], Some("workboard"), WORKBOARD),
    extra(
        "workboard_attachment_add",
        &[],
        Some("workboard"),
        WORKBOARD,
    ),
    extra(
        "workboard_attachment_read",
        &[],
        Some("workboard"),
        WORKBOARD,
    ),
    extra(
        "workboard_attachment_delete",
        &[],
        Some("workboard"),
        WORKBOARD,
    ),
    extra("workboard_block", &[], Some("workboard"), WORKBOARD),
    extra("workboard_boards", &[], Some("workboard"), WORKBOARD),
    extra("workboard_board_create", &[], Some("workboard"), WORKBOARD),
    extra("workboard_board_archive", &[], Some("workboard"), WORKBOARD),
    extra("workboard_board_delete", &[], Some("workboard"), WORKBOARD),
    extra("workboard_stats", &[], Some("workboard"), WORKBOARD),
    extra("workboard_runs", &[], Some("workboard"), WORKBOARD),
    extra("workboard_specify", &[], Some("workboard"), WORKBOARD),
    extra("workboard_decompose", &[], Some("workboard"), WORKBOARD),
    extra(
        "workboard_notify_subscribe",
        &[],
        Some("workboard"),
        WORKBOARD,
    ),
    extra("workboard_notify_list", &[], Some("workboard"), WORKBOARD),
    extra("workboard_notify_events", &[], Some("workboard"), WORKBOARD),
    extra(
        "workboard_notify_advance",
        &[],
        Some("workboard"),
        WORKBOARD,
    ),
    extra(
        "workboard_notify_unsubscribe",
        &[],
        Some("workboard"),
        WORKBOARD,
    ),
    extra("workboard_promote", &[], Some("workboard"), WORKBOARD),
    extra("workboard_reassign", &[], Some("workboard"), WORKBOARD),
    extra("workboard_reclaim", &[], Some("workboard"), WORKBOARD),
    extra("workboard_dispatch", &[], Some("workboard"), WORKBOARD),
    extra("workboard_release", &[], Some("workboard"), WORKBOARD),
    extra("workboard_comment", &[], Some("workboard"), WORKBOARD),
    extra("workboard_proof", &[], Some("workboard"), WORKBOARD),
    extra("workboard_worker_log", &[], Some("workboard"), WORKBOARD),
    extra(
        "workboard_protocol_violation",
        &[],
        Some("workboard"),
        WORKBOARD,
    ),
    extra("workboard_unblock", &[], Some("workboard"), WORKBOARD),
    extra("workboard_move", &[], Some("workboard"), WORKBOARD),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_lowercase_and_never_an_alias() {
        let mut seen = HashSet::new();
        for t in CATALOG {
            assert!(seen.insert(t.id), "duplicate {}", t.id);
            assert_eq!(t.id, t.id.to_lowercase());
            assert!(ALIASES.iter().all(|(a, _)| *a != t.id), "{}", t.id);
            assert!(!t.reach.is_empty(), "{} has no reach", t.id);
            assert_eq!(t.core, t.section.is_some(), "{}", t.id);
        }
    }

    #[test]
    fn aliases_resolve_to_their_tool() {
        assert_eq!(tool("bash").unwrap().id, "exec");
        assert_eq!(tool(" Apply-Patch ").unwrap().id, "apply_patch");
        assert_eq!(tool("CRON").unwrap().id, "automations");
        assert!(tool("grep").is_none());
    }

    #[test]
    fn groups_are_the_sections() {
        assert_eq!(
            group_members("group:runtime").unwrap(),
            vec!["exec", "process", "code_execution", "secrets"]
        );
        assert_eq!(
            group_members("group:fs").unwrap(),
            vec!["ls", "read", "write", "edit", "apply_patch"]
        );
        assert_eq!(
            group_members("group:automation").unwrap(),
            vec![
                "heartbeat_respond",
                "automations",
                "gateway",
                "plugins",
                "openclaw"
            ]
        );
        assert_eq!(
            group_members("group:nodes").unwrap(),
            vec!["nodes", "computer", "mobile_ui"]
        );
        assert!(group_members("group:plugins").is_none());
        assert!(group_members("group:nope").is_none());
        assert!(group_members("exec").is_none());
    }

    #[test]
    fn group_openclaw_leaves_out_fs_runtime_shell_and_canvas() {
        let members = group_members("group:openclaw").unwrap();
        for out in [
            "ls",
            "read",
            "write",
            "edit",
            "apply_patch",
            "exec",
            "process",
            "canvas",
        ] {
            assert!(!members.contains(&out), "{out}");
        }
        for inside in [
            "code_execution",
            "secrets",
            "browser",
            "automations",
            "gateway",
            "openclaw",
            "pdf",
        ] {
            assert!(members.contains(&inside), "{inside}");
        }
        // Plugin tools outside the catalog are in no core group.
        assert!(!members.contains(&"file_fetch"));
    }

    #[test]
    fn profiles_match_openclaws_lists() {
        assert_eq!(Profile::Minimal.allow(), vec!["session_status", "gateway"]);
        let coding = Profile::Coding.allow();
        for t in [
            "read",
            "exec",
            "process",
            "automations",
            "plugins",
            "bundle-mcp",
        ] {
            assert!(coding.contains(&t), "{t}");
        }
        for t in [
            "browser", "nodes", "openclaw", "message", "canvas", "tts", "pdf",
        ] {
            assert!(!coding.contains(&t), "{t}");
        }
        let messaging = Profile::Messaging.allow();
        assert!(messaging.contains(&"message"));
        assert!(messaging.contains(&"sessions_spawn"));
        assert!(!messaging.contains(&"exec"));
        assert!(!messaging.contains(&"read"));
        assert_eq!(Profile::Full.allow(), vec!["*"]);
        assert_eq!(Profile::Coding.manifest_tools(), vec!["crabbox", "intent"]);
        assert_eq!(Profile::Messaging.manifest_tools(), vec!["intent"]);
        assert_eq!(Profile::parse("Coding"), None);
    }

    #[test]
    fn reach_classes_hold_the_known_host_tools() {
        let host: Vec<&str> = CATALOG
            .iter()
            .filter(|t| t.reaches(ReachKind::HostProcess))
            .map(|t| t.id)
            .collect();
        for t in [
            "exec",
            "process",
            "automations",
            "terminal",
            "browser",
            "computer",
            "plugins",
            "gateway",
            "openclaw",
            "sessions_spawn",
            "tool_search_code",
        ] {
            assert!(host.contains(&t), "{t}");
        }
        for t in [
            "memory_get",
            "memory_search",
            "message",
            "file_fetch",
            "wiki_get",
        ] {
            assert!(
                tool(t)
                    .unwrap()
                    .reaches(ReachKind::ReadsOutsideWorkspaceOnly),
                "{t}"
            );
        }
        for t in [
            "read",
            "write",
            "edit",
            "apply_patch",
            "ls",
            "view_image",
            "pdf",
        ] {
            assert!(
                tool(t).unwrap().reaches(ReachKind::WorkspaceConfined),
                "{t}"
            );
        }
    }
}
