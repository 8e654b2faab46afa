//! `claw-identity doctor`: is the identity layer why an agent gets no token?
//!
//! It reads the map through the plugin's own permission gate and parser
//! (`token_map::read_map`, `token_map::parse`), with the gate options the
//! plugin derives from its config, and, given an OpenClaw config, checks that
//! OpenClaw will load the plugin at all and that every configured agent has a
//! token. Each problem comes with its fix. Tokens appear only as fingerprints.
//! The output is deterministic (sorted, no clock) so it can be diffed.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::audit::Severity;
use super::config::{self, OpenClawConfig, PLUGIN_ID};
use super::{after_hook, mcp, writer, Found, Live};
use crate::redact::shown;
use crate::sandbox;
use crate::sys::Access;
use crate::token_map::{self, MapError, MapErrorKind, DEFAULT_MAX_MAP_BYTES};

pub struct DoctorArgs<'a> {
    /// `--map`: the map to check instead of the one the plugin reads.
    pub map: Option<&'a str>,
    /// `--config`: the gateway's `openclaw.json`.
    pub config: Option<&'a Path>,
    /// `--mcp`: what the owned MCP servers and OpenClaw's plugin list said.
    pub live: Option<&'a Live>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    /// Something that stops token injection for some or all agents.
    Fail,
    /// Not checked, because an earlier check failed.
    Skip,
    /// Worth knowing, changes nothing by itself.
    Info,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
            Status::Info => "info",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub status: Status,
    pub check: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRow {
    pub agent_id: String,
    /// sha256 fingerprint of its token; `None` for a configured agent without one.
    pub fingerprint: Option<String>,
    /// Whether `agents.entries` lists it; `None` without a config that lists agents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configured: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// No check failed: nothing found stops token injection.
    pub ok: bool,
    pub problems: usize,
    pub warnings: usize,
    /// The user the checks ran as (the gate's owner rule depends on it).
    pub uid: u32,
    pub map: String,
    pub config: Option<String>,
    pub map_loaded: bool,
    pub checks: Vec<Check>,
    pub agents: Vec<AgentRow>,
    /// What rules `map-access` and `layer-controls` keep out of the agents'
    /// tools' reach.
    pub guarded: Vec<Guarded>,
}

/// One location the agents' tools can't reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Guarded {
    pub rule: &'static str,
    pub what: &'static str,
    pub path: String,
    /// `read, write` or `write`: what the tools are refused.
    pub refused: &'static str,
}

/// The guarded locations, as the report lists them.
pub fn guarded(
    opts: &crate::options::Options,
    config: Option<&crate::ops::config::OpenClawConfig>,
) -> Vec<Guarded> {
    crate::ops::config::guarded_locations(opts, config)
        .into_iter()
        .map(|l| Guarded {
            rule: l.guard.rule(),
            what: l.what,
            path: format!(
                "{}{}",
                crate::paths::shown(&l.path),
                if l.dir { "/" } else { "" }
            ),
            refused: if l.secret { "read, write" } else { "write" },
        })
        .collect()
}

fn check(status: Status, check: &'static str, message: String, fix: Option<String>) -> Check {
    Check {
        status,
        check,
        message,
        fix,
    }
}

pub(crate) fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Mode and owner (or, on Windows, owner and DACL) of a file that passed the
/// gate, and of its directory.
fn permissions(path: &Path) -> String {
    let real = crate::sys::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    match (
        crate::sys::owner_at(&real),
        crate::sys::owner_at(&parent_of(&real)),
    ) {
        (Ok(Access::Unix(f)), Ok(Access::Unix(d))) => format!(
            "mode {:04o}, owner uid {}; directory mode {:04o}",
            f.mode, f.uid, d.mode
        ),
        (Ok(f), Ok(d)) => format!("{}; directory {}", f.describe(), d.describe()),
        _ => "changed while checking".into(),
    }
}

/// The gate's refusal, split into problem and fix.
pub(crate) fn gate_problem(e: &MapError, path: &Path) -> (String, String) {
    let p = crate::paths::shown(path);
    match e.kind {
        MapErrorKind::NotFound => (
            format!("{p}: not found"),
            format!("create it: claw-identity write-map --map {p} --from FILE (or, if the plugin reads another file, check that one: --map PATH or --config openclaw.json)"),
        ),
        MapErrorKind::Unsafe => (
            e.problem().to_owned(),
            e.fix.clone().unwrap_or_else(|| {
                "make the map 0600 and its directory 0700, owned by the gateway's user".into()
            }),
        ),
        MapErrorKind::TooLarge => (
            e.message.clone(),
            format!("check that this is the token map: the plugin refuses maps over {DEFAULT_MAX_MAP_BYTES} bytes"),
        ),
        MapErrorKind::Io | MapErrorKind::Invalid => (
            e.message.clone(),
            "run doctor as the gateway's user: the map and its directory must be readable by it".into(),
        ),
    }
}

