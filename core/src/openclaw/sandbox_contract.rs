//! OpenClaw's sandbox-backend contract, as the `claw-identity` backend
//! receives it and answers it (`SandboxBackendHandle` and its params in
//! OpenClaw's `backend-handle.types`): the session a backend's factory is
//! handed (`resolveProvisionedSandboxContext`, `context-*.mjs`) and the
//! mounts OpenClaw's file bridge expects of it (`resolveWorkspaceMounts`);
//! one command as `buildExecSpec` (`command`, `workdir`, `env`, `usePty`) or
//! `runShellCommand` (`script`, `args`) asks for it; and the `argv`, `env`
//! and `stdinMode` handed back. The plugin (`lib/sandbox.js`) passes these
//! on as JSON; the planner (`crate::sandbox`) decides what runs.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One host path OpenClaw puts in the sandbox, at `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub host: PathBuf,
    pub at: PathBuf,
    pub writable: bool,
}

/// OpenClaw's `workspaceAccess` (`agents.*.sandbox.workspaceAccess`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceAccess {
    #[default]
    None,
    Ro,
    Rw,
}

/// OpenClaw's container path of the agent's own workspace
/// (`SANDBOX_AGENT_WORKSPACE_MOUNT`, `constants-*.mjs`).
pub const AGENT_WORKSPACE_MOUNT: &str = "/agent";

/// What OpenClaw hands a sandbox backend's factory (`context-*.mjs`,
/// `resolveProvisionedSandboxContext`), as the mounts follow from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenClawSession {
    pub workspace_dir: PathBuf,
    pub agent_workspace_dir: PathBuf,
    pub workspace_access: WorkspaceAccess,
    /// `resolveReadOnlyWorkspaceSkillMounts`: (host, sandbox path), read-only.
    pub skill_mounts: Vec<(PathBuf, PathBuf)>,
    /// `readOnlyResourceMounts` (a sub-agent's attachments), read-only.
    pub resource_mounts: Vec<(PathBuf, PathBuf)>,
}

impl OpenClawSession {
    /// The mounts OpenClaw's Docker backend makes for the same session
    /// (`resolveWorkspaceMounts`, `workspace-mounts-*.mjs`), which its file
    /// bridge (`buildSandboxFsMounts`) assumes: the workspace at `workdir`,
    /// read-only under `"ro"`; the agent's own workspace at `/agent` when
    /// access isn't `"none"` and it is another directory; skills and
    /// resources read-only.
    pub fn mounts(&self, workdir: &Path) -> Vec<Mount> {
        let access = self.workspace_access;
        let mut out = vec![Mount {
            host: self.workspace_dir.clone(),
            at: workdir.to_path_buf(),
            writable: access != WorkspaceAccess::Ro,
        }];
        if access != WorkspaceAccess::None && self.agent_workspace_dir != self.workspace_dir {
            out.push(Mount {
                host: self.agent_workspace_dir.clone(),
                at: PathBuf::from(AGENT_WORKSPACE_MOUNT),
                writable: access == WorkspaceAccess::Rw,
            });
        }
        for (host, at) in self.skill_mounts.iter().chain(&self.resource_mounts) {
            out.push(Mount {
                host: host.clone(),
                at: at.clone(),
                writable: false,
            });
        }
        out
    }
}

/// A host path and where it shows in the sandbox, as OpenClaw names them.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PathPair {
    pub host_path: PathBuf,
    pub container_path: PathBuf,
}

/// One sandbox session, from OpenClaw's factory params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRequest {
    pub workspace_dir: PathBuf,
    pub agent_workspace_dir: PathBuf,
    #[serde(default)]
    pub workspace_access: WorkspaceAccess,
    /// Where the workspace shows (the handle's `workdir`).
    pub workdir: PathBuf,
    #[serde(default)]
    pub skill_mounts: Vec<PathPair>,
    #[serde(default)]
    pub resource_mounts: Vec<PathPair>,
    /// `sandbox.docker.binds`: this backend makes none.
    #[serde(default)]
    pub binds: Vec<String>,
}

/// What to run: `command` (exec's, with `pty`), or `script` and `args`
/// (`runShellCommand`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunRequest {
    pub command: Option<String>,
    #[serde(default)]
    pub pty: bool,
    pub script: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
}

/// One command to run in a session, as the plugin asks for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Request {
    pub session: SessionRequest,
    /// Its working directory; the session's workdir when absent.
    pub workdir: Option<PathBuf>,
    pub run: RunRequest,
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
}

/// What the plugin spawns.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Spawn {
    pub argv: Vec<String>,
    pub env: std::collections::BTreeMap<String, String>,
    /// The command runs in a terminal: its stdin stays open (OpenClaw's
    /// `stdinMode` "pipe-open", as for a PTY on the host).
    pub pty: bool,
}

impl SessionRequest {
    /// The session as OpenClaw's factory handed it.
    pub(crate) fn openclaw(&self) -> OpenClawSession {
        let pairs = |v: &[PathPair]| {
            v.iter()
                .map(|p| (p.host_path.clone(), p.container_path.clone()))
                .collect()
        };
        OpenClawSession {
            workspace_dir: self.workspace_dir.clone(),
            agent_workspace_dir: self.agent_workspace_dir.clone(),
            workspace_access: self.workspace_access,
            skill_mounts: pairs(&self.skill_mounts),
            resource_mounts: pairs(&self.resource_mounts),
        }
    }
}
