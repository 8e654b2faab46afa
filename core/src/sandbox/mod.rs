//! The `claw-identity` sandbox backend's policy: the bubblewrap (`bwrap`)
//! command line every sandboxed command runs under. The plugin (JS) only
//! spawns what this returns; which paths are hidden, read-only or writable,
//! and which namespaces and flags a command gets, is decided here.
//!
//! Inside, a command sees the host as a read-only file system, except:
//! - the mounts OpenClaw asks for (its workspace, read-write unless
//!   `workspaceAccess` is `"ro"`; the agent's workspace, skills and
//!   attachments), at the paths OpenClaw's file bridge expects;
//! - a private `/tmp`, `/dev`, `/proc` (its own PID namespace) and an
//!   empty `/run` (control sockets: D-Bus, systemd, Docker, `/run/user/<uid>`);
//! - the protected locations of `map-access` and `layer-controls` (the one
//!   list, `Engine::protected_locations`): empty where they hold secrets
//!   (the token map's directory, every path to it, OpenClaw's config and
//!   `.env` files, credentials), read-only where they are code (plugins);
//! - OpenClaw's state directories and the host user's credential stores,
//!   empty ([`hidden`]), with OpenClaw's mounts inside them put back.
//!
//! Each command gets its own user (no capabilities, no nested user
//! namespace), PID, IPC, UTS and cgroup namespace, a new session (no
//! `TIOCSTI` into the gateway's terminal), dies with the gateway, and has
//! no network but its own loopback unless `sandbox.network` is `"host"`
//! (docs/threat-model.md says why).
//!
//! The files: `plan.rs` (the planner), `inputs.rs` (what it keeps apart,
//! and from where), `host.rs` (the host as it sees it), `probe.rs` (whether
//! bwrap runs here), `spawn.rs` (one request to one command line). What
//! OpenClaw hands the backend and expects back is in
//! `crate::openclaw::sandbox_contract`.

mod host;
mod inputs;
mod plan;
mod probe;
mod spawn;
#[cfg(test)]
mod tests;

pub use crate::openclaw::sandbox_contract::{Request, Spawn};
pub use host::{processes_with, Entry, HostView, Kind, LiveHost};
pub use inputs::{gateway_path, hidden, inputs, inputs_in, GatewayEnv, Inputs, HOME_SECRETS};
pub use plan::{command, flags, plan, Op, Plan, Run};
pub use probe::{bwrap_here, find_bwrap, probe, probe_cached, Probe};
pub use spawn::{env, spawn_for, Context};

/// The backend's id, as `agents.*.sandbox.backend` selects it.
pub const BACKEND_ID: &str = "claw-identity";

/// The variable rule `sandbox-pty` sets in the env of an `exec` that asks
/// for a terminal: the one way that ask reaches a backend.
pub const PTY_MARKER: &str = "CLAW_IDENTITY_SANDBOX_PTY";

/// Why the backend refuses to run a command, and what the operator does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub why: String,
    pub fix: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} Fix: {}", self.why, self.fix)
    }
}

fn refuse(why: impl Into<String>, fix: impl Into<String>) -> Refusal {
    Refusal {
        why: why.into(),
        fix: fix.into(),
    }
}
