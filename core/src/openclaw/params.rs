//! A tool call's params, and how OpenClaw's tools read one.

use serde_json::Value;

use crate::paths::js_trim;

/// Tool parameters as JSON. Only rules that read params get them; on the hot
/// path (an MCP tool call) the map is empty and unused.
pub type Params = serde_json::Map<String, Value>;

/// A string param read the way OpenClaw's `readToolStringParam` reads it:
/// the camelCase key first, then its snake_case spelling; trimmed; empty or
/// not a string means absent (OpenClaw ignores a non-string there too).
pub fn str_param<'a>(params: &'a Params, camel: &str, snake: &str) -> Option<&'a str> {
    let raw = match params.get(camel) {
        Some(v) => v,
        None => params.get(snake)?,
    };
    match raw {
        Value::String(s) if !js_trim(s).is_empty() => Some(js_trim(s)),
        _ => None,
    }
}
