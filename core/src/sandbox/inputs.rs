//! What a plan keeps apart beyond OpenClaw's mounts, and where it comes
//! from: the layer's protected locations, OpenClaw's state directories, the
//! homes' credential stores, every agent's workspace, and what the gateway's
//! user runs later (its homes, its `PATH`).

use std::path::PathBuf;

use super::HostView;
use crate::options::{Network, SandboxOptions};
use crate::protected::Location;

/// The host paths the plan keeps apart, beyond OpenClaw's mounts.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// `map-access`'s and `layer-controls`' locations: always masked, on
    /// top of everything.
    pub protected: Vec<Location>,
    /// Shown empty, with OpenClaw's mounts inside them put back.
    pub hidden: Vec<PathBuf>,
    /// No writable mount may be or hold one of these: what the gateway's
    /// user runs later outside the sandbox (its home's start-up files, its
    /// `PATH`), so a write there is a delayed escape.
    pub run_later: Vec<(PathBuf, &'static str)>,
    pub network: Network,
    /// OpenClaw imports hooks from a workspace's `hooks/` (a hook entry is
    /// enabled): a writable mount's is masked too.
    pub workspace_hooks: bool,
}

/// Credential stores of a home directory, shown empty: the gateway's user's
/// keys and logins are none of the agents' business. Not a complete list
/// (`sandbox.hide` adds more).
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".password-store",
    ".local/share/keyrings",
    ".pki",
    ".vault-token",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
];

/// Whether `name`, in a home directory, is an OpenClaw state directory: its
/// own, a profile's (`~/.openclaw-<profile>`) or the legacy `~/.clawdbot`
/// (`resolveStateDir`, `paths-*.mjs`).
fn is_openclaw_state(name: &std::ffi::OsStr) -> bool {
    let n = name.to_string_lossy();
    n == ".openclaw" || n.starts_with(".openclaw-") || n == ".clawdbot"
}

/// The hidden paths: OpenClaw's state and config directories (sessions of
/// every agent, auth profiles with provider keys, the exec-approvals socket),
/// every OpenClaw state directory in each home, the homes' credential
/// stores, and the operator's `sandbox.hide`.
pub fn hidden(
    host: &dyn HostView,
    state_dirs: &[PathBuf],
    homes: &[PathBuf],
    extra: &[PathBuf],
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = state_dirs.to_vec();
    for h in homes {
        for name in host.list(h) {
            if is_openclaw_state(&name) {
                out.push(h.join(name));
            }
        }
        out.extend(HOME_SECRETS.iter().map(|s| h.join(s)));
    }
    out.extend(extra.iter().cloned());
    out
}

/// What the sandbox's inputs take from the gateway's environment (`HOME`,
/// `OPENCLAW_HOME`, `OPENCLAW_STATE_DIR`, `OPENCLAW_CONFIG_PATH`, `PATH`),
/// read at once on the calling thread: Node may change the environment
/// while another thread reads it.
#[derive(Debug, Clone)]
pub struct GatewayEnv {
    /// The homes OpenClaw's paths give (`crate::openclaw::paths::homes`).
    pub homes: Vec<PathBuf>,
    /// OpenClaw's state and config directories.
    pub state_dirs: Vec<PathBuf>,
    /// The gateway's `PATH`: bwrap and `script` are looked up there.
    pub path: String,
}

impl GatewayEnv {
    pub fn read() -> GatewayEnv {
        GatewayEnv {
            homes: crate::openclaw::paths::homes(),
            state_dirs: vec![
                crate::openclaw::paths::state_dir(),
                crate::openclaw::paths::config_dir(),
            ],
            path: gateway_path(),
        }
    }
}

/// The inputs of this gateway's sandbox: the layer's protected locations,
/// the state directories and homes OpenClaw's paths give (`crate::paths`),
/// every agent's workspace (each sandbox shows only the ones it mounts),
/// and the gateway's `PATH`.
pub fn inputs(
    protected: Vec<Location>,
    workspaces: &[PathBuf],
    opts: &SandboxOptions,
    host: &dyn HostView,
) -> Inputs {
    inputs_in(protected, workspaces, opts, &GatewayEnv::read(), host)
}

/// [`inputs`], with the environment read already.
pub fn inputs_in(
    protected: Vec<Location>,
    workspaces: &[PathBuf],
    opts: &SandboxOptions,
    env: &GatewayEnv,
    host: &dyn HostView,
) -> Inputs {
    let mut homes = env.homes.clone();
    if let Some(h) = crate::sys::passwd_home() {
        if !homes.contains(&h) {
            homes.push(h);
        }
    }
    let mut run_later: Vec<(PathBuf, &'static str)> = homes
        .iter()
        .map(|h| (h.clone(), "a home directory of the gateway's user"))
        .collect();
    for d in env.path.split(':').filter(|d| d.starts_with('/')) {
        run_later.push((PathBuf::from(d), "a directory of the gateway's PATH"));
    }
    let mut hidden = hidden(host, &env.state_dirs, &homes, &opts.hide);
    hidden.extend(workspaces.iter().cloned());
    Inputs {
        hidden,
        protected,
        run_later,
        network: opts.network,
        workspace_hooks: false,
    }
}

/// The gateway's `PATH` (bwrap and `script` are looked up there).
pub fn gateway_path() -> String {
    crate::sys::env_var("PATH")
        .and_then(|p| p.into_string().ok())
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into())
}
