//! What the agents' own tools must never reach: the token map, and every
//! place OpenClaw 2026.9.6 imports code from or reads its start-up from
//! (a write there is full control of the gateway at its next start or
//! reload, so of every token). One table, [`ROWS`], each row naming the
//! OpenClaw function (and its `dist/` chunk) that reads it; one function,
//! [`locations`], computes every protected location from its inputs. The
//! engine (`map-access`'s path guard), doctor and audit (`crate::ops`) and
//! the sandbox (`crate::sandbox`, which masks the same list) all take it
//! from there.
//!
//! A location is `secret` when it holds secrets (the map, OpenClaw's config
//! and `.env`s, credentials): reads, listings and searches are refused too.
//! The others hold code or start-up facts: only writes are refused, so an
//! agent can still read OpenClaw's own files.

pub mod resolved;

use std::path::{Path, PathBuf};

use crate::paths;
use crate::sys;

/// Which rule a protected location belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// The token map and its directories: `map-access`.
    Map,
    /// What controls the layer: `layer-controls`.
    Layer,
}

impl Guard {
    pub fn rule(self) -> &'static str {
        match self {
            Guard::Map => crate::call::rule_id::MAP_ACCESS,
            Guard::Layer => crate::call::rule_id::LAYER_CONTROLS,
        }
    }
}

/// A protected location, as configured (paths may not exist yet).
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    pub guard: Guard,
    /// How a block reason names it ("the token map", "OpenClaw's config file").
    pub what: &'static str,
    /// Absolute, lexically normalized.
    pub path: PathBuf,
    /// A directory: it and everything under it.
    pub dir: bool,
    /// Reads (and listings, searches) are refused too, not only writes.
    pub secret: bool,
}

/// What the process running the layer knows of itself. The addon sets it
/// once, when it is loaded (`src/lib.rs`); a bare `IdentityLayer`, with no
/// plugin to pass anything, still guards its own files through it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Process {
    /// The addon's own file (the `.node`, or the `.wasm` of the WebAssembly
    /// build), from `node_api_get_module_file_name`: its directory is
    /// claw-identity's installed files.
    pub addon: Option<PathBuf>,
    /// `process.execPath`: the Node binary that runs OpenClaw.
    pub exec_path: Option<PathBuf>,
    /// `process.argv[1]`: the script Node runs (OpenClaw's entry, in a
    /// gateway), where OpenClaw finds its own package root.
    pub argv1: Option<PathBuf>,
}

static PROCESS: std::sync::OnceLock<Process> = std::sync::OnceLock::new();

impl Process {
    /// Records this process's facts; the first call wins.
    pub fn set(p: Process) {
        let _ = PROCESS.set(p);
    }

    /// This process's facts, as the addon recorded them (none in `cargo test`).
    pub fn current() -> Process {
        PROCESS.get().cloned().unwrap_or_default()
    }
}

/// The inputs of [`locations`] besides the map and the environment: what
/// OpenClaw's config says, and what the plugin and the process know.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenClawFiles {
    /// `$include`d config files, resolved against the including file.
    pub includes: Vec<PathBuf>,
    /// `plugins.load.paths`: folders OpenClaw loads plugins from.
    pub load_paths: Vec<PathBuf>,
    /// `hooks.internal.load.extraDirs`: hook folders OpenClaw imports.
    pub hook_dirs: Vec<PathBuf>,
    /// Whether any `hooks.internal.entries.<name>.enabled` is `true`: a
    /// workspace's `hooks/` folder is then imported too.
    pub workspace_hooks: bool,
    /// The agents' workspaces (each one's `.openclaw/extensions` is a
    /// plugin folder, and its `hooks` a hook folder when enabled).
    pub workspaces: Vec<PathBuf>,
    /// This plugin's own directories: where it is installed (`api.rootDir`)
    /// and the copy OpenClaw loaded it from.
    pub plugin_dirs: Vec<PathBuf>,
    /// A file of OpenClaw's package as the plugin resolves it
    /// (`require.resolve('openclaw')` through the `node_modules/openclaw`
    /// link OpenClaw makes in it).
    pub openclaw_files: Vec<PathBuf>,
    /// What the process knows of itself.
    pub process: Process,
}

