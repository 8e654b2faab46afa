//! What the layer knows of each agent's file system, from OpenClaw's config
//! (the hook's ctx has no workspace): where its tools run, and whether it is
//! sandboxed. The plugin sets it; the path guard, the posture and the
//! protected-location model read it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;

/// What the rule knows of each agent's file system, from OpenClaw's config
/// (the hook's ctx has no workspace): where its tools run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentFs {
    /// The run's cwd (`agents.entries.<id>.cwd`, else `agents.defaults.cwd`).
    pub cwd: Option<PathBuf>,
    /// Its workspace: OpenClaw's own answer (`resolveAgentWorkspaceDir`,
    /// handed over by the plugin), or every workspace OpenClaw may pick
    /// where that answer is not at hand.
    pub workspaces: Vec<PathBuf>,
    /// Whether every session of the agent runs in OpenClaw's sandbox
    /// (`sandbox.mode: "all"`), so its shells can't see the host's files.
    pub sandboxed: bool,
}

/// Per-agent file-system facts, set by the plugin from OpenClaw's config.
#[derive(Debug, Clone, Default)]
pub struct AgentFsTable {
    pub agents: HashMap<String, AgentFs>,
    /// For an agent the config doesn't list.
    pub default: DefaultFs,
}

/// What an agent the config doesn't list gets: the defaults' cwd and
/// sandbox, and the workspaces `resolveAgentWorkspaceDir`
/// (`agent-scope-config-*.mjs`) may give any agent id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DefaultFs {
    pub cwd: Option<PathBuf>,
    pub sandboxed: bool,
    /// `agents.defaults.workspace`: the owner agent's workspace itself, and
    /// `<it>/<id>` for the others.
    pub defaults_workspace: Option<PathBuf>,
    /// The owner agent's when `agents.defaults.workspace` is unset
    /// (`resolveDefaultAgentWorkspaceDir`): `OPENCLAW_WORKSPACE_DIR`, else
    /// `<stateDir>/workspace` or the profile's.
    pub env_workspaces: Vec<PathBuf>,
    /// `<stateDir>`, for `<stateDir>/workspace-<id>`.
    pub state_dir: PathBuf,
}

impl DefaultFs {
    /// Every workspace OpenClaw may give agent `id` (whether it is the
    /// owner agent depends on state OpenClaw keeps to itself).
    pub fn workspaces_of(&self, id: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        match &self.defaults_workspace {
            Some(w) => {
                out.push(w.clone());
                out.push(w.join(id));
            }
            None => {
                out.extend(self.env_workspaces.iter().cloned());
                out.push(self.state_dir.join(format!("workspace-{id}")));
            }
        }
        out
    }
}

impl AgentFsTable {
    /// Where `agent`'s tools run.
    pub fn get(&self, agent: Option<&str>) -> Cow<'_, AgentFs> {
        if let Some(a) = agent.and_then(|a| self.agents.get(a)) {
            return Cow::Borrowed(a);
        }
        let d = &self.default;
        Cow::Owned(AgentFs {
            cwd: d.cwd.clone(),
            workspaces: agent.map(|id| d.workspaces_of(id)).unwrap_or_default(),
            sandboxed: d.sandboxed,
        })
    }
}
