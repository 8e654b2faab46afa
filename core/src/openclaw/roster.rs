//! OpenClaw's agent roster: which agents a config declares, and which entry
//! an agent id resolves to.
//!
//! Follows `readAgentRosterProperty`, `listAgentEntries`, `listAgentIds`,
//! `resolveAgentEntry` and `resolveAgentConfig` (`agent-roster.ts` and
//! `agent-scope-config.ts`, bundled as `agent-scope-config-*.mjs`):
//! - `agents.entries` (a record keyed by agent id) is the canonical roster;
//!   the legacy `agents.list` array is read only when `entries` is absent.
//!   A present key owns the roster even when its value is malformed
//!   (`null`, the wrong type): then no agent is listed.
//! - No roster at all means one implicit agent, `main`.
//! - An id the roster doesn't list resolves to no entry (`resolveAgentConfig`
//!   returns `undefined`); OpenClaw still runs sessions under it when a session
//!   key names it (`agent:<id>:…`, `resolveSelectedSessionAgentId` in
//!   `agent-scope-*.mjs` takes the key's id as it is).

use serde_json::{Map, Value};

use crate::openclaw::agent_ids::normalize_agent_id;

/// `DEFAULT_AGENT_ID` (`agent-id-*.mjs`): what `normalizeAgentId` falls back
/// to when nothing of an id is left, and the implicit agent of a config
/// without a roster (`LEGACY_IMPLICIT_AGENT_ID`).
pub const IMPLICIT_AGENT_ID: &str = "main";

/// `normalizeAgentId`: [`normalize_agent_id`], or `main` when nothing is left.
pub fn agent_id(raw: &str) -> String {
    normalize_agent_id(raw).unwrap_or_else(|| IMPLICIT_AGENT_ID.to_owned())
}

/// Which of the two roster shapes owns the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RosterKind {
    /// `agents.entries`, keyed by agent id.
    Entries,
    /// The legacy `agents.list` array.
    List,
}

/// One configured agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEntry<'a> {
    /// The normalized agent id.
    pub id: String,
    /// Where the entry is in the config: `agents.entries.<key>` (the key as
    /// written) or `agents.list[<index>]`.
    pub path: String,
    /// The entry's fields. `None` for a legacy list entry that is an array
    /// (OpenClaw's `typeof entry === "object"` admits one; it has no fields).
    pub fields: Option<&'a Map<String, Value>>,
}

impl<'a> AgentEntry<'a> {
    /// One of the entry's own fields.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.fields.and_then(|f| f.get(key))
    }
}

/// The agents a config declares.
#[derive(Debug, Clone, PartialEq)]
pub struct Roster<'a> {
    /// Which shape owns the roster; `None` when the config has neither key
    /// (`hasAgentRosterProperty` false): then the only agent is `main`.
    pub kind: Option<RosterKind>,
    /// The entries in config order (`listAgentEntriesWithSource`), duplicates
    /// included: the first entry of an id is the one that counts.
    pub entries: Vec<AgentEntry<'a>>,
}

