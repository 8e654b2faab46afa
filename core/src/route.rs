//! The one table from a tool to the rule that decides its calls: each row
//! names the tools, the rule, the params the rule decides on (`reads`, read
//! exactly from the JS object), the params it only quotes or scans for
//! tokens (`scans`, read leniently), its decide function, and whether the
//! options switch it on. Everything else is derived from it: which calls the
//! layer reads at all, which params the bridge reads, and what `explain`
//! reports. A tool no row names passes without its params being read.
//!
//! Adding a rule is one module under `rules/`, one row here and one field of
//! `RulesConfig`.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use crate::options::Options;
use crate::options::ProtectMap;
use crate::rules::map_access;
use crate::rules::{
    auth_token, cross_user_send, layer_controls, sandbox_pty, session_access, token_text,
    workboard_scope, Context, Decide, Decision, Reads, ToolCall,
};

pub struct Route {
    /// The tools this row routes, by `event.toolName` as OpenClaw gives it
    /// (lowercased, aliased). Empty for the owned tools, which are matched by
    /// `toolPrefix` instead.
    pub tools: &'static [&'static str],
    /// The rule id that starts every block reason of this row.
    pub rule: &'static str,
    /// Top-level params the rule decides on: read exactly, and a call whose
    /// value can't be read exactly is refused.
    pub reads: &'static [&'static str],
    /// Top-level params the rule only quotes or scans for tokens: read with
    /// U+FFFD for broken characters.
    pub scans: &'static [&'static str],
    pub decide: Decide,
    /// Whether the options switch this row on.
    pub on: fn(&Options) -> bool,
    /// The rule reads `event.derivedPaths` (OpenClaw's own resolution).
    pub derived: bool,
}

/// Params of `sessions_send` the rules read: the target, and whether the
/// model chose a session by label (delegation-session leaves those alone).
const SEND_READS: &[&str] = &["agentId", "agent_id", "sessionKey", "session_key", "label"];
/// Params of `sessions_spawn` the rules read: the target, the cwd the child
/// runs in, the runtime it runs on; and what reaches the child besides the
/// task (`token_text::SPAWN_READS`).
const SPAWN_READS: &[&str] = &[
    "agentId",
    "agent_id",
    "cwd",
    "runtime",
    "attachments",
    "attachAs",
    "outputSchema",
];
/// Params of the Workboard tools the rules read exactly: the board, the
/// card, who work is assigned to (`workboard_scope::READS`), and the
/// structured text of a card (`token_text::WORKBOARD_READS`).
const WORKBOARD_READS: &[&str] = &[
    "boardId",
    "children",
    "id",
    "agentId",
    "orchestration",
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
/// Where the file tools keep their path (`path`; the camel and snake
/// aliases OpenClaw's param reader takes, `readSnakeCaseParamRaw`).
const FILE_READS: &[&str] = &["path", "file_path", "filePath"];
/// `message`'s media keys (`BASE_ACTION_MEDIA_SOURCE_PARAM_KEYS`,
/// `message-action-normalization-*.mjs`, with their snake spellings).
const MESSAGE_READS: &[&str] = &[
    "media",
    "path",
    "filePath",
    "file_path",
    "mediaUrl",
    "media_url",
    "fileUrl",
    "file_url",
    "image",
    "mediaUrls",
    "media_urls",
    "attachments",
];

fn session_tools(o: &Options) -> bool {
    o.rules.reads_session_tools()
}
fn cross_user(o: &Options) -> bool {
    o.rules.cross_user_send.enabled
}
fn automations_on(o: &Options) -> bool {
    o.rules.cross_user_send.enabled || protect_paths(o) || enforced(o)
}
/// The path guard runs for the map (`protectMap`) or for the layer's files.
fn protect_paths(o: &Options) -> bool {
    o.protect_map != ProtectMap::Off || o.rules.layer_controls.enabled
}
fn layer(o: &Options) -> bool {
    o.rules.layer_controls.enabled || enforced(o)
}
/// Under `posture: "enforce"` every tool that reaches the host is routed,
/// so the per-chat check of the posture (`posture::drift`) sees its calls.
fn enforced(o: &Options) -> bool {
    o.posture == crate::options::PostureMode::Enforce
}
fn paths_or_posture(o: &Options) -> bool {
    protect_paths(o) || enforced(o)
}
fn protect_strict(o: &Options) -> bool {
    o.protect_map == ProtectMap::Strict
}
fn always(_: &Options) -> bool {
    true
}
fn pass<'a>(_: &Context<'_, 'a>, _: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    Decision::pass()
}

