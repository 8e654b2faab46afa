//! OpenClaw's `automations` tool (alias `cron`) as it reads a call before
//! it acts, so the rules decide on the job OpenClaw will send the gateway,
//! not on the params as the model wrote them. It follows, in OpenClaw
//! 2026.9.6:
//!
//! - `createCronTool`'s `add` and `update` (`cron-tool-*.mjs`): a `job` that
//!   is missing or empty (`isMissingOrEmptyObject`: also `""`, `0`, `false`,
//!   `null`, `{}`) is recovered from the flat params beside `action`
//!   (`recoverCronObjectFromFlatParams`; on `add` only with a schedule or
//!   payload signal, `hasCronCreateSignal`);
//! - `canonicalizeCronToolObject`: `job.data` or `job.job` stands for the
//!   job, padded keys are trimmed (`repairPaddedCronKeys`), concatenated
//!   ones split (`repairConcatenatedCronToolKeys`), flat schedule and
//!   payload keys moved in and their kinds inferred
//!   (`canonicalizeCronToolSchedule`, `canonicalizeCronToolPayload`);
//! - `normalizeCronJobInput` (`normalize-*.mjs`): kinds lowercased
//!   (`coerceSchedule`, `normalizeCronPayload`), `sessionTarget`
//!   normalized (`session:<key>` runs in that session), a trigger's script
//!   trimmed (`coerceTrigger`);
//! - `wake`: `agentId`, else the agent of `sessionKey` (`readToolStringParam`
//!   takes the snake spellings too).

use serde_json::{Map, Value};

use super::params::Params;
use crate::paths::js_trim;

/// `CRON_FLAT_PAYLOAD_KEYS`.
const FLAT_PAYLOAD_KEYS: [&str; 11] = [
    "message",
    "text",
    "script",
    "model",
    "fallbacks",
    "toolsAllow",
    "thinking",
    "timeoutSeconds",
    "toolBudget",
    "lightContext",
    "allowUnsafeExternalContent",
];

/// `CRON_FLAT_SCHEDULE_KEYS` (`kind` is the schedule's or the payload's).
const FLAT_SCHEDULE_KEYS: [&str; 18] = [
    "kind",
    "at",
    "atMs",
    "every",
    "everyMs",
    "anchorMs",
    "cron",
    "expr",
    "tz",
    "stagger",
    "staggerMs",
    "exact",
    "command",
    "cwd",
    "mode",
    "match",
    "batchMs",
    "maxBatchBytes",
];

/// `CRON_RECOVERABLE_OBJECT_KEYS` besides the flat payload and schedule keys.
const OBJECT_KEYS: [&str; 20] = [
    "name",
    "declarationKey",
    "displayName",
    "owner",
    "schedule",
    "pacing",
    "trigger",
    "sessionTarget",
    "wakeMode",
    "payload",
    "delivery",
    "enabled",
    "description",
    "deleteAfterRun",
    "agentId",
    "sessionKey",
    "failureAlert",
    "namePayload",
    "scheduleKind",
    "sessionTargetName",
];

/// Every top-level param the tool reads: `action`, `job`, the flat job
/// keys, and `wake`'s targets in both spellings. A route reads exactly these.
pub const READS: &[&str] = &[
    "action",
    "job",
    "agent_id",
    "session_key",
    // OBJECT_KEYS
    "name",
    "declarationKey",
    "displayName",
    "owner",
    "schedule",
    "pacing",
    "trigger",
    "sessionTarget",
    "wakeMode",
    "payload",
    "delivery",
    "enabled",
    "description",
    "deleteAfterRun",
    "agentId",
    "sessionKey",
    "failureAlert",
    "namePayload",
    "scheduleKind",
    "sessionTargetName",
    // FLAT_PAYLOAD_KEYS
    "message",
    "text",
    "script",
    "model",
    "fallbacks",
    "toolsAllow",
    "thinking",
    "timeoutSeconds",
    "toolBudget",
    "lightContext",
    "allowUnsafeExternalContent",
    // FLAT_SCHEDULE_KEYS
    "kind",
    "at",
    "atMs",
    "every",
    "everyMs",
    "anchorMs",
    "cron",
    "expr",
    "tz",
    "stagger",
    "staggerMs",
    "exact",
    "command",
    "cwd",
    "mode",
    "match",
    "batchMs",
    "maxBatchBytes",
];

