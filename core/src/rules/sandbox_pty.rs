//! Rule `sandbox-pty`: OpenClaw 2026.9.6 gives a sandboxed command no
//! terminal and does not tell the sandbox backend one was asked for
//! (`bash-tools-*.mjs`: `usePty = params.pty === true && !sandbox`). An
//! `exec` with `pty: true` therefore carries the marker
//! [`crate::sandbox::PTY_MARKER`] in its `env`, which reaches the
//! backend's `buildExecSpec` with the command's environment; the
//! `claw-identity` backend takes it out and runs the command in a terminal
//! of its own. On the gateway's host OpenClaw opens the terminal itself, and
//! the marker is one more variable.

use super::Reads;
use serde_json::Value;

use super::{Context, Decision, Patch, ToolCall};

use crate::sandbox::PTY_MARKER;

pub const RULE_ID: &str = crate::call::rule_id::SANDBOX_PTY;

/// The params this rule reads.
pub const READS: &[&str] = &["pty", "env"];

pub fn decide<'a>(_: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    if call.tool != "exec" || call.params.get("pty") != Some(&Value::Bool(true)) {
        return Decision::pass();
    }
    let mut env = match call.params.get("env") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(o)) => o.clone(),
        // OpenClaw refuses it: nothing to add to.
        Some(_) => return Decision::pass(),
    };
    if env.get(PTY_MARKER) == Some(&Value::String("1".into())) {
        return Decision::pass();
    }
    env.insert(PTY_MARKER.into(), Value::String("1".into()));
    Decision::rewrite(
        RULE_ID,
        Patch {
            params: vec![("env", Value::Object(env))],
            ..Patch::default()
        },
    )
}
