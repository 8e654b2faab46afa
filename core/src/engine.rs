//! Runs the rules for one tool call, in a fixed order, and merges what they
//! decide into one decision. Used by the hook, the trusted policy and
//! `claw-identity explain` alike, so all three always agree.

use serde_json::Value;

use crate::options::{OnMissingToken, Options};
use crate::redact::results::Redactor;
use crate::redact::{scrub, shown};
use crate::rules::agent_ids::{normalize_agent_id, session_key_agent};
use crate::rules::auth_token::{self, Missing};
use crate::rules::conversation_id::{self, Lineage, Origin};
use crate::rules::cross_user_send::{self as cross_user, Access, Reach};
use crate::rules::delegation_session;
use crate::rules::map_access::{self, AgentFsTable, ProtectMap};
use crate::rules::session_access::{self, Reaches};
use crate::rules::spawn_redirect;
use crate::rules::workboard_scope;
use crate::rules::{ToolCall, Verdict};
use crate::token_map::{Token, TokenMap};

/// What the map said about the calling agent, for logs and stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStatus<'m> {
    /// The tool is not one that carries a token.
    NotOwned,
    Injected(&'m Token),
    Missing(Missing),
}

/// A session the JS side must act on: OpenClaw's session store is reachable
/// only from there (`api.runtime.agent.session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    pub agent_id: String,
    pub session_key: String,
}

/// Create `session` if it does not exist before the call runs (OpenClaw
/// refuses a send to a non-main key that doesn't exist); if that fails,
/// block the call with `failure_reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsureSession {
    pub session: SessionRef,
    pub failure_reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision<'m> {
    pub verdict: Verdict,
    /// Id of the rule that decided the verdict (for a rewrite, the first rule
    /// that contributed to it); `None` for a pass nobody had an opinion on.
    pub rule: Option<&'static str>,
    pub token: TokenStatus<'m>,
    /// With `RequireApproval`: the params the call runs with once approved
    /// (an approved cross-user send still goes to its dedicated session).
    pub approval_patch: Vec<(String, Value)>,
    pub ensure_session: Option<EnsureSession>,
    /// Not a decision yet: the spawner of this sub-agent session must be
    /// looked up (`Engine::note_spawn`) and the call decided again. The
    /// verdict is then `Pass` and means nothing; don't count or apply it.
    pub need_lineage: Option<SessionRef>,
    /// Params to take out of the call (set to `undefined`), so a value the
    /// model wrote never reaches the server: the token when the agent has
    /// none (`onMissingToken: "pass"`), the conversation id when none is known.
    pub clear: Vec<String>,
}

impl<'m> Decision<'m> {
    fn new(verdict: Verdict, rule: Option<&'static str>, token: TokenStatus<'m>) -> Self {
        Decision {
            verdict: scrubbed(verdict),
            rule,
            token,
            approval_patch: Vec::new(),
            ensure_session: None,
            need_lineage: None,
            clear: Vec::new(),
        }
    }

    fn pass() -> Self {
        Decision::new(Verdict::Pass, None, TokenStatus::NotOwned)
    }

    fn block(rule: &'static str, reason: String) -> Self {
        Decision::new(Verdict::Block(reason), Some(rule), TokenStatus::NotOwned)
    }

    fn need_lineage(session_key: String, caller: Option<&str>, token: TokenStatus<'m>) -> Self {
        let agent_id = session_key_agent(&session_key)
            .or_else(|| caller.map(str::to_owned))
            .unwrap_or_default();
        Decision {
            need_lineage: Some(SessionRef {
                agent_id,
                session_key,
            }),
            ..Decision::new(Verdict::Pass, None, token)
        }
    }
}

/// Id of the refusal of a guarded call whose params can't be read exactly.
pub const UNREADABLE_RULE_ID: &str = "claw-identity";

/// Params of `sessions_send` the rules read: the target, and whether the
/// model chose a session by label (delegation-session leaves those alone).
const SEND_FIELDS: &[&str] = &["agentId", "agent_id", "sessionKey", "session_key", "label"];
/// Params of `sessions_spawn` the rules read.
const SPAWN_FIELDS: &[&str] = &["agentId", "agent_id"];
/// Params no rule decides on, read for their text only (quoted in
/// spawn-redirect's suggested call; tokens taken out): one that can't be
/// read exactly is read with U+FFFD for its broken characters.
const SPAWN_QUOTED: &[&str] = &["task"];
const SEND_QUOTED: &[&str] = &["message"];