fn content_fix(e: &MapError) -> String {
    e.fix.clone().unwrap_or_else(|| {
        "rewrite it as a JSON object {\"<agentId>\": \"<64 hex token>\"}; claw-identity write-map validates a map before it writes it".into()
    })
}

const ENTRY_FIX: &str = "correct or remove the entry: agent ids match ^[a-z0-9][a-z0-9_-]{0,63}$ and tokens are 64 hex characters; claw-identity write-map checks both before it writes";

/// Runs every check. Fails only when there is no map path to check (no
/// `--map`, and `~` cannot be expanded).
pub fn run(args: &DoctorArgs<'_>) -> Result<Report, String> {
    let mut checks = Vec::new();

    // The config first: a plugin OpenClaw does not load injects nothing.
    let config = match args.config {
        None => None,
        Some(path) => match OpenClawConfig::load(path) {
            Ok(c) => Some(c),
            Err(e) => {
                checks.push(check(
                    Status::Fail,
                    "config",
                    e,
                    Some("pass the gateway's config file (OPENCLAW_CONFIG_PATH; by default ~/.openclaw/openclaw.json)".into()),
                ));
                None
            }
        },
    };
    let configured = config.as_ref().and_then(OpenClawConfig::agents);
    let mut plugin_path = None;
    if let Some(c) = &config {
        if c.uses_include() {
            checks.push(check(
                Status::Warn,
                "config",
                "it uses $include; doctor reads only this file".into(),
                Some("check the included files by hand for the plugin entry and agents".into()),
            ));
        }
        let problems = c.enablement_problems();
        if problems.is_empty() {
            checks.push(check(
                Status::Ok,
                "plugin enabled",
                format!("plugins.entries.{PLUGIN_ID}.enabled is true"),
                None,
            ));
        }
        for p in problems {
            checks.push(check(
                Status::Fail,
                "plugin enabled",
                p.problem,
                Some(p.fix),
            ));
        }
        match config::plugin_options(Some(c), None) {
            Ok(o) => {
                let source = if c.plugin_options().is_some() {
                    "valid"
                } else {
                    "not set, so the defaults apply"
                };
                checks.push(check(
                    Status::Ok,
                    "plugin config",
                    format!("{source}; the plugin reads {}", crate::paths::shown(&o.token_map_path)),
                    None,
                ));
                plugin_path = Some(o.token_map_path);
            }
            Err(e) => checks.push(check(
                Status::Fail,
                "plugin config",
                format!("plugins.entries.{PLUGIN_ID}.config is invalid: {e}"),
                Some("correct it against the configSchema in the plugin's openclaw.plugin.json (OpenClaw validates it there)".into()),
            )),
        }
    }

    // The map the plugin reads (or --map), with the gate options it uses.
    let opts = config::plugin_options(config.as_ref(), args.map)
        .or_else(|_| config::plugin_options(None, args.map))?;
    let map_path = opts.token_map_path.clone();
    if let (Some(theirs), Some(_)) = (&plugin_path, args.map) {
        if *theirs != map_path {
            checks.push(check(
                Status::Warn,
                "map path",
                format!(
                    "the plugin reads {}, not this file",
                    crate::paths::shown(theirs)
                ),
                Some("drop --map to check the file the plugin reads".into()),
            ));
        }
    }
    let gate = opts.gate();

    let mut map = None;
    match token_map::read_map(&map_path, &gate) {
        Err(e) => {
            let (problem, fix) = gate_problem(&e, &map_path);
            checks.push(check(Status::Fail, "map file", problem, Some(fix)));
            checks.push(check(
                Status::Skip,
                "map content",
                "not checked: the plugin cannot read the file".into(),
                None,
            ));
        }
        Ok(file) => {
            checks.push(check(
                Status::Ok,
                "map file",
                format!("passes the permission gate ({})", permissions(&map_path)),
                None,
            ));
            for w in file.warnings {
                checks.push(check(
                    Status::Warn,
                    "map file",
                    w,
                    Some(format!("chmod 600 {}", crate::paths::shown(&map_path))),
                ));
            }
            match token_map::parse(&file.bytes) {
                Err(e) => {
                    let fix = content_fix(&e);
                    checks.push(check(Status::Fail, "map content", e.message, Some(fix)));
                }
                Ok(parsed) => {
                    let n = parsed.map.len();
                    if n == 0 && parsed.skipped.is_empty() {
                        checks.push(check(
                            Status::Fail,
                            "map content",
                            "the map holds no agents, so no call gets a token".into(),
                            Some(format!(
                                "add the agents' tokens: claw-identity write-map --map {} --from FILE",
                                crate::paths::shown(&map_path)
                            )),
                        ));
                    } else {
                        checks.push(check(
                            Status::Ok,
                            "map content",
                            format!(
                                "valid JSON; {n} agent{} with a well-formed token",
                                if n == 1 { "" } else { "s" }
                            ),
                            None,
                        ));
                    }
                    for s in parsed.skipped {
                        checks.push(check(Status::Fail, "map entry", s, Some(ENTRY_FIX.into())));
                    }
                    map = Some(parsed.map);
                }
            }
        }
    }
    for t in writer::leftover_temp_files(&map_path) {
        checks.push(check(
            Status::Warn,
            "temp file",
            format!(
                "{}: left by a writer that stopped before its rename (it is not the map)",
                crate::paths::shown(&t)
            ),
            Some(format!(
                "rm {} (once no writer is running)",
                crate::paths::shown(&t)
            )),
        ));
    }

    // Configured agents against the map.
    let mut rows: Vec<AgentRow> = map
        .as_ref()
        .map(|m| {
            m.sorted()
                .into_iter()
                .map(|(id, t)| AgentRow {
                    agent_id: id.to_owned(),
                    fingerprint: Some(t.fingerprint()),
                    configured: configured.as_ref().map(|c| c.iter().any(|a| a == id)),
                })
                .collect()
        })
        .unwrap_or_default();
    if config.is_some() {
        match (&configured, &map) {
            (None, _) => checks.push(check(
                Status::Skip,
                "configured agents",
                "the config lists no agents under agents.entries".into(),
                None,
            )),
            (Some(_), None) => checks.push(check(
                Status::Skip,
                "configured agents",
                "not checked: no map loaded".into(),
                None,
            )),
            (Some(agents), Some(m)) => {
                let missing: Vec<&String> = agents.iter().filter(|a| m.get(a).is_none()).collect();
                if missing.is_empty() {
                    checks.push(check(
                        Status::Ok,
                        "configured agents",
                        format!("all {} have a token", agents.len()),
                        None,
                    ));
                }
                for a in &missing {
                    checks.push(check(
                        Status::Fail,
                        "configured agent",
                        format!("agent \"{}\" is in agents.entries but has no token in the map", shown(a)),
                        Some(format!(
                            "mint its token and add it: claw-identity write-map --map {} --from FILE",
                            crate::paths::shown(&map_path)
                        )),
                    ));
                }
                for r in rows.iter().filter(|r| r.configured == Some(false)) {
                    checks.push(check(
                        Status::Warn,
                        "map agent",
                        format!(
                            "agent \"{}\" has a token but is not in agents.entries",
                            shown(&r.agent_id)
                        ),
                        Some("remove it from the map if that agent is gone".into()),
                    ));
                }
                rows.extend(missing.into_iter().map(|a| AgentRow {
                    agent_id: a.clone(),
                    fingerprint: None,
                    configured: Some(true),
                }));
                rows.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
            }
        }
    }

    if let Some(c) = &config {
        let probe = sandbox_probe(c, &opts);
        let posture = posture_of(c, &opts, probe.result.is_ok());
        checks.extend(posture_findings(&posture).into_iter().map(as_check));
        checks.extend(sandbox_checks(c, &opts.sandbox, &probe));
        checks.extend(after_hook::config_findings(c).into_iter().map(as_check));
    }
    if let Some(live) = args.live {
        match &config {
            Some(c) => {
                checks.extend(
                    mcp::findings(c, &opts, &live.servers)
                        .into_iter()
                        .map(as_check),
                );
                checks.extend(after_hook::plugin_findings(live).into_iter().map(as_check));
            }
            None => checks.push(check(
                Status::Skip,
                "mcp servers",
                "not checked: the MCP servers are the ones the gateway's config names".into(),
                Some("pass --config openclaw.json".into()),
            )),
        }
    }

    let problems = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warnings = checks.iter().filter(|c| c.status == Status::Warn).count();
    let map_shown = crate::paths::shown(&map_path).to_string();
    Ok(Report {
        ok: problems == 0,
        problems,
        warnings,
        uid: crate::sys::euid().unwrap_or(u32::MAX),
        map: map_shown,
        config: args.config.map(|p| crate::paths::shown(p).to_string()),
        map_loaded: map.is_some(),
        checks,
        agents: rows,
        guarded: guarded(&opts, config.as_ref()),
    })
}