/// The Workboard tools: the directories their cards run in (map-access, as
/// a spawn's cwd), the agents work is assigned to (cross-user-send), then
/// the board (workboard-scope); token-text on the card's text.
fn workboard_call<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    let dirs = workboard_scope::workspaces(call.tool, call.params);
    if let Some(d) = map_access::future_cwds(cx, call, dirs) {
        return d;
    }
    let assigned = workboard_scope::assignees(call.tool, call.params);
    if let Some(d) = cross_user_send::assignees(cx, call, &assigned) {
        return token_text::scan(d, cx, call);
    }
    token_text::scan(workboard_scope::decide(cx, call, reads), cx, call)
}

/// `automations`, read as OpenClaw canonicalizes the call
/// (`openclaw::cron`): a job that runs a host process (layer-controls), the
/// working directories it sets (map-access, as a spawn's cwd), the agents
/// it runs as or a wake reaches (cross-user-send), then, under
/// `protectMap: "strict"`, nothing that survived runs a command anyway;
/// token-text on the job and the text.
fn automations<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    let job = crate::openclaw::cron::read(call.params);
    if let Some(d) = layer_controls::automation(cx, call, &job) {
        return d;
    }
    if let Some(d) = map_access::future_cwds(cx, call, job.cwds()) {
        return d;
    }
    let agents = job.agents(call.params);
    let named: Vec<&str> = agents.iter().map(String::as_str).collect();
    if let Some(d) = cross_user_send::assignees(cx, call, &named) {
        return token_text::scan(d, cx, call);
    }
    if protect_strict(cx.opts) && job.host_process().is_some() {
        return map_access::exec(cx, call, reads);
    }
    token_text::scan(Decision::pass(), cx, call)
}

/// `sessions_send`: cross-user-send, then delegation-session; a token pasted
/// into the message becomes its fingerprint (token-text).
fn send<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    token_text::scan(cross_user_send::send(cx, call), cx, call)
}

/// `sessions_spawn`: the child's cwd (map-access) and runtime, then
/// cross-user-send and spawn-redirect; token-text on the task, label and
/// attachments.
fn spawn<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    if let Some(d) = map_access::spawn_cwd(cx, call) {
        return d;
    }
    if let Some(d) = map_access::spawn_runtime(cx, call) {
        return d;
    }
    token_text::scan(cross_user_send::spawn(cx, call), cx, call)
}

/// `exec`, `process`: refused outside a sandbox under `protectMap:
/// "strict"` (map-access); else an exec that asks for a terminal carries
/// the claw-identity sandbox's marker for one (sandbox-pty).
fn shell<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    if protect_strict(cx.opts) {
        let d = map_access::exec(cx, call, reads);
        if d.is_block() {
            return d;
        }
    }
    sandbox_pty::decide(cx, call, reads)
}

/// The owned tools (`toolPrefix`): auth-token, then conversation-id. They
/// read no params: the hot path.
pub static OWNED: Route = Route {
    tools: &[],
    rule: auth_token::RULE_ID,
    reads: &[],
    scans: &[],
    decide: auth_token::decide,
    on: always,
    derived: false,
};