/// What a row's paths are computed from.
pub struct Facts<'f> {
    pub files: &'f OpenClawFiles,
    /// Every home `~` may stand for (`crate::openclaw::paths::homes`).
    pub homes: Vec<PathBuf>,
    /// OpenClaw's state directories: this gateway's, and every other
    /// profile's under a home (`~/.openclaw-<profile>`).
    pub profiles: Vec<Profile>,
    /// OpenClaw's package roots, and the real paths of each.
    pub package_roots: Vec<PathBuf>,
}

/// One OpenClaw profile's directories.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// `resolveStateDir`.
    pub state: PathBuf,
    /// `resolveConfigDir`: the state dir, unless only `OPENCLAW_CONFIG_PATH` is set.
    pub config_dir: PathBuf,
    /// `resolveConfigPath`.
    pub config: PathBuf,
}

/// One kind of protected location.
pub struct Row {
    /// How a block reason names it.
    pub what: &'static str,
    /// Where OpenClaw 2026.9.6 reads it: the function, and its `dist/` chunk.
    pub from: &'static str,
    pub guard: Guard,
    pub dir: bool,
    pub secret: bool,
    /// A location inside each agent workspace (which a sandbox may mount
    /// writable whatever the config says: [`workspace_locations`]).
    pub in_workspace: bool,
    /// Its paths, from the facts.
    pub at: fn(&Facts<'_>) -> Vec<PathBuf>,
}

fn each_profile(f: &Facts<'_>, g: impl Fn(&Profile) -> Vec<PathBuf>) -> Vec<PathBuf> {
    f.profiles.iter().flat_map(g).collect()
}

fn each_home(f: &Facts<'_>, rel: &[&str]) -> Vec<PathBuf> {
    f.homes
        .iter()
        .flat_map(|h| rel.iter().map(move |r| h.join(r)))
        .collect()
}

fn env_dirs(names: &[&str]) -> Vec<PathBuf> {
    names
        .iter()
        .filter_map(|n| crate::openclaw::paths::env_path(n))
        .collect()
}

/// The Node binary as given and as its symlinks resolve.
fn node_binaries(f: &Facts<'_>) -> Vec<PathBuf> {
    let Some(exec) = &f.files.process.exec_path else {
        return Vec::new();
    };
    let mut out = vec![exec.clone()];
    if let Ok(real) = sys::canonicalize(exec) {
        out.push(real);
    }
    out
}

/// The directory of the Node binary (OpenClaw looks beside it for bundled
/// plugins and hooks), and where its install keeps global packages.
fn node_dirs(f: &Facts<'_>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for bin in node_binaries(f) {
        let dir = paths::parent_of(&bin);
        let prefix = paths::parent_of(&dir);
        out.push(dir);
        out.push(prefix.join("lib").join("node_modules"));
        out.push(prefix.join("lib").join("node"));
    }
    out
}

/// Every `node_modules` Node resolves a bare import of OpenClaw's package
/// from (Module._nodeModulePaths): `<dir>/node_modules` for every directory
/// from the package root up, but those named `node_modules` themselves.
fn package_module_dirs(f: &Facts<'_>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in &f.package_roots {
        for dir in root.ancestors() {
            if dir.file_name().is_some_and(|n| n == "node_modules") {
                continue;
            }
            out.push(dir.join("node_modules"));
        }
    }
    out
}

/// The shell startup files a login shell reads: OpenClaw runs `$SHELL -l -c`
/// (bash `-lic`) to import the user's environment at start and for exec's
/// PATH, and `bash -lc` for an on-exit automation.
const SHELL_STARTUP: &[&str] = &[
    ".profile",
    ".bash_profile",
    ".bash_login",
    ".bashrc",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
];

