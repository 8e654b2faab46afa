//! Operator tools: `claw-identity doctor`, `claw-identity explain` and the
//! atomic map writer (`writeTokenMap`, `claw-identity write-map`). Pure Rust
//! over the very gate, parser and engine the plugin uses, so what they report
//! is what the plugin does; `lib.rs` wraps them for JavaScript.

pub mod after_hook;
pub mod audit;
pub mod config;
pub mod doctor;
pub mod explain;
pub mod mcp;
pub mod writer;

use serde::Deserialize;
use serde_json::Value;

use audit::Severity;

/// One result of a check that doctor and audit share: doctor prints it
/// under `label` (an `ok` line when `severity` is `None`), audit reports it
/// as `claw-identity.<id>` with `title` (and leaves the `None` ones out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub id: &'static str,
    pub severity: Option<Severity>,
    pub label: &'static str,
    pub title: &'static str,
    pub detail: String,
    pub fix: Option<String>,
}

/// What only a live system can tell, gathered by the JS side for
/// `doctor --mcp` and `audit --mcp` (lib/probe.js): each owned MCP server's
/// tool list, and OpenClaw's own list of loaded plugins with their hooks.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Live {
    /// One answer per server of [`mcp::plan`], by server name.
    #[serde(default)]
    pub servers: Vec<mcp::Probe>,
    /// `openclaw plugins inspect --all --runtime --json`, as it printed it.
    #[serde(default)]
    pub plugins: Option<Vec<Value>>,
    /// Why `plugins` is missing, when OpenClaw was asked and did not answer.
    #[serde(default)]
    pub plugins_error: Option<String>,
}
