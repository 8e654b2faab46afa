//! What this crate mirrors of OpenClaw 2026.9.6's own internals, in one
//! place: how OpenClaw resolves an agent's roster, sandbox, tool policy and
//! file-system confinement. Every function here follows a named function of
//! the pinned package (`.cache/openclaw/node_modules/openclaw/dist/`), and
//! says which: when OpenClaw changes, these are the files to read again.
//!
//! Where OpenClaw offers a resolver to plugins, the plugin calls it instead
//! (lib/plugin.js); what is here is what it does not offer.

pub mod agent;
pub mod agent_ids;
pub mod base64;
pub mod cli_backends;
pub mod code_mode;
pub mod config;
pub mod cron;
pub mod mcp;
pub mod params;
pub mod paths;
pub mod plugins;
pub mod roster;
pub mod sandbox_contract;
pub mod sandbox_tools;
pub mod tool_names;
pub mod tool_policy;
pub mod tools;
