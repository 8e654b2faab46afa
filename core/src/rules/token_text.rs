//! Rule `token-text`: a token of the map that the model pasted into text
//! one run hands another is replaced by its fingerprint before the other
//! run sees it, whoever pasted it. "Handed to another run" is every string
//! a tool gives to another agent's model, or stores where other agents
//! read it:
//! - `sessions_send`: the message;
//! - `sessions_spawn`: the task, its label and task name, the attachments
//!   (written into the child's workspace; base64 content is decoded as
//!   OpenClaw decodes it, redacted and encoded again), the attachment
//!   mount hint and a swarm child's output schema
//!   (`createSessionsSpawnToolSchema`, `sessions-spawn-tool-*.mjs`);
//! - Workboard: every string of a card, comment, proof, log entry,
//!   attachment or board, decomposed children included
//!   (`extensions/workboard/index.js`: the tools' schemas are strict, so
//!   the fields below are all a call can carry);
//! - `automations`: every string of a job (its payload is a later run's
//!   prompt, possibly another agent's) and a wake's system-event `text`
//!   (`createCronToolSchema`, `cron-tool-*.mjs`).
//!
//! Each redaction is also a hit (`Decision::redaction`), which the layer
//! counts and logs. The rule rides on the decision of the rule that routes
//! the call (for the Workboard tools no other rule reads, its own row).

use super::Reads;
use std::borrow::Cow;

use serde_json::Value;

use super::{Context, Decision, Patch, ToolCall, Verdict};
use crate::openclaw::base64;
use crate::redact::results::{Hits, Redactor};

pub const RULE_ID: &str = crate::call::rule_id::TOKEN_TEXT;

/// `sessions_send`: what the other agent's model reads.
pub const SEND_SCANS: &[&str] = &["message"];
/// `sessions_spawn`'s text params.
pub const SPAWN_SCANS: &[&str] = &["task", "label", "taskName"];
/// `automations`' text params: a wake's event text (the job is read whole
/// by rule `cross-user-send`).
pub const AUTOMATION_SCANS: &[&str] = &["text"];
/// `sessions_spawn`'s structured params that reach the child: read exactly.
pub const SPAWN_READS: &[&str] = &["attachments", "attachAs", "outputSchema"];

/// The text params of the Workboard tools (the union of their schemas),
/// but those rule `workboard-scope` reads already (`workboard_scope::READS`).
pub const WORKBOARD_SCANS: &[&str] = &[
    "title",
    "notes",
    "summary",
    "body",
    "reason",
    "note",
    "message",
    "detail",
    "label",
    "command",
    "url",
    "artifactPath",
    "fileName",
    "contentBase64",
    "mimeType",
    "name",
    "description",
    "icon",
    "color",
    "tenant",
    "status",
    "priority",
    "level",
    "target",
    "sessionKey",
    "runId",
    "idempotencyKey",
    "automationJobId",
    "createdByCardId",
];
/// The structured ones (arrays, objects): read exactly.
pub const WORKBOARD_READS: &[&str] = &[
    "labels",
    "skills",
    "workspace",
    "defaultWorkspace",
    "proof",
    "artifacts",
    "eventKinds",
    "parents",
    "createdCardIds",
];

/// The Workboard tools that carry text to other agents and that no other
/// rule routes: this rule's own row. (The others take only ids.)
pub const WORKBOARD_TOOLS: [&str; 11] = [
    "workboard_comment",
    "workboard_heartbeat",
    "workboard_proof",
    "workboard_complete",
    "workboard_attachment_add",
    "workboard_block",
    "workboard_release",
    "workboard_promote",
    "workboard_reclaim",
    "workboard_worker_log",
    "workboard_protocol_violation",
];

/// The params this rule scans on calls of `tool` (each route reads them:
/// `route.rs`).
pub fn fields(tool: &str) -> impl Iterator<Item = &'static str> {
    let lists: &[&[&'static str]] = match tool {
        "sessions_send" => &[SEND_SCANS],
        "sessions_spawn" => &[SPAWN_SCANS, SPAWN_READS],
        "automations" => &[AUTOMATION_SCANS, &["job"]],
        t if WORKBOARD_TOOLS.contains(&t) => &[WORKBOARD_SCANS, WORKBOARD_READS],
        // The children's and the orchestration's text (`workboard_scope::READS`).
        t if t.starts_with("workboard_") => &[
            WORKBOARD_SCANS,
            WORKBOARD_READS,
            &["children", "orchestration"],
        ],
        _ => &[],
    };
    lists.iter().flat_map(|l| l.iter().copied())
}

