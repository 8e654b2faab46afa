//! The checks doctor and audit share, as a list. Each is a function from
//! [`Inputs`] (gathered once: the config, the plugin's options, the map read
//! once through the plugin's own gate, the posture, the sandbox probe, what
//! `--mcp` found) to findings, and each runs once. doctor and audit are two
//! views over the result (`ops::doctor`, `ops::audit`; `ops::render` writes
//! them out).

mod config;
mod exposure;
mod map;

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use super::finding::Finding;
use super::{after_hook, mcp, Live};
use crate::openclaw::config::{self as openclaw, OpenClawConfig};
use crate::options::Options;
use crate::sandbox;
use crate::token_map::{self, MapError, MapFile, Parsed};

/// What the checks judge, gathered once.
pub struct Inputs<'a> {
    /// The config, or why it could not be read.
    pub config: Option<anyhow::Result<OpenClawConfig>>,
    /// `--map`: the map to check instead of the one the plugin reads.
    pub map_arg: Option<&'a str>,
    /// The plugin's options as the config sets them, or why they are invalid.
    pub plugin: Option<anyhow::Result<Options>>,
    /// The options the checks use: the plugin's, with `--map`; the defaults
    /// where the config's are invalid.
    pub opts: Options,
    /// The map, through the plugin's own gate; parsed when it passed.
    pub file: Result<MapFile, MapError>,
    pub parsed: Option<Result<Parsed, MapError>>,
    /// The agents `agents.entries` lists.
    pub configured: Option<Vec<String>>,
    /// What the agents' own tools can't reach.
    pub guarded: Vec<Guarded>,
    /// Whether the claw-identity sandbox can run here (with a config).
    pub probe: Option<sandbox::Probe>,
    /// The agents' posture (with a config).
    pub posture: Option<crate::posture::Posture>,
    /// What `--mcp` gathered.
    pub live: Option<&'a Live>,
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

impl<'a> Inputs<'a> {
    /// Reads the config, the map and the host once. Fails only when there is
    /// no map path to check (no `--map`, and `~` cannot be expanded).
    pub fn gather(
        config_path: Option<&'a Path>,
        map_arg: Option<&'a str>,
        live: Option<&'a Live>,
    ) -> anyhow::Result<Self> {
        let config = config_path.map(OpenClawConfig::load);
        let loaded = config.as_ref().and_then(|c| c.as_ref().ok());
        let plugin = loaded.map(|c| openclaw::plugin_options(Some(c), None));
        let opts = openclaw::plugin_options(loaded, map_arg)
            .or_else(|_| openclaw::plugin_options(None, map_arg))
            .context("no token map to check")?;
        let file = token_map::read_map(&opts.token_map_path, &opts.gate());
        let parsed = file.as_ref().ok().map(|f| token_map::parse(&f.bytes));
        let (probe, posture) = match loaded {
            Some(c) => {
                let probe = exposure::sandbox_probe(c, &opts);
                let posture = exposure::posture_of(c, &opts, probe.result.is_ok());
                (Some(probe), Some(posture))
            }
            None => (None, None),
        };
        Ok(Self {
            configured: loaded.and_then(OpenClawConfig::agents),
            guarded: guarded(&opts, loaded),
            plugin,
            opts,
            file,
            parsed,
            probe,
            posture,
            live,
            map_arg,
            config,
        })
    }

    /// The config, when it was given and could be read.
    pub fn config(&self) -> Option<&OpenClawConfig> {
        self.config.as_ref().and_then(|c| c.as_ref().ok())
    }

    /// The map the checks read.
    pub fn map_path(&self) -> &Path {
        &self.opts.token_map_path
    }

    /// The map, when it passed the gate and parsed.
    pub fn map(&self) -> Option<&token_map::TokenMap> {
        match &self.parsed {
            Some(Ok(p)) => Some(&p.map),
            _ => None,
        }
    }
}

/// The checks, in the order doctor prints them. A check that does not apply
/// to the inputs returns nothing.
const CHECKS: &[fn(&Inputs<'_>) -> Vec<Finding>] = &[
    config::readable,
    config::enabled,
    config::options,
    map::path,
    map::file,
    map::content,
    map::temp_files,
    map::agents,
    map::allow_group_readable,
    map::pass_with_unknown_agents,
    config::session_reach,
    config::layer_controls,
    config::guarded_locations,
    exposure::posture,
    exposure::sandbox,
    after_hook_config,
    proxy_routes,
    live_mcp,
    live_plugins,
];

/// Every check, once each.
pub fn all(inputs: &Inputs<'_>) -> Vec<Finding> {
    CHECKS.iter().flat_map(|check| check(inputs)).collect()
}

/// Only the checks of the config itself: what audit reports when the
/// plugin can't start, since the rest would judge options it doesn't have.
pub fn config_only(inputs: &Inputs<'_>) -> Vec<Finding> {
    [config::readable, config::enabled, config::options]
        .iter()
        .flat_map(|check| check(inputs))
        .collect()
}

fn after_hook_config(i: &Inputs<'_>) -> Vec<Finding> {
    i.config()
        .map(|c| after_hook::config_findings(c, &i.opts))
        .unwrap_or_default()
}

fn proxy_routes(i: &Inputs<'_>) -> Vec<Finding> {
    i.config()
        .map(|c| mcp::proxy_routes(c, &i.opts))
        .unwrap_or_default()
}

fn live_mcp(i: &Inputs<'_>) -> Vec<Finding> {
    let Some(live) = i.live else {
        return Vec::new();
    };
    match i.config() {
        Some(c) => {
            let mut out = mcp::findings(c, &i.opts, &live.servers);
            out.extend(mcp::seen_through_proxy(
                &i.opts,
                live.proxied.as_deref(),
                live.proxied_error.as_deref(),
            ));
            out
        }
        None => vec![Finding::doctor(
            "mcp_unchecked",
            super::finding::Severity::Skip,
            "mcp servers",
            "not checked: the MCP servers are the ones the gateway's config names",
            Some("pass --config openclaw.json".into()),
        )],
    }
}

fn live_plugins(i: &Inputs<'_>) -> Vec<Finding> {
    match (i.live, i.config()) {
        (Some(live), Some(_)) => after_hook::plugin_findings(live, &i.opts),
        _ => Vec::new(),
    }
}

/// The guarded locations, as doctor's report and audit's listing show them.
fn guarded(opts: &Options, config: Option<&OpenClawConfig>) -> Vec<Guarded> {
    openclaw::guarded_locations(opts, config)
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

pub(crate) fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