fn recoverable(key: &str) -> bool {
    OBJECT_KEYS.contains(&key)
        || FLAT_PAYLOAD_KEYS.contains(&key)
        || FLAT_SCHEDULE_KEYS.contains(&key)
}

/// `CRON_SCHEDULE_KINDS` of the canonicalizer (exact spellings).
fn schedule_kind(v: Option<&Value>) -> bool {
    matches!(
        v.and_then(Value::as_str),
        Some("at" | "every" | "cron" | "on-exit" | "stream")
    )
}

/// `CRON_PAYLOAD_KINDS` of the canonicalizer (exact spellings).
fn payload_kind(v: Option<&Value>) -> bool {
    matches!(
        v.and_then(Value::as_str),
        Some("systemEvent" | "agentTurn" | "script" | "command")
    )
}

/// `hasNonEmptyString`: a string with something left after trimming.
fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
        .map(js_trim)
        .filter(|s| !s.is_empty())
}

/// `normalizeLowercaseStringOrEmpty`.
fn lower(v: Option<&Value>) -> String {
    v.and_then(Value::as_str)
        .map(|s| js_trim(s).to_lowercase())
        .unwrap_or_default()
}

/// `isMissingOrEmptyObject`: falsy in JS, or an object with no keys.
fn missing_or_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    }
}

/// `moveDefinedField`: moves `from` to `to`; whether it was there.
fn move_field(
    source: &mut Map<String, Value>,
    target: &mut Map<String, Value>,
    from: &str,
    to: &str,
) -> bool {
    match source.remove(from) {
        Some(v) => {
            target.insert(to.to_owned(), v);
            true
        }
        None => false,
    }
}

/// `repairPaddedCronKeys`.
fn repair_padded(value: &mut Map<String, Value>) {
    let keys: Vec<String> = value.keys().cloned().collect();
    for key in keys {
        let trimmed = js_trim(&key);
        if trimmed != key && recoverable(trimmed) && !value.contains_key(trimmed) {
            let trimmed = trimmed.to_owned();
            if let Some(v) = value.remove(&key) {
                value.insert(trimmed, v);
            }
        }
    }
}

/// `repairConcatenatedCronToolKeys`.
fn repair_concatenated(value: &mut Map<String, Value>) {
    if !value.get("payload").is_some_and(Value::is_object) {
        if let Some(p @ Value::Object(_)) = value.get("namePayload").cloned() {
            value.insert("payload".into(), p);
        }
    }
    let raw = value.get("scheduleKind").cloned();
    match value.get_mut("schedule") {
        Some(Value::Object(s)) => {
            if schedule_kind(raw.as_ref()) && !schedule_kind(s.get("kind")) {
                s.insert("kind".into(), raw.unwrap_or(Value::Null));
            }
        }
        _ => match raw {
            Some(o @ Value::Object(_)) => {
                value.insert("schedule".into(), o);
            }
            Some(k) if schedule_kind(Some(&k)) => {
                let mut s = Map::new();
                s.insert("kind".into(), k);
                value.insert("schedule".into(), Value::Object(s));
            }
            _ => {}
        },
    }
    if text(value.get("name")).is_none() {
        if let Some(n) = value
            .get("sessionTargetName")
            .filter(|n| text(Some(n)).is_some())
            .cloned()
        {
            value.insert("name".into(), n);
        }
    }
    for k in ["namePayload", "scheduleKind", "sessionTargetName"] {
        value.remove(k);
    }
}