/// The table. Rows without a path in these facts add nothing.
pub static ROWS: &[Row] = &[
    // ---- secrets ----
    Row {
        what: "OpenClaw's config file",
        from: "resolveConfigPath (paths-*.mjs); the gateway watches it and applies edits",
        guard: Guard::Layer,
        dir: false,
        secret: true,
        in_workspace: false,
        at: |f| each_profile(f, |p| vec![p.config.clone()]),
    },
    Row {
        what: "a backup of OpenClaw's config file",
        from: "the config writer's .bak rotation (io-*.mjs)",
        guard: Guard::Layer,
        dir: false,
        secret: true,
        in_workspace: false,
        at: |f| {
            each_profile(f, |p| {
                ["bak", "bak.1", "bak.2", "bak.3", "bak.4"]
                    .iter()
                    .map(|i| {
                        let mut name = p.config.as_os_str().to_owned();
                        name.push(format!(".{i}"));
                        PathBuf::from(name)
                    })
                    .collect()
            })
        },
    },
    Row {
        what: "a file OpenClaw's config includes",
        from: "resolveConfigIncludes (includes-*.mjs)",
        guard: Guard::Layer,
        dir: false,
        secret: true,
        in_workspace: false,
        at: |f| f.files.includes.clone(),
    },
    Row {
        what: "OpenClaw's .env",
        from: "loadGlobalRuntimeDotEnvFiles (dotenv-global-*.mjs): <configDir>/.env; readStateDirDotEnv (systemd-service-files-*.mjs): <stateDir>/.env",
        guard: Guard::Layer,
        dir: false,
        secret: true,
        in_workspace: false,
        at: |f| {
            each_profile(f, |p| {
                vec![
                    p.config_dir.join(".env"),
                    paths::parent_of(&p.config).join(".env"),
                    p.state.join(".env"),
                ]
            })
        },
    },
    Row {
        what: "OpenClaw's gateway.env",
        from: "loadGlobalRuntimeDotEnvFiles (dotenv-global-*.mjs): ~/.config/openclaw/gateway.env",
        guard: Guard::Layer,
        dir: true,
        secret: true,
        in_workspace: false,
        at: |f| each_home(f, &[".config/openclaw"]),
    },
    Row {
        what: "OpenClaw's credentials",
        from: "resolveOAuthDir (paths-*.mjs): <stateDir>/credentials, OPENCLAW_OAUTH_DIR",
        guard: Guard::Layer,
        dir: true,
        secret: true,
        in_workspace: false,
        at: |f| {
            let mut out = each_profile(f, |p| vec![p.state.join("credentials")]);
            out.extend(env_dirs(&["OPENCLAW_OAUTH_DIR"]));
            out
        },
    },
    Row {
        what: "OpenClaw's device identity",
        from: "the device identity store (device-identity-*.mjs, device-auth-store-*.mjs): <stateDir>/identity",
        guard: Guard::Layer,
        dir: true,
        secret: true,
        in_workspace: false,
        at: |f| each_profile(f, |p| vec![p.state.join("identity")]),
    },
    Row {
        what: "the gateway service's environment file",
        from: "resolveSystemdEnvironmentFilePath (systemd-service-files-*.mjs): the unit's EnvironmentFile",
        guard: Guard::Layer,
        dir: false,
        secret: true,
        in_workspace: false,
        at: |f| {
            each_profile(f, |p| {
                vec![
                    p.state.join("gateway.systemd.env"),
                    p.state.join("node.systemd.env"),
                ]
            })
        },
    },
    Row {
        what: "the gateway service's environment file",
        from: "resolveLaunchAgentEnvDir (launchd-service-files-*.mjs): the plist's env file and its wrapper script",
        guard: Guard::Layer,
        dir: true,
        secret: true,
        in_workspace: false,
        at: |f| each_profile(f, |p| vec![p.state.join("service-env")]),
    },
    Row {
        what: "OpenClaw's exec approvals",
        from: "resolveExecApprovalsPath (exec-approvals-config-*.mjs): <stateDir>/exec-approvals.json, the host exec policy and its socket's token",
        guard: Guard::Layer,
        dir: false,
        secret: true,
        in_workspace: false,
        at: |f| each_profile(f, |p| vec![p.state.join("exec-approvals.json")]),
    },
    // ---- code OpenClaw imports ----
    Row {
        what: "OpenClaw's plugin installs",
        from: "resolvePluginInstallRoots (install-root-context-*.mjs): <configDir>/{extensions,npm,git}",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| {
            each_profile(f, |p| {
                ["extensions", "npm", "git"]
                    .iter()
                    .map(|d| p.config_dir.join(d))
                    .collect()
            })
        },
    },
    Row {
        what: "OpenClaw's plugin copies",
        from: "plugin-source-capture-directory-*.mjs: <stateDir>/tmp/plugin-captures, the copies plugins load from",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| each_profile(f, |p| vec![p.state.join("tmp").join("plugin-captures")]),
    },
    Row {
        what: "a folder OpenClaw loads plugins from",
        from: "discoverConfiguredPaths (discovery-*.mjs): plugins.load.paths",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| f.files.load_paths.clone(),
    },
    Row {
        what: "a folder OpenClaw loads plugins from",
        from: "resolvePluginSourceRoots (roots-*.mjs): <workspace>/.openclaw/extensions",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: true,
        at: |f| {
            f.files
                .workspaces
                .iter()
                .map(|w| w.join(".openclaw").join("extensions"))
                .collect()
        },
    },
    Row {
        what: "a folder OpenClaw loads plugins from",
        from: "resolveBundledPluginsDir (bundled-dir-*.mjs) and resolveOpenClawDevSourceRoot (dev-source-root-*.mjs): OPENCLAW_BUNDLED_PLUGINS_DIR, OPENCLAW_DEV_SOURCE_ROOT",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |_| env_dirs(&["OPENCLAW_BUNDLED_PLUGINS_DIR", "OPENCLAW_DEV_SOURCE_ROOT"]),
    },
    Row {
        what: "OpenClaw's managed hooks",
        from: "resolveHookDiscoveryRoots (workspace-*.mjs): <configDir>/hooks, imported into the gateway at start and on reload (prepareInternalHooks, loader-*.mjs)",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| each_profile(f, |p| vec![p.config_dir.join("hooks")]),
    },
    Row {
        what: "a hook folder OpenClaw's config names",
        from: "resolveHookDiscoveryRoots (workspace-*.mjs): hooks.internal.load.extraDirs",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| f.files.hook_dirs.clone(),
    },
    Row {
        what: "a workspace's hook folder",
        from: "resolveHookDiscoveryRoots (workspace-*.mjs): <workspace>/hooks, imported once a hooks.internal.entries.<name>.enabled is true (resolveHookEnableState, policy-*.mjs)",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: true,
        at: |f| {
            if !f.files.workspace_hooks {
                return Vec::new();
            }
            f.files.workspaces.iter().map(|w| w.join("hooks")).collect()
        },
    },
    Row {
        what: "OpenClaw's bundled hooks",
        from: "resolveBundledHooksDir (workspace-*.mjs): OPENCLAW_BUNDLED_HOOKS_DIR",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |_| env_dirs(&["OPENCLAW_BUNDLED_HOOKS_DIR"]),
    },
    Row {
        what: "OpenClaw's package",
        from: "resolveOpenClawPackageRootSync (openclaw-root-*.mjs): its own code, imported lazily (no restart needed), its bundled plugins and hooks",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| f.package_roots.clone(),
    },
    Row {
        what: "a folder OpenClaw's package imports from",
        from: "Node's module resolution (Module._nodeModulePaths) from OpenClaw's package root",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: package_module_dirs,
    },
    Row {
        what: "the Node binary that runs OpenClaw",
        from: "process.execPath, which the gateway's service runs",
        guard: Guard::Layer,
        dir: false,
        secret: false,
        in_workspace: false,
        at: node_binaries,
    },
    Row {
        what: "the Node install that runs OpenClaw",
        from: "dirname(process.execPath) (resolveBundledPluginsDir, resolveBundledHooksDir: bundled plugins and hooks beside it) and its prefix's lib/node_modules",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: node_dirs,
    },
    Row {
        what: "OpenClaw's managed Node runtime",
        from: "auto-update-install-*.mjs and node-host-launcher.mjs: <stateDir>/node-runtime, the Node releases OpenClaw installs and starts the gateway with",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| each_profile(f, |p| vec![p.state.join("node-runtime")]),
    },
    Row {
        what: "a folder Node loads modules from",
        from: "Node's Module._initPaths: NODE_PATH, ~/.node_modules, ~/.node_libraries",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| {
            let mut out = each_home(f, &[".node_modules", ".node_libraries"]);
            if let Some(v) = sys::env_var("NODE_PATH").and_then(|v| v.into_string().ok()) {
                let sep = if paths::windows() { ';' } else { ':' };
                out.extend(
                    v.split(sep)
                        .filter(|d| paths::is_absolute(d))
                        .map(paths::host_path),
                );
            }
            out
        },
    },
    Row {
        what: "OpenClaw's state database",
        from: "resolveOpenClawStateDatabasePath (openclaw-state-db.paths-*.mjs): <stateDir>/state, whose config_machine_state holds the plugin and hook install records",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| each_profile(f, |p| vec![p.state.join("state")]),
    },
    Row {
        what: "the gateway's working-directory .env",
        from: "loadDotEnv (dotenv-*.mjs): <cwd>/.env, loaded at start",
        guard: Guard::Layer,
        dir: false,
        secret: false,
        in_workspace: false,
        at: |_| vec![paths::process_cwd().join(".env")],
    },
    // ---- service definitions ----
    Row {
        what: "the gateway's systemd units",
        from: "resolveSystemdUnitPathForName (systemd-service-files-*.mjs): ~/.config/systemd/user/openclaw-gateway[-<profile>].service, its drop-ins, every profile's",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| {
            let mut out = each_home(f, &[".config/systemd", ".config/environment.d"]);
            if let Some(x) = crate::openclaw::paths::env_path("XDG_CONFIG_HOME") {
                out.push(x.join("systemd"));
                out.push(x.join("environment.d"));
            }
            out
        },
    },
    Row {
        what: "the gateway's launchd plists",
        from: "resolveLaunchAgentPlistPathForLabel (launchd-service-files-*.mjs): ~/Library/LaunchAgents/ai.openclaw.<profile>.plist, every profile's",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| each_home(f, &["Library/LaunchAgents"]),
    },
    Row {
        what: "the gateway's scheduled-task script",
        from: "resolveGatewayTaskScriptPath (paths-*.mjs) and resolveTaskLauncherScriptPath (schtasks-layout-*.mjs): <stateDir>/gateway.cmd, .vbs, OPENCLAW_TASK_SCRIPT",
        guard: Guard::Layer,
        dir: false,
        secret: false,
        in_workspace: false,
        at: |f| {
            let mut out = each_profile(f, |p| {
                ["gateway.cmd", "gateway.vbs", "node.cmd", "node.vbs"]
                    .iter()
                    .map(|n| p.state.join(n))
                    .collect()
            });
            out.extend(env_dirs(&["OPENCLAW_TASK_SCRIPT"]));
            out
        },
    },
    Row {
        what: "the Windows Startup folder",
        from: "resolveWindowsStartupDir (schtasks-layout-*.mjs): the gateway's login item when no task can be made",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| {
            let rel = ["Microsoft", "Windows", "Start Menu", "Programs", "Startup"];
            let mut out: Vec<PathBuf> = f
                .homes
                .iter()
                .map(|h| rel.iter().fold(h.join("AppData").join("Roaming"), |p, c| p.join(c)))
                .collect();
            if let Some(a) = crate::openclaw::paths::env_path("APPDATA") {
                out.push(rel.iter().fold(a, |p, c| p.join(c)));
            }
            out
        },
    },
    Row {
        what: "a shell startup file",
        from: "probeLoginShellEnv (shell-env-*.mjs): $SHELL -l -c at start (env.shellEnv) and for exec's PATH; resolveExitWatchShell (server-cron-*.mjs): bash -lc",
        guard: Guard::Layer,
        dir: false,
        secret: false,
        in_workspace: false,
        at: |f| {
            let mut out = each_home(f, SHELL_STARTUP);
            if let Some(z) = crate::openclaw::paths::env_path("ZDOTDIR") {
                out.extend([".zshenv", ".zprofile", ".zshrc", ".zlogin"].map(|n| z.join(n)));
            }
            out
        },
    },
    Row {
        what: "a shell startup folder",
        from: "probeLoginShellEnv (shell-env-*.mjs): a fish login shell reads ~/.config/fish",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| {
            let mut out = each_home(f, &[".config/fish"]);
            if let Some(x) = crate::openclaw::paths::env_path("XDG_CONFIG_HOME") {
                out.push(x.join("fish"));
            }
            out
        },
    },
    // ---- this plugin ----
    Row {
        what: "claw-identity's installed files",
        from: "OpenClaw's plugin loader imports this plugin from api.rootDir or its capture (plugin-source-capture-directory-*.mjs); the addon's own directory (Node's node_api_get_module_file_name)",
        guard: Guard::Layer,
        dir: true,
        secret: false,
        in_workspace: false,
        at: |f| {
            let mut out = f.files.plugin_dirs.clone();
            if let Some(a) = &f.files.process.addon {
                out.push(paths::parent_of(a));
            }
            out
        },
    },
];