/// Id of the rewrite that takes a token of the map out of text one agent
/// hands another (a `sessions_send` message, a `sessions_spawn` task).
pub const TOKEN_TEXT_RULE_ID: &str = "token-text";

/// `d`, plus a rewrite of `field` with every token of the map replaced by
/// its fingerprint, when the model put one there: the receiving agent's
/// model must never see a token, whoever pasted it.
fn redacted<'m>(
    mut d: Decision<'m>,
    call: &ToolCall<'_>,
    view: &MapView<'_>,
    field: &str,
) -> Decision<'m> {
    let (Some(r), Some(Value::String(text))) = (view.redactor, call.params.get(field)) else {
        return d;
    };
    let std::borrow::Cow::Owned(clean) = r.redact_str(text) else {
        return d;
    };
    let set = (field.to_owned(), Value::String(clean));
    match &mut d.verdict {
        Verdict::Block(_) => {}
        Verdict::Rewrite(patch) => patch.push(set),
        Verdict::RequireApproval { .. } => d.approval_patch.push(set),
        Verdict::Pass => {
            d.verdict = Verdict::Rewrite(vec![set]);
            d.rule.get_or_insert(TOKEN_TEXT_RULE_ID);
        }
    }
    d
}

/// Reasons and approvals quote what the model wrote (a target agent id, a
/// session key, a task), and a token pasted there must not be echoed to the
/// model, the user or the log. Every verdict passes here, so no rule can forget.
fn scrubbed(verdict: Verdict) -> Verdict {
    match verdict {
        Verdict::Block(reason) => Verdict::Block(scrub(&reason)),
        Verdict::RequireApproval { title, description } => Verdict::RequireApproval {
            title: scrub(&title),
            description: scrub(&description),
        },
        v @ (Verdict::Pass | Verdict::Rewrite(_)) => v,
    }
}

/// The calls the engine decides: tool names with these prefixes or in
/// `tools`. Every other call passes without its params being read.
#[derive(Debug, Clone, PartialEq)]
pub struct Interest {
    pub prefixes: Vec<String>,
    /// Exact tool names some rule reads the params of.
    pub tools: Vec<String>,
    /// The params that hot-path rules set to strings, in a fixed order: a
    /// rewrite of only these is sent to JS as their values alone.
    pub slots: Vec<String>,
}

pub struct Engine {
    opts: Options,
    interest: Interest,
    /// Sub-agent lineage for `conversation-id`, filled on demand.
    lineage: Lineage,
    /// Workspaces and sandboxing per agent, for `map-access`.
    agent_fs: parking_lot::RwLock<AgentFsTable>,
    /// The gateway's home directory, for `~` in tool paths.
    home: Option<std::path::PathBuf>,
}

/// The state of the map at decision time.
pub struct MapView<'m> {
    pub map: &'m TokenMap,
    pub loaded: bool,
    pub stale: bool,
    /// The map's tokens to take out of text one agent hands another.
    pub redactor: Option<&'m Redactor>,
}

impl Engine {
    pub fn new(opts: Options) -> Engine {
        let rules = &opts.rules;
        let mut tools: Vec<String> = Vec::new();
        if rules.reads_session_tools() {
            tools.extend(["sessions_send", "sessions_spawn"].map(String::from));
        }
        if rules.cross_user_send.enabled {
            tools.extend(session_access::KEYED_TOOLS.map(String::from));
            tools.push(session_access::LIST_TOOL.to_owned());
        }
        if rules.workboard_scope.enabled {
            tools.extend(workboard_scope::BOARD_TOOLS.map(String::from));
            tools.extend(workboard_scope::BOARD_ADMIN_TOOLS.map(String::from));
            tools.extend(
                [
                    workboard_scope::DECOMPOSE_TOOL,
                    workboard_scope::BOARD_CREATE_TOOL,
                    workboard_scope::BOARDS_TOOL,
                ]
                .map(String::from),
            );
        }
        if opts.protect_map != ProtectMap::Off {
            tools.extend(map_access::TOOLS.iter().map(|t| t.to_string()));
        }
        if opts.protect_map == ProtectMap::Strict {
            tools.extend(map_access::EXEC_TOOLS.iter().map(|t| t.to_string()));
        }
        // Owned calls stay on the string path: the token, then the conversation.
        let mut slots = vec![opts.token_param.clone()];
        if rules.conversation_id.enabled {
            slots.push(rules.conversation_id.param.clone());
        }
        let interest = Interest {
            prefixes: opts.tool_prefixes.clone(),
            tools,
            slots,
        };
        Engine {
            opts,
            interest,
            lineage: Lineage::default(),
            agent_fs: Default::default(),
            home: crate::sys::env_var("HOME")
                .filter(|h| !h.is_empty())
                .map(Into::into),
        }
    }