/// `canonicalizeCronToolSchedule`, as far as the kind and the command go.
fn canonicalize_schedule(value: &mut Map<String, Value>) {
    let mut schedule = match value.get("schedule") {
        Some(Value::Object(s)) => s.clone(),
        _ => Map::new(),
    };
    let mut has = value.get("schedule").is_some_and(Value::is_object);
    if let Some(at) = schedule.remove("atMs") {
        schedule.insert("at".into(), at);
        if !schedule_kind(schedule.get("kind")) {
            schedule.insert("kind".into(), "at".into());
        }
    }
    for (from, to) in [
        ("every", "everyMs"),
        ("cron", "expr"),
        ("stagger", "staggerMs"),
    ] {
        if !schedule.contains_key(to) {
            if let Some(v) = schedule.remove(from) {
                schedule.insert(to.into(), v);
            }
        }
    }
    if schedule_kind(value.get("kind")) && !schedule_kind(schedule.get("kind")) {
        if let Some(k) = value.remove("kind") {
            schedule.insert("kind".into(), k);
        }
        has = true;
    }
    fn infer(schedule: &mut Map<String, Value>, moved: bool, kind: &str) {
        if moved && !schedule_kind(schedule.get("kind")) {
            schedule.insert("kind".into(), kind.into());
        }
    }
    let moved = move_field(value, &mut schedule, "at", "at");
    infer(&mut schedule, moved, "at");
    if value.contains_key("atMs") {
        move_field(value, &mut schedule, "atMs", "at");
        infer(&mut schedule, true, "at");
        has = true;
    }
    let moved = move_field(value, &mut schedule, "everyMs", "everyMs")
        || move_field(value, &mut schedule, "every", "everyMs");
    infer(&mut schedule, moved, "every");
    let moved = move_field(value, &mut schedule, "cron", "expr")
        || move_field(value, &mut schedule, "expr", "expr");
    infer(&mut schedule, moved, "cron");
    let moved = move_field(value, &mut schedule, "command", "command");
    infer(&mut schedule, moved, "on-exit");
    for key in [
        "anchorMs",
        "tz",
        "staggerMs",
        "cwd",
        "mode",
        "match",
        "batchMs",
        "maxBatchBytes",
    ] {
        has = move_field(value, &mut schedule, key, key) || has;
    }
    has = move_field(value, &mut schedule, "stagger", "staggerMs") || has;
    value.remove("exact");
    if !schedule_kind(schedule.get("kind")) {
        let kind = if schedule.contains_key("at") {
            Some("at")
        } else if schedule.contains_key("everyMs") {
            Some("every")
        } else if schedule.contains_key("expr") {
            Some("cron")
        } else if schedule.contains_key("command") {
            Some("on-exit")
        } else {
            None
        };
        if let Some(k) = kind {
            schedule.insert("kind".into(), k.into());
        }
    }
    if has || !schedule.is_empty() {
        value.insert("schedule".into(), Value::Object(schedule));
    }
}

/// `canonicalizeCronToolPayload`.
fn canonicalize_payload(value: &mut Map<String, Value>) {
    let mut payload = match value.get("payload") {
        Some(Value::Object(p)) => p.clone(),
        _ => Map::new(),
    };
    let mut has = value.get("payload").is_some_and(Value::is_object);
    for key in FLAT_PAYLOAD_KEYS {
        has = move_field(value, &mut payload, key, key) || has;
    }
    if payload_kind(value.get("kind")) && !payload_kind(payload.get("kind")) {
        if let Some(k) = value.remove("kind") {
            payload.insert("kind".into(), k);
        }
        has = true;
    }
    if !payload_kind(payload.get("kind")) {
        let agent_turn = text(payload.get("message")).is_some()
            || text(payload.get("model")).is_some()
            || payload.get("model") == Some(&Value::Null)
            || text(payload.get("thinking")).is_some()
            || (payload.get("timeoutSeconds").is_some_and(Value::is_number)
                && text(payload.get("text")).is_some())
            || payload.get("lightContext").is_some_and(Value::is_boolean)
            || payload
                .get("allowUnsafeExternalContent")
                .is_some_and(Value::is_boolean)
            || payload.get("fallbacks").is_some_and(|f| {
                f.is_null() || f.as_array().is_some_and(|a| a.iter().all(Value::is_string))
            });
        let kind = if text(payload.get("script")).is_some() {
            Some("script")
        } else if agent_turn {
            Some("agentTurn")
        } else if text(payload.get("text")).is_some() {
            Some("systemEvent")
        } else {
            None
        };
        if let Some(k) = kind {
            payload.insert("kind".into(), k.into());
        }
    }
    if has || !payload.is_empty() {
        value.insert("payload".into(), Value::Object(payload));
    }
}

/// `canonicalizeCronToolObject`.
fn canonicalize(value: &Map<String, Value>) -> Map<String, Value> {
    let mut next = match (value.get("data"), value.get("job")) {
        (Some(Value::Object(d)), _) => d.clone(),
        (_, Some(Value::Object(j))) => j.clone(),
        _ => value.clone(),
    };
    repair_padded(&mut next);
    repair_concatenated(&mut next);
    canonicalize_schedule(&mut next);
    canonicalize_payload(&mut next);
    next
}

