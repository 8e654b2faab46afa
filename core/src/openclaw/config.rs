//! OpenClaw's config as the layer, doctor and explain read it (`openclaw.json`,
//! JSON5): this plugin's options, whether OpenClaw will load the plugin at
//! all, and which agents exist. A config holds other secrets (gateway and
//! provider keys): nothing here prints its content, only key names.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::agent_fs::{AgentFs, AgentFsTable, DefaultFs};
use crate::protected::OpenClawFiles;

use anyhow::{anyhow, bail, Context as _};
use serde_json::{Map, Value};

use crate::options::Options;
use crate::redact;

pub const PLUGIN_ID: &str = "claw-identity";

/// Largest config read (a sanity cap: `openclaw.json` is a few KB).
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

pub struct OpenClawConfig {
    pub path: PathBuf,
    root: Map<String, Value>,
}

/// A finding with its fix, in the operator's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub problem: String,
    pub fix: String,
}

fn object(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn describe(v: Option<&Value>) -> String {
    match v {
        None => "not set".into(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Null) => "null".into(),
        Some(Value::String(_)) => "a string".into(),
        Some(Value::Number(_)) => "a number".into(),
        Some(_) => "not a boolean".into(),
    }
}

impl OpenClawConfig {
    /// Reads and parses the config. The error names the file and what went
    /// wrong, then the cause (`{:#}` shows both: "<file>: not valid JSON5:
    /// <line, column>"), never content.
    pub fn load(path: &Path) -> anyhow::Result<OpenClawConfig> {
        let shown = path.display();
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_CONFIG_BYTES).read_to_string(&mut text))
            .with_context(|| format!("{shown}: cannot read it"))?;
        // The parser's message may quote what it stopped at.
        let value: Value = json5::from_str(&text)
            .map_err(|e| anyhow!(redact::scrub(&e.to_string())))
            .with_context(|| format!("{shown}: not valid JSON5"))?;
        match value {
            Value::Object(root) => Ok(OpenClawConfig {
                path: path.to_path_buf(),
                root,
            }),
            _ => bail!("{shown}: the top level is not an object"),
        }
    }

    /// The config a running gateway hands its plugins (`api.config`).
    pub fn from_value(value: Value) -> Option<OpenClawConfig> {
        match value {
            Value::Object(root) => Some(OpenClawConfig {
                path: PathBuf::from("(the gateway's config)"),
                root,
            }),
            _ => None,
        }
    }

    #[cfg(test)]
    pub fn from_text(text: &str) -> OpenClawConfig {
        let Value::Object(root) = json5::from_str(text).unwrap() else {
            panic!("not an object")
        };
        OpenClawConfig {
            path: PathBuf::from("/etc/openclaw.json"),
            root,
        }
    }

    /// The whole config.
    pub fn root(&self) -> &Map<String, Value> {
        &self.root
    }

    /// The value at a dotted path such as `["tools", "sessions", "visibility"]`.
    pub fn get(&self, path: &[&str]) -> Option<&Value> {
        let (last, parents) = path.split_last()?;
        let mut obj = &self.root;
        for k in parents {
            obj = object(obj.get(*k))?;
        }
        obj.get(*last)
    }

    fn plugins(&self) -> Option<&Map<String, Value>> {
        object(self.root.get("plugins"))
    }

    fn entry(&self) -> Option<&Map<String, Value>> {
        object(self.plugins()?.get("entries")).and_then(|e| object(e.get(PLUGIN_ID)))
    }

    /// `plugins.entries.claw-identity.config`: the options the plugin gets.
    pub fn plugin_options(&self) -> Option<&Value> {
        self.entry()?.get("config")
    }

    /// Whether `$include` splits this config: its included parts are not read.
    pub fn uses_include(&self) -> bool {
        let has = |m: Option<&Map<String, Value>>| m.is_some_and(|m| m.contains_key("$include"));
        has(Some(&self.root)) || has(self.plugins()) || has(object(self.root.get("agents")))
    }

    /// Everything in this config that keeps OpenClaw from loading the plugin.
    /// OpenClaw says nothing at runtime about any of them.
    pub fn enablement_problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        let plugins = self.plugins();
        let get = |k: &str| plugins.and_then(|p| p.get(k));
        let lists = |k: &str| {
            get(k)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(PLUGIN_ID)))
        };
        if get("enabled") == Some(&Value::Bool(false)) {
            out.push(Problem {
                problem: "plugins.enabled is false: OpenClaw loads no plugin at all".into(),
                fix: "openclaw config set plugins.enabled true --strict-json".into(),
            });
        }
        if lists("deny") {
            out.push(Problem {
                problem: format!("plugins.deny lists {PLUGIN_ID}: OpenClaw never loads it (deny wins over allow and enabled)"),
                fix: format!("remove \"{PLUGIN_ID}\" from plugins.deny"),
            });
        }
        if get("allow")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
            && !lists("allow")
        {
            out.push(Problem {
                problem: format!(
                    "plugins.allow is set and does not list {PLUGIN_ID}: OpenClaw does not load it"
                ),
                fix: format!(
                    "add \"{PLUGIN_ID}\" to plugins.allow (openclaw plugins install does this)"
                ),
            });
        }
        let enabled = self.entry().and_then(|e| e.get("enabled"));
        if enabled != Some(&Value::Bool(true)) {
            out.push(Problem {
                problem: format!(
                    "plugins.entries.{PLUGIN_ID}.enabled is {}, not true: OpenClaw loads only an explicitly enabled plugin (and registers its trusted tool policy only then), and says nothing at runtime",
                    describe(enabled)
                ),
                fix: format!(
                    "openclaw plugins install <{PLUGIN_ID}.tgz> --force --accept-capabilities (it writes the enablement), or: openclaw config set plugins.entries.{PLUGIN_ID}.enabled true --strict-json"
                ),
            });
        }
        out
    }

    /// Agent ids configured under `agents.entries`, as OpenClaw normalises
    /// them (lowercased), sorted; `None` when the config lists no agents.
    pub fn agents(&self) -> Option<Vec<String>> {
        let entries = object(object(self.root.get("agents"))?.get("entries"))?;
        let mut ids: Vec<String> = entries.keys().map(|k| k.to_lowercase()).collect();
        ids.sort();
        ids.dedup();
        Some(ids)
    }
}