/// A finding doctor and audit share, as one of doctor's checks.
fn as_check(f: Found) -> Check {
    let status = match f.severity {
        None => Status::Ok,
        Some(Severity::Info) => Status::Info,
        Some(Severity::Warn) => Status::Warn,
        Some(Severity::Critical) => Status::Fail,
    };
    check(status, f.label, f.detail, f.fix)
}

/// The checks whose failure sends a token out rather than stopping injection.
const LEAK_CHECKS: &[&str] = &["token export"];

/// Whether the `claw-identity` sandbox can run here, for this config (its
/// protected locations and workspaces, as the plugin would have them), as
/// the user doctor runs as.
pub(crate) fn sandbox_probe(c: &OpenClawConfig, opts: &crate::options::Options) -> sandbox::Probe {
    let engine = crate::engine::Engine::new(opts.clone());
    let table = c.agent_fs();
    engine.set_openclaw_facts(table.clone(), &c.files(&table));
    let host = sandbox::LiveHost::new();
    let inputs = sandbox::Inputs {
        workspace_hooks: engine.workspace_hooks(),
        ..sandbox::inputs(
            engine.protected_locations(),
            &engine.workspaces(),
            &opts.sandbox,
            &host,
        )
    };
    sandbox::probe(&host, &opts.sandbox, &inputs, &sandbox::gateway_path())
}