/// The parts of `normalizeCronJobInput` the rules read: the kinds
/// lowercased, `sessionTarget`, the trigger's script trimmed.
fn normalize(job: &mut Map<String, Value>) {
    if let Some(Value::Object(s)) = job.get_mut("schedule") {
        let kind = lower(s.get("kind"));
        if matches!(
            kind.as_str(),
            "at" | "every" | "cron" | "on-exit" | "stream"
        ) {
            s.insert("kind".into(), kind.into());
        }
    }
    if let Some(Value::Object(p)) = job.get_mut("payload") {
        let kind = match lower(p.get("kind")).as_str() {
            "" => None,
            "agentturn" => Some("agentTurn".to_owned()),
            "systemevent" => Some("systemEvent".to_owned()),
            k => Some(k.to_owned()),
        };
        if let Some(k) = kind {
            p.insert("kind".into(), k.into());
        }
    }
    if let Some(t) = job.get("sessionTarget") {
        let raw = t.as_str().map(js_trim).unwrap_or("");
        let l = raw.to_lowercase();
        let target = if matches!(l.as_str(), "main" | "isolated" | "current") {
            Some(l)
        } else if l.starts_with("session:") && raw.is_char_boundary(8) {
            Some(format!("session:{}", js_trim(&raw[8..])))
        } else {
            None
        };
        match target {
            Some(t) => job.insert("sessionTarget".into(), t.into()),
            None => job.remove("sessionTarget"),
        };
    }
}

/// An `automations` call as OpenClaw reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// `action`, trimmed.
    pub action: String,
    /// `add`'s job or `update`'s patch, canonicalized and normalized; none
    /// where the tool refuses the call ("job required") or the action has none.
    pub job: Option<Map<String, Value>>,
}

/// A param as `readToolStringParam` reads it: trimmed, the snake spelling too.
fn string_param<'p>(params: &'p Params, camel: &str, snake: &str) -> Option<&'p str> {
    crate::openclaw::params::str_param(params, camel, snake)
}