/// The map's own locations: the file as configured and as its symlinks
/// resolve now, and the directories holding each.
pub fn map_locations(map: &Path) -> Vec<Location> {
    let loc = |what, path: PathBuf, dir| Location {
        guard: Guard::Map,
        what,
        path,
        dir,
        secret: true,
    };
    let mut out = vec![
        loc("the token map", map.to_path_buf(), false),
        loc("the token map's directory", paths::parent_of(map), true),
    ];
    // A symlinked map (supported): the file it ends at, and that file's directory.
    if let Ok(real) = sys::canonicalize(map) {
        if real != map {
            out.push(loc("the token map", real.clone(), false));
            out.push(loc(
                "the token map's directory",
                paths::parent_of(&real),
                true,
            ));
        }
    }
    out
}

/// This gateway's profile, and every other one's state directory under a
/// home (`~/.openclaw`, `~/.openclaw-<profile>`, `resolveGatewayStateDir`,
/// `paths-*.mjs`): each runs a gateway of its own, as the same user.
pub fn profiles(homes: &[PathBuf]) -> Vec<Profile> {
    let mut out = vec![Profile {
        state: crate::openclaw::paths::state_dir(),
        config_dir: crate::openclaw::paths::config_dir(),
        config: crate::openclaw::paths::config_path(),
    }];
    let mut push = |state: PathBuf| {
        if !out.iter().any(|p| p.state == state) {
            out.push(Profile {
                config: state.join("openclaw.json"),
                config_dir: state.clone(),
                state,
            });
        }
    };
    for h in homes {
        push(h.join(".openclaw"));
        push(h.join(crate::openclaw::paths::LEGACY_STATE_DIR));
        let Ok(dir) = std::fs::read_dir(h) else {
            continue;
        };
        for entry in dir.flatten().take(4096) {
            let name = entry.file_name();
            let is_profile = name.to_str().is_some_and(|n| n.starts_with(".openclaw-"));
            if is_profile && entry.file_type().is_ok_and(|t| t.is_dir()) {
                push(h.join(name));
            }
        }
    }
    out
}

