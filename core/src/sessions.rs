//! What the layer knows of OpenClaw's sessions: per session key, the fields
//! of its entry in OpenClaw's session store that the rules read. The hook's
//! ctx carries none of them, so the pipeline looks a session up on first
//! need (`Decision::need_session`) and keeps the answer in a bounded table:
//! a session's spawn facts are fixed when it is created.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;

/// Sessions remembered per layer: more, and the table starts over (each is
/// looked up again when next needed).
pub const MAX_KNOWN: usize = 4096;

/// The fields of a session entry the rules read
/// (`SessionEntry` in OpenClaw's `plugin-entry-*.d.ts`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionEntry {
    /// `spawnedBy`: the session that spawned this sub-agent session.
    pub spawned_by: Option<String>,
    /// `spawnedCwd`: the directory a spawned session's tools run in, which
    /// OpenClaw keeps for its later turns too.
    pub spawned_cwd: Option<PathBuf>,
    /// `spawnedWorkspaceDir`: the workspace a spawned session inherited.
    pub spawned_workspace: Option<PathBuf>,
}

/// What OpenClaw says of one session now: whether it runs in the sandbox
/// (`resolveSandboxRuntimeStatus`, which reads the chat's own override), and
/// the per-chat overrides that move its tools (read fresh at every call:
/// an admin can change them at any time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionNow {
    pub sandboxed: bool,
    /// `execHost` (`/exec host=`): where this chat's exec runs.
    pub exec_host: Option<String>,
    /// `execNode`: the node this chat's exec is bound to.
    pub exec_node: Option<String>,
    /// `elevatedLevel` (`/elevated`): this chat's exec may run elevated.
    pub elevated: Option<String>,
    /// `permissionMode`: `"full"` lifts `tools.fs.workspaceOnly` for this chat.
    pub permission_mode: Option<String>,
}

/// What the layer asks its host, OpenClaw in Node, while it decides: a
/// session's entry in OpenClaw's session store, and Node's own reading of a
/// `file:` URL (OpenClaw's tools call `fileURLToPath`).
pub trait Host {
    /// `session_key`'s entry, or `None` when the store has none.
    fn session(&self, agent_id: &str, session_key: &str) -> Result<Option<SessionEntry>, String>;

    /// What OpenClaw says of `session_key` now (`SessionNow`); `None` where
    /// the host has no session store (then no per-chat override is known).
    fn session_now(&self, agent_id: &str, session_key: &str) -> Result<Option<SessionNow>, String> {
        let _ = (agent_id, session_key);
        Ok(None)
    }

    /// Node's `url.fileURLToPath(url)`; `None` where it throws. Without
    /// Node, the same algorithm in Rust (`paths::file_url_to_path`).
    fn file_url_to_path(&self, url: &str) -> Option<PathBuf> {
        crate::paths::file_url_to_path(url)
    }

    /// Every home `~` may stand for in a tool's path (`crate::openclaw::paths::homes`).
    fn homes(&self) -> Vec<PathBuf> {
        crate::openclaw::paths::homes()
    }

    /// The gateway process's working directory.
    fn cwd(&self) -> PathBuf {
        crate::paths::process_cwd()
    }
}

/// No host: no session store (`explain`, an OpenClaw that offers plugins
/// none, `cargo test`).
pub struct NoHost;

impl Host for NoHost {
    fn session(&self, _: &str, _: &str) -> Result<Option<SessionEntry>, String> {
        Ok(None)
    }
}

/// The entries looked up so far: `None` for a session the store has no
/// entry for.
#[derive(Debug, Default)]
pub struct Known {
    entries: RwLock<HashMap<String, Option<Arc<SessionEntry>>>>,
    /// The delegation sessions this layer routed a send into and had
    /// created (rule `delegation-session`), by key as OpenClaw normalizes it.
    made: RwLock<std::collections::HashSet<String>>,
}

impl Known {
    pub fn note(&self, session_key: &str, entry: Option<SessionEntry>) {
        let mut map = self.entries.write();
        if map.len() >= MAX_KNOWN && !map.contains_key(session_key) {
            map.clear();
        }
        map.insert(session_key.to_owned(), entry.map(Arc::new));
    }

    /// Notes only who spawned `session_key` (`None`: nobody recorded).
    pub fn note_spawner(&self, session_key: &str, spawner: Option<&str>) {
        self.note(
            session_key,
            Some(SessionEntry {
                spawned_by: spawner.map(str::to_owned),
                ..SessionEntry::default()
            }),
        );
    }

    /// `None`: never looked up; `Some(None)`: looked up, no entry.
    pub fn get(&self, session_key: &str) -> Option<Option<Arc<SessionEntry>>> {
        self.entries.read().get(session_key).cloned()
    }

    /// Who spawned `session_key`: `None` never looked up, `Some(None)` nobody recorded.
    pub fn spawner_of(&self, session_key: &str) -> Option<Option<String>> {
        self.get(session_key).map(|e| {
            e.and_then(|e| e.spawned_by.clone())
                .filter(|s| !s.is_empty())
        })
    }

    /// Notes that the layer routed a send into the delegation session
    /// `session_key` and had it created (or found it there).
    pub fn note_made(&self, session_key: &str) {
        let key = crate::openclaw::agent_ids::normalize_session_key(session_key);
        let mut made = self.made.write();
        if made.len() >= MAX_KNOWN && !made.contains(&key) {
            made.clear();
        }
        made.insert(key);
    }

    /// Whether this layer made the delegation session `session_key`.
    pub fn made(&self, session_key: &str) -> bool {
        let key = crate::openclaw::agent_ids::normalize_session_key(session_key);
        self.made.read().contains(&key)
    }

    pub fn len(&self) -> usize {
        self.entries.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_remembered_and_an_absent_one_too() {
        let k = Known::default();
        assert_eq!(k.get("a"), None);
        k.note("a", None);
        assert_eq!(k.get("a"), Some(None));
        k.note(
            "b",
            Some(SessionEntry {
                spawned_by: Some("p".into()),
                ..Default::default()
            }),
        );
        assert_eq!(k.spawner_of("b"), Some(Some("p".into())));
        assert_eq!(k.spawner_of("a"), Some(None));
    }

    #[test]
    fn the_table_is_bounded() {
        let k = Known::default();
        for i in 0..=MAX_KNOWN {
            k.note(&format!("s{i}"), None);
        }
        assert!(k.len() <= MAX_KNOWN);
    }
}
