//! One command, from the plugin's request to what it spawns: the
//! environment it gets, the plan, and the layer's context that both need.

use std::path::{Path, PathBuf};

use super::{
    command, find_bwrap, inputs_in, plan, probe_cached, refuse, GatewayEnv, HostView, Inputs,
    LiveHost, Probe, Refusal, Run, PTY_MARKER,
};
use crate::openclaw::sandbox_contract::{Request, Spawn};
use crate::options::SandboxOptions;
use crate::protected::Location;

/// The environment a sandboxed command gets: OpenClaw's (`buildSandboxEnv`
/// and the exec env it layers on, `bash-tools-*.mjs`), minus the gateway's
/// own credentials (OpenClaw drops them too, `sanitizeEnvVars`) and any
/// variable that holds a token of the map.
pub fn env(
    requested: Vec<(String, String)>,
    holds_token: impl Fn(&str) -> bool,
) -> Vec<(String, String)> {
    requested
        .into_iter()
        .filter(|(k, v)| {
            let k = k.to_ascii_uppercase();
            k != "OPENCLAW_GATEWAY_TOKEN"
                && k != "OPENCLAW_GATEWAY_PASSWORD"
                && !k.is_empty()
                && !holds_token(v)
        })
        .collect()
}

/// What the sandbox's decisions need of the layer in force, taken on the
/// calling thread: the config and the environment. The rest (the host's
/// paths, the probe's bwrap run, the plans) only reads the file system and
/// runs bwrap, so [`Context::probe`] and [`Context::spawn`] can run on any
/// thread, off the gateway's event loop.
pub struct Context {
    pub opts: SandboxOptions,
    /// The layer's protected locations (`Engine::protected_locations`).
    pub protected: Vec<Location>,
    /// Every agent's workspace, as OpenClaw's config gives them.
    pub workspaces: Vec<PathBuf>,
    /// OpenClaw imports a workspace's `hooks/` (a hook entry is enabled).
    pub workspace_hooks: bool,
    pub env: GatewayEnv,
    /// Whether a value holds a token of the map in force.
    pub holds_token: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

impl Context {
    fn inputs(&self, host: &dyn HostView) -> Inputs {
        Inputs {
            workspace_hooks: self.workspace_hooks,
            ..inputs_in(
                self.protected.clone(),
                &self.workspaces,
                &self.opts,
                &self.env,
                host,
            )
        }
    }

    /// Whether the sandbox can run here: [`probe_cached`].
    pub fn probe(&self) -> Probe {
        let host = LiveHost::new();
        probe_cached(&host, &self.opts, &self.inputs(&host), &self.env.path)
    }

    /// The command line and environment for one command: [`spawn_for`].
    pub fn spawn(&self, req: &Request) -> Result<Spawn, Refusal> {
        let host = LiveHost::new();
        let inputs = self.inputs(&host);
        spawn_for(
            &host,
            &self.opts,
            &inputs,
            req,
            &self.env.path,
            &self.holds_token,
        )
    }
}

/// The command line and environment for `req`, or why it can't run.
/// `path` is the gateway's `PATH` (bwrap and `script` are looked up there).
pub fn spawn_for(
    host: &dyn HostView,
    opts: &SandboxOptions,
    inputs: &Inputs,
    req: &Request,
    path: &str,
    holds_token: impl Fn(&str) -> bool,
) -> Result<Spawn, Refusal> {
    if !req.session.binds.is_empty() {
        return Err(refuse(
            "sandbox.docker.binds is set; this backend mounts only the workspace OpenClaw gives it.",
            "remove agents.*.sandbox.docker.binds for agents that use the claw-identity backend, or hide what they must not see with the plugin's sandbox.hide",
        ));
    }
    let bwrap = find_bwrap(host, opts, path)?;
    let run = match (&req.run.command, &req.run.script) {
        (Some(command), None) => Run::Shell {
            command: command.clone(),
            pty: req.run.pty,
        },
        (None, Some(script)) => Run::Script {
            script: script.clone(),
            args: req.run.args.clone(),
        },
        _ => {
            return Err(refuse(
                "a sandbox command needs either command or script.",
                "report this: the plugin sent a malformed request",
            ))
        }
    };
    // The ask for a terminal, as rule sandbox-pty passed it on; not a variable of the command's.
    let pty_asked = req.env.get(PTY_MARKER).is_some_and(|v| v == "1");
    let run = match run {
        Run::Shell { command, pty } => Run::Shell {
            command,
            pty: pty || pty_asked,
        },
        other => other,
    };
    let env = env(
        req.env
            .iter()
            .filter(|(k, _)| k.as_str() != PTY_MARKER)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        holds_token,
    );
    let env_path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| path.to_owned());
    let pty = matches!(run, Run::Shell { pty: true, .. });
    let command = command(host, &run, &env_path)?;
    let mounts = req.session.openclaw().mounts(&req.session.workdir);
    // Whatever OpenClaw's config says of workspaces, this session's writable
    // ones hold a plugin folder (and a hook folder, where OpenClaw imports
    // those) too: read-only, as the layer keeps them.
    let mut inputs = inputs.clone();
    for m in mounts.iter().filter(|m| m.writable) {
        inputs
            .protected
            .extend(crate::protected::workspace_locations(
                &m.host,
                inputs.workspace_hooks,
            ));
    }
    let inputs = &inputs;
    let workdir = req.workdir.as_deref().unwrap_or(&req.session.workdir);
    let plan = plan(host, inputs, &mounts, workdir, command)?;
    let argv = plan
        .argv(&bwrap)
        .into_iter()
        .map(|a| {
            a.into_string().map_err(|a| {
                refuse(
                    format!("a sandbox path is not UTF-8 ({}).", Path::new(&a).display()),
                    "rename it: JavaScript can't pass it to bwrap",
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Spawn {
        argv,
        env: env.into_iter().collect(),
        pty,
    })
}
