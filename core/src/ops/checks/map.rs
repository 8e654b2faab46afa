//! Checks of the token map: the file through the plugin's own gate, its
//! content, leftovers of a writer, and the map against the configured agents.
//! The map is read once, in [`Inputs::gather`]; these only judge it.

use std::path::Path;

use super::{parent_of, Inputs};
use crate::openclaw::config::PLUGIN_ID;
use crate::ops::finding::{Finding, Severity};
use crate::ops::writer;
use crate::options::OnMissingToken;
use crate::redact::shown;
use crate::sys::Access;
use crate::token_map::{MapError, MapErrorKind, DEFAULT_MAX_MAP_BYTES};

const ENTRY_FIX: &str = "correct or remove the entry: agent ids match ^[a-z0-9][a-z0-9_-]{0,63}$ and tokens are 64 hex characters; claw-identity write-map checks both before it writes";

/// `--map` names another file than the one the plugin reads.
pub(super) fn path(i: &Inputs<'_>) -> Vec<Finding> {
    match (&i.plugin, i.map_arg) {
        (Some(Ok(theirs)), Some(_)) if theirs.token_map_path != i.opts.token_map_path => {
            vec![Finding::doctor(
                "map_path_other",
                Severity::Warn,
                "map path",
                format!(
                    "the plugin reads {}, not this file",
                    crate::paths::shown(&theirs.token_map_path)
                ),
                Some("drop --map to check the file the plugin reads".into()),
            )]
        }
        _ => Vec::new(),
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
fn gate_problem(e: &MapError, path: &Path) -> (String, String) {
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

/// The map's file passes the plugin's permission gate.
pub(super) fn file(i: &Inputs<'_>) -> Vec<Finding> {
    let path = i.map_path();
    let shown_path = crate::paths::shown(path);
    match &i.file {
        Err(e) => {
            let (problem, fix) = gate_problem(e, path);
            vec![if e.kind == MapErrorKind::Unsafe {
                Finding::new(
                    "map_permissions",
                    Severity::Critical,
                    "map file",
                    "the token map's permissions or owner are unsafe, so the plugin refuses it",
                    problem,
                    Some(fix),
                )
            } else {
                Finding::new(
                    "map_unreadable",
                    Severity::Fail,
                    "map file",
                    "the plugin cannot read the token map, so no agent gets its token",
                    problem,
                    Some(fix),
                )
            }]
        }
        Ok(file) => std::iter::once(Finding::doctor(
            "map_file",
            Severity::Pass,
            "map file",
            format!("passes the permission gate ({})", permissions(path)),
            None,
        ))
        .chain(file.warnings.iter().map(|w| {
            Finding::new(
                "map_group_readable",
                Severity::Warn,
                "map file",
                "the token map is readable by other users on the host",
                w.clone(),
                Some(format!("chmod 600 {shown_path}")),
            )
        }))
        .collect(),
    }
}

/// The map's content is a map the plugin serves tokens from.
pub(super) fn content(i: &Inputs<'_>) -> Vec<Finding> {
    let parsed = match &i.parsed {
        None => {
            return vec![Finding::doctor(
                "map_content",
                Severity::Skip,
                "map content",
                "not checked: the plugin cannot read the file",
                None,
            )]
        }
        Some(Err(e)) => {
            return vec![Finding::doctor(
                "map_invalid",
                Severity::Fail,
                "map content",
                e.problem(),
                Some(e.fix.clone().unwrap_or_else(|| {
                    "rewrite it as a JSON object {\"<agentId>\": \"<64 hex token>\"}; claw-identity write-map validates a map before it writes it".into()
                })),
            )]
        }
        Some(Ok(p)) => p,
    };
    let n = parsed.map.len();
    let first = if n == 0 && parsed.skipped.is_empty() {
        Finding::doctor(
            "map_empty",
            Severity::Fail,
            "map content",
            "the map holds no agents, so no call gets a token",
            Some(format!(
                "add the agents' tokens: claw-identity write-map --map {} --from FILE",
                crate::paths::shown(i.map_path())
            )),
        )
    } else {
        Finding::doctor(
            "map_content",
            Severity::Pass,
            "map content",
            format!(
                "valid JSON; {n} agent{} with a well-formed token",
                if n == 1 { "" } else { "s" }
            ),
            None,
        )
    };
    std::iter::once(first)
        .chain(parsed.skipped.iter().map(|s| {
            Finding::doctor(
                "map_entry_invalid",
                Severity::Fail,
                "map entry",
                s.clone(),
                Some(ENTRY_FIX.into()),
            )
        }))
        .collect()
}

/// Temporary files a writer left next to the map.
pub(super) fn temp_files(i: &Inputs<'_>) -> Vec<Finding> {
    writer::leftover_temp_files(i.map_path())
        .into_iter()
        .map(|t| {
            let t = crate::paths::shown(&t);
            Finding::doctor(
                "temp_file",
                Severity::Warn,
                "temp file",
                format!("{t}: left by a writer that stopped before its rename (it is not the map)"),
                Some(format!("rm {t} (once no writer is running)")),
            )
        })
        .collect()
}

/// Every configured agent has a token, and every agent of the map is configured.
pub(super) fn agents(i: &Inputs<'_>) -> Vec<Finding> {
    if i.config.is_none() {
        return Vec::new();
    }
    let skip = |detail: &str| {
        vec![Finding::doctor(
            "configured_agents",
            Severity::Skip,
            "configured agents",
            detail,
            None,
        )]
    };
    let Some(agents) = &i.configured else {
        return skip("the config lists no agents under agents.entries");
    };
    let Some(map) = i.map() else {
        return skip("not checked: no map loaded");
    };
    let missing: Vec<&String> = agents.iter().filter(|a| map.get(a).is_none()).collect();
    let mut out = Vec::new();
    if missing.is_empty() {
        out.push(Finding::doctor(
            "configured_agents",
            Severity::Pass,
            "configured agents",
            format!("all {} have a token", agents.len()),
            None,
        ));
    }
    for a in missing {
        out.push(Finding::doctor(
            "agent_without_token",
            Severity::Fail,
            "configured agent",
            format!(
                "agent \"{}\" is in agents.entries but has no token in the map",
                shown(a)
            ),
            Some(format!(
                "mint its token and add it: claw-identity write-map --map {} --from FILE",
                crate::paths::shown(i.map_path())
            )),
        ));
    }
    for (id, _) in map.sorted() {
        if !agents.iter().any(|a| a == id) {
            out.push(Finding::doctor(
                "map_agent_unconfigured",
                Severity::Warn,
                "map agent",
                format!(
                    "agent \"{}\" has a token but is not in agents.entries",
                    shown(id)
                ),
                Some("remove it from the map if that agent is gone".into()),
            ));
        }
    }
    out
}

/// `allowGroupReadable`: the plugin accepts a map other users can read.
pub(super) fn allow_group_readable(i: &Inputs<'_>) -> Vec<Finding> {
    if i.config().is_none() || !i.opts.allow_group_readable {
        return Vec::new();
    }
    let key = format!("plugins.entries.{PLUGIN_ID}.config");
    let map = crate::paths::shown(i.map_path());
    vec![Finding::audit(
        "allow_group_readable",
        Severity::Warn,
        "allowGroupReadable is on: the plugin accepts a token map that other users can read",
        format!("{key}.allowGroupReadable is true, so a map readable by group or others ({map}) is used with only a warning"),
        Some(format!("chmod 600 {map} and openclaw config unset {key}.allowGroupReadable (for a Kubernetes secret volume, set defaultMode: 0400)")),
    )]
}

/// `onMissingToken: "pass"` with a map that has agents the config doesn't.
pub(super) fn pass_with_unknown_agents(i: &Inputs<'_>) -> Vec<Finding> {
    let (Some(agents), Some(map)) = (&i.configured, i.map()) else {
        return Vec::new();
    };
    if i.opts.on_missing_token != OnMissingToken::Pass {
        return Vec::new();
    }
    let unknown: Vec<String> = map
        .sorted()
        .into_iter()
        .filter(|(a, _)| !agents.iter().any(|c| c == a))
        .map(|(a, _)| format!("\"{}\"", shown(a)))
        .collect();
    if unknown.is_empty() {
        return Vec::new();
    }
    let key = format!("plugins.entries.{PLUGIN_ID}.config");
    vec![Finding::audit(
        "pass_with_unknown_agents",
        Severity::Warn,
        "onMissingToken is \"pass\" while the map and the config disagree on the agents",
        format!(
            "the map has agents that agents.entries does not ({}): the map is out of step with the config, and with \"pass\" an agent that has no token (renamed, or added without one) calls the MCP tools without any token instead of being refused",
            unknown.join(", ")
        ),
        Some(format!("openclaw config set {key}.onMissingToken block; and remove the agents that are gone from the map (claw-identity write-map)")),
    )]
}
