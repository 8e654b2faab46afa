//! Rule `token-text`: a token of the map that the model pasted into text one
//! agent hands another (a `sessions_send` message, a `sessions_spawn` task)
//! is replaced by its fingerprint before the other agent's model sees it,
//! whoever pasted it. It rides on the decision of the rule that routes the
//! call, so it is on whenever that rule reads the session tools.

use std::borrow::Cow;

use serde_json::Value;

use super::{Context, Decision, Patch, ToolCall, Verdict};

pub const RULE_ID: &str = "token-text";

/// `d`, plus a rewrite of `field` with every token taken out, when the
/// model put one there. A blocked call needs none.
pub fn scan<'a>(
    mut d: Decision<'a>,
    cx: &Context<'_, 'a>,
    call: &ToolCall<'a>,
    field: &'static str,
) -> Decision<'a> {
    if d.need_session.is_some() {
        return d; // not a decision yet
    }
    let (Some(r), Some(Value::String(text))) = (cx.view.redactor, call.params.get(field)) else {
        return d;
    };
    let Cow::Owned(clean) = r.redact_str(text) else {
        return d;
    };
    let clean = Value::String(clean);
    match &mut d.verdict {
        Verdict::Block(_) => {}
        Verdict::Rewrite(patch) | Verdict::RequireApproval { then: patch, .. } => {
            patch.set(field, clean)
        }
        Verdict::Pass => {
            d.verdict = Verdict::Rewrite(Patch::param(field, clean));
            d.rule.get_or_insert(RULE_ID);
        }
    }
    d
}
