//! Whether the sandbox can run here: bwrap is found, and one command with
//! every flag and mask of a real one starts and sees the map's directory
//! empty. Where it can't, why and what the operator does: the backend then
//! refuses to start, and `doctor` and `audit` say so. It never falls back
//! to the host.
//!
//! The backend's factory runs at every turn, and a probe (one bwrap run)
//! costs 10 to 50 ms: the backend asks [`probe_cached`], which runs it once
//! per [`key`] and keeps only probes that passed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use super::{gateway_path, plan, refuse, HostView, Inputs, Kind, LiveHost, Refusal};
use crate::options::SandboxOptions;
use crate::protected::Guard;

/// The outcome of a probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The bwrap found, where one was.
    pub bwrap: Option<PathBuf>,
    pub result: Result<(), Refusal>,
}

const INSTALL: &str = "install bubblewrap (Debian, Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or set plugins.entries.claw-identity.config.sandbox.bwrap to where it is";

/// The bwrap to run: `sandbox.bwrap`, else the first on `path`.
pub fn find_bwrap(
    host: &dyn HostView,
    opts: &SandboxOptions,
    path: &str,
) -> Result<PathBuf, Refusal> {
    if cfg!(target_os = "wasi") {
        return Err(refuse(
            "this is claw-identity's WebAssembly build, which can't start processes.",
            "run the gateway where the native build loads (linux-x64 or linux-arm64 with glibc 2.34+); claw-identity status names the build",
        ));
    }
    match &opts.bwrap {
        Some(p) if p.is_absolute() && host.kind(p) == Kind::File => Ok(p.clone()),
        Some(p) => Err(refuse(
            format!(
                "sandbox.bwrap is {}, which is not an absolute path to a file.",
                p.display()
            ),
            INSTALL,
        )),
        None => host.program("bwrap", path).ok_or_else(|| {
            refuse(
                format!(
                    "bubblewrap (bwrap) is not installed here: no bwrap on the gateway's PATH ({}).",
                    searched(path)
                ),
                INSTALL,
            )
        }),
    }
}

/// Where `find_bwrap` looked, by count only: the absolute directories of
/// `path` (`HostView::program` skips a relative one). The directories
/// themselves are left out: the whole PATH is long, and says what is
/// installed where, which is no part of the reason.
fn searched(path: &str) -> String {
    match path.split(':').filter(|d| d.starts_with('/')).count() {
        0 => "it names no absolute directory".into(),
        1 => "1 directory searched".into(),
        n => format!("{n} directories searched"),
    }
}

fn read_sysctl(name: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/sys/{name}"))
        .ok()
        .map(|s| s.trim().to_owned())
}

/// Why bwrap failed, from what it printed, with the fix for this host.
pub fn classify(stderr: &str, sysctl: &dyn Fn(&str) -> Option<String>) -> Refusal {
    let line = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(it printed nothing)");
    let userns = "this host refuses user namespaces to the gateway's user, which the sandbox needs";
    if stderr.contains("Unknown option --disable-userns") || stderr.contains("Unknown option") {
        return refuse(
            format!("this bwrap is too old: {line}"),
            "upgrade bubblewrap to 0.8 or newer (it has --disable-userns)",
        );
    }
    let denied = stderr.contains("No permissions to create")
        || stderr.contains("setting up uid map")
        || stderr.contains("Creating new namespace failed: Operation not permitted");
    if denied {
        if sysctl("kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
            return refuse(
                format!("{userns}: AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1; bwrap: {line})."),
                "allow them to bwrap with an AppArmor profile: /etc/apparmor.d/bwrap holding `abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }`, then apparmor_parser -r /etc/apparmor.d/bwrap",
            );
        }
        if sysctl("kernel/unprivileged_userns_clone").as_deref() == Some("0") {
            return refuse(
                format!("{userns}: kernel.unprivileged_userns_clone is 0 (bwrap: {line})."),
                "sysctl -w kernel.unprivileged_userns_clone=1, and the same in /etc/sysctl.d/ to keep it",
            );
        }
        return refuse(
            format!("{userns} (bwrap: {line}); a container's seccomp profile or a security module can do this."),
            "run the gateway where its user may create user namespaces (for a Docker container: a seccomp profile that allows them), or use OpenClaw's Docker sandbox instead",
        );
    }
    // bwrap 0.8 says "nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)".
    if stderr.contains("No space left on device")
        || stderr.contains("ENOSPC")
        || stderr.contains("max_*_namespaces")
    {
        return refuse(
            format!("{userns}: no user namespace is left to create (bwrap: {line}); user.max_user_namespaces is 0, or the gateway itself runs in a sandbox that allows none inside."),
            "sysctl -w user.max_user_namespaces=15000 (and in /etc/sysctl.d/), or run the gateway outside that sandbox",
        );
    }
    refuse(
        format!("bwrap could not start a sandbox here: {line}"),
        "run claw-identity doctor as the gateway's user; it runs the same command",
    )
}

/// What the probe checks inside: each of the map's directories shows no
/// entry, and the map can't be opened.
const CHECK: &str = r#"for p; do
  if [ -d "$p" ]; then [ -z "$(ls -A "$p" 2>/dev/null)" ] || { echo "shown: $p" >&2; exit 3; }
  elif [ -e "$p" ]; then ! head -c 1 "$p" >/dev/null 2>&1 || { echo "readable: $p" >&2; exit 3; }
  fi
done"#;

