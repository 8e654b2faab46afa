//! The planner: the bubblewrap command line for one command, from the
//! host as [`HostView`] shows it, the [`Inputs`] and OpenClaw's mounts.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::{refuse, Entry, HostView, Inputs, Kind, Refusal};
use crate::openclaw::sandbox_contract::Mount;
use crate::options::Network;
use crate::protected::{Guard, Location};

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
    pub(super) fn args(&self, out: &mut Vec<OsString>) {
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