/// What an agent can do to the map's file from its own tools, as far as
/// the config tells (see [`OpenClawConfig::agent_reach`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentReach {
    pub agent_id: String,
    /// `exec`, `process` that the tool policy leaves it.
    pub shell_tools: Vec<&'static str>,
    /// `read`, `write`, `edit`, `apply_patch`, `ls` that it leaves.
    pub file_tools: Vec<&'static str>,
    /// `sandbox.mode` in force ("off" when unset) and the key it came from.
    pub sandbox_mode: String,
    pub sandbox_key: String,
    /// `sandbox.backend` in force (OpenClaw's default "docker"), lowercased.
    pub sandbox_backend: String,
    /// A sandbox bind mount whose host side holds the map's directory.
    pub bind_over_map: Option<String>,
}

// `code_execution` runs remotely (xAI), not on the host.
const SHELL_TOOLS: [&str; 2] = ["exec", "process"];
const FILE_TOOLS: [&str; 5] = ["read", "write", "edit", "apply_patch", "ls"];

/// Whether a tool-policy entry names `tool` (names, groups, `*`).
fn names_tool(entry: &str, tool: &str) -> bool {
    let entry = entry.trim().to_lowercase();
    entry == "*"
        || entry == tool
        || (entry == "bash" && tool == "exec")
        || (entry == "group:runtime" && SHELL_TOOLS.contains(&tool))
        || (entry == "group:fs" && FILE_TOOLS.contains(&tool))
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v.and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    })
}