pub static ROUTES: &[Route] = &[
    Route {
        tools: &["sessions_send"],
        rule: cross_user_send::RULE_ID,
        reads: SEND_READS,
        scans: token_text::SEND_SCANS,
        decide: send,
        on: session_tools,
        derived: false,
    },
    Route {
        tools: &["sessions_spawn"],
        rule: cross_user_send::RULE_ID,
        reads: SPAWN_READS,
        scans: token_text::SPAWN_SCANS,
        decide: spawn,
        on: session_tools,
        derived: false,
    },
    Route {
        tools: &session_access::TOOLS,
        rule: cross_user_send::RULE_ID,
        reads: session_access::READS,
        scans: &[],
        decide: session_access::decide,
        on: cross_user,
        derived: false,
    },
    Route {
        // On with no rule of its own on: token-text has no switch.
        tools: &workboard_scope::TOOLS,
        rule: workboard_scope::RULE_ID,
        reads: WORKBOARD_READS,
        scans: token_text::WORKBOARD_SCANS,
        decide: workboard_call,
        on: always,
        derived: false,
    },
    Route {
        tools: &workboard_scope::ASSIGN_TOOLS,
        rule: cross_user_send::RULE_ID,
        reads: WORKBOARD_READS,
        scans: token_text::WORKBOARD_SCANS,
        decide: workboard_call,
        on: always,
        derived: false,
    },
    Route {
        tools: &token_text::WORKBOARD_TOOLS,
        rule: token_text::RULE_ID,
        reads: token_text::WORKBOARD_READS,
        scans: token_text::WORKBOARD_SCANS,
        decide: token_text::decide,
        on: always,
        derived: false,
    },
    Route {
        tools: &["read", "memory_get"],
        rule: map_access::RULE_ID,
        reads: FILE_READS,
        scans: &[],
        decide: map_access::read,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        tools: &["write", "edit"],
        rule: map_access::RULE_ID,
        reads: FILE_READS,
        scans: &[],
        decide: map_access::write,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        tools: &["apply_patch"],
        rule: map_access::RULE_ID,
        reads: &["input", "patch"],
        scans: &[],
        decide: map_access::patch,
        on: paths_or_posture,
        derived: true,
    },
    Route {
        tools: &["ls"],
        rule: map_access::RULE_ID,
        reads: FILE_READS,
        scans: &[],
        decide: map_access::list,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        // Not tools of a 2026.9.6 gateway run, but of OpenClaw's agent SDK.
        tools: &["grep", "find"],
        rule: map_access::RULE_ID,
        reads: FILE_READS,
        scans: &[],
        decide: map_access::search,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        tools: &["view_image"],
        rule: map_access::RULE_ID,
        reads: &["path", "paths"],
        scans: &[],
        decide: map_access::media,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        tools: &["pdf"],
        rule: map_access::RULE_ID,
        reads: &["pdf", "pdfs"],
        scans: &[],
        decide: map_access::media,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        tools: &["image_generate", "music_generate"],
        rule: map_access::RULE_ID,
        reads: &["image", "images"],
        scans: &[],
        decide: map_access::media,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        tools: &["video_generate"],
        rule: map_access::RULE_ID,
        reads: &[
            "image",
            "images",
            "video",
            "videos",
            "audioRef",
            "audioRefs",
        ],
        scans: &[],
        decide: map_access::media,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        // An attachment is read from disk and sent to a chat.
        tools: &["message"],
        rule: map_access::RULE_ID,
        reads: MESSAGE_READS,
        scans: &[],
        decide: map_access::message,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        tools: &["nodes"],
        rule: map_access::RULE_ID,
        reads: &["outPath", "out_path"],
        scans: &[],
        decide: map_access::node_output,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        // file-transfer (bundled, on by default): a paired node's files,
        // which may be this host's.
        tools: &["file_fetch", "dir_list", "dir_fetch", "file_write"],
        rule: map_access::RULE_ID,
        reads: &["path"],
        scans: &[],
        decide: map_access::node_files,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        tools: &["browser"],
        rule: map_access::RULE_ID,
        reads: &["path", "paths"],
        scans: &[],
        decide: map_access::browser,
        on: paths_or_posture,
        derived: false,
    },
    Route {
        tools: &map_access::EXEC_TOOLS,
        rule: map_access::RULE_ID,
        reads: sandbox_pty::READS,
        scans: &[],
        decide: shell,
        on: always,
        derived: false,
    },
    Route {
        // Jobs run as an agent, jobs that run a host process, and the cwds
        // they set: every param the tool reads, flat ones included.
        tools: &["automations"],
        rule: cross_user_send::RULE_ID,
        // `text`, which token-text scans, is among them.
        reads: crate::openclaw::cron::READS,
        scans: &[],
        decide: automations,
        on: automations_on,
        derived: false,
    },
    Route {
        // The session an accepted suggestion starts runs in its `cwd`.
        tools: &["suggest_task"],
        rule: map_access::RULE_ID,
        reads: &["cwd"],
        scans: &[],
        decide: map_access::suggest_task,
        on: protect_paths,
        derived: false,
    },
    Route {
        // Tools that reach the host that no rule above reads: only the
        // per-chat check of the posture concerns them.
        tools: &crate::posture::UNROUTED_HOST_TOOLS,
        rule: crate::posture::RULE_ID,
        reads: &[],
        scans: &[],
        decide: pass,
        on: enforced,
        derived: false,
    },
    Route {
        tools: &["plugins"],
        rule: layer_controls::RULE_ID,
        reads: layer_controls::PLUGINS_READS,
        scans: &[],
        decide: layer_controls::plugins,
        on: layer,
        derived: false,
    },
    Route {
        tools: &["openclaw"],
        rule: layer_controls::RULE_ID,
        reads: layer_controls::OPENCLAW_READS,
        scans: &[],
        decide: layer_controls::openclaw,
        on: layer,
        derived: false,
    },
];