/// The posture of `c`'s agents for a plugin with `opts`, judged by the one
/// posture function the layer uses (`crate::posture::of_config`).
pub(crate) fn posture_of(
    c: &OpenClawConfig,
    opts: &crate::options::Options,
    own_sandbox_here: bool,
) -> crate::posture::Posture {
    let table = c.agent_fs();
    let protected = crate::protected::locations(&opts.token_map_path, &c.files(&table));
    crate::posture::of_config(
        opts.posture,
        c.root(),
        &table,
        &protected,
        &crate::posture::ConfigTools::new(c.root()),
        own_sandbox_here,
        &opts.tool_prefixes,
    )
}

/// The posture as findings doctor and audit share: one per agent that is
/// not contained (critical under `"enforce"`, which then serves no token; a
/// warning under `"warn"`), or one line that every agent is.
pub(crate) fn posture_findings(p: &crate::posture::Posture) -> Vec<Found> {
    use crate::posture::{display, Containment, Mode};
    let Some(agents) = &p.agents else {
        return Vec::new();
    };
    let enforce = p.mode == Mode::Enforce;
    let mut out: Vec<Found> = p
        .exposed()
        .map(|a| {
            let exposures = crate::posture::summarize(a.containment.as_ref().err().map_or(&[], |e| e));
            Found {
                id: "posture_exposed",
                severity: Some(if enforce { Severity::Critical } else { Severity::Warn }),
                label: "posture",
                title: if enforce {
                    "an agent's own tools can reach the token map or OpenClaw's config, so no token is served"
                } else {
                    "an agent's own tools can reach the token map or OpenClaw's config (posture \"warn\": tokens are served anyway)"
                },
                detail: crate::redact::scrub(&format!(
                    "{} not contained: {exposures}{}",
                    if a.agent_id == crate::posture::UNLISTED {
                        format!("{} (they run with agents.defaults and the global tools) are", display(&a.agent_id))
                    } else {
                        format!("agent {} is", display(&a.agent_id))
                    },
                    if enforce {
                        "; posture is \"enforce\", so every owned call is refused until every agent is contained"
                    } else {
                        ""
                    }
                )),
                fix: a.fix.as_ref().map(|f| crate::redact::scrub(f)),
            }
        })
        .collect();
    if out.is_empty() {
        let how: Vec<String> = agents
            .iter()
            .map(|a| {
                format!(
                    "{} ({})",
                    display(&a.agent_id),
                    match a.containment {
                        Ok(Containment::Sandbox) => "sandbox",
                        _ => "host, confined to its workspace",
                    }
                )
            })
            .collect();
        out.push(Found {
            id: "posture_contained",
            severity: None,
            label: "posture",
            title: "every agent is contained",
            detail: crate::redact::scrub(&format!("every agent is contained: {}", how.join(", "))),
            fix: None,
        });
    }
    out
}