impl OpenClawConfig {
    /// Agent entries as (normalised id, entry), from `agents.entries` or
    /// `agents.list`; the implicit agent `main` when the config has neither.
    fn agent_entries(&self) -> Vec<(String, Map<String, Value>)> {
        let agents = object(self.root.get("agents"));
        let mut out: Vec<(String, Map<String, Value>)> = Vec::new();
        if let Some(entries) = agents.and_then(|a| object(a.get("entries"))) {
            for (id, e) in entries {
                out.push((
                    id.to_lowercase(),
                    object(Some(e)).cloned().unwrap_or_default(),
                ));
            }
        } else if let Some(list) = agents.and_then(|a| a.get("list")).and_then(Value::as_array) {
            for e in list.iter().filter_map(Value::as_object) {
                if let Some(id) = e.get("id").and_then(Value::as_str) {
                    out.push((id.to_lowercase(), e.clone()));
                }
            }
        } else {
            out.push(("main".into(), Map::new()));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    /// For each agent: which shell and file tools OpenClaw's tool policy
    /// leaves it, and whether its sessions run in OpenClaw's sandbox. The
    /// policy is approximated from `tools.profile`, `tools.allow`,
    /// `tools.alsoAllow` and `tools.deny`, globally and per agent.
    pub fn agent_reach(&self, map_dir: &Path) -> Vec<AgentReach> {
        let defaults = object(object(self.root.get("agents")).and_then(|a| a.get("defaults")));
        let global = object(self.root.get("tools"));
        self.agent_entries()
            .into_iter()
            .map(|(id, entry)| {
                let own = object(entry.get("tools"));
                let pick = |k: &str| {
                    own.and_then(|t| t.get(k))
                        .or_else(|| global.and_then(|t| t.get(k)))
                };
                let profile = pick("profile").and_then(Value::as_str).unwrap_or("full");
                let allow = strings(pick("allow")).filter(|a| !a.is_empty());
                let also: Vec<String> = [global, own]
                    .iter()
                    .flat_map(|t| strings(t.and_then(|t| t.get("alsoAllow"))).unwrap_or_default())
                    .collect();
                let deny: Vec<String> = [global, own]
                    .iter()
                    .flat_map(|t| strings(t.and_then(|t| t.get("deny"))).unwrap_or_default())
                    .collect();
                let has = |tool: &str| {
                    let in_profile = !matches!(profile, "minimal" | "messaging");
                    let base = match &allow {
                        Some(a) => a.iter().any(|e| names_tool(e, tool)),
                        None => in_profile,
                    };
                    (base || also.iter().any(|e| names_tool(e, tool)))
                        && !deny.iter().any(|e| names_tool(e, tool))
                };
                let sandbox = object(entry.get("sandbox"));
                let default_sandbox = defaults.and_then(|d| object(d.get("sandbox")));
                let (sandbox_mode, sandbox_key) =
                    match sandbox.and_then(|s| s.get("mode")).and_then(Value::as_str) {
                        Some(m) => (m.to_owned(), format!("agents.entries.{id}.sandbox.mode")),
                        None => (
                            default_sandbox
                                .and_then(|s| s.get("mode"))
                                .and_then(Value::as_str)
                                .unwrap_or("off")
                                .to_owned(),
                            "agents.defaults.sandbox.mode".to_owned(),
                        ),
                    };
                let sandbox_backend = [sandbox, default_sandbox]
                    .iter()
                    .find_map(|s| s.and_then(|s| s.get("backend")).and_then(Value::as_str))
                    .map(|b| crate::paths::js_trim(b).to_ascii_lowercase())
                    .unwrap_or_else(|| "docker".to_owned());
                let binds: Vec<String> = [sandbox, default_sandbox]
                    .iter()
                    .flat_map(|s| {
                        strings(
                            s.and_then(|s| object(s.get("docker")))
                                .and_then(|d| d.get("binds")),
                        )
                        .unwrap_or_default()
                    })
                    .collect();
                let bind_over_map = binds.into_iter().find(|b| {
                    let host = b.split(':').next().unwrap_or_default();
                    !host.is_empty() && map_dir.starts_with(host)
                });
                AgentReach {
                    shell_tools: SHELL_TOOLS.into_iter().filter(|t| has(t)).collect(),
                    file_tools: FILE_TOOLS.into_iter().filter(|t| has(t)).collect(),
                    agent_id: id,
                    sandbox_mode,
                    sandbox_key,
                    sandbox_backend,
                    bind_over_map,
                }
            })
            .collect()
    }
}

/// An agent's `exec` as the config sets it (see [`OpenClawConfig::exec_reach`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecReach {
    pub agent_id: String,
    /// exec or process run on the gateway's host (or a paired node) for at
    /// least its main session.
    pub host_shell: bool,
    /// `tools.exec.notifyOnExit` in force (on unless set to false).
    pub notify_on_exit: bool,
    /// The key that turns it on for this agent, when the agent sets it itself.
    pub notify_key: Option<String>,
}

impl OpenClawConfig {
    /// For each agent: whether it has a shell on the host, and whether a
    /// backgrounded exec's completion is announced to its session. As
    /// `resolveExecToolConfig` (`lazy-exec-tool-*.mjs`) layers them: the
    /// agent's `tools.exec` over the global one; `host` "sandbox" keeps exec
    /// off the host, "gateway" and "node" put it there, and "auto" (the
    /// default) does unless the session runs in the sandbox; `mode` or
    /// `security` "deny" turns it off; `notifyOnExit` is on unless false.
    pub fn exec_reach(&self) -> Vec<ExecReach> {
        let reach = self.agent_reach(Path::new(""));
        let global = object(object(self.root.get("tools")).and_then(|t| t.get("exec")));
        self.agent_entries()
            .into_iter()
            .map(|(id, entry)| {
                let own = object(object(entry.get("tools")).and_then(|t| t.get("exec")));
                let text = |k: &str| {
                    own.and_then(|e| e.get(k))
                        .or_else(|| global.and_then(|e| e.get(k)))
                        .and_then(Value::as_str)
                };
                let denies = |e: Option<&Map<String, Value>>| {
                    let m = e.and_then(|e| e.get("mode").or_else(|| e.get("security")));
                    m.map(|m| m.as_str() == Some("deny"))
                };
                let denied = denies(own).or_else(|| denies(global)).unwrap_or(false);
                let r = reach.iter().find(|r| r.agent_id == id);
                let sandboxed = r.is_some_and(|r| r.sandbox_mode == "all");
                let on_host = match text("host") {
                    Some("sandbox") => false,
                    Some("gateway" | "node") => true,
                    _ => !sandboxed,
                };
                let own_notify = own.and_then(|e| e.get("notifyOnExit"));
                let notify = own_notify
                    .or_else(|| global.and_then(|e| e.get("notifyOnExit")))
                    .is_none_or(|v| v != &Value::Bool(false));
                let in_entries =
                    object(object(self.root.get("agents")).and_then(|a| a.get("entries")))
                        .is_some();
                ExecReach {
                    host_shell: on_host && !denied && r.is_some_and(|r| !r.shell_tools.is_empty()),
                    notify_on_exit: notify,
                    notify_key: (own_notify == Some(&Value::Bool(true)) && in_entries)
                        .then(|| format!("agents.entries.{id}.tools.exec.notifyOnExit")),
                    agent_id: id,
                }
            })
            .collect()
    }
}

/// The options JSON the plugin runs with: the config's plugin options (or
/// none), with `tokenMapPath` replaced by `map` when one is given.
pub fn options_json(config: Option<&OpenClawConfig>, map: Option<&str>) -> anyhow::Result<String> {
    let mut opts = match config.and_then(OpenClawConfig::plugin_options) {
        None => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => bail!("options must be an object"),
    };
    if let Some(map) = map {
        opts.insert("tokenMapPath".into(), Value::String(map.into()));
    }
    Ok(Value::Object(opts).to_string())
}

/// The plugin's options (see [`options_json`]), parsed by the plugin's
/// parser, whose message (naming the option) is the error as it is: the
/// caller says what it was doing.
pub fn plugin_options(
    config: Option<&OpenClawConfig>,
    map: Option<&str>,
) -> anyhow::Result<Options> {
    Options::from_json(&options_json(config, map)?).map_err(anyhow::Error::msg)
}

impl OpenClawConfig {
    /// What `map-access` needs of each agent, since the hook's ctx has
    /// neither: the directory its tools run in (`agents.*.cwd`) and its
    /// workspace, as `resolveAgentWorkspaceDir` (`agent-scope-config-*.mjs`)
    /// picks it: its own `workspace`; for the owner agent (the `default:
    /// true` one, or the only one), `agents.defaults.workspace` itself or
    /// the environment's default; for the others `<defaults.workspace>/<id>`
    /// or `<stateDir>/workspace-<id>`. Which agent is the owner is state
    /// OpenClaw keeps to itself, so both are taken. Also whether every
    /// session runs in the sandbox (`sandbox.mode: "all"`).
    pub fn agent_fs(&self) -> AgentFsTable {
        let defaults = object(object(self.root.get("agents")).and_then(|a| a.get("defaults")));
        let text = |m: Option<&Map<String, Value>>, k: &str| {
            m.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .filter(|p| !crate::paths::js_trim(p).is_empty())
                .map(crate::openclaw::paths::resolve_user_path)
        };
        let mode = |m: Option<&Map<String, Value>>| {
            object(m.and_then(|m| m.get("sandbox")))
                .and_then(|s| s.get("mode"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let default_mode = mode(defaults).unwrap_or_else(|| "off".into());
        let state_dir = crate::openclaw::paths::state_dir();
        let default = DefaultFs {
            cwd: text(defaults, "cwd"),
            sandboxed: default_mode == "all",
            defaults_workspace: text(defaults, "workspace"),
            env_workspaces: env_workspaces(&state_dir),
            state_dir,
        };
        let mut table = AgentFsTable {
            default,
            ..Default::default()
        };
        for (id, entry) in self.agent_entries() {
            let cwd = text(Some(&entry), "cwd").or_else(|| table.default.cwd.clone());
            let workspaces = match text(Some(&entry), "workspace") {
                Some(w) => vec![w],
                None => table.default.workspaces_of(&id),
            };
            let sandboxed = mode(Some(&entry)).unwrap_or_else(|| default_mode.clone()) == "all";
            table.agents.insert(
                id,
                AgentFs {
                    cwd,
                    workspaces,
                    sandboxed,
                },
            );
        }
        table
    }

    /// OpenClaw's files this config names: its `$include`s (read from the
    /// config file on disk, where they still are), `plugins.load.paths`,
    /// `hooks.internal.load.extraDirs` and whether a workspace hook is
    /// enabled, and every workspace an agent may have. What a process knows
    /// of itself (`Process`) is the live layer's to add: doctor and audit,
    /// which run in another process than the gateway, list the config's.
    pub fn files(&self, table: &AgentFsTable) -> OpenClawFiles {
        let mut includes = Vec::new();
        let on_disk = crate::openclaw::paths::config_path();
        include_files(&on_disk, 0, &mut includes);
        let load_paths = strings(
            object(self.plugins().and_then(|p| p.get("load"))).and_then(|l| l.get("paths")),
        )
        .unwrap_or_default()
        .iter()
        .map(|p| crate::openclaw::paths::resolve_user_path(p))
        .collect();
        let mut workspaces: Vec<PathBuf> = table
            .agents
            .values()
            .flat_map(|a| a.workspaces.iter().cloned())
            .collect();
        workspaces.extend(table.default.defaults_workspace.iter().cloned());
        workspaces.extend(table.default.env_workspaces.iter().cloned());
        workspaces.sort();
        workspaces.dedup();
        let internal = self.get(&["hooks", "internal"]).and_then(Value::as_object);
        // resolveHookDiscoveryRoots (workspace-*.mjs): trimmed, `~` expanded.
        let hook_dirs = strings(
            internal
                .and_then(|i| object(i.get("load")))
                .and_then(|l| l.get("extraDirs")),
        )
        .unwrap_or_default()
        .iter()
        .filter(|d| !crate::paths::js_trim(d).is_empty())
        .map(|d| crate::openclaw::paths::resolve_user_path(d))
        .collect();
        // resolveHookEnableState (policy-*.mjs): a workspace hook loads only
        // with its entry's `enabled: true`; the entry's name is the hook's
        // own (its HOOK.md may give any), so one is enough.
        let workspace_hooks = internal
            .and_then(|i| object(i.get("entries")))
            .is_some_and(|e| {
                e.values()
                    .any(|v| v.get("enabled") == Some(&Value::Bool(true)))
            });
        OpenClawFiles {
            includes,
            load_paths,
            hook_dirs,
            workspace_hooks,
            workspaces,
            ..OpenClawFiles::default()
        }
    }
}

/// The owner agent's workspace when `agents.defaults.workspace` is unset
/// (`resolveDefaultAgentWorkspaceDir`, `workspace-default-*.mjs`):
/// `OPENCLAW_WORKSPACE_DIR` (resolved, no `~`), else
/// `<stateDir>/workspace`, else the profile's or `~/.openclaw/workspace`.
fn env_workspaces(state_dir: &Path) -> Vec<PathBuf> {
    let cwd = crate::paths::process_cwd();
    let mut out = Vec::new();
    if let Some(w) = crate::sys::env_var("OPENCLAW_WORKSPACE_DIR")
        .and_then(|w| w.to_str().map(|w| crate::paths::js_trim(w).to_owned()))
        .filter(|w| !w.is_empty())
    {
        out.push(crate::paths::resolve(&cwd, Path::new(&w)));
    }
    out.push(state_dir.join("workspace"));
    let home = crate::openclaw::paths::effective_home().unwrap_or_else(|| PathBuf::from("/"));
    if let Some(p) = crate::sys::env_var("OPENCLAW_PROFILE")
        .and_then(|p| p.to_str().map(|p| crate::paths::js_trim(p).to_owned()))
        .filter(|p| !p.is_empty() && !p.eq_ignore_ascii_case("default"))
    {
        out.push(home.join(format!(".openclaw-{p}")).join("workspace"));
    }
    out.push(home.join(".openclaw").join("workspace"));
    out.dedup();
    out
}

/// `path`'s `$include`s and theirs, to OpenClaw's depth limit (10).
fn include_files(path: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 10 {
        return;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let Ok(value) = json5::from_str::<Value>(&text) else {
        return;
    };
    let mut found = Vec::new();
    crate::rules::layer_controls::includes_of(&value, path, &mut found);
    for f in found {
        if !out.contains(&f) {
            out.push(f.clone());
            include_files(&f, depth + 1, out);
        }
    }
}

/// The locations the plugin with these options keeps out of the agents'
/// tools' reach, as the layer computes them (`protected::locations`), for
/// `doctor` and `audit` to list: those of the config and the environment.
/// The gateway's process adds its own ([`PROCESS_LOCATIONS`]), which only
/// it knows.
pub fn guarded_locations(
    opts: &Options,
    config: Option<&OpenClawConfig>,
) -> Vec<crate::protected::Location> {
    let files = match config {
        Some(c) => c.files(&c.agent_fs()),
        None => OpenClawFiles::default(),
    };
    crate::protected::locations(&opts.token_map_path, &files)
        .into_iter()
        .filter(|l| match l.guard {
            crate::protected::Guard::Map => opts.protect_map != crate::options::ProtectMap::Off,
            crate::protected::Guard::Layer => opts.rules.layer_controls.enabled,
        })
        .collect()
}

/// What the running gateway's layer guards besides [`guarded_locations`],
/// from its own process (`protected::Process`), for doctor and audit to say.
pub const PROCESS_LOCATIONS: &str = "and, in the gateway's own process, OpenClaw's package and every node_modules it imports from, the Node binary and its install, and claw-identity's installed files (write)";

#[cfg(test)]
mod tests {
    use super::*;

    const ENABLED: &str = r#"{
        // JSON5, as OpenClaw writes and reads it
        plugins: { entries: { "claw-identity": { enabled: true, config: { onMissingToken: "block" } } } },
        agents: { entries: { "Paco--Francis": {}, "paco--dali": {}, }, },
    }"#;

    #[test]
    fn an_enabled_plugin_has_no_enablement_problem() {
        assert!(OpenClawConfig::from_text(ENABLED)
            .enablement_problems()
            .is_empty());
    }

    #[test]
    fn enabled_must_be_exactly_true() {
        for (entry, found) in [
            ("{}", "not set"),
            ("{ enabled: false }", "false"),
            ("{ enabled: 'true' }", "a string"),
        ] {
            let c = OpenClawConfig::from_text(&format!(
                "{{ plugins: {{ entries: {{ 'claw-identity': {entry} }} }} }}"
            ));
            let p = c.enablement_problems();
            assert_eq!(p.len(), 1, "{entry}");
            assert!(
                p[0].problem.starts_with(&format!(
                    "plugins.entries.claw-identity.enabled is {found}, not true"
                )),
                "{}",
                p[0].problem
            );
            assert!(p[0].fix.contains("--accept-capabilities"));
        }
        let none = OpenClawConfig::from_text("{}").enablement_problems();
        assert_eq!(none.len(), 1);
    }

    #[test]
    fn global_disable_deny_and_allow_are_each_reported() {
        let c = OpenClawConfig::from_text(
            r#"{ plugins: { enabled: false, deny: ["claw-identity"], allow: ["other"],
                 entries: { "claw-identity": { enabled: true } } } }"#,
        );
        let p: Vec<String> = c
            .enablement_problems()
            .into_iter()
            .map(|p| p.problem)
            .collect();
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].starts_with("plugins.enabled is false"));
        assert!(p[1].starts_with("plugins.deny lists claw-identity"));
        assert!(p[2].starts_with("plugins.allow is set and does not list claw-identity"));
        let listed = OpenClawConfig::from_text(
            r#"{ plugins: { allow: ["claw-identity"], entries: { "claw-identity": { enabled: true } } } }"#,
        );
        assert!(listed.enablement_problems().is_empty());
    }

