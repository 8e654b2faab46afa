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

    /// Routes `call` and decides it: for tests, which hold no route.
    #[cfg(test)]
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
    use crate::rules::{delegation_session, map_access, Params};
    use crate::token_map::{parse, tests::T1, TokenMap};
    use serde_json::Value;

    /// The params a decision sets (for a rewrite, or an approved call).
    fn sets(e: &Engine, d: &Decision<'_>) -> Vec<(String, Value)> {
        d.patch()
            .map(|p| p.entries(e.options()).0)
            .unwrap_or_default()
    }

    fn needs_params(e: &Engine, tool: &str) -> bool {
        e.route(tool).is_some_and(|r| !r.reads.is_empty())
    }

    fn engine(json: &str) -> Engine {
        Engine::new(Options::from_json(json).unwrap())
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

    // ---- the identity rules, end to end through the engine ----

    use serde_json::json;

    const FRANCIS_MAIN: &str = "agent:paco--francis:main";

    fn rules_engine(rules: serde_json::Value) -> Engine {
        engine(&json!({"tokenMapPath": "/m.json", "rules": rules}).to_string())
    }

    fn decide_on<'m>(
        e: &Engine,
        map: &'m TokenMap,
        tool: &'m str,
        agent: Option<&'m str>,
        session: Option<&'m str>,
        params: &'m Params,
    ) -> Decision<'m> {
        let call = ToolCall {
            tool,
            agent_id: agent,
            session_key: session,
            params,
            derived_paths: &[],
        };
        e.decide_call(
            &call,
            &MapView {
                map,
                generation: 0,
                loaded: true,
                stale: false,
                redactor: None,
            },
            &crate::sessions::NoHost,
        )
    }

    fn empty_map() -> &'static TokenMap {
        Box::leak(Box::new(TokenMap::default()))
    }

    fn p(v: serde_json::Value) -> Params {
        v.as_object().unwrap().clone()
    }

    /// `p`, borrowed for the whole test (a decision borrows its call's params).
    fn pp(v: serde_json::Value) -> &'static Params {
        Box::leak(Box::new(p(v)))
    }

    /// Deciding again on the params a decision produced (a second tier, a
    /// retried call) must set the same values (or pass), never block.
    fn assert_idempotent(
        e: &Engine,
        tool: &'static str,
        agent: &'static str,
        session: &str,
        params: Params,
    ) -> Decision<'static> {
        let map = empty_map();
        let session: &'static str = Box::leak(session.to_owned().into_boxed_str());
        let params: &'static Params = Box::leak(Box::new(params));
        let first = decide_on(e, map, tool, Some(agent), Some(session), params);
        let patch = match &first.verdict {
            Verdict::Rewrite(_) | Verdict::RequireApproval { .. } => sets(e, &first),
            Verdict::Pass | Verdict::Block(_) => return first,
        };
        let mut rewritten = params.clone();
        for (k, v) in &patch {
            rewritten.insert(k.clone(), v.clone());
        }
        let rewritten: &'static Params = Box::leak(Box::new(rewritten));
        let second = decide_on(e, map, tool, Some(agent), Some(session), rewritten);
        let again = match &second.verdict {
            Verdict::Rewrite(_) | Verdict::RequireApproval { .. } => sets(e, &second),
            Verdict::Pass => Vec::new(),
            Verdict::Block(r) => panic!("second decision blocked: {r}"),
        };
        for (k, v) in &again {
            assert_eq!(rewritten.get(k), Some(v), "second decision changed {k}");
        }
        assert_eq!(second.ensure_session, first.ensure_session);
        first
    }

    fn blocked(d: &Decision<'_>) -> String {
        match &d.verdict {
            Verdict::Block(r) => r.clone(),
            other => panic!("not a block: {other:?}"),
        }
    }

    /// A map in a fresh directory, and an engine reading it.
    fn map_engine(tag: &str, extra: serde_json::Value) -> (std::path::PathBuf, Engine) {
        let dir = std::env::temp_dir().join(format!("ci-engine-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let map = dir.join("agent-tokens.json");
        std::fs::write(&map, "{}").unwrap();
        let mut opts = json!({"tokenMapPath": map});
        opts.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        (dir, engine(&opts.to_string()))
    }

    #[test]
    fn map_access_blocks_file_tools_on_the_map_by_default() {
        let (dir, e) = map_engine("default", json!({}));
        let map = TokenMap::default();
        let rd = p(json!({"path": dir.join("agent-tokens.json")}));
        let d = decide_on(&e, &map, "read", Some("paco--francis"), None, &rd);
        assert_eq!(d.rule, Some(map_access::RULE_ID));
        assert!(
            matches!(&d.verdict, Verdict::Block(r) if r.starts_with("map-access: read refused"))
        );
        let w = p(json!({"path": dir.join("agent-tokens.json"), "content": "{}"}));
        assert!(matches!(
            decide_on(&e, &map, "write", None, None, &w).verdict,
            Verdict::Block(_)
        ));
        let elsewhere = p(json!({"path": "/etc/hostname"}));
        assert_eq!(
            decide_on(&e, &map, "read", None, None, &elsewhere).verdict,
            Verdict::Pass
        );
        let exec = p(json!({"command": "cat x"}));
        assert_eq!(
            decide_on(&e, &map, "exec", None, None, &exec).verdict,
            Verdict::Pass
        );

        let (dir2, off) = map_engine("off", json!({"protectMap": "off"}));
        let p2 = p(json!({"path": dir2.join("agent-tokens.json")}));
        assert_eq!(
            decide_on(&off, &map, "read", None, None, &p2).verdict,
            Verdict::Pass
        );
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_dir_all(dir2);
    }

    #[test]
    fn strict_blocks_exec_for_agents_outside_the_sandbox() {
        let (dir, e) = map_engine("strict", json!({"protectMap": "strict"}));
        let map = TokenMap::default();
        let exec = p(json!({"command": "base64 ~/.config/x"}));
        for tool in ["exec", "process"] {
            let d = decide_on(&e, &map, tool, Some("paco--francis"), None, &exec);
            assert!(
                matches!(&d.verdict, Verdict::Block(r) if r.starts_with("map-access: ")),
                "{tool}"
            );
        }
        let mut table = crate::agent_fs::AgentFsTable::default();
        table.agents.insert(
            "paco--francis".into(),
            crate::agent_fs::AgentFs {
                cwd: None,
                workspaces: vec![],
                sandboxed: true,
            },
        );
        e.set_agent_fs(table);
        assert_eq!(
            decide_on(&e, &map, "exec", Some("paco--francis"), None, &exec).verdict,
            Verdict::Pass
        );
        assert!(matches!(
            decide_on(&e, &map, "exec", Some("dali"), None, &exec).verdict,
            Verdict::Block(_)
        ));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn routes_name_exact_tools_and_owned_calls_read_no_params() {
        let e = rules_engine(json!({}));
        for t in [
            "sessions_send",
            "sessions_spawn",
            "workboard_list",
            "workboard_decompose",
        ] {
            assert!(needs_params(&e, t), "{t}");
        }
        assert!(!needs_params(&e, "claw-os__claw_notes"));
        assert!(!needs_params(&e, "workboard_read"));
        assert!(needs_params(&e, "read") && needs_params(&e, "apply_patch"));
        // exec's `pty` and `env`: rule sandbox-pty passes the ask for a terminal on.
        assert_eq!(e.route("exec").map(|r| r.reads), Some(&["pty", "env"][..]));
        let off = engine(
            &json!({"tokenMapPath": "/m.json", "protectMap": "off", "posture": "warn", "rules": {
                "crossUserSend": {"enabled": false}, "spawnRedirect": {"enabled": false},
                "delegationSession": {"enabled": false}, "workboardScope": {"enabled": false},
                "conversationId": {"enabled": false}, "layerControls": {"enabled": false},
            }})
            .to_string(),
        );
        // The shells (sandbox-pty) and the Workboard tools (token-text)
        // have no switch.
        let mut left = off.routed_tools();
        left.retain(|t| !map_access::EXEC_TOOLS.contains(t) && !t.starts_with("workboard_"));
        assert!(left.is_empty(), "{left:?}");
        assert!(off.concerns("claw-os__x"));
    }

    #[test]
    fn an_exec_that_asks_for_a_terminal_carries_the_sandboxs_marker_in_its_env() {
        let e = rules_engine(json!({}));
        let d = assert_idempotent(
            &e,
            "exec",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"command": "top", "pty": true, "env": {"A": "b"}})),
        );
        assert_eq!(
            sets(&e, &d),
            vec![(
                "env".into(),
                json!({"A": "b", crate::sandbox::PTY_MARKER: "1"})
            )]
        );
        for params in [
            json!({"command": "ls"}),
            json!({"command": "ls", "pty": false}),
            json!({"command": "ls", "pty": true, "env": "x"}),
        ] {
            let d = decide_on(
                &e,
                empty_map(),
                "exec",
                Some("paco--francis"),
                None,
                pp(params.clone()),
            );
            assert_eq!(d.verdict, Verdict::Pass, "{params}");
        }
        // process has no terminal to ask for.
        let d = decide_on(
            &e,
            empty_map(),
            "process",
            None,
            None,
            pp(json!({"action": "poll", "pty": true})),
        );
        assert_eq!(d.verdict, Verdict::Pass);
    }

    #[test]
    fn owned_calls_get_the_token_then_the_conversation() {
        let map = parse(format!(r#"{{"paco--francis": "{T1}"}}"#).as_bytes())
            .unwrap()
            .map;
        let e = rules_engine(json!({}));
        let none = Params::new();
        let d = decide_on(
            &e,
            &map,
            "claw-os__x",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            &none,
        );
        assert_eq!(
            sets(&e, &d),
            vec![
                ("auth_token".into(), json!(T1)),
                ("_conversation_id".into(), json!(FRANCIS_MAIN)),
            ]
        );
        assert_eq!(d.rule, Some("auth-token"));
        let deleg = delegation_session::delegation_key("paco--dali", FRANCIS_MAIN);
        let d = decide_on(
            &e,
            &map,
            "claw-os__x",
            Some("paco--dali"),
            Some(&deleg),
            &none,
        );
        assert_eq!(
            sets(&e, &d),
            vec![("_conversation_id".into(), json!(FRANCIS_MAIN))],
            "the token is missing (pass mode), the conversation is still set"
        );
        assert_eq!(d.rule, Some("conversation-id"));
    }

    #[test]
    fn a_sub_agent_call_waits_for_its_lineage_and_is_not_counted_until_then() {
        let map = TokenMap::default();
        let e = rules_engine(json!({}));
        let child = "agent:paco--francis:subagent:77";
        let none = Params::new();
        let d = decide_on(
            &e,
            &map,
            "claw-os__x",
            Some("paco--francis"),
            Some(child),
            &none,
        );
        assert_eq!(
            d.need_session,
            Some(SessionRef {
                agent_id: "paco--francis".into(),
                session_key: child.into()
            })
        );
        e.note_spawn(child, Some(FRANCIS_MAIN));
        let d = decide_on(
            &e,
            &map,
            "claw-os__x",
            Some("paco--francis"),
            Some(child),
            &none,
        );
        assert_eq!(d.need_session, None);
        assert_eq!(
            sets(&e, &d),
            vec![("_conversation_id".into(), json!(FRANCIS_MAIN))]
        );
    }

    #[test]
    fn a_same_user_send_goes_to_its_dedicated_session_which_is_ensured() {
        let e = rules_engine(json!({}));
        let d = assert_idempotent(
            &e,
            "sessions_send",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"agentId": "paco--dali", "message": "hi"})),
        );
        let key = "agent:paco--dali:delegation:agent.paco--francis.main";
        assert_eq!(sets(&e, &d), vec![("sessionKey".into(), json!(key))]);
        assert_eq!(d.rule, Some("delegation-session"));
        let ensure = d.ensure_session.unwrap();
        assert_eq!(
            ensure.session,
            SessionRef {
                agent_id: "paco--dali".into(),
                session_key: key.into()
            }
        );
        assert!(ensure.failure_reason.starts_with("delegation-session: "));
    }

    #[test]
    fn a_send_from_a_delegated_session_keeps_the_original_conversation() {
        let e = rules_engine(json!({}));
        let from = delegation_session::delegation_key("paco--dali", FRANCIS_MAIN);
        let d = assert_idempotent(
            &e,
            "sessions_send",
            "paco--dali",
            &from,
            p(json!({"agentId": "paco--atlas", "message": "hi"})),
        );
        assert_eq!(
            sets(&e, &d),
            vec![(
                "sessionKey".into(),
                json!("agent:paco--atlas:delegation:agent.paco--francis.main")
            )]
        );
    }

    #[test]
    fn a_cross_user_send_is_blocked_before_any_routing() {
        let e = rules_engine(json!({}));
        for params in [
            json!({"agentId": "pepito--atlas", "message": "m"}),
            json!({"sessionKey": "agent:pepito--atlas:main", "message": "m"}),
            json!({"sessionKey": "agent:paco--dali:main", "agentId": "pepito--atlas", "message": "m"}),
            json!({"agent_id": "PEPITO--ATLAS", "message": "m"}),
        ] {
            let d = assert_idempotent(
                &e,
                "sessions_send",
                "paco--francis",
                FRANCIS_MAIN,
                p(params.clone()),
            );
            let r = blocked(&d);
            assert!(
                r.starts_with("cross-user-send: ") && r.contains("pepito--atlas"),
                "{params}: {r}"
            );
            assert_eq!(d.ensure_session, None);
        }
        let d = decide_on(
            &e,
            empty_map(),
            "sessions_send",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(json!({"label": "x", "message": "m"})),
        );
        assert!(blocked(&d).contains("agentId"));
        let d = decide_on(
            &e,
            empty_map(),
            "sessions_send",
            None,
            Some(FRANCIS_MAIN),
            pp(json!({"agentId": "paco--dali", "message": "m"})),
        );
        assert!(blocked(&d).starts_with("cross-user-send: "));
    }

    #[test]
    fn an_ask_grant_asks_and_still_routes_to_the_dedicated_session() {
        let e = rules_engine(
            json!({"crossUserSend": {"grants": {"paco--*": {"pepito--atlas": "ask"}}}}),
        );
        let d = assert_idempotent(
            &e,
            "sessions_send",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"agentId": "pepito--atlas", "message": "m"})),
        );
        let Verdict::RequireApproval {
            title, description, ..
        } = &d.verdict
        else {
            panic!("{d:?}")
        };
        assert!(title.contains("pepito--atlas") && description.contains("paco--francis"));
        assert_eq!(
            sets(&e, &d),
            vec![(
                "sessionKey".into(),
                json!("agent:pepito--atlas:delegation:agent.paco--francis.main")
            )]
        );
        assert!(d.ensure_session.is_some());
        let allow = rules_engine(
            json!({"crossUserSend": {"grants": {"paco--francis": {"pepito--atlas": "allow"}}}}),
        );
        let d = decide_on(
            &allow,
            empty_map(),
            "sessions_send",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(json!({"agentId": "pepito--atlas", "message": "m"})),
        );
        assert!(matches!(d.verdict, Verdict::Rewrite(_)));
    }

    #[test]
    fn explicit_other_sessions_and_self_sends_are_left_alone() {
        let e = rules_engine(json!({}));
        for params in [
            json!({"sessionKey": "agent:paco--dali:subagent:1", "message": "m"}),
            json!({"agentId": "paco--dali", "label": "research", "message": "m"}),
            json!({"agentId": "paco--francis", "message": "m"}),
        ] {
            let d = assert_idempotent(
                &e,
                "sessions_send",
                "paco--francis",
                FRANCIS_MAIN,
                p(params.clone()),
            );
            assert_eq!(d.verdict, Verdict::Pass, "{params}");
        }
    }

    #[test]
    fn a_spawn_of_a_specialist_is_redirected_to_the_exact_send() {
        let e = rules_engine(json!({}));
        let d = assert_idempotent(
            &e,
            "sessions_spawn",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"agentId": "paco--dali", "task": "paint"})),
        );
        let r = blocked(&d);
        assert!(r.starts_with("spawn-redirect: "), "{r}");
        assert!(
            r.contains(r#"{"agentId":"paco--dali","message":"paint","sessionKey":"agent:paco--dali:delegation:agent.paco--francis.main"}"#),
            "{r}"
        );
        for params in [
            json!({"task": "t"}),
            json!({"agentId": "paco--francis", "task": "t"}),
        ] {
            let d = assert_idempotent(
                &e,
                "sessions_spawn",
                "paco--francis",
                FRANCIS_MAIN,
                p(params.clone()),
            );
            assert_eq!(d.verdict, Verdict::Pass, "{params}");
        }
        let d = decide_on(
            &e,
            empty_map(),
            "sessions_spawn",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(json!({"agentId": "pepito--atlas", "task": "t"})),
        );
        assert!(
            blocked(&d).starts_with("cross-user-send: "),
            "cross-user comes first"
        );
        let free = rules_engine(json!({"spawnRedirect": {"enabled": false}}));
        let d = decide_on(
            &free,
            empty_map(),
            "sessions_spawn",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(json!({"agentId": "paco--dali", "task": "t"})),
        );
        assert_eq!(d.verdict, Verdict::Pass);
    }

    #[test]
    fn workboard_calls_are_scoped_to_the_callers_user_board() {
        let e = rules_engine(json!({}));
        let d = assert_idempotent(
            &e,
            "workboard_list",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"boardId": "wb_pepito"})),
        );
        assert_eq!(sets(&e, &d), vec![("boardId".into(), json!("wb_paco"))]);
        assert_eq!(d.rule, Some("workboard-scope"));
        let d = assert_idempotent(
            &e,
            "workboard_decompose",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"id": "c", "children": [{"title": "a"}]})),
        );
        assert!(matches!(d.verdict, Verdict::Rewrite(_)));
        let d = assert_idempotent(
            &e,
            "workboard_list",
            "main",
            "agent:main:main",
            p(json!({"boardId": "x"})),
        );
        assert_eq!(d.verdict, Verdict::Pass);
    }

    #[test]
    fn another_users_sessions_cannot_be_read_or_changed() {
        let e = rules_engine(json!({}));
        for (tool, params) in [
            (
                "sessions_history",
                json!({"sessionKey": "agent:pepito--atlas:main"}),
            ),
            (
                "sessions_history",
                json!({"sessionKey": "AGENT:PEPITO--ATLAS:main", "limit": 5}),
            ),
            (
                "session_status",
                json!({"sessionKey": "agent:pepito--atlas:main", "model": "x"}),
            ),
            (
                "sessions_search",
                json!({"query": "q", "sessionKey": "agent:pepito--atlas:main"}),
            ),
            (
                "sessions",
                json!({"action": "delete", "sessionKey": "agent:pepito--atlas:main"}),
            ),
            (
                "sessions",
                json!({"action": "patch", "targets": [{"sessionKey": "agent:paco--dali:main"}, {"sessionKey": "agent:pepito--atlas:main"}]}),
            ),
            ("sessions_list", json!({"agentId": "pepito--atlas"})),
        ] {
            let d = assert_idempotent(&e, tool, "paco--francis", FRANCIS_MAIN, p(params.clone()));
            let r = blocked(&d);
            assert!(
                r.starts_with("cross-user-send: ") && r.contains("pepito--atlas"),
                "{tool} {params}: {r}"
            );
        }
    }

    #[test]
    fn session_references_that_dont_name_an_agent_are_refused_with_the_form_to_use() {
        let e = rules_engine(json!({}));
        for (tool, params) in [
            ("sessions_history", json!({"sessionKey": "main"})),
            (
                "sessions_history",
                json!({"sessionKey": "4f2a1c9e-1111-2222-3333-444455556666"}),
            ),
            ("session_status", json!({"sessionKey": "research"})),
            (
                "sessions",
                json!({"action": "reset", "sessionKey": "global"}),
            ),
            ("sessions_search", json!({"query": "q"})),
        ] {
            let d = assert_idempotent(&e, tool, "paco--francis", FRANCIS_MAIN, p(params.clone()));
            let r = blocked(&d);
            assert!(
                r.starts_with("cross-user-send: ") && r.contains("agent:"),
                "{tool} {params}: {r}"
            );
        }
        let d = decide_on(
            &e,
            empty_map(),
            "sessions_history",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(json!({"sessionKey": "main"})),
        );
        assert!(blocked(&d).contains("agent:paco--francis:main"));
    }

    #[test]
    fn own_users_sessions_pass_and_the_listing_is_scoped_to_the_caller() {
        let e = rules_engine(json!({}));
        for (tool, params) in [
            ("sessions_history", json!({"sessionKey": "current"})),
            (
                "sessions_history",
                json!({"sessionKey": "agent:paco--dali:main"}),
            ),
            ("session_status", json!({})),
            ("sessions", json!({"action": "patch", "label": "x"})),
            ("sessions", json!({"action": "group_list"})),
            (
                "sessions_search",
                json!({"query": "q", "sessionKey": "current"}),
            ),
            ("sessions_list", json!({"agentId": "Paco--Dali"})),
        ] {
            let d = assert_idempotent(&e, tool, "paco--francis", FRANCIS_MAIN, p(params.clone()));
            assert_eq!(d.verdict, Verdict::Pass, "{tool} {params}");
        }
        let d = assert_idempotent(
            &e,
            "sessions_list",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"limit": 10, "agentId": " "})),
        );
        assert_eq!(
            sets(&e, &d),
            vec![("agentId".into(), json!("paco--francis"))]
        );
        assert!(needs_params(&e, "sessions_history") && needs_params(&e, "sessions_list"));
    }

    #[test]
    fn session_reads_follow_the_send_grants() {
        let e = rules_engine(
            json!({"crossUserSend": {"grants": {"paco--*": {"pepito--atlas": "ask"}, "paco--francis": {"pepito--bob": "allow"}}}}),
        );
        let d = assert_idempotent(
            &e,
            "sessions_history",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"sessionKey": "agent:pepito--atlas:main"})),
        );
        assert!(
            matches!(d.verdict, Verdict::RequireApproval { .. }),
            "{d:?}"
        );
        let d = assert_idempotent(
            &e,
            "sessions_list",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"agentId": "pepito--bob"})),
        );
        assert_eq!(d.verdict, Verdict::Pass);
        let off = rules_engine(json!({"crossUserSend": {"enabled": false}}));
        let d = decide_on(
            &off,
            empty_map(),
            "sessions_history",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(json!({"sessionKey": "agent:pepito--atlas:main"})),
        );
        assert_eq!(d.verdict, Verdict::Pass);
        assert!(!needs_params(&off, "sessions_history"));
    }

    #[test]
    fn a_delegation_key_in_another_case_is_routed_to_the_callers_conversation() {
        let e = rules_engine(json!({}));
        let d = assert_idempotent(
            &e,
            "sessions_send",
            "paco--francis",
            FRANCIS_MAIN,
            p(
                json!({"sessionKey": "agent:paco--dali:DELEGATION:agent.paco--francis.other", "message": "m"}),
            ),
        );
        assert_eq!(
            sets(&e, &d),
            vec![(
                "sessionKey".into(),
                json!("agent:paco--dali:delegation:agent.paco--francis.main")
            )]
        );
    }

    #[test]
    fn work_may_be_assigned_only_to_agents_the_send_rule_lets_the_caller_reach() {
        let e = rules_engine(json!({}));
        let other = [
            (
                "workboard_create",
                json!({"title": "t", "agentId": "pepito--atlas"}),
            ),
            (
                "workboard_specify",
                json!({"id": "c1", "agentId": "pepito--atlas"}),
            ),
            (
                "workboard_reassign",
                json!({"id": "c1", "agentId": "PEPITO--ATLAS"}),
            ),
            (
                "workboard_decompose",
                json!({"id": "c1", "children": [{"title": "a"}, {"title": "b", "agentId": "pepito--atlas"}]}),
            ),
            (
                "workboard_board_create",
                json!({"id": "wb_paco", "orchestration": {"defaultAssignee": "pepito--atlas"}}),
            ),
            (
                "sessions",
                json!({"action": "assign_owner", "ownerType": "agent", "ownerId": "pepito--atlas"}),
            ),
            (
                "automations",
                json!({"action": "add", "job": {"agentId": "pepito--atlas", "schedule": {"kind": "every"}}}),
            ),
            (
                "automations",
                json!({"action": "update", "job": {"owner": {"agentId": "pepito--atlas"}}}),
            ),
            (
                "automations",
                json!({"action": "add", "job": {"sessionKey": "agent:pepito--atlas:main"}}),
            ),
            (
                "automations",
                json!({"action": "wake", "agentId": "pepito--atlas"}),
            ),
            (
                "automations",
                json!({"action": "wake", "sessionKey": "agent:pepito--atlas:main"}),
            ),
            // As OpenClaw canonicalizes the call: a session target, flat
            // params, an empty job, `job.data`, a padded key, snake spellings.
            (
                "automations",
                json!({"action": "add", "job": {"sessionTarget": "session:agent:pepito--atlas:main", "message": "m"}}),
            ),
            (
                "automations",
                json!({"action": "add", "agentId": "pepito--atlas", "message": "m", "everyMs": 60000}),
            ),
            (
                "automations",
                json!({"action": "add", "job": {}, "sessionTarget": "Session:agent:pepito--atlas:x", "text": "t"}),
            ),
            (
                "automations",
                json!({"action": "add", "job": {"agentId": "paco--dali", "data": {"agentId": "pepito--atlas", "message": "m"}}}),
            ),
            (
                "automations",
                json!({"action": "update", "jobId": "j", "job": {"agentId ": "pepito--atlas"}}),
            ),
            (
                "automations",
                json!({"action": "wake", "agent_id": "pepito--atlas", "text": "t"}),
            ),
        ];
        for (tool, params) in &other {
            let d = decide_on(
                &e,
                empty_map(),
                tool,
                Some("paco--francis"),
                Some(FRANCIS_MAIN),
                pp(params.clone()),
            );
            let r = blocked(&d);
            assert!(
                r.starts_with("cross-user-send: ") && r.contains("pepito--atlas"),
                "{tool} {params}: {r}"
            );
        }
        // The same user's agents, a human owner, and the caller itself pass (scoped as before).
        for (tool, params) in [
            (
                "workboard_create",
                json!({"title": "t", "agentId": "paco--dali"}),
            ),
            (
                "workboard_reassign",
                json!({"id": "c1", "agentId": "paco--dali"}),
            ),
            (
                "sessions",
                json!({"action": "assign_owner", "ownerType": "human", "ownerId": "pepito"}),
            ),
            ("automations", json!({"action": "wake"})),
            (
                "automations",
                json!({"action": "list", "agentId": "pepito--atlas"}),
            ),
        ] {
            let d = decide_on(
                &e,
                empty_map(),
                tool,
                Some("paco--francis"),
                Some(FRANCIS_MAIN),
                pp(params.clone()),
            );
            assert!(!d.is_block(), "{tool} {params}: {:?}", d.verdict);
        }
        // The send grants apply: allow, and ask.
        let ask = rules_engine(
            json!({"crossUserSend": {"grants": {"paco--*": {"pepito--atlas": "ask"}}}}),
        );
        let d = decide_on(
            &ask,
            empty_map(),
            "workboard_reassign",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(json!({"id": "c", "agentId": "pepito--atlas"})),
        );
        assert!(
            matches!(d.verdict, Verdict::RequireApproval { .. }),
            "{:?}",
            d.verdict
        );
        let allow = rules_engine(
            json!({"crossUserSend": {"grants": {"paco--francis": {"pepito--atlas": "allow"}}}}),
        );
        let d = decide_on(
            &allow,
            empty_map(),
            "automations",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(json!({"action": "wake", "agentId": "pepito--atlas"})),
        );
        assert!(!d.is_block());
        // A name that is no agent id can't be checked.
        let d = decide_on(
            &e,
            empty_map(),
            "workboard_create",
            Some("paco--francis"),
            Some(FRANCIS_MAIN),
            pp(json!({"title": "t", "agentId": "no such/agent"})),
        );
        assert!(blocked(&d).starts_with("cross-user-send: "));
    }

    #[test]
    fn another_users_board_cannot_be_archived_deleted_or_overwritten() {
        let e = rules_engine(json!({}));
        for tool in ["workboard_board_archive", "workboard_board_delete"] {
            let d = assert_idempotent(
                &e,
                tool,
                "paco--francis",
                FRANCIS_MAIN,
                p(json!({"id": "wb_pepito", "archived": true})),
            );
            assert!(blocked(&d).starts_with("workboard-scope: "), "{tool}");
        }
        let d = assert_idempotent(
            &e,
            "workboard_board_create",
            "paco--francis",
            FRANCIS_MAIN,
            p(json!({"id": "wb_pepito", "name": "mine now"})),
        );
        assert_eq!(sets(&e, &d), vec![("id".into(), json!("wb_paco"))]);
        assert!(needs_params(&e, "workboard_board_delete") && needs_params(&e, "workboard_boards"));
    }

    #[test]
    fn switched_off_rules_do_nothing() {
        let e = rules_engine(json!({
            "crossUserSend": {"enabled": false}, "delegationSession": {"enabled": false},
            "workboardScope": {"enabled": false}, "conversationId": {"enabled": false},
        }));
        let map = TokenMap::default();
        for (tool, params) in [
            (
                "sessions_send",
                json!({"agentId": "pepito--atlas", "message": "m"}),
            ),
            ("sessions_send", json!({"label": "x", "message": "m"})),
            ("workboard_list", json!({"boardId": "x"})),
            ("claw-os__x", json!({})),
        ] {
            let d = decide_on(
                &e,
                &map,
                tool,
                Some("paco--francis"),
                Some(FRANCIS_MAIN),
                pp(params),
            );
            // An owned tool's only change is taking the model's token out.
            assert!(!d.patch().is_some_and(|p| p.sets_anything()), "{tool}");
            assert!(!d.is_block(), "{tool}");
        }
    }

    // ---- what the model wrote is echoed only scrubbed ----

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

    /// The N-API side hands the rules only `param_fields` (and
    /// `quoted_fields`) of a call: a rule that read any other param would
    /// decide on something else than what runs. Deciding on the whole params
    /// and on those fields alone must agree.
    #[test]
    fn the_declared_param_fields_are_all_the_rules_read() {
        let e = rules_engine(json!({}));
        let francis = parse(format!(r#"{{"paco--francis": "{T1}"}}"#).as_bytes())
            .unwrap()
            .map;
        let extra =
            json!({"note": "x", "label2": "y", "model": "m", "timeoutSeconds": 5, "mode": "run"});
        let cases = [
            (
                "sessions_send",
                json!({"agentId": "paco--dali", "message": "hi"}),
            ),
            (
                "sessions_send",
                json!({"sessionKey": "agent:pepito--atlas:main", "message": "hi"}),
            ),
            (
                "sessions_send",
                json!({"agent_id": "paco--dali", "label": "research", "message": "m"}),
            ),
            (
                "sessions_send",
                json!({"session_key": "agent:paco--dali:DELEGATION:agent.x.y", "message": "m"}),
            ),
            (
                "sessions_spawn",
                json!({"agentId": "paco--dali", "task": "paint"}),
            ),
            (
                "sessions_spawn",
                json!({"agent_id": "pepito--atlas", "task": "t"}),
            ),
            ("sessions_spawn", json!({"task": "own worker"})),
            (
                "sessions_history",
                json!({"sessionKey": "agent:pepito--atlas:main"}),
            ),
            (
                "session_status",
                json!({"sessionKey": "agent:paco--dali:main", "model": "x"}),
            ),
            (
                "sessions",
                json!({"action": "delete", "targets": [{"sessionKey": "agent:pepito--atlas:x"}]}),
            ),
            ("sessions_search", json!({"query": "q"})),
            ("sessions_list", json!({"agentId": "pepito--atlas"})),
            ("sessions_list", json!({})),
            ("workboard_list", json!({"boardId": "wb_pepito"})),
            ("workboard_board_delete", json!({"id": "wb_pepito"})),
            (
                "workboard_board_create",
                json!({"id": "wb_x", "title": "t"}),
            ),
            (
                "workboard_decompose",
                json!({"id": "c", "children": [{"title": "a"}]}),
            ),
            ("read", json!({"path": "/etc/hostname"})),
            (
                "apply_patch",
                json!({"input": "*** Begin Patch\n*** Add File: /tmp/x\n+1\n*** End Patch"}),
            ),
            ("claw-os__claw_notes", json!({"note": "n"})),
            // Assignments to another user's agent, in every tool that makes one.
            (
                "workboard_reassign",
                json!({"id": "c", "agentId": "pepito--atlas"}),
            ),
            (
                "workboard_specify",
                json!({"id": "c", "agentId": "pepito--atlas"}),
            ),
            (
                "sessions",
                json!({"action": "assign_owner", "ownerType": "agent", "ownerId": "pepito--atlas"}),
            ),
            (
                "automations",
                json!({"action": "add", "job": {"agentId": "pepito--atlas", "name": "n"}}),
            ),
            // The layer's own controls.
            (
                "plugins",
                json!({"action": "disable", "pluginId": "claw-identity"}),
            ),
            ("plugins", json!({"action": "list"})),
            ("openclaw", json!({"message": "set protectMap off"})),
            // Every file tool, on a path that is refused and on one that is not.
            ("read", json!({"path": "~/.openclaw/openclaw.json"})),
            ("memory_get", json!({"path": "/tmp/notes.md"})),
            ("write", json!({"file_path": "/tmp/x", "content": "c"})),
            (
                "edit",
                json!({"filePath": "~/.openclaw/openclaw.json", "oldText": "a", "newText": "b"}),
            ),
            ("ls", json!({"path": "~/.openclaw"})),
            ("grep", json!({"pattern": "[0-9a-f]{8}"})),
            ("grep", json!({"pattern": "x", "path": ""})),
            ("find", json!({"pattern": "*.json", "path": "/"})),
            (
                "view_image",
                json!({"path": "file://localhost/etc/hostname"}),
            ),
            ("pdf", json!({"pdf": "MEDIA:/tmp/a.pdf", "prompt": "p"})),
            (
                "image_generate",
                json!({"image": "@/tmp/a.png", "prompt": "p"}),
            ),
            (
                "message",
                json!({"action": "send", "media": "~/.openclaw/openclaw.json", "to": "x"}),
            ),
            (
                "nodes",
                json!({"action": "camera_snap", "outPath": "/tmp/o.png"}),
            ),
            ("file_fetch", json!({"path": "/tmp/x", "node": "n"})),
            ("browser", json!({"action": "upload", "paths": ["/tmp/x"]})),
            (
                "sessions_spawn",
                json!({"task": "t", "cwd": "~/.config/micelclaw"}),
            ),
        ];
        for (tool, params) in cases {
            let mut full = p(params.clone());
            for (k, v) in extra.as_object().unwrap() {
                full.entry(k.clone()).or_insert_with(|| v.clone());
            }
            let read: Params = full
                .iter()
                .filter(|(k, _)| {
                    e.route(tool).is_some_and(|r| {
                        r.reads.contains(&k.as_str()) || r.scans.contains(&k.as_str())
                    })
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let a = decide_on(
                &e,
                &francis,
                tool,
                Some("paco--francis"),
                Some(FRANCIS_MAIN),
                &full,
            );
            let b = decide_on(
                &e,
                &francis,
                tool,
                Some("paco--francis"),
                Some(FRANCIS_MAIN),
                &read,
            );
            assert_eq!(a.verdict, b.verdict, "{tool} {params}");
            assert_eq!(a.rule, b.rule, "{tool} {params}");
        }
    }
}
