//! Reads `{"cases": [{"config": {...}, "agent": "id", "tools": [{"name", "plugin"?}]}]}`
//! on stdin and prints, per case, the tools `openclaw::tool_policy` offers:
//! the Rust side of `scripts/openclaw-tool-policy-diff.mjs`, which compares
//! it with OpenClaw's own pipeline.

use std::io::Read;

use claw_identity_core::openclaw::tool_policy::{availability_of, ToolRef};
use serde_json::{json, Value};

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).expect("stdin");
    let input: Value = serde_json::from_str(&input).expect("JSON on stdin");
    let tool_refs = |tools: &Value| -> Vec<ToolRef> {
        tools
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| {
                let name = t["name"].as_str().expect("tool name");
                match t["plugin"].as_str() {
                    Some(plugin) => ToolRef::plugin_tool(name, plugin),
                    None => ToolRef::new(name),
                }
            })
            .collect()
    };
    let results: Vec<Value> = input["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let config = case["config"].as_object().cloned().unwrap_or_default();
            let agent = case["agent"].as_str().unwrap_or("main");
            let tools = tool_refs(&case["tools"]);
            let offered: Vec<&str> = tools
                .iter()
                .filter(|t| availability_of(&config, agent, t).is_offered())
                .map(|t| t.name.as_str())
                .collect();
            json!(offered)
        })
        .collect();
    println!("{}", Value::Array(results));
}