/// OpenClaw's package root above `start` (`findPackageRootSync`,
/// `openclaw-root-*.mjs`): the first directory, up to 12 levels and not
/// past one named `node_modules`, whose `package.json` names `openclaw`.
pub fn package_root(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    for _ in 0..12 {
        let d = dir?;
        let named = std::fs::read(d.join("package.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v.get("name").and_then(|n| n.as_str()) == Some("openclaw"));
        if named {
            return Some(d.to_path_buf());
        }
        if d.file_name().is_some_and(|n| n == "node_modules") {
            return None;
        }
        dir = d.parent();
    }
    None
}

/// OpenClaw's package roots, from the entry Node runs (its real path and
/// as named, `candidateDirsFromArgv1`) and from the plugin's link to it;
/// each as found and as its symlinks resolve.
fn package_roots(files: &OpenClawFiles) -> Vec<PathBuf> {
    let mut starts: Vec<PathBuf> = Vec::new();
    for file in files.process.argv1.iter().chain(&files.openclaw_files) {
        if let Ok(real) = sys::canonicalize(file) {
            starts.push(paths::parent_of(&real));
        }
        starts.push(paths::parent_of(file));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for s in starts {
        if let Some(root) = package_root(&s) {
            let real = sys::canonicalize(&root).ok();
            for r in std::iter::once(root).chain(real) {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// Every protected location: the map's, and every row of [`ROWS`] for
/// these inputs, each absolute and lexically normalized, without repeats.
/// Which guards are switched on is the caller's business.
pub fn locations(map: &Path, files: &OpenClawFiles) -> Vec<Location> {
    let homes = crate::openclaw::paths::homes();
    let facts = Facts {
        files,
        profiles: profiles(&homes),
        homes,
        package_roots: package_roots(files),
    };
    let mut out = map_locations(map);
    for row in ROWS {
        for p in (row.at)(&facts) {
            let path = paths::resolve(Path::new("/"), &p);
            if !out.iter().any(|l| l.path == path && l.guard == row.guard) {
                out.push(Location {
                    guard: row.guard,
                    what: row.what,
                    path,
                    dir: row.dir,
                    secret: row.secret,
                });
            }
        }
    }
    out
}

/// A workspace's own locations, for a sandbox that mounts it writable
/// whatever OpenClaw's config says: its plugin folder, and its hook folder
/// where OpenClaw imports workspace hooks (`hooks`).
pub fn workspace_locations(workspace: &Path, hooks: bool) -> Vec<Location> {
    let files = OpenClawFiles {
        workspaces: vec![workspace.to_path_buf()],
        workspace_hooks: hooks,
        ..Default::default()
    };
    let facts = Facts {
        files: &files,
        homes: Vec::new(),
        profiles: Vec::new(),
        package_roots: Vec::new(),
    };
    ROWS.iter()
        .filter(|r| r.in_workspace)
        .flat_map(|row| {
            (row.at)(&facts).into_iter().map(|p| Location {
                guard: row.guard,
                what: row.what,
                path: paths::resolve(Path::new("/"), &p),
                dir: row.dir,
                secret: row.secret,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pb(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn find<'l>(l: &'l [Location], path: &Path) -> Option<&'l Location> {
        l.iter().find(|x| x.path == path)
    }

    #[test]
    fn every_row_names_where_openclaw_reads_it() {
        for r in ROWS {
            assert!(
                r.from.contains(".mjs") || r.from.contains("Node") || r.from.contains("process."),
                "{}: {}",
                r.what,
                r.from
            );
        }
    }

    #[test]
    fn the_managed_hooks_of_every_profile_are_code_no_tool_may_write() {
        let l = locations(Path::new("/m/map.json"), &OpenClawFiles::default());
        for p in profiles(&crate::openclaw::paths::homes()) {
            let hooks = find(&l, &p.config_dir.join("hooks")).expect("managed hooks");
            assert!(hooks.dir && !hooks.secret && hooks.guard == Guard::Layer);
            assert!(find(&l, &p.config).is_some_and(|c| c.secret));
        }
        // The legacy state dir a gateway still uses where it alone exists.
        for h in crate::openclaw::paths::homes() {
            assert!(find(&l, &h.join(".clawdbot/hooks")).is_some());
            assert!(find(&l, &h.join(".clawdbot/openclaw.json")).is_some_and(|c| c.secret));
        }
    }

    #[test]
    fn config_named_hook_folders_and_enabled_workspace_hooks_are_protected() {
        let files = OpenClawFiles {
            hook_dirs: vec![pb("/srv/hooks")],
            workspaces: vec![pb("/srv/ws")],
            ..Default::default()
        };
        let l = locations(Path::new("/m/map.json"), &files);
        assert!(find(&l, Path::new("/srv/hooks")).is_some());
        assert!(find(&l, Path::new("/srv/ws/.openclaw/extensions")).is_some());
        // Workspace hooks load only once one is enabled.
        assert!(find(&l, Path::new("/srv/ws/hooks")).is_none());
        let on = OpenClawFiles {
            workspace_hooks: true,
            ..files
        };
        let l = locations(Path::new("/m/map.json"), &on);
        assert!(find(&l, Path::new("/srv/ws/hooks")).is_some_and(|h| h.dir));
    }

    #[test]
    fn the_node_binary_its_install_and_openclaws_package_and_module_folders_are_protected() {
        let tmp = crate::testing::TempDir::new("protected-pkg");
        let root = tmp.path().to_path_buf();
        let pkg = root.join("lib/node_modules/openclaw");
        std::fs::create_dir_all(pkg.join("dist")).unwrap();
        std::fs::write(pkg.join("package.json"), r#"{"name":"openclaw"}"#).unwrap();
        std::fs::write(pkg.join("dist/index.js"), "").unwrap();
        let files = OpenClawFiles {
            plugin_dirs: vec![pb("/p/claw-identity")],
            process: Process {
                addon: Some(pb("/opt/ci/claw-identity.linux-x64-gnu.node")),
                exec_path: Some(root.join("bin/node")),
                argv1: Some(pkg.join("dist/index.js")),
            },
            ..Default::default()
        };
        let l = locations(Path::new("/m/map.json"), &files);
        let real = |p: PathBuf| sys::canonicalize(&p).unwrap_or(p);
        for (p, dir) in [
            (root.join("bin/node"), false),
            (root.join("bin"), true),
            (real(pkg.clone()), true),
            (root.join("lib/node_modules"), true),
            (pb("/opt/ci"), true),
            (pb("/p/claw-identity"), true),
        ] {
            let found = find(&l, &p).unwrap_or_else(|| panic!("{} is not protected", p.display()));
            assert_eq!(found.dir, dir, "{}", p.display());
            assert!(!found.secret && found.guard == Guard::Layer);
        }
        // Node resolves OpenClaw's imports from every node_modules above it.
        assert!(find(&l, &real(root.clone()).join("node_modules")).is_some());
        assert!(find(&l, Path::new("/node_modules")).is_some());
        // No package.json naming openclaw: nothing taken for it.
        let none = OpenClawFiles {
            process: Process {
                argv1: Some(pb("/nonexistent/app/main.js")),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(package_roots(&none).is_empty());
    }

    #[test]
    fn every_profiles_service_definitions_and_startup_files_are_protected() {
        let l = locations(Path::new("/m/map.json"), &OpenClawFiles::default());
        for h in crate::openclaw::paths::homes() {
            for (rel, dir) in [
                (".config/systemd", true),
                ("Library/LaunchAgents", true),
                (".bashrc", false),
                (".profile", false),
                (".config/openclaw", true),
                (".config/fish", true),
            ] {
                let p = h.join(rel);
                assert!(
                    find(&l, &p).is_some_and(|x| x.dir == dir),
                    "{} is not protected",
                    p.display()
                );
            }
        }
        let state = crate::openclaw::paths::state_dir();
        for n in [
            "gateway.cmd",
            "gateway.systemd.env",
            "state",
            "service-env",
            "node-runtime",
            "exec-approvals.json",
        ] {
            assert!(find(&l, &state.join(n)).is_some(), "{n}");
        }
    }

    #[test]
    fn a_workspace_holds_its_plugin_and_hook_folders() {
        let paths = |hooks| -> Vec<PathBuf> {
            workspace_locations(Path::new("/srv/ws"), hooks)
                .into_iter()
                .map(|x| x.path)
                .collect()
        };
        assert_eq!(
            paths(true),
            vec![pb("/srv/ws/.openclaw/extensions"), pb("/srv/ws/hooks")]
        );
        assert_eq!(paths(false), vec![pb("/srv/ws/.openclaw/extensions")]);
    }
}
