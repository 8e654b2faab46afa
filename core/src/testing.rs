//! What the tests share, the unit tests and `core/tests/` alike (those turn
//! the cargo feature `testing` on): the test tokens, a private temporary
//! directory that is removed with everything in it when dropped, and an
//! engine with a call to decide. Not part of the addon's build.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::engine::Engine;
use crate::options::Options;
use crate::rules::{Decision, MapView, Params, ToolCall};
use crate::token_map::TokenMap;

/// Tokens of the maps the tests write: 64 hex characters, as a real one.
pub const T1: &str = "1111111111111111111111111111111111111111111111111111111111111111";
pub const T2: &str = "2222222222222222222222222222222222222222222222222222222222222222";

/// A fresh directory of its own under the system's temp dir, mode 0700 (as
/// the gate wants the map's directory), removed with its contents on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// `tag` names the test in the directory's name; the process id and a
    /// counter keep two tests (or two runs) apart.
    pub fn new(tag: &str) -> TempDir {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "claw-identity-{tag}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        set_mode(&dir, 0o700);
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.0.join(p)
    }

    /// Writes `content` to `name` (its parent directories made), mode `mode`.
    pub fn write(&self, name: impl AsRef<Path>, content: impl AsRef<[u8]>, mode: u32) -> PathBuf {
        let p = self.join(name);
        write(&p, content, mode);
        p
    }

    /// A token map, `agent-tokens.json`, mode 0600, as the gate reads it.
    pub fn map(&self, content: impl AsRef<[u8]>) -> PathBuf {
        self.write("agent-tokens.json", content, 0o600)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `content` to `path` (its parent directories made), mode `mode`.
pub fn write(path: &Path, content: impl AsRef<[u8]>, mode: u32) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
    set_mode(path, mode);
}

/// Sets the permission bits of `path`.
pub fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// An engine with the options `json`.
pub fn engine(json: &str) -> Engine {
    Engine::new(Options::from_json(json).unwrap())
}

/// An engine with the map `/m.json` and the `rules` option `rules`.
pub fn rules_engine(rules: serde_json::Value) -> Engine {
    engine(&serde_json::json!({"tokenMapPath": "/m.json", "rules": rules}).to_string())
}

/// Routes and decides one call on `map` (loaded, fresh), with no host.
pub fn decide_on<'m>(
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
        call_id: None,
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

pub fn empty_map() -> &'static TokenMap {
    Box::leak(Box::new(TokenMap::default()))
}

/// Params from a JSON object.
pub fn p(v: serde_json::Value) -> Params {
    v.as_object().unwrap().clone()
}

/// `p`, borrowed for the whole test (a decision borrows its call's params).
pub fn pp(v: serde_json::Value) -> &'static Params {
    Box::leak(Box::new(p(v)))
}
