//! Decides one tool call: finds the call's route (`route.rs`), runs its
//! rule, and scrubs what the verdict quotes. The pipeline (`pipeline.rs`)
//! calls it for the trusted policy, the hook and `claw-identity explain`
//! alike, so all three agree by construction.

use crate::agent_fs::AgentFsTable;
use crate::options::Options;
use crate::posture::{Judged, Posture};
use crate::protected::resolved::Facts;
use crate::protected::{self, Location, OpenClawFiles, Process};
use crate::redact::{scrub, shown};
use crate::route::{Route, Router};
use crate::rules::{Context, Decision, MapView, ToolCall, Verdict};
use crate::sessions::{Host, Known, SessionEntry};

pub use crate::rules::{EnsureSession, SessionRef, TokenStatus};

/// Id of the refusal of a guarded call whose params can't be read exactly.
pub const UNREADABLE_RULE_ID: &str = "claw-identity";

/// Reasons and approvals quote what the model wrote (a target agent id, a
/// session key, a task), and a token pasted there must not be echoed to the
/// model, the user or the log. Every verdict passes here, so no rule can forget.
fn scrubbed(verdict: Verdict<'_>) -> Verdict<'_> {
    match verdict {
        Verdict::Block(reason) => Verdict::Block(scrub(&reason)),
        Verdict::RequireApproval {
            title,
            description,
            then,
        } => Verdict::RequireApproval {
            title: scrub(&title),
            description: scrub(&description),
            then,
        },
        v @ (Verdict::Pass | Verdict::Rewrite(_)) => v,
    }
}

pub struct Engine {
    opts: Options,
    router: Router,
    /// What the rules read of OpenClaw's sessions, filled on demand.
    sessions: Known,
    /// Workspaces and sandboxing per agent, and the home directory, for `map-access`.
    fs: parking_lot::RwLock<Facts>,
    /// Every workspace an agent may have (OpenClaw's config), the sandbox
    /// shows each agent only its own; and whether OpenClaw imports a
    /// workspace's `hooks/` (a hook entry is enabled).
    workspaces: parking_lot::RwLock<(Vec<std::path::PathBuf>, bool)>,
    /// Whether the agents are contained, judged from OpenClaw's config.
    posture: arc_swap::ArcSwap<Judged>,
}

impl Engine {
    /// An engine for `opts`; until OpenClaw's facts are set, its protected
    /// locations are those of the environment and this process alone
    /// (`protected::Process`: the addon's own files among them).
    pub fn new(opts: Options) -> Engine {
        let files = OpenClawFiles {
            process: Process::current(),
            ..OpenClawFiles::default()
        };
        let locations = protected::locations(&opts.token_map_path, &files);
        let opts_posture = opts.posture;
        Engine {
            router: Router::new(&opts),
            opts,
            sessions: Known::default(),
            fs: parking_lot::RwLock::new(Facts {
                locations,
                ..Facts::default()
            }),
            workspaces: Default::default(),
            posture: arc_swap::ArcSwap::from_pointee(Judged::new(Posture::unjudged(opts_posture))),
        }
    }

    /// Puts a posture in force (judged from OpenClaw's config).
    pub fn set_posture(&self, posture: Posture) {
        self.posture
            .store(std::sync::Arc::new(Judged::new(posture)));
    }

    /// The posture in force.
    pub fn posture(&self) -> std::sync::Arc<Judged> {
        self.posture.load_full()
    }

    /// What `map-access` knows of each agent's workspace and sandbox, and of
    /// OpenClaw's files, from OpenClaw's config (the hook's ctx carries
    /// neither), with what the plugin and the process know of themselves.
    pub fn set_openclaw_facts(&self, table: AgentFsTable, files: &OpenClawFiles) {
        let locations = protected::locations(&self.opts.token_map_path, files);
        *self.workspaces.write() = (files.workspaces.clone(), files.workspace_hooks);
        let mut fs = self.fs.write();
        fs.agents = table;
        fs.locations = locations;
        *fs.resolved.lock() = None;
    }

    /// The locations `map-access` keeps out of the agents' reach, as
    /// configured (`protected::locations`): the sandbox masks the same ones
    /// (`crate::sandbox`), and the posture check reads them.
    pub fn protected_locations(&self) -> Vec<Location> {
        self.fs.read().locations.clone()
    }

    /// Every workspace an agent may have, as OpenClaw's config gives them.
    pub fn workspaces(&self) -> Vec<std::path::PathBuf> {
        self.workspaces.read().0.clone()
    }

    /// Whether OpenClaw imports hooks from a workspace's `hooks/`.
    pub fn workspace_hooks(&self) -> bool {
        self.workspaces.read().1
    }

    /// Only the agents' workspaces and sandboxes (tests).
    pub fn set_agent_fs(&self, table: AgentFsTable) {
        self.fs.write().agents = table;
    }

    /// Records a session's entry (`None`: the store has none), as asked for
    /// by `Decision::need_session`.
    pub fn note_session(&self, session_key: &str, entry: Option<SessionEntry>) {
        self.sessions.note(session_key, entry);
    }

    /// Records that the layer routed a send into the delegation session
    /// `session_key` and had it created: calls made there carry its
    /// conversation (rule `conversation-id`).
    pub fn note_delegation(&self, session_key: &str) {
        self.sessions.note_made(session_key);
    }

    /// Records only who spawned a sub-agent session (`None`: nobody recorded).
    pub fn note_spawn(&self, child_session_key: &str, spawner_session_key: Option<&str>) {
        self.sessions
            .note_spawner(child_session_key, spawner_session_key);
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The route of `tool`'s calls; `None`: no rule concerns them, and they
    /// pass without their params being read.
    pub fn route(&self, tool: &str) -> Option<&'static Route> {
        self.router.route(tool)
    }

    /// Whether any rule concerns calls of `tool`.
    pub fn concerns(&self, tool: &str) -> bool {
        self.route(tool).is_some()
    }

    /// Exact tool names some rule reads the params of.
    pub fn routed_tools(&self) -> Vec<&'static str> {
        let mut t: Vec<_> = self.router.tools().collect();
        t.sort_unstable();
        t
    }

    /// The rules' decision for one call, by the row that routed it: the
    /// caller routed the call once ([`Engine::route`]) to know which params
    /// to read, and hands that row down. Deciding again on params a rule
    /// already rewrote yields the same values.
    pub fn decide<'a>(
        &self,
        route: &Route,
        call: &ToolCall<'a>,
        view: &MapView<'a>,
        host: &dyn Host,
    ) -> Decision<'a> {
        let posture = self.posture.load();
        if let Some(d) = crate::posture::drift(&posture, call, route.rule, host) {
            return d;
        }
        let fs = self.fs.read();
        let cx = Context {
            posture: &posture,
            opts: &self.opts,
            view,
            sessions: &self.sessions,
            fs: &fs,
            host,
            generation: view.generation,
        };
        let mut d = (route.decide)(&cx, call, route.reads);
        d.verdict = scrubbed(d.verdict);
        d
    }

    /// Routes `call` and decides it: for tests, which hold no route (the
    /// unit tests and, with the feature `testing`, `core/tests/`). The
    /// bridge routes once itself and calls [`Engine::decide`].
    #[cfg(any(test, feature = "testing"))]
    pub fn decide_call<'a>(
        &self,
        call: &ToolCall<'a>,
        view: &MapView<'a>,
        host: &dyn Host,
    ) -> Decision<'a> {
        match self.route(call.tool) {
            Some(route) => self.decide(route, call, view, host),
            None => Decision::pass(),
        }
    }

    /// A guarded call whose param `field` holds a value that can't be read
    /// exactly (a lone UTF-16 surrogate, nesting past `why`'s limit, a value
    /// JSON can't hold): deciding on anything else than what would run
    /// could let it past a rule, so it does not run.
    pub fn unreadable<'a>(&self, call: &ToolCall<'_>, field: &str, why: &str) -> Decision<'a> {
        Decision::block(
            UNREADABLE_RULE_ID,
            format!(
                "{UNREADABLE_RULE_ID}: params.{} of {} can't be read ({why}), so the call was not run. Send it again with plain JSON values (text without broken characters).",
                shown(field),
                shown(call.tool)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Params;
    use crate::testing::{decide_on, empty_map, engine, pp, rules_engine, T1};
    use crate::token_map::{parse, TokenMap};
    use serde_json::Value;

    /// The params a decision sets (for a rewrite, or an approved call).
    fn sets(e: &Engine, d: &Decision<'_>) -> Vec<(String, Value)> {
        d.patch()
            .map(|p| p.entries(e.options()).0)
            .unwrap_or_default()
    }

    #[test]
    fn injects_under_the_configured_param_name() {
        let map = parse(format!(r#"{{"a": "{T1}"}}"#).as_bytes()).unwrap().map;
        let e = engine(r#"{"tokenMapPath": "/m.json", "tokenParam": "tok"}"#);
        let p = Params::new();
        let call = ToolCall {
            tool: "claw-os__x",
            agent_id: Some("a"),
            session_key: None,
            params: &p,
            derived_paths: &[],
            call_id: None,
        };
        let d = e.decide_call(
            &call,
            &MapView {
                map: &map,
                generation: 0,
                loaded: true,
                stale: false,
                redactor: None,
            },
            &crate::sessions::NoHost,
        );
        assert_eq!(sets(&e, &d), vec![("tok".into(), Value::String(T1.into()))]);
        assert_eq!(d.rule, Some("auth-token"));
    }

    #[test]
    fn missing_blocks_only_when_asked_and_names_rule_agent_and_path() {
        let map = TokenMap::default();
        let p = Params::new();
        let call = ToolCall {
            tool: "claw-os__x",
            agent_id: Some("ghost"),
            session_key: None,
            params: &p,
            derived_paths: &[],
            call_id: None,
        };
        let view = MapView {
            map: &map,
            generation: 0,
            loaded: true,
            stale: false,
            redactor: None,
        };
        // "pass": the call runs, with the token and the conversation taken out.
        let passed = engine(r#"{"tokenMapPath": "/m.json"}"#).decide_call(
            &call,
            &view,
            &crate::sessions::NoHost,
        );
        assert_eq!(
            passed.verdict,
            Verdict::Rewrite(crate::rules::Patch {
                token: crate::rules::Slot::Clear,
                conversation: crate::rules::Slot::Clear,
                params: vec![],
                handle: None,
            })
        );
        let d = engine(r#"{"tokenMapPath": "/m.json", "onMissingToken": "block"}"#).decide_call(
            &call,
            &view,
            &crate::sessions::NoHost,
        );
        let Verdict::Block(reason) = d.verdict else {
            panic!("{d:?}")
        };
        assert!(
            reason.starts_with("auth-token: agent \"ghost\""),
            "{reason}"
        );
        assert!(reason.contains("/m.json"), "{reason}");
    }

    // ---- what the model wrote is echoed only scrubbed ----

    use serde_json::json;

    const FRANCIS_MAIN: &str = "agent:paco--francis:main";

    /// Not a token of any map: what a model might paste into a param.
    const PASTED: &str = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";

    /// Every text of a decision that reaches the model, the user or the log.
    fn echoed(d: &Decision<'_>) -> String {
        let mut out = match &d.verdict {
            Verdict::Block(r) => r.clone(),
            Verdict::RequireApproval {
                title, description, ..
            } => format!("{title}\n{description}"),
            other => panic!("nothing echoed: {other:?}"),
        };
        if let Some(ensure) = &d.ensure_session {
            out += "\n";
            out += &ensure.failure_reason;
        }
        out
    }

    /// Why `text` fails to hide `secret`: it holds 16 characters of it (in
    /// either case), or no fingerprint in its place.
    fn leak(text: &str, secret: &str) -> Option<String> {
        let (text_l, secret_l) = (text.to_lowercase(), secret.to_lowercase());
        if let Some(i) = (0..=secret_l.len() - 16).find(|&i| text_l.contains(&secret_l[i..i + 16]))
        {
            return Some(format!("echoes characters {i}.. of the pasted token"));
        }
        (!text.contains("<redacted sha256:")).then(|| format!("shows no fingerprint: {text}"))
    }

    #[test]
    fn a_token_pasted_into_params_is_never_echoed() {
        let lower = PASTED.to_lowercase();
        let plain = rules_engine(json!({}));
        let ask =
            rules_engine(json!({"crossUserSend": {"grants": {"paco--*": {"pepito--*": "ask"}}}}));
        let blocking = engine(r#"{"tokenMapPath": "/m.json", "onMissingToken": "block"}"#);
        let owned_tool = format!("claw-os__{lower}");
        let cases = [
            (
                "cross-user-send, by agentId",
                &plain,
                "sessions_send",
                json!({"agentId": PASTED, "message": "m"}),
            ),
            (
                "cross-user-send, by sessionKey",
                &plain,
                "sessions_send",
                json!({"sessionKey": format!("agent:{PASTED}:main"), "message": "m"}),
            ),
            (
                "cross-user-send, agentId next to sessionKey",
                &plain,
                "sessions_send",
                json!({"sessionKey": "agent:paco--dali:main", "agentId": format!("pepito--{lower}")}),
            ),
            (
                "cross-user-send, spawn",
                &plain,
                "sessions_spawn",
                json!({"agentId": PASTED, "task": "t"}),
            ),
            (
                "approval title and description",
                &ask,
                "sessions_send",
                json!({"agentId": format!("pepito--{PASTED}"), "message": "m"}),
            ),
            (
                "delegation-session failure reason",
                &plain,
                "sessions_send",
                json!({"agentId": format!("paco--{lower}"), "message": "m"}),
            ),
            (
                "spawn-redirect: target, key and task",
                &plain,
                "sessions_spawn",
                json!({"agentId": format!("paco--{PASTED}"), "task": format!("use {PASTED}")}),
            ),
        ];
        let mut texts: Vec<(&str, String)> = Vec::new();
        for (what, e, tool, params) in cases {
            let d = decide_on(
                e,
                empty_map(),
                tool,
                Some("paco--francis"),
                Some(FRANCIS_MAIN),
                pp(params),
            );
            if what.starts_with("delegation-session") {
                let ensure = d.ensure_session.expect("a dedicated session");
                texts.push((what, ensure.failure_reason));
            } else {
                texts.push((what, echoed(&d)));
            }
        }
        // auth-token: a tool name and a calling agent id that hold a token.
        let d = decide_on(
            &blocking,
            empty_map(),
            &owned_tool,
            Some(&lower),
            None,
            pp(json!({})),
        );
        texts.push(("missing-token reason", echoed(&d)));
        let leaks: Vec<String> = texts
            .iter()
            .filter_map(|(what, text)| leak(text, PASTED).map(|why| format!("{what}: {why}")))
            .collect();
        assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    }
}