    /// What `map-access` knows of each agent's workspace and sandbox, from
    /// OpenClaw's config (the hook's ctx carries neither).
    pub fn set_agent_fs(&self, table: AgentFsTable) {
        *self.agent_fs.write() = table;
    }

    /// Rule `map-access`: file-tool paths that reach the map, and under
    /// `protectMap: "strict"` a shell for an agent outside the sandbox.
    fn decide_map_access<'m>(&self, call: &ToolCall<'_>) -> Option<Decision<'m>> {
        let mode = self.opts.protect_map;
        if mode == ProtectMap::Off {
            return None;
        }
        if map_access::is_guarded(call.tool) {
            let prot = map_access::Protected::new(&self.opts.token_map_path);
            let table = self.agent_fs.read();
            let agent = table.get(call.agent_id);
            return map_access::evaluate(
                call.tool,
                call.params,
                agent,
                self.home.as_deref(),
                &prot,
            )
            .map(|r| Decision::block(map_access::RULE_ID, r));
        }
        if mode == ProtectMap::Strict
            && map_access::EXEC_TOOLS.contains(&call.tool)
            && !self.agent_fs.read().get(call.agent_id).sandboxed
        {
            return Some(Decision::block(
                map_access::RULE_ID,
                map_access::exec_reason(call.tool, call.agent_id),
            ));
        }
        None
    }

    /// Records who spawned a sub-agent session (`None`: nobody recorded),
    /// as asked for by `Decision::need_lineage`.
    pub fn note_spawn(&self, child_session_key: &str, spawner_session_key: Option<&str>) {
        self.lineage.note(child_session_key, spawner_session_key);
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    pub fn interest(&self) -> &Interest {
        &self.interest
    }

    /// Whether any rule concerns calls of `tool` (every other call passes
    /// untouched, without being read).
    pub fn concerns(&self, tool: &str) -> bool {
        self.interest
            .prefixes
            .iter()
            .any(|p| tool.starts_with(p.as_str()))
            || self.interest.tools.iter().any(|t| t == tool)
    }

    /// Whether the rules need `params` for this tool.
    pub fn needs_params(&self, tool: &str) -> bool {
        self.interest.tools.iter().any(|t| t == tool)
    }

    /// The rules, in order. First `map-access` (file tools naming the map;
    /// under `protectMap: "strict"`, exec). Owned tools (`claw-os__*`): `auth-token`, then
    /// `conversation-id`; they never read params. `sessions_send`:
    /// `cross-user-send`, then `delegation-session`. `sessions_spawn`:
    /// `cross-user-send`, then `spawn-redirect`. The other session tools
    /// (`sessions_history`, `session_status`, `sessions`, `sessions_search`,
    /// `sessions_list`): `cross-user-send`. Workboard tools:
    /// `workboard-scope`. Deciding again on params a rule already rewrote
    /// yields the same values (the plugin decides twice per call).
    pub fn decide<'m>(&self, call: &ToolCall<'_>, view: &MapView<'m>) -> Decision<'m> {
        if let Some(d) = self.decide_map_access(call) {
            return d;
        }
        let rules = &self.opts.rules;
        match call.tool {
            "sessions_send" if rules.reads_session_tools() => {
                return redacted(self.decide_send(call), call, view, "message")
            }
            "sessions_spawn" if rules.reads_session_tools() => {
                return redacted(self.decide_spawn(call), call, view, "task")
            }
            t if rules.cross_user_send.enabled && session_access::is_session_tool(t) => {
                return self.decide_session_access(call)
            }
            t if rules.workboard_scope.enabled
                && t.starts_with("workboard_")
                && workboard_scope::is_workboard_tool(t) =>
            {
                return self.decide_workboard(call)
            }
            _ => {}
        }

        let mut patch: Vec<(String, Value)> = Vec::new();
        let mut clear: Vec<String> = Vec::new();
        let mut first_rule: Option<&'static str> = None;

        let outcome = auth_token::evaluate(
            call,
            &self.opts.tool_prefixes,
            view.map,
            view.loaded,
            view.stale,
        );
        let token = match outcome {
            auth_token::Outcome::NotOwned => TokenStatus::NotOwned,
            auth_token::Outcome::Inject(t) => {
                patch.push((
                    self.opts.token_param.clone(),
                    Value::String(t.expose().to_owned()),
                ));
                first_rule.get_or_insert(auth_token::RULE_ID);
                TokenStatus::Injected(t)
            }
            auth_token::Outcome::Missing(why) => {
                if self.opts.on_missing_token == OnMissingToken::Block {
                    return Decision::new(
                        Verdict::Block(self.missing_reason(call, why)),
                        Some(auth_token::RULE_ID),
                        TokenStatus::Missing(why),
                    );
                }
                // "pass" runs the call without a token, so the server
                // answers 401: never with whatever the model wrote there.
                clear.push(self.opts.token_param.clone());
                TokenStatus::Missing(why)
            }
        };

        if token != TokenStatus::NotOwned && rules.conversation_id.enabled {
            match conversation_id::evaluate(call.session_key, &self.lineage) {
                Origin::Conversation(c) => {
                    patch.push((rules.conversation_id.param.clone(), Value::String(c)));
                    first_rule.get_or_insert(conversation_id::RULE_ID);
                }
                Origin::NeedLineage(key) => {
                    return Decision::need_lineage(key, call.agent_id, token)
                }
                // No conversation known: the model's value must not pass for one.
                Origin::Unknown => clear.push(rules.conversation_id.param.clone()),
            }
        }

        let verdict = if patch.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Rewrite(patch)
        };
        Decision {
            clear,
            ..Decision::new(verdict, first_rule, token)
        }
    }

    /// The top-level params the rules read for `tool`. The N-API side reads
    /// exactly these from the JS params (no JSON round trip), so the rules
    /// decide on the values the tool will run with.
    pub fn param_fields(&self, tool: &str) -> &'static [&'static str] {
        let rules = &self.opts.rules;
        if self.opts.protect_map != ProtectMap::Off && map_access::is_guarded(tool) {
            return map_access::PARAMS;
        }
        match tool {
            "sessions_send" if rules.reads_session_tools() => SEND_FIELDS,
            "sessions_spawn" if rules.reads_session_tools() => SPAWN_FIELDS,
            t if rules.cross_user_send.enabled && session_access::is_session_tool(t) => {
                session_access::PARAMS
            }
            t if rules.workboard_scope.enabled && workboard_scope::is_workboard_tool(t) => {
                workboard_scope::PARAMS
            }
            _ => &[],
        }
    }

    /// Params of `tool` the rules only quote back in a reason, never decide on.
    pub fn quoted_fields(&self, tool: &str) -> &'static [&'static str] {
        match tool {
            "sessions_spawn" if self.opts.rules.reads_session_tools() => SPAWN_QUOTED,
            "sessions_send" if self.opts.rules.reads_session_tools() => SEND_QUOTED,
            _ => &[],
        }
    }

    /// A guarded call whose param `field` holds a value that can't be read
    /// exactly (a lone UTF-16 surrogate, nesting past `why`'s limit, a value
    /// JSON can't hold): deciding on anything else than what would run
    /// could let it past a rule, so it does not run.
    pub fn unreadable<'m>(&self, call: &ToolCall<'_>, field: &str, why: &str) -> Decision<'m> {
        Decision::block(
            UNREADABLE_RULE_ID,
            format!(
                "{UNREADABLE_RULE_ID}: params.{} of {} can't be read ({why}), so the call was not run. Send it again with plain JSON values (text without broken characters).",
                shown(field),
                shown(call.tool)
            ),
        )
    }

    /// The caller's originating conversation.
    fn conversation(&self, call: &ToolCall<'_>) -> Origin {
        conversation_id::evaluate(call.session_key, &self.lineage)
    }

    fn decide_send<'m>(&self, call: &ToolCall<'_>) -> Decision<'m> {
        let rules = &self.opts.rules;
        let guard = rules.cross_user_send.enabled;
        let target = match cross_user::send_target(call.params) {
            Ok(t) => t,
            Err(why) if guard => {
                return Decision::block(
                    cross_user::RULE_ID,
                    cross_user::unresolved_reason(call.tool, why),
                )
            }
            Err(_) => return Decision::pass(),
        };
        let Some(caller) = call.agent_id.and_then(normalize_agent_id) else {
            return if guard {
                Decision::block(
                    cross_user::RULE_ID,
                    cross_user::unknown_caller_reason(call.tool),
                )
            } else {
                Decision::pass()
            };
        };
        let mut ask = false;
        if guard {
            for agent in std::iter::once(&target.agent).chain(target.also.as_ref()) {
                match cross_user::reach(&rules.cross_user_send, &caller, agent) {
                    Reach::SameUser | Reach::Granted(Access::Allow) => {}
                    Reach::Granted(Access::Ask) => ask = true,
                    Reach::Denied => {
                        return Decision::block(
                            cross_user::RULE_ID,
                            cross_user::denied_reason(call.tool, &caller, agent),
                        )
                    }
                }
            }
        }

        let mut patch = Vec::new();
        let mut ensure_session = None;
        if rules.delegation_session.enabled
            && target.agent != caller
            && delegation_session::redirects(call.params)
        {
            match self.conversation(call) {
                Origin::NeedLineage(key) => {
                    return Decision::need_lineage(key, Some(&caller), TokenStatus::NotOwned)
                }
                // No conversation known: the send goes where the model addressed it.
                Origin::Unknown => {}
                Origin::Conversation(c) => {
                    let key = delegation_session::delegation_key(&target.agent, &c);
                    ensure_session = Some(EnsureSession {
                        failure_reason: scrub(&delegation_session::ensure_failed_reason(
                            &target.agent,
                            &key,
                        )),
                        session: SessionRef {
                            agent_id: target.agent.clone(),
                            session_key: key.clone(),
                        },
                    });
                    patch.push(("sessionKey".to_owned(), Value::String(key)));
                }
            }
        }

        let mut d = if ask {
            let (title, description) = cross_user::approval(call.tool, &caller, &target.agent);
            let mut d = Decision::new(
                Verdict::RequireApproval { title, description },
                Some(cross_user::RULE_ID),
                TokenStatus::NotOwned,
            );
            d.approval_patch = patch;
            d
        } else if patch.is_empty() {
            Decision::pass()
        } else {
            Decision::new(
                Verdict::Rewrite(patch),
                Some(delegation_session::RULE_ID),
                TokenStatus::NotOwned,
            )
        };
        d.ensure_session = ensure_session;
        d
    }

    fn decide_spawn<'m>(&self, call: &ToolCall<'_>) -> Decision<'m> {
        let rules = &self.opts.rules;
        let guard = rules.cross_user_send.enabled;
        let target = match cross_user::spawn_target(call.params) {
            Ok(None) => return Decision::pass(), // the caller's own worker
            Ok(Some(t)) => t,
            Err(why) if guard => {
                return Decision::block(
                    cross_user::RULE_ID,
                    cross_user::unresolved_reason(call.tool, why),
                )
            }
            Err(_) => return Decision::pass(),
        };
        let Some(caller) = call.agent_id.and_then(normalize_agent_id) else {
            return if guard {
                Decision::block(
                    cross_user::RULE_ID,
                    cross_user::unknown_caller_reason(call.tool),
                )
            } else {
                Decision::pass()
            };
        };
        if target == caller {
            return Decision::pass();
        }
        let mut ask = false;
        if guard {
            match cross_user::reach(&rules.cross_user_send, &caller, &target) {
                Reach::SameUser | Reach::Granted(Access::Allow) => {}
                Reach::Granted(Access::Ask) => ask = true,
                Reach::Denied => {
                    return Decision::block(
                        cross_user::RULE_ID,
                        cross_user::denied_reason(call.tool, &caller, &target),
                    )
                }
            }
        }
        if rules.spawn_redirect.enabled {
            let key = if rules.delegation_session.enabled {
                match self.conversation(call) {
                    Origin::NeedLineage(key) => {
                        return Decision::need_lineage(key, Some(&caller), TokenStatus::NotOwned)
                    }
                    Origin::Unknown => None,
                    Origin::Conversation(c) => {
                        Some(delegation_session::delegation_key(&target, &c))
                    }
                }
            } else {
                None
            };
            return Decision::block(
                spawn_redirect::RULE_ID,
                spawn_redirect::reason(&target, key.as_deref(), call.params),
            );
        }
        if ask {
            let (title, description) = cross_user::approval(call.tool, &caller, &target);
            return Decision::new(
                Verdict::RequireApproval { title, description },
                Some(cross_user::RULE_ID),
                TokenStatus::NotOwned,
            );
        }
        Decision::pass()
    }

    /// Session tools other than sends: the same caller → target check,
    /// on every agent the call names.
    fn decide_session_access<'m>(&self, call: &ToolCall<'_>) -> Decision<'m> {
        let caller = call.agent_id.and_then(normalize_agent_id);
        let reaches = match session_access::evaluate(call.tool, call.params) {
            Ok(Reaches::Own) => return Decision::pass(),
            Ok(r) => r,
            Err(why) => {
                let shown_caller = caller.as_deref().unwrap_or("<your agentId>");
                return Decision::block(
                    cross_user::RULE_ID,
                    session_access::unchecked_reason(call.tool, shown_caller, &why),
                );
            }
        };
        let Some(caller) = caller else {
            return Decision::block(
                cross_user::RULE_ID,
                cross_user::unknown_caller_reason(call.tool),
            );
        };
        let agents = match reaches {
            Reaches::Own => return Decision::pass(),
            // A listing can't be filtered after the fact: narrow it to the
            // caller's own agent with OpenClaw's own filter.
            Reaches::Everyone => {
                return Decision::new(
                    Verdict::Rewrite(vec![("agentId".to_owned(), Value::String(caller))]),
                    Some(cross_user::RULE_ID),
                    TokenStatus::NotOwned,
                )
            }
            Reaches::Agents(agents) => agents,
        };
        let mut ask = None;
        for agent in &agents {
            match cross_user::reach(&self.opts.rules.cross_user_send, &caller, agent) {
                Reach::SameUser | Reach::Granted(Access::Allow) => {}
                Reach::Granted(Access::Ask) => ask = ask.or(Some(agent)),
                Reach::Denied => {
                    return Decision::block(
                        cross_user::RULE_ID,
                        cross_user::denied_reason(call.tool, &caller, agent),
                    )
                }
            }
        }
        match ask {
            Some(agent) => {
                let (title, description) = cross_user::approval(call.tool, &caller, agent);
                Decision::new(
                    Verdict::RequireApproval { title, description },
                    Some(cross_user::RULE_ID),
                    TokenStatus::NotOwned,
                )
            }
            None => Decision::pass(),
        }
    }

    fn decide_workboard<'m>(&self, call: &ToolCall<'_>) -> Decision<'m> {
        match workboard_scope::evaluate(
            &self.opts.rules.workboard_scope,
            call.tool,
            call.agent_id,
            call.params,
        ) {
            workboard_scope::Scope::Set(patch) => Decision::new(
                Verdict::Rewrite(patch),
                Some(workboard_scope::RULE_ID),
                TokenStatus::NotOwned,
            ),
            workboard_scope::Scope::Refuse(reason) => {
                Decision::block(workboard_scope::RULE_ID, reason)
            }
            workboard_scope::Scope::Leave => Decision::pass(),
        }
    }

    fn missing_reason(&self, call: &ToolCall<'_>, why: Missing) -> String {
        let path = self.opts.token_map_path.display();
        let tool = shown(call.tool);
        match why {
            Missing::NoAgentId => format!(
                "{}: the call to {tool} has no calling agent id, so no token can be injected; do not retry it. The operator must run it from an agent listed in the token map {path}.",
                auth_token::RULE_ID
            ),
            Missing::UnknownAgent => format!(
                "{}: agent \"{}\" has no token in the token map {path}, so {tool} was not called; do not retry it. Tell the user this agent is not provisioned; the operator can check with: claw-identity doctor --map {path}",
                auth_token::RULE_ID,
                shown(call.agent_id.unwrap_or_default())
            ),
            Missing::NoMap => format!(
                "{}: the token map {path} could not be loaded, so {tool} was not called; do not retry it. The operator can see why with: claw-identity doctor --map {path}",
                auth_token::RULE_ID
            ),
            Missing::Stale => format!(
                "{}: the token map {path} has been unreadable for longer than maxStaleSeconds, so {tool} was not called; do not retry it. The operator can see why with: claw-identity doctor --map {path}",
                auth_token::RULE_ID
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Params;
    use crate::token_map::{parse, tests::T1};

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
        };
        let d = e.decide(
            &call,
            &MapView {
                map: &map,
                loaded: true,
                stale: false,
                redactor: None,
            },
        );
        assert_eq!(
            d.verdict,
            Verdict::Rewrite(vec![("tok".into(), Value::String(T1.into()))])
        );
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
        };
        let view = MapView {
            map: &map,
            loaded: true,
            stale: false,
            redactor: None,
        };
        assert_eq!(
            engine(r#"{"tokenMapPath": "/m.json"}"#)
                .decide(&call, &view)
                .verdict,
            Verdict::Pass
        );
        let d = engine(r#"{"tokenMapPath": "/m.json", "onMissingToken": "block"}"#)
            .decide(&call, &view);
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
        tool: &str,
        agent: Option<&str>,
        session: Option<&str>,
        params: &Params,
    ) -> Decision<'m> {
        let call = ToolCall {
            tool,
            agent_id: agent,
            session_key: session,
            params,
        };
        e.decide(
            &call,
            &MapView {
                map,
                loaded: true,
                stale: false,
                redactor: None,
            },
        )
    }

    fn empty_map() -> &'static TokenMap {
        Box::leak(Box::new(TokenMap::default()))
    }

    fn p(v: serde_json::Value) -> Params {
        v.as_object().unwrap().clone()
    }

    /// The plugin decides twice per call: first in the trusted tier, then in
    /// the safety-net hook on the params the first decision produced. The
    /// second decision must set the same values (or pass), never block.
    fn assert_idempotent(
        e: &Engine,
        tool: &str,
        agent: &str,
        session: &str,
        params: Params,
    ) -> Decision<'static> {
        let map = empty_map();
        let first = decide_on(e, map, tool, Some(agent), Some(session), &params);
        let patch = match &first.verdict {
            Verdict::Rewrite(patch) => patch.clone(),
            Verdict::RequireApproval { .. } => first.approval_patch.clone(),
            Verdict::Pass | Verdict::Block(_) => return first,
        };
        let mut rewritten = params.clone();
        for (k, v) in &patch {
            rewritten.insert(k.clone(), v.clone());
        }
        let second = decide_on(e, map, tool, Some(agent), Some(session), &rewritten);
        let again = match &second.verdict {
            Verdict::Rewrite(p2) => p2.clone(),
            Verdict::RequireApproval { .. } => second.approval_patch.clone(),
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
        let mut table = map_access::AgentFsTable::default();
        table.agents.insert(
            "paco--francis".into(),
            map_access::AgentFs {
                roots: vec![],
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
    fn interest_names_exact_tools_and_keeps_owned_calls_on_the_string_path() {
        let e = rules_engine(json!({}));
        let i = e.interest();
        assert_eq!(i.slots, vec!["auth_token", "_conversation_id"]);
        for t in [
            "sessions_send",
            "sessions_spawn",
            "workboard_list",
            "workboard_decompose",
        ] {
            assert!(e.needs_params(t), "{t}");
        }
        assert!(!e.needs_params("claw-os__claw_notes"));
        assert!(!e.needs_params("workboard_read"));
        assert!(e.needs_params("read") && e.needs_params("apply_patch"));
        assert!(!e.needs_params("exec"), "exec is guarded only under strict");
        let off = engine(
            &json!({"tokenMapPath": "/m.json", "protectMap": "off", "rules": {
                "crossUserSend": {"enabled": false}, "spawnRedirect": {"enabled": false},
                "delegationSession": {"enabled": false}, "workboardScope": {"enabled": false},
                "conversationId": {"enabled": false},
            }})
            .to_string(),
        );
        assert!(off.interest().tools.is_empty());
        assert_eq!(off.interest().slots, vec!["auth_token"]);
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
            d.verdict,
            Verdict::Rewrite(vec![
                ("auth_token".into(), json!(T1)),
                ("_conversation_id".into(), json!(FRANCIS_MAIN)),
            ])
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
            d.verdict,
            Verdict::Rewrite(vec![("_conversation_id".into(), json!(FRANCIS_MAIN))]),
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
            d.need_lineage,
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
        assert_eq!(d.need_lineage, None);
        assert_eq!(
            d.verdict,
            Verdict::Rewrite(vec![("_conversation_id".into(), json!(FRANCIS_MAIN))])
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
        assert_eq!(
            d.verdict,
            Verdict::Rewrite(vec![("sessionKey".into(), json!(key))])
        );
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
            d.verdict,
            Verdict::Rewrite(vec![(
                "sessionKey".into(),
                json!("agent:paco--atlas:delegation:agent.paco--francis.main")
            )])
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
            &p(json!({"label": "x", "message": "m"})),
        );
        assert!(blocked(&d).contains("agentId"));
        let d = decide_on(
            &e,
            empty_map(),
            "sessions_send",
            None,
            Some(FRANCIS_MAIN),
            &p(json!({"agentId": "paco--dali", "message": "m"})),
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
        let Verdict::RequireApproval { title, description } = &d.verdict else {
            panic!("{d:?}")
        };
        assert!(title.contains("pepito--atlas") && description.contains("paco--francis"));
        assert_eq!(
            d.approval_patch,
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
            &p(json!({"agentId": "pepito--atlas", "message": "m"})),
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
            &p(json!({"agentId": "pepito--atlas", "task": "t"})),
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
            &p(json!({"agentId": "paco--dali", "task": "t"})),
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
        assert_eq!(
            d.verdict,
            Verdict::Rewrite(vec![("boardId".into(), json!("wb_paco"))])
        );
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
            &p(json!({"sessionKey": "main"})),
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
            d.verdict,
            Verdict::Rewrite(vec![("agentId".into(), json!("paco--francis"))])
        );
        assert!(e.needs_params("sessions_history") && e.needs_params("sessions_list"));
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
            &p(json!({"sessionKey": "agent:pepito--atlas:main"})),
        );
        assert_eq!(d.verdict, Verdict::Pass);
        assert!(!off.needs_params("sessions_history"));
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
            d.verdict,
            Verdict::Rewrite(vec![(
                "sessionKey".into(),
                json!("agent:paco--dali:delegation:agent.paco--francis.main")
            )])
        );
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
        assert_eq!(
            d.verdict,
            Verdict::Rewrite(vec![("id".into(), json!("wb_paco"))])
        );
        assert!(e.needs_params("workboard_board_delete") && e.needs_params("workboard_boards"));
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
                &p(params),
            );
            assert_eq!(d.verdict, Verdict::Pass, "{tool}");
        }
    }

    // ---- what the model wrote is echoed only scrubbed (issue 11, finding 7) ----

    /// Not a token of any map: what a model might paste into a param.
    const PASTED: &str = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";

    /// Every text of a decision that reaches the model, the user or the log.
    fn echoed(d: &Decision<'_>) -> String {
        let mut out = match &d.verdict {
            Verdict::Block(r) => r.clone(),
            Verdict::RequireApproval { title, description } => format!("{title}\n{description}"),
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
                &p(params),
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
            &Params::new(),
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
        ];
        for (tool, params) in cases {
            let mut full = p(params.clone());
            for (k, v) in extra.as_object().unwrap() {
                full.entry(k.clone()).or_insert_with(|| v.clone());
            }
            let read: Params = full
                .iter()
                .filter(|(k, _)| {
                    e.param_fields(tool).contains(&k.as_str())
                        || e.quoted_fields(tool).contains(&k.as_str())
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