/// For each agent whose sandbox is this plugin's: whether it can run here.
/// Where it can't, the agent's turns fail (nothing runs on the host).
pub(crate) fn sandbox_checks(
    c: &OpenClawConfig,
    opts: &sandbox::SandboxOptions,
    probe: &sandbox::Probe,
) -> Vec<Check> {
    let ours: Vec<String> = c
        .agent_reach(Path::new("/"))
        .into_iter()
        .filter(|a| a.sandbox_backend == sandbox::BACKEND_ID && a.sandbox_mode != "off")
        .map(|a| shown(&a.agent_id).to_string())
        .collect();
    if ours.is_empty() {
        return Vec::new();
    }
    let one = ours.len() == 1;
    let who = format!(
        "agent{} {}",
        if one { "" } else { "s" },
        ours.iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let (run, select, their) = if one {
        ("runs", "selects", "its")
    } else {
        ("run", "select", "their")
    };
    let uid = crate::sys::euid().unwrap_or(u32::MAX);
    let mut out = vec![match &probe.result {
        Ok(()) => check(
            Status::Ok,
            "sandbox",
            format!(
                "{who} {run} {their} commands in the {} sandbox; bubblewrap ({}) works here as uid {uid}",
                sandbox::BACKEND_ID,
                probe.bwrap.as_ref().map(|b| b.display().to_string()).unwrap_or_default()
            ),
            None,
        ),
        Err(r) => check(
            Status::Fail,
            "sandbox",
            format!(
                "{who} {select} the {} sandbox, which can't run here (as uid {uid}): {} {} turns fail, and nothing runs on the host instead",
                sandbox::BACKEND_ID,
                r.why,
                if one { "Its" } else { "Their" }
            ),
            Some(r.fix.clone()),
        ),
    }];
    if opts.network == sandbox::Network::Host {
        out.push(check(
            Status::Warn,
            "sandbox",
            "sandbox.network is \"host\": sandboxed commands reach the gateway's port and every other local service (they still can't read its token)".into(),
            Some(format!(
                "openclaw config unset plugins.entries.{PLUGIN_ID}.config.sandbox.network, unless the agents need the network"
            )),
        ));
    }
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Report {
    /// The human-readable report: header, one line per check (with its fix),
    /// the agents table, and a verdict.
    pub fn render(&self) -> String {
        let mut out = format!("claw-identity doctor (as uid {})\n", self.uid);
        out += &format!("  map     {}\n", self.map);
        if let Some(c) = &self.config {
            out += &format!("  config  {c}\n");
        }
        out.push('\n');
        for c in &self.checks {
            out += &format!("{:<5} {}: {}\n", c.status.word(), c.check, c.message);
            if let Some(fix) = &c.fix {
                out += &format!("      fix: {fix}\n");
            }
        }
        out.push('\n');
        if self.agents.is_empty() {
            out += if self.map_loaded {
                "agents: none in the map\n"
            } else {
                "agents: none (no map loaded)\n"
            };
        } else {
            let width = self
                .agents
                .iter()
                .map(|a| a.agent_id.len())
                .max()
                .unwrap_or(0)
                .max(5);
            let with_config = self.agents.iter().any(|a| a.configured.is_some());
            let mut rows = vec![(
                "AGENT".to_owned(),
                "TOKEN SHA256".to_owned(),
                "IN CONFIG".to_owned(),
            )];
            for a in &self.agents {
                rows.push((
                    shown(&a.agent_id),
                    a.fingerprint.clone().unwrap_or_else(|| "(no token)".into()),
                    match a.configured {
                        Some(true) => "yes".into(),
                        Some(false) => "no".into(),
                        None => String::new(),
                    },
                ));
            }
            for (id, fp, cfg) in rows {
                let line = if with_config {
                    format!("{id:<width$}  {fp:<12}  {cfg}")
                } else {
                    format!("{id:<width$}  {fp}")
                };
                out += line.trim_end();
                out.push('\n');
            }
        }
        out.push('\n');
        // Listed with a config: the paths of its includes and workspaces are part of it.
        if self.config.is_some() && !self.guarded.is_empty() {
            out += "guarded from the agents' own tools:\n";
            for g in &self.guarded {
                out += &format!(
                    "  {:<14} {:<11} {} ({})\n",
                    g.rule,
                    g.refused,
                    g.what,
                    shown(&g.path)
                );
            }
            out += &format!("  {}\n", crate::ops::config::PROCESS_LOCATIONS);
            out.push('\n');
        }
        let warnings = if self.warnings > 0 {
            format!(" ({})", plural(self.warnings, "warning", "warnings"))
        } else {
            String::new()
        };
        let leaks = self
            .checks
            .iter()
            .any(|c| c.status == Status::Fail && LEAK_CHECKS.contains(&c.check));
        if self.ok {
            out += &format!("healthy{warnings}: nothing found stops token injection\n");
        } else if leaks {
            out += &format!(
                "{} found{warnings}, and a token leaves the gateway; fix {} and run doctor again\n",
                plural(self.problems, "problem", "problems"),
                if self.problems == 1 { "it" } else { "them" },
            );
        } else {
            out += &format!(
                "{} stop{} token injection{warnings}; fix {} and run doctor again\n",
                plural(self.problems, "problem", "problems"),
                if self.problems == 1 { "s" } else { "" },
                if self.problems == 1 { "it" } else { "them" },
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token_map::tests::{T1, T2};
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "claw-identity-doctor-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    fn write(path: &Path, mode: u32, body: &str) {
        fs::write(path, body).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn doctor(map: &Path, config: Option<&Path>) -> Report {
        run(&DoctorArgs {
            map: Some(map.to_str().unwrap()),
            config,
            live: None,
        })
        .unwrap()
    }

    fn failed(r: &Report) -> Vec<(&'static str, &str)> {
        r.checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| (c.check, c.message.as_str()))
            .collect()
    }

    #[test]
    fn a_healthy_map_passes_and_lists_agents_by_fingerprint_only() {
        let d = tmpdir("ok");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"b": "{T2}", "a": "{T1}"}}"#));
        let r = doctor(&p, None);
        assert!(r.ok, "{}", r.render());
        let ids: Vec<_> = r.agents.iter().map(|a| a.agent_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(
            r.agents[0].fingerprint.as_deref(),
            Some(crate::redact::fingerprint(T1).as_str())
        );
        let text = r.render();
        assert!(
            !text.contains(&T1[..16]) && !text.contains(&T2[..16]),
            "{text}"
        );
        assert!(
            text.ends_with("healthy: nothing found stops token injection\n"),
            "{text}"
        );
    }

    #[test]
    fn each_gate_refusal_is_one_problem_with_its_fix() {
        let d = tmpdir("gate");
        let p = d.join("m.json");
        let r = doctor(&p, None);
        assert_eq!(
            failed(&r),
            [(
                "map file",
                format!("{}: not found", crate::paths::shown(&p)).as_str()
            )]
        );
        assert!(r.checks[0]
            .fix
            .as_ref()
            .unwrap()
            .starts_with("create it: claw-identity write-map"));
        assert_eq!(r.checks[1].status, Status::Skip);

        write(&p, 0o644, "{}");
        let r = doctor(&p, None);
        assert_eq!(
            r.checks[0].message,
            format!(
                "{}: is readable by group or others (mode 0644); refusing to load it",
                crate::paths::shown(&p)
            )
        );
        assert!(r.checks[0]
            .fix
            .as_ref()
            .unwrap()
            .starts_with(&format!("chmod 600 {}", crate::paths::shown(&p))));

        write(&p, 0o600, "{}");
        fs::set_permissions(&d, fs::Permissions::from_mode(0o757)).unwrap();
        let r = doctor(&p, None);
        assert_eq!(
            r.checks[0].fix.as_deref(),
            Some(format!("chmod go-w {}", crate::paths::shown(&d)).as_str())
        );
    }

    #[test]
    fn content_problems_are_reported_with_fixes() {
        let d = tmpdir("content");
        let p = d.join("m.json");
        write(&p, 0o600, "{");
        assert_eq!(failed(&doctor(&p, None))[0].0, "map content");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}", "a": "{T2}"}}"#));
        let r = doctor(&p, None);
        assert!(r.checks[1]
            .fix
            .as_ref()
            .unwrap()
            .starts_with("keep one entry per agent"));
        write(
            &p,
            0o600,
            &format!(r#"{{"paco--francis": "{T1}", "pepito--atlas": "{T1}"}}"#),
        );
        let r = doctor(&p, None);
        assert_eq!(r.checks[1].status, Status::Fail);
        assert!(r.checks[1].message.starts_with(
            "agents \"paco--francis\" and \"pepito--atlas\" have the same token (sha256:"
        ));
        assert!(r.checks[1]
            .fix
            .as_ref()
            .unwrap()
            .starts_with("mint a token for each agent"));
        assert!(!r.map_loaded && r.agents.is_empty());
        write(
            &p,
            0o600,
            &format!(r#"{{"a": "{T1}", "B": "{T2}", "c": 1}}"#),
        );
        let r = doctor(&p, None);
        assert_eq!(failed(&r).len(), 2);
        assert_eq!(r.agents.len(), 1);
        write(&p, 0o600, "{}");
        assert_eq!(
            failed(&doctor(&p, None)),
            [(
                "map content",
                "the map holds no agents, so no call gets a token"
            )]
        );
    }

    #[test]
    fn the_config_drives_enablement_options_and_configured_agents() {
        let d = tmpdir("config");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}", "old": "{T2}"}}"#));
        let c = d.join("openclaw.json");
        fs::write(
            &c,
            format!(
                "{{ plugins: {{ entries: {{ 'claw-identity': {{ enabled: true, config: {{ tokenMapPath: '{}', posture: 'warn' }} }} }} }},
                   agents: {{ entries: {{ a: {{}}, ghost: {{}} }} }} }}",
                crate::paths::shown(&p)
            ),
        )
        .unwrap();
        let r = run(&DoctorArgs {
            map: None,
            config: Some(&c),
            live: None,
        })
        .unwrap();
        assert_eq!(r.map, crate::paths::shown(&p).to_string());
        assert_eq!(
            failed(&r),
            [(
                "configured agent",
                "agent \"ghost\" is in agents.entries but has no token in the map"
            )]
        );
        let rows: Vec<_> = r
            .agents
            .iter()
            .map(|a| (a.agent_id.as_str(), a.fingerprint.is_some(), a.configured))
            .collect();
        assert_eq!(
            rows,
            [
                ("a", true, Some(true)),
                ("ghost", false, Some(true)),
                ("old", true, Some(false))
            ]
        );
        // "old" is not configured; "a" and "ghost" have exec on the host,
        // where a backgrounded command's output reaches them as a notice;
        // neither is contained, nor are the agents the roster doesn't list
        // (posture "warn": warnings).
        let mut warned: Vec<&str> = r
            .checks
            .iter()
            .filter(|c| c.status == Status::Warn)
            .map(|c| c.check)
            .collect();
        warned.sort_unstable();
        assert_eq!(
            warned,
            ["exec notices", "map agent", "posture", "posture", "posture"],
            "{}",
            r.render()
        );

        let other = d.join("other.json");
        write(
            &other,
            0o600,
            &format!(r#"{{"a": "{T1}", "ghost": "{T2}"}}"#),
        );
        let r = doctor(&other, Some(&c));
        assert!(r.ok, "{}", r.render());
        assert!(r
            .checks
            .iter()
            .any(|c| c.check == "map path" && c.status == Status::Warn));
    }

    #[test]
    fn a_missing_or_broken_config_is_a_problem() {
        let d = tmpdir("badconfig");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}"}}"#));
        let r = doctor(&p, Some(&d.join("nope.json")));
        assert_eq!(failed(&r)[0].0, "config");
        let c = d.join("openclaw.json");
        fs::write(&c, "{ plugins: { entries: { 'claw-identity': { enabled: true, config: { tokenMap: 1 } } } } }").unwrap();
        let r = doctor(&p, Some(&c));
        assert_eq!(failed(&r)[0].0, "plugin config");
        assert!(r.map_loaded, "the map is still checked");
    }

    #[test]
    fn with_mcp_doctor_names_each_schema_problem_and_the_plugins_that_get_the_token() {
        let d = tmpdir("mcp");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}"}}"#));
        let c = d.join("openclaw.json");
        let body = |otel: bool| {
            format!(
                r#"{{ plugins: {{ entries: {{ 'claw-identity': {{ enabled: true, config: {{ tokenMapPath: "{}" }} }} }} }},
                   tools: {{ codeMode: false }},
                   diagnostics: {{ otel: {{ enabled: true, captureContent: {otel} }} }},
                   agents: {{ defaults: {{ sandbox: {{ mode: "all" }} }}, entries: {{ a: {{}} }} }},
                   mcp: {{ servers: {{ "claw-os": {{ command: "node" }} }} }} }}"#,
                crate::paths::shown(&p)
            )
        };
        fs::write(&c, body(false)).unwrap();
        let live: Live = serde_json::from_value(serde_json::json!({ "servers": [{ "server": "claw-os", "tools": [
            { "name": "notes", "inputSchema": { "properties": { "auth_token": {}, "_conversation_id": {} } } },
            { "name": "legacy", "inputSchema": { "properties": { "auth_token": {}, "_conversation_id": {} }, "required": ["auth_token"] } }] }] }))
        .unwrap();
        let r = run(&DoctorArgs {
            map: None,
            config: Some(&c),
            live: Some(&live),
        })
        .unwrap();
        let text = r.render();
        assert!(r.ok, "{text}");
        assert!(text.contains("ok    mcp tool: claw-os__notes (server \"claw-os\") declares auth_token and _conversation_id, optional"), "{text}");
        assert!(
            text.contains(
                "warn  mcp tool: claw-os__legacy (server \"claw-os\") lists auth_token in required"
            ),
            "{text}"
        );
        assert!(
            text.contains("info  token readers: this command runs without OpenClaw"),
            "{text}"
        );
        assert!(
            text.ends_with("healthy (1 warning): nothing found stops token injection\n"),
            "{text}"
        );

        // An OTEL export fails doctor, and the verdict says why.
        fs::write(&c, body(true)).unwrap();
        let r = run(&DoctorArgs {
            map: None,
            config: Some(&c),
            live: None,
        })
        .unwrap();
        let text = r.render();
        assert!(!r.ok);
        assert!(
            text.contains("FAIL  token export: diagnostics.otel.captureContent is true"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "1 problem found, and a token leaves the gateway; fix it and run doctor again\n"
            ),
            "{text}"
        );
        assert!(
            !text.contains("mcp tool"),
            "no --mcp, no schema checks: {text}"
        );
    }

    #[test]
    fn a_leftover_temp_file_is_a_warning_not_a_problem() {
        let d = tmpdir("temp");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}"}}"#));
        write(&d.join(".m.json.tmp-7-0-00000000"), 0o600, "{");
        let r = doctor(&p, None);
        assert!(r.ok);
        assert_eq!(r.warnings, 1);
        assert!(r.render().contains("healthy (1 warning)"));
    }

    #[test]
    fn every_agent_that_is_not_contained_is_a_problem_with_the_config_that_contains_it() {
        let d = tmpdir("exposure");
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"shell": "{T1}"}}"#));
        let c = d.join("openclaw.json");
        let body = |posture: &str| {
            format!(
                r#"{{ plugins: {{ entries: {{ 'claw-identity': {{ enabled: true, config: {{ posture: "{posture}" }} }} }} }},
                   tools: {{ codeMode: false }},
                   agents: {{ defaults: {{ sandbox: {{ mode: "all", backend: "claw-identity" }} }}, entries: {{
                     shell: {{ sandbox: {{ mode: "non-main" }} }},
                     boxed: {{}},
                     mounted: {{ sandbox: {{ backend: "docker", docker: {{ binds: ["{}:/m:ro"] }} }} }},
                   }} }} }}"#,
                crate::paths::shown(&d)
            )
        };
        fs::write(&c, body("enforce")).unwrap();
        let r = doctor(&p, Some(&c));
        let found: Vec<(Status, &str, &str)> = r
            .checks
            .iter()
            .filter(|c| c.check == "posture")
            .map(|c| (c.status, c.message.as_str(), c.fix.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        let (st, msg, fix) = found[0];
        assert_eq!(st, Status::Fail);
        assert!(
            msg.starts_with("agent mounted is not contained: its sandbox mounts"),
            "{msg}"
        );
        assert!(msg.contains("which holds the token map ("), "{msg}");
        // bubblewrap works here or not: its own backend masks the map; else the bind goes.
        assert!(
            fix.contains(r#"openclaw config set agents.entries.mounted.sandbox '{"backend":"claw-identity","mode":"all"}'"#)
                || fix.contains("remove it from agents.entries.mounted.sandbox.docker.binds"),
            "{fix}"
        );
        let (st, msg, fix) = found[1];
        assert_eq!(st, Status::Fail);
        assert!(msg.starts_with("agent shell is not contained: its main session (direct chats, heartbeats) runs on the host, outside the sandbox (agents.entries.shell.sandbox.mode)"), "{msg}");
        assert!(
            fix.contains("openclaw config set agents.entries.shell.sandbox '"),
            "{fix}"
        );
        assert!(!r.ok, "no token is served: doctor fails");

        fs::write(&c, body("warn")).unwrap();
        let r = doctor(&p, Some(&c));
        let statuses: Vec<Status> = r
            .checks
            .iter()
            .filter(|c| c.check == "posture")
            .map(|c| c.status)
            .collect();
        assert_eq!(statuses, [Status::Warn, Status::Warn]);
    }

    #[test]
    fn a_contained_config_is_one_ok_line_naming_how_each_agent_is_contained() {
        let d = tmpdir("contained");
        let p = d.join("m.json");
        write(&p, 0o600, &format!(r#"{{"a": "{T1}"}}"#));
        let c = d.join("openclaw.json");
        fs::write(
            &c,
            r#"{ plugins: { entries: { 'claw-identity': { enabled: true } } },
                 tools: { codeMode: false },
                 agents: { defaults: { sandbox: { mode: "all", backend: "claw-identity" } }, entries: { a: {} } } }"#,
        )
        .unwrap();
        let r = doctor(&p, Some(&c));
        let posture: Vec<&Check> = r.checks.iter().filter(|c| c.check == "posture").collect();
        assert_eq!(posture.len(), 1, "{posture:#?}");
        assert_eq!(posture[0].status, Status::Ok);
        assert_eq!(
            posture[0].message,
            "every agent is contained: a (sandbox), the agents the roster doesn't list (sandbox)"
        );
    }

    fn probe(ok: bool) -> sandbox::Probe {
        sandbox::Probe {
            bwrap: ok.then(|| PathBuf::from("/usr/bin/bwrap")),
            result: if ok {
                Ok(())
            } else {
                Err(sandbox::Refusal {
                    why: "bubblewrap (bwrap) is not installed here.".into(),
                    fix: "install bubblewrap".into(),
                })
            },
        }
    }

    #[test]
    fn a_sandbox_that_is_selected_but_cant_run_is_a_problem_with_its_fix() {
        let c = OpenClawConfig::from_text(
            "{ agents: { defaults: { sandbox: { backend: 'Claw-Identity', mode: 'all' } }, entries: { a: {}, b: { sandbox: { mode: 'off' } }, c: { sandbox: { backend: 'docker' } } } } }",
        );
        let opts = sandbox::SandboxOptions::default();
        let bad = sandbox_checks(&c, &opts, &probe(false));
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].status, Status::Fail);
        assert!(
            bad[0]
                .message
                .starts_with("agent \"a\" selects the claw-identity sandbox, which can't run here"),
            "{}",
            bad[0].message
        );
        assert!(
            bad[0].message.ends_with("nothing runs on the host instead"),
            "{}",
            bad[0].message
        );
        assert_eq!(bad[0].fix.as_deref(), Some("install bubblewrap"));
        let good = sandbox_checks(&c, &opts, &probe(true));
        assert_eq!(good[0].status, Status::Ok);
        let host = sandbox::SandboxOptions {
            network: sandbox::Network::Host,
            ..Default::default()
        };
        let warned = sandbox_checks(&c, &host, &probe(true));
        assert_eq!(warned[1].status, Status::Warn);
        assert!(sandbox_checks(&OpenClawConfig::from_text("{}"), &opts, &probe(false)).is_empty());
    }
}