/// `readAgentRosterProperty` + `listAgentEntriesWithSource`.
pub fn roster(config: &Map<String, Value>) -> Roster<'_> {
    let Some(agents) = config.get("agents").and_then(Value::as_object) else {
        return Roster {
            kind: None,
            entries: Vec::new(),
        };
    };
    // `Object.hasOwn(agents, "entries") && entries !== undefined`: a JSON key
    // is never `undefined`, so a present key (even `null`) owns the roster.
    if let Some(entries) = agents.get("entries") {
        let entries = entries
            .as_object()
            .map(|e| {
                e.iter()
                    .filter_map(|(key, entry)| {
                        entry.as_object().map(|fields| AgentEntry {
                            id: agent_id(key),
                            path: format!("agents.entries.{key}"),
                            fields: Some(fields),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        return Roster {
            kind: Some(RosterKind::Entries),
            entries,
        };
    }
    if let Some(list) = agents.get("list") {
        let entries = list
            .as_array()
            .map(|l| {
                l.iter()
                    .enumerate()
                    .filter_map(|(index, entry)| {
                        let fields = match entry {
                            Value::Object(fields) => Some(fields),
                            Value::Array(_) => None,
                            _ => return None,
                        };
                        // `normalizeAgentId(entry.id)`: a missing id is "" and
                        // so `main`. A non-string id makes OpenClaw's `trim`
                        // throw (its schema rejects one): such an entry
                        // resolves to nothing here.
                        let id = match fields.and_then(|f| f.get("id")) {
                            None | Some(Value::Null) => IMPLICIT_AGENT_ID.to_owned(),
                            Some(Value::String(id)) => agent_id(id),
                            Some(_) => return None,
                        };
                        Some(AgentEntry {
                            id,
                            path: format!("agents.list[{index}]"),
                            fields,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        return Roster {
            kind: Some(RosterKind::List),
            entries,
        };
    }
    Roster {
        kind: None,
        entries: Vec::new(),
    }
}

impl<'a> Roster<'a> {
    /// `listAgentIds`: the configured ids, first-seen order, without
    /// duplicates; `["main"]` when the config has no roster. A roster key
    /// with no valid entry lists no agent at all (OpenClaw's schema refuses
    /// an empty `agents.entries`).
    pub fn ids(&self) -> Vec<String> {
        if self.kind.is_none() {
            return vec![IMPLICIT_AGENT_ID.to_owned()];
        }
        let mut ids: Vec<String> = Vec::new();
        for entry in &self.entries {
            if !ids.contains(&entry.id) {
                ids.push(entry.id.clone());
            }
        }
        ids
    }

    /// `resolveAgentEntry`: the first entry whose normalized id is
    /// `agent_id`'s. `None` for an unlisted id, and for every id when the
    /// config has no roster.
    pub fn entry(&self, agent_id_raw: &str) -> Option<&AgentEntry<'a>> {
        let id = agent_id(agent_id_raw);
        self.entries.iter().find(|e| e.id == id)
    }

    /// Whether `resolveAgentConfig` finds the agent: a listed id, or `main`
    /// when the config has no roster.
    pub fn knows(&self, agent_id_raw: &str) -> bool {
        self.entry(agent_id_raw).is_some()
            || (self.kind.is_none() && agent_id(agent_id_raw) == IMPLICIT_AGENT_ID)
    }
}

/// `tryResolveDefaultAgentId` (`agent-scope-config-*.mjs`): the one entry
/// marked `default: true` (a legacy marker, ignored under
/// `agents.ownership: "explicit"`), else the sole agent (`main` without a
/// roster). `None` for several agents without a marker, where OpenClaw's
/// `resolveDefaultAgentId` throws `AgentSelectionRequiredError`.
pub fn default_agent_id(config: &Map<String, Value>) -> Option<String> {
    let roster = roster(config);
    let explicit = config
        .get("agents")
        .and_then(|a| a.get("ownership"))
        .and_then(Value::as_str)
        == Some("explicit");
    if !explicit {
        let marked: Vec<&AgentEntry> = roster
            .entries
            .iter()
            .filter(|e| e.get("default") == Some(&Value::Bool(true)))
            .collect();
        if let [only] = marked.as_slice() {
            return Some(only.id.clone());
        }
    }
    sole_agent_id(&roster)
}

/// `tryResolveSoleAgentId`: `main` without a roster, the only entry of a
/// one-entry roster, else `None`.
fn sole_agent_id(roster: &Roster) -> Option<String> {
    match (roster.kind, roster.entries.as_slice()) {
        (None, _) => Some(IMPLICIT_AGENT_ID.to_owned()),
        (Some(_), [only]) => Some(only.id.clone()),
        _ => None,
    }
}

/// `tryResolveAmbientOwnerAgentId(cfg)` with no requested id: the agent that
/// owns ambient work (unbound channel routing, unscoped session keys such as
/// an unassigned Workboard card's `subagent:workboard-…`, first-run
/// onboarding): `agents.defaults.systemAgent.agentId` as written (listed or
/// not), else under explicit ownership nobody but a sole agent, else
/// [`default_agent_id`]. OpenClaw also consults a legacy owner it retains
/// in its state database (`getRetainedLegacyDefaultAgentId`); config alone
/// can't tell it.
pub fn ambient_owner_id(config: &Map<String, Value>) -> Option<String> {
    let agents = config.get("agents");
    let system = agents
        .and_then(|a| a.get("defaults"))
        .and_then(|d| d.get("systemAgent"))
        .and_then(|s| s.get("agentId"))
        .and_then(Value::as_str)
        .map(crate::paths::js_trim)
        .filter(|s| !s.is_empty());
    if let Some(system) = system {
        return Some(agent_id(system));
    }
    let explicit = agents
        .and_then(|a| a.get("ownership"))
        .and_then(Value::as_str)
        == Some("explicit");
    if explicit {
        return sole_agent_id(&roster(config));
    }
    default_agent_id(config)
}

/// The per-agent `tools` section `resolveEffectiveToolPolicy`
/// (`agent-tools.policy-*.mjs`) applies to an agent, and where it is:
/// `agentConfig?.tools ?? (no roster ? agents.defaults.tools : undefined)`.
/// So the entry's own `tools` when the roster lists the agent (and has one);
/// `agents.defaults.tools` only when the config has no roster at all (a key
/// OpenClaw's schema doesn't define, read here because its resolver does);
/// otherwise none: an unlisted agent, or a listed one without `tools`, gets
/// the global `tools` only.
pub fn agent_tools<'a>(
    config: &'a Map<String, Value>,
    agent_id_raw: &str,
) -> Option<(String, &'a Value)> {
    let roster = roster(config);
    if let Some(entry) = roster.entry(agent_id_raw) {
        return match entry.get("tools") {
            None | Some(Value::Null) => None,
            Some(tools) => Some((format!("{}.tools", entry.path), tools)),
        };
    }
    if roster.kind.is_some() {
        return None;
    }
    config
        .get("agents")
        .and_then(|a| a.get("defaults"))
        .and_then(|d| d.get("tools"))
        .filter(|t| !t.is_null())
        .map(|t| ("agents.defaults.tools".to_owned(), t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn no_roster_is_the_implicit_main_agent() {
        let c = cfg(json!({"agents": {"defaults": {}}}));
        let r = roster(&c);
        assert_eq!(r.kind, None);
        assert_eq!(r.ids(), vec!["main"]);
        assert!(r.knows("main"));
        assert!(r.knows(" MAIN "));
        assert!(!r.knows("paco--dali"));
        assert!(r.entry("main").is_none());
    }

    #[test]
    fn entries_are_keyed_by_normalized_id_and_keep_the_key_in_the_path() {
        let c = cfg(json!({"agents": {"entries": {
            "Paco--Dali": {"tools": {"deny": ["exec"]}},
            "main": {}
        }}}));
        let r = roster(&c);
        assert_eq!(r.kind, Some(RosterKind::Entries));
        assert_eq!(r.ids(), vec!["paco--dali", "main"]);
        let e = r.entry("paco--dali").unwrap();
        assert_eq!(e.path, "agents.entries.Paco--Dali");
        assert_eq!(e.get("tools"), Some(&json!({"deny": ["exec"]})));
    }

    #[test]
    fn legacy_list_is_read_only_without_entries() {
        let both = cfg(json!({"agents": {
            "entries": {"a": {}},
            "list": [{"id": "b"}]
        }}));
        assert_eq!(roster(&both).ids(), vec!["a"]);
        let list = cfg(json!({"agents": {"list": [{"id": "B"}, {"id": "c"}, {"id": "b"}]}}));
        let r = roster(&list);
        assert_eq!(r.kind, Some(RosterKind::List));
        assert_eq!(r.ids(), vec!["b", "c"]);
        // The first entry of an id is the one that counts.
        assert_eq!(r.entry("b").unwrap().path, "agents.list[0]");
    }

    #[test]
    fn a_list_entry_without_id_is_main() {
        let c = cfg(json!({"agents": {"list": [{"name": "x"}]}}));
        assert_eq!(roster(&c).ids(), vec!["main"]);
        assert_eq!(roster(&c).entry("main").unwrap().path, "agents.list[0]");
    }

    #[test]
    fn a_malformed_roster_key_still_owns_the_roster_and_lists_nobody() {
        for agents in [
            json!({"entries": null}),
            json!({"entries": []}),
            json!({"entries": {"a": 3}}),
            json!({"list": {}}),
            json!({"list": [3, "x", null]}),
        ] {
            let c = cfg(json!({ "agents": agents }));
            let r = roster(&c);
            assert!(r.kind.is_some(), "{agents}");
            assert!(r.ids().is_empty(), "{agents}");
            assert!(!r.knows("main"), "{agents}");
        }
    }

    #[test]
    fn the_default_agent_is_the_marked_one_else_the_sole_one() {
        assert_eq!(default_agent_id(&cfg(json!({}))).as_deref(), Some("main"));
        let two = cfg(json!({"agents": {"entries": {"a": {}, "b": {"default": true}}}}));
        assert_eq!(default_agent_id(&two).as_deref(), Some("b"));
        let unmarked =
            cfg(json!({"agents": {"ownership": "explicit", "entries": {"a": {}, "b": {}}}}));
        assert_eq!(default_agent_id(&unmarked), None);
        let sole = cfg(json!({"agents": {"entries": {"Solo": {}}}}));
        assert_eq!(default_agent_id(&sole).as_deref(), Some("solo"));
        // Explicit ownership ignores the legacy marker.
        let explicit = cfg(
            json!({"agents": {"ownership": "explicit", "entries": {"a": {}, "b": {"default": true}}}}),
        );
        assert_eq!(default_agent_id(&explicit), None);
        let list = cfg(json!({"agents": {"list": [{"id": "x"}]}}));
        assert_eq!(default_agent_id(&list).as_deref(), Some("x"));
        let list2 = cfg(json!({"agents": {"list": [{"id": "x"}, {"id": "y"}]}}));
        assert_eq!(default_agent_id(&list2), None);
    }

    #[test]
    fn the_ambient_owner_is_the_system_agent_first() {
        let c = cfg(json!({"agents": {
            "ownership": "explicit",
            "defaults": {"systemAgent": {"agentId": " Home "}},
            "entries": {"home": {}, "work": {}}
        }}));
        assert_eq!(ambient_owner_id(&c).as_deref(), Some("home"));
        let none =
            cfg(json!({"agents": {"ownership": "explicit", "entries": {"home": {}, "work": {}}}}));
        assert_eq!(ambient_owner_id(&none), None);
        let marked = cfg(json!({"agents": {"entries": {"home": {}, "work": {"default": true}}}}));
        assert_eq!(ambient_owner_id(&marked).as_deref(), Some("work"));
    }

    #[test]
    fn agent_tools_follow_the_roster() {
        let listed = cfg(json!({
            "agents": {"defaults": {"tools": {"deny": ["x"]}},
                       "entries": {"a": {"tools": {"deny": ["exec"]}}, "b": {}}}
        }));
        let (path, tools) = agent_tools(&listed, "a").unwrap();
        assert_eq!(path, "agents.entries.a.tools");
        assert_eq!(tools, &json!({"deny": ["exec"]}));
        // Listed without tools, or unlisted: no per-agent section, and the
        // defaults' are not read once a roster exists.
        assert!(agent_tools(&listed, "b").is_none());
        assert!(agent_tools(&listed, "zed").is_none());

        let unlisted = cfg(json!({"agents": {"defaults": {"tools": {"deny": ["x"]}}}}));
        let (path, _) = agent_tools(&unlisted, "main").unwrap();
        assert_eq!(path, "agents.defaults.tools");
        assert_eq!(
            agent_tools(&unlisted, "other").unwrap().0,
            "agents.defaults.tools"
        );
    }
}
