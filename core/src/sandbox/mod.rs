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

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use crate::options::{Network, SandboxOptions};
use crate::protected::{Guard, Location};

mod host;
mod probe;
#[cfg(test)]
mod tests;

pub use host::{processes_with, LiveHost};
pub use probe::{find_bwrap, probe, probe_cached, Probe};

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

/// What the plan needs to know of the host; [`LiveHost`] asks the kernel.
pub trait HostView {
    /// The entries of `/`.
    fn root_entries(&self) -> Vec<(OsString, Entry)>;
    /// What `path` is, following symlinks.
    fn kind(&self, path: &Path) -> Kind;
    /// `path` with every symlink resolved, where it exists.
    fn real(&self, path: &Path) -> Option<PathBuf>;
    /// The names in a directory (empty where it can't be read).
    fn list(&self, dir: &Path) -> Vec<OsString>;
    /// The hard links of the file at `path` (1 where unknown).
    fn links(&self, path: &Path) -> u64;
    /// The other paths the same directory or file is mounted at (bind
    /// mounts), from `/proc/self/mountinfo`.
    fn aliases(&self, real: &Path) -> Vec<PathBuf>;
    /// The first executable `name` in the `:`-separated `path`.
    fn program(&self, name: &str, path: &str) -> Option<PathBuf>;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    Link(PathBuf),
    /// A file, device or socket at the root (a swap file, `/.dockerenv`):
    /// left out, since none is needed and a swap file holds memory.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Missing,
    Dir,
    File,
    Other,
}

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

/// How a sandboxed command starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Run {
    /// `exec`'s command, through `/bin/sh -c`; `pty`: in a terminal of its
    /// own (util-linux `script`), since OpenClaw gives sandboxed commands
    /// none (`runExecProcess`: `usingPty = opts.usePty && !opts.sandbox`).
    Shell { command: String, pty: bool },
    /// `runShellCommand` (the file bridge's helpers): `/bin/sh -c script
    /// openclaw-sandbox-fs args…`, as the Docker backend runs them.
    Script { script: String, args: Vec<String> },
}

/// One step of bwrap's setup, in the order bwrap applies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    RoBind(PathBuf, PathBuf),
    Bind(PathBuf, PathBuf),
    Symlink(PathBuf, PathBuf),
    Proc(PathBuf),
    Dev(PathBuf),
    Tmpfs(PathBuf),
    /// `--ro-bind /dev/null`: a file that can't be opened (bwrap mounts it
    /// `nodev`), neither read nor written.
    NullFile(PathBuf),
    RemountRo(PathBuf),
}

impl Op {
    fn args(&self, out: &mut Vec<OsString>) {
        let mut push = |flag: &str, paths: &[&Path]| {
            out.push(flag.into());
            out.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
        };
        match self {
            Op::RoBind(s, d) => push("--ro-bind", &[s, d]),
            Op::Bind(s, d) => push("--bind", &[s, d]),
            Op::Symlink(t, d) => push("--symlink", &[t, d]),
            Op::Proc(d) => push("--proc", &[d]),
            Op::Dev(d) => push("--dev", &[d]),
            Op::Tmpfs(d) => push("--tmpfs", &[d]),
            Op::NullFile(d) => push("--ro-bind", &[Path::new("/dev/null"), d]),
            Op::RemountRo(d) => push("--remount-ro", &[d]),
        }
    }
}

/// The namespaces and process flags: each one closes an escape the
/// experiment found (docs/threat-model.md).
pub fn flags(network: Network) -> Vec<&'static str> {
    let mut f = vec![
        // Its own user namespace: no capability on the host, and
        // (--disable-userns) no nested one, whose fresh capabilities would
        // let it unmount the masks.
        "--unshare-user",
        "--disable-userns",
        // Its own PIDs: the gateway can't be signalled or entered
        // (/proc/<pid>/root, /proc/<pid>/mem), and nothing outlives it.
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ];
    if network == Network::None {
        f.push("--unshare-net");
    }
    f.extend([
        "--die-with-parent",
        // setsid: no TIOCSTI into the gateway's terminal.
        "--new-session",
        "--cap-drop",
        "ALL",
    ]);
    f
}

/// The paths bwrap makes afresh: they never show the host's.
const PRIVATE: [&str; 4] = ["proc", "dev", "tmp", "run"];