/// Reads an `automations` call as OpenClaw's tool does before it acts.
pub fn read(params: &Params) -> Call {
    let action = string_param(params, "action", "action")
        .unwrap_or("")
        .to_owned();
    let job = match action.as_str() {
        "add" | "update" => {
            let job = if missing_or_empty(params.get("job")) {
                let flat: Map<String, Value> = params
                    .iter()
                    .filter(|(k, _)| recoverable(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let recovered = canonicalize(&flat);
                let signal = [
                    "schedule", "at", "atMs", "everyMs", "cron", "expr", "payload", "message",
                    "text",
                ]
                .iter()
                .any(|k| recovered.contains_key(*k));
                (!flat.is_empty() && (action == "update" || signal)).then_some(recovered)
            } else {
                params
                    .get("job")
                    .and_then(Value::as_object)
                    .map(canonicalize)
            };
            job.map(|mut j| {
                normalize(&mut j);
                j
            })
        }
        _ => None,
    };
    Call { action, job }
}

/// The agent a session key names (`agent:<id>:…`).
fn key_agent(key: &str) -> Option<String> {
    crate::openclaw::agent_ids::session_key_agent(js_trim(key))
}

impl Call {
    /// The agents the job runs as, or the wake reaches, as the model named
    /// them: the job's `agentId` and `owner.agentId`, and the agent of its
    /// `sessionKey` and of a `sessionTarget` `session:<key>`; a wake's
    /// `agentId`, else its `sessionKey`'s agent.
    pub fn agents(&self, params: &Params) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(job) = &self.job {
            out.extend(text(job.get("agentId")).map(str::to_owned));
            out.extend(text(job.get("owner").and_then(|o| o.get("agentId"))).map(str::to_owned));
            out.extend(text(job.get("sessionKey")).and_then(key_agent));
            if let Some(t) = text(job.get("sessionTarget")) {
                out.extend(t.strip_prefix("session:").and_then(key_agent));
            }
        }
        if self.action == "wake" {
            match string_param(params, "agentId", "agent_id") {
                Some(a) => out.push(a.to_owned()),
                None => out
                    .extend(string_param(params, "sessionKey", "session_key").and_then(key_agent)),
            }
        }
        out
    }

    /// What in the job runs a host process, if anything does: a stream
    /// source (`spawnSource`, server-cron-*.mjs: the gateway spawns its argv
    /// with its own environment), an on-exit command (`bash -lc`), a
    /// command payload (its argv), a script payload or a trigger script
    /// (code the gateway runs), or a patch of their argv, script, env or
    /// cwd (which changes what an existing job runs).
    pub fn host_process(&self) -> Option<String> {
        let job = self.job.as_ref()?;
        let schedule = job.get("schedule").and_then(Value::as_object);
        let kind = lower(schedule.and_then(|s| s.get("kind")));
        if kind == "stream" || kind == "on-exit" {
            return Some(format!("schedule.kind \"{kind}\""));
        }
        if schedule.is_some_and(|s| s.contains_key("command")) {
            return Some("schedule.command".to_owned());
        }
        let payload = job.get("payload").and_then(Value::as_object);
        let kind = lower(payload.and_then(|p| p.get("kind")));
        if kind == "command" || kind == "script" {
            return Some(format!("payload.kind \"{kind}\""));
        }
        if let Some(p) = payload {
            let agent_turn = kind == "agentturn" || kind == "systemevent";
            for k in ["argv", "script", "env", "cwd"] {
                if !agent_turn && p.get(k).is_some_and(|v| !v.is_null()) {
                    return Some(format!("payload.{k}"));
                }
            }
        }
        let script = job.get("trigger").and_then(|t| text(t.get("script")));
        script.map(|_| "trigger.script".to_owned())
    }

    /// The working directories the job sets for its runs: `schedule.cwd`
    /// (a stream or on-exit command's) and `payload.cwd` (a command's).
    pub fn cwds(&self) -> Vec<&str> {
        let Some(job) = &self.job else {
            return Vec::new();
        };
        ["schedule", "payload"]
            .iter()
            .filter_map(|o| {
                job.get(*o)
                    .and_then(|v| v.get("cwd"))
                    .and_then(Value::as_str)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(v: Value) -> Params {
        v.as_object().unwrap().clone()
    }

    fn host(v: Value) -> Option<String> {
        read(&p(v)).host_process()
    }

    #[test]
    fn every_job_kind_that_runs_a_host_process_is_found_however_it_is_written() {
        for v in [
            json!({"action": "add", "job": {"schedule": {"kind": "stream", "command": ["sh"]}, "payload": {"kind": "agentTurn", "message": "m"}}}),
            json!({"action": "add", "job": {"schedule": {"kind": "On-Exit", "command": "x"}}}),
            json!({"action": "add", "job": {"schedule": {"kind": " STREAM ", "command": ["sh"]}}}),
            json!({"action": "add", "job": {"payload": {"kind": "Command", "argv": ["sh"]}}}),
            json!({"action": "add", "job": {"payload": {"kind": "script", "script": "x"}}}),
            json!({"action": "add", "job": {"trigger": {"script": "return {fire:true}"}, "schedule": {"kind": "every", "everyMs": 60000}, "payload": {"kind": "agentTurn", "message": "m"}}}),
            // Flat params, without a job, or with an empty one.
            json!({"action": "add", "kind": "stream", "command": ["sh"], "message": "m"}),
            json!({"action": "add", "job": {}, "command": "sleep 1", "message": "m"}),
            json!({"action": "add", "job": "", "script": "x", "everyMs": 1000}),
            json!({"action": "add", "job": null, "kind": "command", "message": "m"}),
            // Inferred kinds.
            json!({"action": "add", "job": {"command": "x", "payload": {"kind": "agentTurn", "message": "m"}}}),
            json!({"action": "add", "job": {"schedule": {"command": ["sh"]}}}),
            json!({"action": "add", "job": {"script": "x", "everyMs": 1000}}),
            json!({"action": "add", "job": {"kind": "stream", "command": ["sh"]}}),
            json!({"action": "add", "job": {"scheduleKind": "stream", "command": ["sh"]}}),
            // job.data and job.job stand for the job.
            json!({"action": "add", "job": {"name": "n", "data": {"schedule": {"kind": "stream", "command": ["sh"]}}}}),
            json!({"action": "add", "job": {"job": {"payload": {"kind": "command", "argv": ["sh"]}}}}),
            // Padded keys.
            json!({"action": "add", "job": {"schedule ": {"kind": "stream", "command": ["sh"]}}}),
            // Patches that change what an existing job runs.
            json!({"action": "update", "jobId": "j", "job": {"payload": {"argv": ["sh", "-c", "x"]}}}),
            json!({"action": "update", "jobId": "j", "job": {"payload": {"env": {"LD_PRELOAD": "/x"}}}}),
            json!({"action": "update", "jobId": "j", "command": "x"}),
            json!({"action": "update", "jobId": "j", "job": {"trigger": {"script": " x "}}}),
        ] {
            assert!(host(v.clone()).is_some(), "{v}");
        }
        for v in [
            json!({"action": "add", "job": {"schedule": {"kind": "every", "everyMs": 1000}, "payload": {"kind": "agentTurn", "message": "m"}}}),
            json!({"action": "add", "job": {"schedule": {"kind": "cron", "expr": "* * * * *"}, "payload": {"kind": "systemEvent", "text": "t"}}}),
            json!({"action": "add", "message": "m", "everyMs": 1000}),
            json!({"action": "add", "job": {"trigger": {"script": "  "}, "everyMs": 5, "message": "m"}}),
            json!({"action": "update", "jobId": "j", "job": {"enabled": false}}),
            json!({"action": "run", "jobId": "j"}),
            json!({"action": "list"}),
            // No job and nothing to recover: OpenClaw refuses the call.
            json!({"action": "add", "job": "x", "command": "sh"}),
        ] {
            assert_eq!(host(v.clone()), None, "{v}");
        }
    }

    #[test]
    fn the_agents_a_job_runs_as_are_read_as_openclaw_canonicalizes_the_job() {
        let agents = |v: Value| read(&p(v.clone())).agents(&p(v));
        assert_eq!(
            agents(json!({"action": "add", "job": {"agentId": "a"}})),
            vec!["a"]
        );
        assert_eq!(
            agents(json!({"action": "add", "agentId": "b", "message": "m"})),
            vec!["b"]
        );
        assert_eq!(
            agents(json!({"action": "add", "job": {}, "agentId": "b", "text": "t"})),
            vec!["b"]
        );
        assert_eq!(
            agents(
                json!({"action": "add", "job": {"agentId": "mine", "data": {"agentId": "theirs", "message": "m"}}})
            ),
            vec!["theirs"]
        );
        assert_eq!(
            agents(
                json!({"action": "add", "job": {"sessionTarget": " Session:agent:pepito--atlas:main ", "message": "m"}})
            ),
            vec!["pepito--atlas"]
        );
        assert_eq!(
            agents(
                json!({"action": "update", "jobId": "j", "sessionTarget": "session:agent:x:main"})
            ),
            vec!["x"]
        );
        assert_eq!(
            agents(json!({"action": "add", "job": {"agentId ": "p"}, "message": "m"})),
            vec!["p"]
        );
        assert_eq!(
            agents(json!({"action": "wake", "agent_id": "w", "text": "t"})),
            vec!["w"]
        );
        assert_eq!(
            agents(json!({"action": "wake", "session_key": "agent:k:main", "text": "t"})),
            vec!["k"]
        );
        // Without a create signal, add recovers nothing.
        assert!(agents(json!({"action": "add", "agentId": "b"})).is_empty());
    }

    #[test]
    fn every_param_the_tool_reads_is_read() {
        for k in OBJECT_KEYS
            .iter()
            .chain(&FLAT_PAYLOAD_KEYS)
            .chain(&FLAT_SCHEDULE_KEYS)
        {
            assert!(READS.contains(k), "{k}");
        }
        for k in [
            "action",
            "job",
            "agentId",
            "agent_id",
            "sessionKey",
            "session_key",
        ] {
            assert!(READS.contains(&k), "{k}");
        }
    }

    #[test]
    fn the_cwds_a_job_sets_are_found() {
        let c = read(&p(
            json!({"action": "add", "kind": "stream", "command": ["sh"], "cwd": "/x"}),
        ));
        assert_eq!(c.cwds(), vec!["/x"]);
        let c = read(&p(
            json!({"action": "add", "job": {"payload": {"kind": "command", "argv": ["sh"], "cwd": "/y"}}}),
        ));
        assert_eq!(c.cwds(), vec!["/y"]);
    }
}