/// `d`, plus a rewrite of every text param of the call with every piece of
/// a token taken out, when the model put one there. A blocked call needs
/// none. A param another rule already rewrote is scanned as rewritten.
pub fn scan<'a>(mut d: Decision<'a>, cx: &Context<'_, 'a>, call: &ToolCall<'a>) -> Decision<'a> {
    if d.need_session.is_some() || d.is_block() {
        return d; // not a decision yet, or nothing runs
    }
    let Some(r) = cx.view.redactor.filter(|r| !r.is_empty()) else {
        return d;
    };
    let mut hits = Hits::default();
    let mut set: Vec<(&'static str, Value)> = Vec::new();
    for field in fields(call.tool) {
        let current = d
            .patch()
            .and_then(|p| p.params.iter().find(|(k, _)| *k == field))
            .map(|(_, v)| v)
            .or_else(|| call.params.get(field));
        let Some(value) = current else { continue };
        let mut value = value.clone();
        if redact(r, field, &mut value, &mut hits) {
            set.push((field, value));
        }
    }
    if set.is_empty() {
        return d;
    }
    match &mut d.verdict {
        Verdict::Block(_) => {}
        Verdict::Rewrite(patch) | Verdict::RequireApproval { then: patch, .. } => {
            for (k, v) in set {
                patch.set(k, v);
            }
        }
        Verdict::Pass => {
            let mut patch = Patch::default();
            for (k, v) in set {
                patch.set(k, v);
            }
            d.verdict = Verdict::Rewrite(patch);
            d.rule.get_or_insert(RULE_ID);
        }
    }
    d.redaction.add(&hits);
    d
}

/// Takes every piece of a token out of `value`, the param `field`, as the
/// tool will read it; true when anything changed.
fn redact(r: &Redactor, field: &str, value: &mut Value, hits: &mut Hits) -> bool {
    match (field, &mut *value) {
        // Workboard stores it decoded (`workboard_attachment_add`).
        ("contentBase64", Value::String(text)) => redact_base64(r, text, hits),
        ("attachments", Value::Array(items)) => {
            let mut changed = false;
            for item in items {
                let Value::Object(a) = item else { continue };
                // `prepareSubagentAttachments`: encoding "base64" (trimmed) decodes the content.
                let base64 = a
                    .get("encoding")
                    .and_then(Value::as_str)
                    .is_some_and(|e| crate::paths::js_trim(e) == "base64");
                if base64 {
                    if let Some(Value::String(content)) = a.get_mut("content") {
                        changed |= redact_base64(r, content, hits);
                    }
                }
                for (k, v) in a.iter_mut() {
                    if !(base64 && k == "content") {
                        changed |= r.redact_value_noting(v, hits) > 0;
                    }
                }
            }
            changed
        }
        _ => r.redact_value_noting(value, hits) > 0,
    }
}

/// Base64 `text`, decoded as OpenClaw decodes it, with the tokens taken out
/// and encoded again; left as it is when OpenClaw would refuse it (then
/// nothing is stored) or when it holds none.
fn redact_base64(r: &Redactor, text: &mut String, hits: &mut Hits) -> bool {
    let changed = base64::decode_strict(text)
        .and_then(|bytes| r.redact_bytes_noting(&bytes, hits))
        .map(|clean| base64::encode(&clean));
    if let Some(clean) = changed {
        *text = clean;
        return true;
    }
    // Text that is not base64, or holds no token decoded, may hold one as written.
    match r.redact_str_noting(text, hits) {
        Cow::Owned(clean) => {
            *text = clean;
            true
        }
        Cow::Borrowed(_) => false,
    }
}

/// The row of the Workboard tools only this rule reads.
pub fn decide<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    scan(Decision::pass(), cx, call)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::options::Options;
    use crate::redact::fingerprint;
    use crate::rules::{MapView, Params};
    use crate::token_map::TokenMap;
    use serde_json::json;

    const T: &str = "5b97e5cf762f6106612a771fa2b42f9afc2458e2932e8598133c798f9782e8b9";

    fn fp() -> String {
        format!("sha256:{}", fingerprint(T))
    }

    /// The params `tool` runs with (`params` with the decision's rewrite),
    /// and the hits, as the paco--francis agent calls it.
    fn run(tool: &str, params: Value) -> (Value, Hits) {
        // The map's directory is not `/`, where every path would be inside it.
        let e = Engine::new(Options::from_json(r#"{"tokenMapPath": "/srv/claw/m.json"}"#).unwrap());
        let map = TokenMap::default();
        let r = Redactor::new([T]);
        let view = MapView {
            map: &map,
            generation: 0,
            loaded: true,
            stale: false,
            redactor: Some(&r),
        };
        let params: Params = params.as_object().unwrap().clone();
        let call = ToolCall {
            tool,
            agent_id: Some("paco--francis"),
            session_key: Some("agent:paco--francis:main"),
            params: &params,
            derived_paths: &[],
            call_id: None,
        };
        let d = e.decide_call(&call, &view, &crate::sessions::NoHost);
        assert!(!d.is_block(), "{tool} was blocked: {:?}", d.verdict);
        let mut out = params.clone();
        if let Some(p) = d.patch() {
            for (k, v) in p.entries(e.options()).0 {
                out.insert(k, v);
            }
        }
        (Value::Object(out), d.redaction)
    }

    fn leaks(v: &Value) -> bool {
        let s = v.to_string().to_ascii_lowercase();
        (0..=48).any(|i| s.contains(&T[i..i + 16]))
    }

    #[test]
    fn a_spawns_task_label_and_attachments_lose_their_tokens_base64_ones_decoded() {
        let b64 = base64::encode(format!("AUTH={T}\n").as_bytes());
        let (out, hits) = run(
            "sessions_spawn",
            json!({
                "task": format!("use {T}"),
                "label": format!("job {}", &T[..20]),
                "attachments": [
                    {"name": "notes.txt", "content": format!("token {}", T.to_uppercase())},
                    {"name": "env", "content": b64, "encoding": " base64 ", "mimeType": "text/plain"},
                    {"name": "plain.txt", "content": "nothing here"},
                ],
            }),
        );
        assert!(!leaks(&out), "{}", crate::redact::scrub(&out.to_string()));
        assert_eq!(out["task"], format!("use {}", fp()));
        assert_eq!(out["label"], format!("job {}", fp()));
        assert_eq!(out["attachments"][0]["content"], format!("token {}", fp()));
        let decoded = base64::decode_strict(out["attachments"][1]["content"].as_str().unwrap());
        assert_eq!(
            decoded.as_deref(),
            Some(format!("AUTH={}\n", fp()).as_bytes())
        );
        assert_eq!(out["attachments"][1]["encoding"], " base64 ");
        assert_eq!(out["attachments"][2]["content"], "nothing here");
        assert_eq!((hits.runs, hits.fingerprints()), (4, &[fp()][..]));
    }

    #[test]
    fn every_text_of_a_workboard_card_loses_its_tokens() {
        let cases = [
            (
                "workboard_create",
                json!({"title": format!("fix {T}"), "notes": T, "labels": [T]}),
            ),
            (
                "workboard_specify",
                json!({"id": "c1", "summary": T, "skills": [T], "workspace": {"kind": "dir", "path": format!("/w/{T}")}}),
            ),
            (
                "workboard_comment",
                json!({"id": "c1", "body": format!("the token is {T}")}),
            ),
            ("workboard_worker_log", json!({"id": "c1", "message": T})),
            ("workboard_block", json!({"id": "c1", "reason": T})),
            (
                "workboard_complete",
                json!({"id": "c1", "summary": T, "proof": {"note": T}, "artifacts": [{"label": T}]}),
            ),
            (
                "workboard_proof",
                json!({"id": "c1", "command": format!("curl -H 'Authorization: {T}'")}),
            ),
            (
                "workboard_board_create",
                json!({"id": "wb_paco", "description": T, "orchestration": {"orchestratorProfile": T}}),
            ),
            (
                "workboard_reassign",
                json!({"id": "c1", "agentId": "paco--dali", "reason": T}),
            ),
        ];
        for (tool, params) in cases {
            let (out, hits) = run(tool, params.clone());
            assert!(
                !leaks(&out),
                "{tool}: {}",
                crate::redact::scrub(&out.to_string())
            );
            assert!(
                out.to_string().contains(&fp()),
                "{tool}: {}",
                crate::redact::scrub(&out.to_string())
            );
            assert!(!hits.is_empty(), "{tool}");
        }
        // Decomposed children keep the board workboard-scope gives them.
        let (out, _) = run(
            "workboard_decompose",
            json!({"id": "c1", "children": [{"title": T, "notes": "n", "boardId": "other"}]}),
        );
        assert_eq!(
            out["children"][0],
            json!({"title": fp(), "notes": "n", "boardId": "wb_paco"})
        );
        // An attachment is stored decoded.
        let (out, _) = run(
            "workboard_attachment_add",
            json!({"id": "c1", "fileName": "a", "contentBase64": base64::encode(T.as_bytes())}),
        );
        assert_eq!(
            base64::decode_strict(out["contentBase64"].as_str().unwrap()).unwrap(),
            fp().as_bytes()
        );
    }

    #[test]
    fn an_automations_prompt_and_a_wakes_text_lose_their_tokens() {
        let (out, hits) = run(
            "automations",
            json!({"action": "add", "job": {"name": "nightly", "payload": {"kind": "agentTurn", "message": format!("use {T}")}}}),
        );
        assert_eq!(out["job"]["payload"]["message"], format!("use {}", fp()));
        assert_eq!(out["job"]["name"], "nightly");
        assert_eq!(hits.runs, 1);
        let (out, _) = run("automations", json!({"action": "wake", "text": T}));
        assert_eq!(out["text"], fp());
    }

    #[test]
    fn text_without_tokens_is_left_alone_and_a_rewrite_is_stable() {
        for (tool, params) in [
            (
                "workboard_comment",
                json!({"id": "c1", "body": "done; sha 0123456789abcdef0123"}),
            ),
            (
                "sessions_spawn",
                json!({"task": "t", "attachments": [{"name": "a", "content": "eA==", "encoding": "base64"}]}),
            ),
        ] {
            let (out, hits) = run(tool, params.clone());
            assert_eq!(out, params, "{tool}");
            assert!(hits.is_empty());
        }
        let (once, _) = run("workboard_create", json!({"title": T}));
        let (twice, hits) = run("workboard_create", once.clone());
        assert_eq!(once, twice);
        assert!(hits.is_empty());
    }
}
