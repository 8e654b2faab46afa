//! What the model sees of a proxied server's tools: each tool's input
//! schema without the credential param and the params the layer fills,
//! from `properties` and from `required` (OpenClaw validates the model's
//! arguments against the schema before the trusted policy runs, so a
//! param left required would refuse every call the model makes without
//! it: `docs/mcp-proxy.md` of the shared notes, section 3).

use serde_json::Value;

use crate::options::Options;

/// The params the layer writes into a proxied call: the model never
/// writes them, so it never sees them.
pub fn filled_params(opts: &Options) -> [&str; 2] {
    [
        opts.token_param.as_str(),
        opts.rules.conversation_id.param.as_str(),
    ]
}

/// `result` of a `tools/list` (`{tools: [...], nextCursor?}`) with every
/// tool's `inputSchema` stripped of [`filled_params`]; counts the params
/// taken out. Anything that is not a tool list's shape is left as it is.
pub fn strip(opts: &Options, result: &mut Value) -> usize {
    let names = filled_params(opts);
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return 0;
    };
    let mut taken = 0;
    for tool in tools {
        if let Some(schema) = tool.get_mut("inputSchema") {
            taken += strip_schema(schema, &names);
        }
    }
    taken
}

/// One schema's top level, and the parts it is built of (allOf, anyOf,
/// oneOf), where a tool may declare its params too.
fn strip_schema(schema: &mut Value, names: &[&str]) -> usize {
    let Some(schema) = schema.as_object_mut() else {
        return 0;
    };
    let mut taken = 0;
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for n in names {
            taken += usize::from(props.remove(*n).is_some());
        }
    }
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| !names.iter().any(|n| r.as_str() == Some(n)));
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(parts) = schema.get_mut(key).and_then(Value::as_array_mut) {
            taken += parts
                .iter_mut()
                .map(|p| strip_schema(p, names))
                .sum::<usize>();
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_credential_and_filled_params_leave_properties_and_required() {
        let opts = Options::from_json("{}").unwrap();
        let mut list = json!({"tools": [
            {"name": "claw_notes", "inputSchema": {"type": "object",
                "properties": {"q": {"type": "string"}, "auth_token": {"type": "string"}, "_conversation_id": {"type": "string"}},
                "required": ["auth_token", "q"], "additionalProperties": false}},
            {"name": "bare", "inputSchema": {"type": "object"}},
            {"name": "parts", "inputSchema": {"allOf": [{"properties": {"auth_token": {}}, "required": ["auth_token"]}]}},
            {"name": "odd"}
        ], "nextCursor": "2"});
        assert_eq!(strip(&opts, &mut list), 3);
        assert_eq!(
            list["tools"][2]["inputSchema"],
            json!({"allOf": [{"properties": {}, "required": []}]})
        );
        assert_eq!(
            list["tools"][0]["inputSchema"]["properties"],
            json!({"q": {"type": "string"}})
        );
        assert_eq!(list["tools"][0]["inputSchema"]["required"], json!(["q"]));
        assert_eq!(
            list["tools"][1],
            json!({"name": "bare", "inputSchema": {"type": "object"}})
        );
        assert_eq!(list["nextCursor"], "2");
        let mut not_a_list = json!({"resources": []});
        assert_eq!(strip(&opts, &mut not_a_list), 0);
    }
}