/// Runs one sandboxed command with `inputs` (as a real one has them) and
/// checks what it sees of the map.
pub fn probe(host: &dyn HostView, opts: &SandboxOptions, inputs: &Inputs, path: &str) -> Probe {
    let bwrap = match find_bwrap(host, opts, path) {
        Ok(b) => b,
        Err(r) => {
            return Probe {
                bwrap: None,
                result: Err(r),
            }
        }
    };
    let result = run_probe(host, &bwrap, inputs);
    Probe {
        bwrap: Some(bwrap),
        result,
    }
}

/// [`probe`], unless one with the same [`key`] passed already in this
/// process. Where no bwrap is found, nothing is run or kept.
pub fn probe_cached(
    host: &dyn HostView,
    opts: &SandboxOptions,
    inputs: &Inputs,
    path: &str,
) -> Probe {
    static PASSED: Passed = Passed::new();
    let bwrap = match find_bwrap(host, opts, path) {
        Ok(b) => b,
        Err(r) => {
            return Probe {
                bwrap: None,
                result: Err(r),
            }
        }
    };
    let key = key(host, opts, inputs, &bwrap);
    PASSED.probe(key, bwrap, |b| run_probe(host, b, inputs))
}

/// What a probe's outcome depends on, as text: the options and the inputs
/// (the config's protected locations, hidden paths and workspaces, the
/// gateway's PATH), where each location of the map is now (its real path:
/// a symlink turned elsewhere moves it), the bwrap to run and its file (a
/// bwrap replaced or upgraded has another inode, size or change time), and
/// the user. The host's kernel settings are not in it: a probe that passed
/// can go stale only there (user namespaces refused later, say), and then
/// every command's own bwrap fails, and nothing runs on the host. Each
/// command plans its masks from the host as it is then (mounts, symlinks),
/// whatever the probe saw.
pub fn key(host: &dyn HostView, opts: &SandboxOptions, inputs: &Inputs, bwrap: &Path) -> String {
    let map_now: Vec<Option<PathBuf>> = inputs
        .protected
        .iter()
        .filter(|l| l.guard == Guard::Map)
        .map(|l| host.real(&l.path))
        .collect();
    let file = crate::sys::stat(bwrap).ok();
    let user = crate::sys::euid().ok();
    format!("{opts:?}\n{inputs:?}\n{map_now:?}\n{bwrap:?} {file:?}\nuid {user:?}")
}

/// The keys of probes that passed. One is kept: a gateway has one config
/// at a time. A probe that failed is not kept, so the next turn runs it
/// again (the operator may have fixed the host meanwhile).
pub struct Passed(Mutex<Option<String>>);

impl Passed {
    pub const fn new() -> Passed {
        Passed(parking_lot::const_mutex(None))
    }

    /// `run`'s result for `bwrap`, or a pass without running it when the
    /// last probe that passed had this `key`. Two turns that start at once
    /// before the first pass both run it.
    pub fn probe(
        &self,
        key: String,
        bwrap: PathBuf,
        run: impl FnOnce(&Path) -> Result<(), Refusal>,
    ) -> Probe {
        if self.0.lock().as_ref() == Some(&key) {
            return Probe {
                bwrap: Some(bwrap),
                result: Ok(()),
            };
        }
        let result = run(&bwrap);
        *self.0.lock() = result.is_ok().then_some(key);
        Probe {
            bwrap: Some(bwrap),
            result,
        }
    }
}

fn run_probe(host: &dyn HostView, bwrap: &Path, inputs: &Inputs) -> Result<(), Refusal> {
    let mut command: Vec<OsString> =
        vec!["/bin/sh".into(), "-c".into(), CHECK.into(), "probe".into()];
    for loc in inputs.protected.iter().filter(|l| l.guard == Guard::Map) {
        command.push(loc.path.clone().into_os_string());
        if let Some(real) = host.real(&loc.path) {
            command.push(real.into_os_string());
        }
    }
    let plan = plan(host, inputs, &[], Path::new("/"), command)?;
    let argv = plan.argv(bwrap);
    let (code, stderr) = spawn(&argv)
        .map_err(|e| refuse(format!("{} can't be run: {e}.", bwrap.display()), INSTALL))?;
    match code {
        Some(0) => Ok(()),
        Some(3) if stderr.contains("shown: ") || stderr.contains("readable: ") => Err(refuse(
            format!(
                "a sandboxed command could see the token map ({}): the masks did not hold here.",
                stderr.trim()
            ),
            "report this, with the output of claw-identity doctor; do not select the backend until it is fixed",
        )),
        _ => Err(classify(&stderr, &read_sysctl)),
    }
}

/// Runs `argv` with an empty environment, waiting at most 30 s; its exit
/// code (`None`: killed) and what it printed on stderr. A thread reads
/// stderr to its end, which comes when bwrap exits (its sandbox dies with
/// it), so the wait is a channel's, not a polling loop's.
#[cfg(not(target_os = "wasi"))]
fn spawn(argv: &[OsString]) -> std::io::Result<(Option<i32>, String)> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::time::Duration;
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut pipe = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut err = Vec::new();
        let _ = pipe.read_to_end(&mut err);
        let _ = tx.send(String::from_utf8_lossy(&err).into_owned());
    });
    Ok(match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(err) => (child.wait()?.code(), err),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            (
                None,
                rx.recv_timeout(Duration::from_secs(1)).unwrap_or_default(),
            )
        }
    })
}

#[cfg(target_os = "wasi")]
fn spawn(_: &[OsString]) -> std::io::Result<(Option<i32>, String)> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "the WebAssembly build can't start processes; the sandbox needs the native build (linux-x64 or linux-arm64, glibc 2.34+)",
    ))
}

/// Whether bubblewrap is where the backend would look for it (no probe run).
pub fn bwrap_here(opts: &SandboxOptions) -> bool {
    find_bwrap(&LiveHost::new(), opts, &gateway_path()).is_ok()
}