/// The rows the options switch on, by tool.
pub struct Router {
    exact: HashMap<&'static str, &'static Route, FxBuildHasher>,
    prefixes: Vec<String>,
}

impl Router {
    pub fn new(opts: &Options) -> Router {
        let mut exact = HashMap::default();
        for route in ROUTES.iter().filter(|r| (r.on)(opts)) {
            for tool in route.tools {
                exact.insert(*tool, route);
            }
        }
        Router {
            exact,
            prefixes: opts.tool_prefixes.clone(),
        }
    }

    /// The row that decides calls of `tool`, if any does. A tool named by a
    /// row is decided by it even when a `toolPrefix` also matches it.
    pub fn route(&self, tool: &str) -> Option<&'static Route> {
        if let Some(r) = self.exact.get(tool) {
            return Some(r);
        }
        auth_token::owns(&self.prefixes, tool).then_some(&OWNED)
    }

    /// Exact tool names some row reads the params of.
    pub fn tools(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.exact.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(v: serde_json::Value) -> Options {
        let mut v = v;
        v.as_object_mut()
            .unwrap()
            .insert("tokenMapPath".into(), json!("/m.json"));
        Options::from_json(&v.to_string()).unwrap()
    }

    #[test]
    fn no_tool_is_routed_twice() {
        let mut seen = std::collections::HashSet::new();
        for r in ROUTES {
            for t in r.tools {
                assert!(seen.insert(*t), "{t} is in two rows");
            }
        }
    }

    #[test]
    fn every_param_token_text_scans_is_read_by_its_route() {
        let r = Router::new(&opts(json!({})));
        let tools = ["sessions_send", "sessions_spawn", "automations"]
            .into_iter()
            .chain(workboard_scope::TOOLS)
            .chain(workboard_scope::ASSIGN_TOOLS)
            .chain(token_text::WORKBOARD_TOOLS);
        for tool in tools {
            let route = r
                .route(tool)
                .unwrap_or_else(|| panic!("{tool} is not routed"));
            for field in token_text::fields(tool) {
                assert!(
                    route.reads.contains(&field) || route.scans.contains(&field),
                    "{tool}: {field} is scanned but not read"
                );
            }
        }
    }

    #[test]
    fn owned_tools_go_by_prefix_and_read_no_params() {
        let r = Router::new(&opts(json!({})));
        let owned = r.route("claw-os__claw_notes").unwrap();
        assert_eq!(owned.rule, "auth-token");
        assert!(owned.reads.is_empty() && owned.scans.is_empty());
        assert!(r.route("web_search").is_none());
        assert_eq!(r.route("sessions_send").unwrap().scans, &["message"]);
    }

    #[test]
    fn switched_off_rules_route_nothing() {
        let off = Router::new(&opts(
            json!({"protectMap": "off", "posture": "warn", "rules": {
                "crossUserSend": {"enabled": false}, "spawnRedirect": {"enabled": false},
                "delegationSession": {"enabled": false}, "workboardScope": {"enabled": false},
                "conversationId": {"enabled": false}, "layerControls": {"enabled": false},
            }}),
        ));
        // Only the shells stay (sandbox-pty has no switch), and the
        // Workboard tools (token-text has none either).
        let left: Vec<&str> = off.tools().collect();
        assert!(
            left.iter()
                .all(|t| map_access::EXEC_TOOLS.contains(t) || t.starts_with("workboard_")),
            "{left:?}"
        );
        let on = Router::new(&opts(json!({})));
        assert!(on.route("read").is_some() && on.route("exec").is_some());
        let strict = Router::new(&opts(json!({"protectMap": "strict"})));
        assert!(strict.route("exec").is_some());
    }
}