/// What covers a sandbox path, as the plan has laid it out so far.
#[derive(Debug, Clone)]
enum Layer {
    /// The host path itself (a directory of `/`, bound read-only).
    Root,
    Mount {
        host: PathBuf,
        writable: bool,
    },
    /// Empty: a hidden path, or one of bwrap's own.
    Empty,
}

/// A bwrap command line for one command, with the decisions it holds.
#[derive(Debug, Clone)]
pub struct Plan {
    pub flags: Vec<&'static str>,
    pub ops: Vec<Op>,
    pub workdir: PathBuf,
    pub command: Vec<OsString>,
}

impl Plan {
    /// `bwrap flags… ops… --chdir workdir -- command…`.
    pub fn argv(&self, bwrap: &Path) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec![bwrap.as_os_str().to_owned()];
        out.extend(self.flags.iter().map(OsString::from));
        for op in &self.ops {
            op.args(&mut out);
        }
        out.push("--chdir".into());
        out.push(self.workdir.as_os_str().to_owned());
        out.push("--".into());
        out.extend(self.command.iter().cloned());
        out
    }
}

/// `p` made absolute and lexical (`.`/`..` taken out), or `None` when it
/// is relative.
fn lexical(p: &Path) -> Option<PathBuf> {
    p.is_absolute()
        .then(|| crate::paths::resolve(Path::new("/"), p))
}

fn depth(p: &Path) -> usize {
    p.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
}

struct Planner<'h> {
    host: &'h dyn HostView,
    /// (sandbox path, what covers it), in the order bwrap sets them up.
    layers: Vec<(PathBuf, Layer)>,
    ops: Vec<Op>,
    remount: Vec<PathBuf>,
}

impl<'h> Planner<'h> {
    /// The deepest layer at or above `at` (the later of two at one path).
    fn cover(&self, at: &Path) -> Option<(&Path, &Layer)> {
        self.layers
            .iter()
            .filter(|(p, _)| at.starts_with(p))
            .max_by_key(|(p, _)| depth(p))
            .map(|(p, l)| (p.as_path(), l))
    }

    /// The host path shown at sandbox path `at`, and whether it is
    /// writable there; `None` where it shows nothing of the host.
    fn shows(&self, at: &Path) -> Option<(PathBuf, bool)> {
        match self.cover(at)? {
            (_, Layer::Empty) => None,
            (_, Layer::Root) => Some((at.to_path_buf(), false)),
            (p, Layer::Mount { host, writable }) => {
                Some((host.join(at.strip_prefix(p).ok()?), *writable))
            }
        }
    }