    #[test]
    fn agents_are_lowercased_and_sorted() {
        let c = OpenClawConfig::from_text(ENABLED);
        assert_eq!(c.agents().unwrap(), vec!["paco--dali", "paco--francis"]);
        assert_eq!(OpenClawConfig::from_text("{ agents: {} }").agents(), None);
    }

    #[test]
    fn plugin_options_come_from_the_entry_and_map_overrides_the_path() {
        let c = OpenClawConfig::from_text(ENABLED);
        let o = plugin_options(Some(&c), Some("/srv/m.json")).unwrap();
        assert_eq!(o.token_map_path, PathBuf::from("/srv/m.json"));
        assert_eq!(o.on_missing_token, crate::options::OnMissingToken::Block);
        let bad = OpenClawConfig::from_text(
            "{ plugins: { entries: { 'claw-identity': { config: { tokenMap: 'x' } } } } }",
        );
        assert!(plugin_options(Some(&bad), None)
            .unwrap_err()
            .to_string()
            .contains("\"tokenMap\""));
    }

    #[test]
    fn agent_reach_follows_profiles_allow_deny_and_sandbox() {
        let c = OpenClawConfig::from_text(
            r#"{
            agents: {
                defaults: { sandbox: { mode: "non-main" } },
                entries: {
                    "paco--francis": {},
                    "paco--dali": { tools: { deny: ["group:runtime"] }, sandbox: { mode: "all" } },
                    "reader": { tools: { profile: "messaging", alsoAllow: ["read"] } },
                    "boxed": { sandbox: { mode: "all", docker: { binds: ["/home/u/.config:/cfg:ro"] } } },
                },
            },
            tools: { deny: ["process"] },
        }"#,
        );
        let r = c.agent_reach(Path::new("/home/u/.config/micelclaw"));
        let by = |id: &str| r.iter().find(|a| a.agent_id == id).unwrap().clone();
        let f = by("paco--francis");
        assert_eq!(f.shell_tools, vec!["exec"]);
        assert_eq!(f.file_tools.len(), 5);
        assert_eq!(
            (f.sandbox_mode.as_str(), f.sandbox_key.as_str()),
            ("non-main", "agents.defaults.sandbox.mode")
        );
        let d = by("paco--dali");
        assert!(d.shell_tools.is_empty());
        assert_eq!(d.sandbox_key, "agents.entries.paco--dali.sandbox.mode");
        assert_eq!(by("reader").file_tools, vec!["read"]);
        assert!(by("reader").shell_tools.is_empty());
        assert_eq!(
            by("boxed").bind_over_map.as_deref(),
            Some("/home/u/.config:/cfg:ro")
        );
        let implicit = OpenClawConfig::from_text("{}").agent_reach(Path::new("/x"));
        assert_eq!(implicit[0].agent_id, "main");
        assert_eq!(implicit[0].sandbox_mode, "off");
        let listed = OpenClawConfig::from_text(
            "{ agents: { list: [{ id: 'A', tools: { allow: ['read'] } }] } }",
        );
        let a = &listed.agent_reach(Path::new("/x"))[0];
        assert_eq!(
            (a.agent_id.as_str(), a.file_tools.clone()),
            ("a", vec!["read"])
        );
    }

    #[test]
    fn load_errors_name_the_file_and_position_but_not_content() {
        let d = crate::testing::TempDir::new("config");
        let p = d.join("openclaw.json");
        let secret = "ab".repeat(32);
        std::fs::write(
            &p,
            format!("{{ gateway: {{ auth: {{ token: \"{secret}\" }} }}, x: }}"),
        )
        .unwrap();
        let e = OpenClawConfig::load(&p).err().unwrap();
        assert_eq!(e.to_string(), format!("{}: not valid JSON5", p.display()));
        let e = format!("{e:#}");
        assert!(
            e.starts_with(&format!("{}: not valid JSON5: ", p.display())) && e.contains("line 1"),
            "{e}"
        );
        assert!(!e.contains(&secret[..16]), "{e}");
        let missing = d.join("missing.json");
        let e = format!("{:#}", OpenClawConfig::load(&missing).err().unwrap());
        assert_eq!(
            e,
            format!(
                "{}: cannot read it: No such file or directory (os error 2)",
                missing.display()
            )
        );
        std::fs::write(&p, "[1]").unwrap();
        let e = format!("{:#}", OpenClawConfig::load(&p).err().unwrap());
        assert_eq!(
            e,
            format!("{}: the top level is not an object", p.display())
        );
        std::fs::write(&p, "{ $include: './agents.json5' }").unwrap();
        assert!(OpenClawConfig::load(&p).unwrap().uses_include());
    }
}