    /// Every sandbox path that shows host path `real` (resolved): itself
    /// through the read-only root, and through each mount that holds it.
    fn sandbox_paths(&self, real: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut candidates = vec![real.to_path_buf()];
        for (at, layer) in &self.layers {
            if let Layer::Mount { host, .. } = layer {
                if let Ok(rest) = real.strip_prefix(host) {
                    candidates.push(at.join(rest));
                }
            }
        }
        for c in candidates {
            if self.shows(&c).is_some_and(|(h, _)| h == real) && !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }

    /// Where host path `p` really is (the rest taken as named where it is
    /// missing), and each bind mount of that.
    fn host_paths(&self, p: &Path) -> Vec<PathBuf> {
        let mut real = None;
        let mut rest = PathBuf::new();
        let mut cur = p.to_path_buf();
        loop {
            if let Some(r) = self.host.real(&cur) {
                real = Some(if rest.as_os_str().is_empty() {
                    r
                } else {
                    r.join(&rest)
                });
                break;
            }
            match (cur.parent(), cur.file_name()) {
                (Some(parent), Some(name)) => {
                    rest = Path::new(name).join(&rest);
                    cur = parent.to_path_buf();
                }
                _ => break,
            }
        }
        let real = real.unwrap_or_else(|| p.to_path_buf());
        let mut out = vec![real.clone()];
        for a in self.host.aliases(&real) {
            if !out.contains(&a) {
                out.push(a);
            }
        }
        out
    }

    fn hide(&mut self, at: &Path, kind: Kind) {
        match kind {
            Kind::Dir => {
                self.ops.push(Op::Tmpfs(at.to_path_buf()));
                self.remount.push(at.to_path_buf());
            }
            _ => self.ops.push(Op::NullFile(at.to_path_buf())),
        }
    }
}

/// The plan for one command: `mounts` (OpenClaw's), started in `workdir`.
///
/// Inside a writable mount, a command can rename and replace anything but
/// the mount points. A mask there could be renamed away with what it
/// covers, and a bind whose source a command can swap for a symlink while
/// the next sandbox is set up would mount whatever it points to. So nothing
/// is bound from a writable mount, and what must be kept apart inside one
/// (a protected location, a hidden path, another agent's workspace) is kept
/// apart at its outermost directory there: that directory is shown empty
/// and read-only (a "pin"), and is a mount point in every sandbox, where no
/// command can rename or replace it. OpenClaw's own mounts from inside a
/// writable mount are made only under a pin (where no command reaches the
/// source); others are left out, and their folders stay plain parts of the
/// workspace.
pub fn plan(
    host: &dyn HostView,
    inputs: &Inputs,
    mounts: &[Mount],
    workdir: &Path,
    command: Vec<OsString>,
) -> Result<Plan, Refusal> {
    let mut pl = Planner {
        host,
        layers: Vec::new(),
        ops: Vec::new(),
        remount: Vec::new(),
    };

    // 1. The host's root, read-only; bwrap's root is a tmpfs, so OpenClaw's
    //    mount points (/agent, /openclaw/attachments) can be made in it.
    for (name, entry) in host.root_entries() {
        let at = Path::new("/").join(&name);
        if PRIVATE.iter().any(|p| *p == name) {
            continue;
        }
        match entry {
            Entry::Dir => {
                pl.ops.push(Op::RoBind(at.clone(), at.clone()));
                pl.layers.push((at, Layer::Root));
            }
            Entry::Link(target) => pl.ops.push(Op::Symlink(target, at)),
            Entry::Other => {}
        }
    }
    // 2. bwrap's own /proc (this PID namespace's), /dev, and an empty /tmp and /run.
    pl.ops.push(Op::Proc("/proc".into()));
    pl.ops.push(Op::Dev("/dev".into()));
    for p in ["/tmp", "/run"] {
        pl.ops.push(Op::Tmpfs(p.into()));
    }
    for p in PRIVATE {
        pl.layers.push((Path::new("/").join(p), Layer::Empty));
    }

    // OpenClaw's mounts, as they are on the host.
    let mut wanted: Vec<(PathBuf, &Mount, PathBuf)> = Vec::new();
    for m in mounts {
        let at = lexical(&m.at).ok_or_else(|| {
            refuse(
                format!(
                    "OpenClaw asked for a sandbox mount at a relative path ({}).",
                    m.at.display()
                ),
                "report this: OpenClaw's sandbox paths are absolute",
            )
        })?;
        let real = host
            .real(&m.host)
            .filter(|_| matches!(host.kind(&m.host), Kind::Dir | Kind::File))
            .ok_or_else(|| {
                refuse(
                    format!(
                        "{} does not exist, so it can't be put in the sandbox.",
                        m.host.display()
                    ),
                    "check the agent's workspace (agents.*.workspace) and that OpenClaw could create it",
                )
            })?;
        if m.writable {
            writable_ok(host, inputs, &m.host, &real)?;
        }
        wanted.push((at, m, real));
    }
    // The writable ones, as (host root, sandbox root).
    let writable: Vec<(PathBuf, PathBuf)> = wanted
        .iter()
        .filter(|(_, m, _)| m.writable)
        .map(|(at, _, real)| (real.clone(), at.clone()))
        .collect();

    // The pins: for every path kept apart that lies inside a writable mount,
    // its outermost directory there (host path, sandbox path).
    let mut kept_apart: Vec<(PathBuf, Option<&Location>)> = Vec::new();
    for loc in &inputs.protected {
        if let Some(named) = lexical(&loc.path) {
            for hp in pl.host_paths(&named) {
                kept_apart.push((hp, Some(loc)));
            }
        }
    }
    for h in inputs.hidden.iter().filter_map(|h| lexical(h)) {
        if let Some(real) = host.real(&h) {
            kept_apart.push((real, None));
        }
    }
    let mut pins: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (hp, loc) in &kept_apart {
        for (root, at) in &writable {
            let Ok(rest) = hp.strip_prefix(root) else {
                continue;
            };
            let Some(first) = rest.components().next() else {
                continue; // the mount itself: masked on top of it, below
            };
            let (top_host, top) = (root.join(first), at.join(first));
            if top_host == *hp && !matches!(host.kind(hp), Kind::Dir) {
                match (host.kind(hp), loc) {
                    // A file right in the workspace: masked itself, below.
                    (Kind::File | Kind::Other, _) => continue,
                    (Kind::Missing, Some(l)) if l.secret && !l.dir => {
                        return Err(refuse(
                            format!(
                                "{} ({}) does not exist, and a command could create it in the sandbox's writable workspace.",
                                l.what,
                                top.display()
                            ),
                            "create it (an empty file will do), or give the agent a workspace that does not hold it",
                        ))
                    }
                    _ => {}
                }
            }
            if !pins.iter().any(|(_, t)| *t == top) {
                pins.push((top_host, top));
            }
        }
    }

    // 3. OpenClaw's mounts, the hidden paths and the pins, outermost first,
    //    so a mount inside a hidden directory shows and a hidden directory
    //    inside a mount stays hidden.
    enum Step<'a> {
        Hide(PathBuf),
        Pin,
        Mount(&'a Mount, PathBuf),
    }
    let mut steps: Vec<(PathBuf, Step)> = Vec::new();
    let mounted_at: Vec<PathBuf> = wanted.iter().map(|(at, ..)| at.clone()).collect();
    for (at, m, real) in wanted {
        // From inside a writable mount: only from under a pin.
        let inside = writable
            .iter()
            .any(|(root, _)| real.starts_with(root) && real != *root);
        if inside && !pins.iter().any(|(h, _)| real.starts_with(h)) {
            continue;
        }
        steps.push((at, Step::Mount(m, real)));
    }
    for h in inputs.hidden.iter().filter_map(|h| lexical(h)) {
        // A hidden path that doesn't exist hides nothing.
        if let Some(real) = host.real(&h) {
            steps.push((real, Step::Hide(h)));
        }
    }
    for (_, top) in &pins {
        steps.push((top.clone(), Step::Pin));
    }
    // Outermost first; at one path, hide, then pin, then the mount (it shows).
    steps.sort_by_key(|(at, s)| {
        let order = match s {
            Step::Hide(_) => 0,
            Step::Pin => 1,
            Step::Mount(..) => 2,
        };
        (depth(at), order)
    });
    for (at, step) in steps {
        match step {
            Step::Mount(m, real) => {
                pl.ops.push(if m.writable {
                    Op::Bind(real.clone(), at.clone())
                } else {
                    Op::RoBind(real.clone(), at.clone())
                });
                pl.layers.push((
                    at,
                    Layer::Mount {
                        host: real,
                        writable: m.writable,
                    },
                ));
            }
            Step::Pin => {
                if pl.shows(&at).is_some() {
                    pl.hide(&at, Kind::Dir);
                    pl.layers.push((at, Layer::Empty));
                }
            }
            Step::Hide(named) => {
                let kind = host.kind(&named);
                for hp in pl.host_paths(&named) {
                    for at in pl.sandbox_paths(&hp) {
                        if mounted_at.contains(&at) {
                            continue; // a mount shows there: its own workspace
                        }
                        pl.hide(&at, kind);
                        pl.layers.push((at, Layer::Empty));
                    }
                }
            }
        }
    }

    // 4. The protected locations, on top of everything: no mount shows them.
    let mut masked: Vec<PathBuf> = Vec::new();
    // Directories first, outermost first: what they hold needs no mask of its own.
    let mut protected: Vec<&Location> = inputs.protected.iter().collect();
    protected.sort_by_key(|l| (!l.dir, depth(&l.path)));
    for loc in protected {
        let Some(named) = lexical(&loc.path) else {
            continue;
        };
        let secret = loc.secret || loc.guard == Guard::Map;
        if loc.guard == Guard::Map && !loc.dir && host.kind(&named) == Kind::File {
            let n = host.links(&named);
            if n > 1 {
                return Err(refuse(
                    format!(
                        "the token map {} has {n} hard links: one outside its directory would show in the sandbox.",
                        named.display()
                    ),
                    format!(
                        "remove the other links (find / -xdev -samefile {}), or rewrite the map with claw-identity write-map, which makes a new file",
                        named.display()
                    ),
                ));
            }
        }
        for hp in pl.host_paths(&named) {
            let kind = host.kind(&hp);
            for at in pl.sandbox_paths(&hp) {
                if masked.iter().any(|m| at.starts_with(m)) {
                    continue; // inside a location masked already
                }
                let writable = pl.shows(&at).is_some_and(|(_, w)| w);
                match kind {
                    // Missing: nothing to hide, and (outside a writable
                    // mount, whose insides are pinned above) nothing can
                    // make it.
                    Kind::Missing => continue,
                    // Code that is read-only there already.
                    _ if !secret && !writable => continue,
                    // The root of a writable mount: empty, read-only.
                    _ => pl.hide(&at, kind),
                }
                masked.push(at.clone());
                pl.layers.push((at, Layer::Empty));
            }
        }
    }

    // 5. The empty directories and the root, read-only (what is mounted
    //    inside them stays as it is).
    let mut remount = std::mem::take(&mut pl.remount);
    remount.dedup();
    // bwrap remounts the topmost mount at a path: only where that is empty.
    remount.retain(|p| {
        pl.layers
            .iter()
            .rev()
            .find(|(at, _)| at == p)
            .is_some_and(|(_, l)| matches!(l, Layer::Empty))
    });
    pl.ops.extend(remount.into_iter().map(Op::RemountRo));
    pl.ops.push(Op::RemountRo("/".into()));

    let workdir = lexical(workdir)
        // The probe mounts nothing and runs in /.
        .filter(|w| mounts.is_empty() || matches!(pl.cover(w), Some((_, Layer::Mount { .. }))))
        .ok_or_else(|| {
            refuse(
                format!(
                    "the working directory {} is not inside the sandbox's workspace or mounts.",
                    workdir.display()
                ),
                "run the command in the workspace (omit workdir, or give a directory inside it)",
            )
        })?;
    Ok(Plan {
        flags: flags(inputs.network),
        ops: pl.ops,
        workdir,
        command,
    })
}

/// A writable mount must not be `/`, nor hold what the gateway's user runs
/// or reads later outside the sandbox (a delayed escape).
fn writable_ok(
    host: &dyn HostView,
    inputs: &Inputs,
    named: &Path,
    real: &Path,
) -> Result<(), Refusal> {
    const FIX: &str = "give the agent a workspace directory of its own that holds no home directory and no directory of the gateway's PATH (agents.entries.<id>.workspace)";
    if real == Path::new("/") {
        return Err(refuse(
            "a writable sandbox mount of / would give commands the whole host.",
            FIX,
        ));
    }
    for (later, what) in &inputs.run_later {
        let later = host.real(later).unwrap_or_else(|| later.clone());
        if later.starts_with(real) {
            return Err(refuse(
                format!(
                    "the workspace {} holds {what} ({}): a command could leave a file there that the gateway's user runs or reads later, outside the sandbox.",
                    named.display(),
                    later.display()
                ),
                FIX,
            ));
        }
    }
    Ok(())
}

/// The command bwrap runs for `run`.
pub fn command(host: &dyn HostView, run: &Run, path_env: &str) -> Result<Vec<OsString>, Refusal> {
    Ok(match run {
        Run::Shell {
            command,
            pty: false,
        } => {
            vec!["/bin/sh".into(), "-c".into(), command.into()]
        }
        Run::Shell { command, pty: true } => {
            let script = host.program("script", path_env).ok_or_else(|| {
                refuse(
                    "exec asked for a terminal (pty), and util-linux's script, which gives sandboxed commands one, is not installed.",
                    "install it (Debian/Ubuntu: bsdutils; Fedora: util-linux-script), or run the command without pty",
                )
            })?;
            // -q: no banner; -e: the command's exit status; -c: run it
            // through $SHELL (or /bin/sh); /dev/null: no typescript file.
            vec![
                script.into_os_string(),
                "-q".into(),
                "-e".into(),
                "-c".into(),
                command.into(),
                "/dev/null".into(),
            ]
        }
        Run::Script { script, args } => {
            let mut v: Vec<OsString> = vec![
                "/bin/sh".into(),
                "-c".into(),
                script.into(),
                "openclaw-sandbox-fs".into(),
            ];
            v.extend(args.iter().map(OsString::from));
            v
        }
    })
}

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
/// Whether bubblewrap is where the backend would look for it (no probe run).
pub fn bwrap_here(opts: &SandboxOptions) -> bool {
    find_bwrap(&LiveHost::new(), opts, &gateway_path()).is_ok()
}

pub fn gateway_path() -> String {
    crate::sys::env_var("PATH")
        .and_then(|p| p.into_string().ok())
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into())
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
    fn openclaw(&self) -> OpenClawSession {
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
    let bwrap = probe::find_bwrap(host, opts, path)?;
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
