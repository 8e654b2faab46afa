//! Rule `map-access`: the agents' own file tools must not reach the token
//! map. OpenClaw's `read`, `write`, `edit`, `apply_patch`, `ls` (and the
//! media tools that load a local file) run as the gateway's uid, which owns
//! the map, so a model that names the map's path could read every agent's
//! token or replace the map. A call is blocked when a path it names resolves
//! onto the map file or into the map's directory.
//!
//! Paths are resolved the way OpenClaw does before it opens them (relative to
//! the agent's workspace, `~` to the home directory, `..` lexically, a
//! leading `@` file reference), then through symlinks, and compared by
//! (device, inode), never by string: a symlink, a bind mount or a hard link
//! to the map is caught as well. This guards the file tools only; `exec` can
//! reach the file in ways no path check sees (docs/threat-model.md).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::Params;
use crate::redact::shown;

pub const RULE_ID: &str = "map-access";

/// Every top-level param key this rule reads, over all guarded tools.
pub const PARAMS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "paths",
    "input",
    "patch",
    "pdf",
    "pdfs",
    "image",
    "images",
    "media",
    "attachments",
];

/// Tools that run a shell or a program: no path check can see what they
/// open. `protectMap: "strict"` blocks them for agents without a sandbox.
pub const EXEC_TOOLS: &[&str] = &["exec", "bash", "process"];

/// `protectMap`: how far the layer keeps the map from the agents' tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProtectMap {
    /// No path guard (the result redaction is separate).
    Off,
    /// Block file-tool calls whose paths reach the map (the default).
    #[default]
    Paths,
    /// `paths`, and block `exec`/`process` for agents not known to run in
    /// OpenClaw's sandbox.
    Strict,
}

/// What a guarded tool does with the paths it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Opens the named file or lists the named directory.
    Open,
    /// Changes files under the named path (write, edit, apply_patch), or
    /// reads a whole tree under it (grep): a directory above the map's is
    /// refused too.
    Tree,
}

/// Where a tool keeps its paths.
#[derive(Debug, Clone, Copy)]
enum Keys {
    /// Top-level string params.
    Strings(&'static [&'static str]),
    /// An `apply_patch` body: the paths are in its `***` headers.
    Patch(&'static [&'static str]),
}

/// The guarded tools (OpenClaw 2026.9.6 names; /work/notes/guard-research.md).
fn guarded(tool: &str) -> Option<(Access, &'static [Keys])> {
    const FILE: &[Keys] = &[Keys::Strings(&["path", "file_path", "filePath"])];
    const DIR: &[Keys] = &[Keys::Strings(&["path"])];
    Some(match tool {
        "read" => (Access::Open, FILE),
        "write" | "edit" => (Access::Tree, FILE),
        "apply_patch" => (Access::Tree, &[Keys::Patch(&["input", "patch"])]),
        "ls" | "find" => (Access::Open, DIR),
        "grep" => (Access::Tree, DIR),
        "view_image" => (Access::Open, &[Keys::Strings(&["path", "paths"])]),
        "pdf" => (Access::Open, &[Keys::Strings(&["pdf", "pdfs"])]),
        "image_generate" | "video_generate" | "music_generate" => {
            (Access::Open, &[Keys::Strings(&["image", "images"])])
        }
        // An attachment is read from disk and sent to a chat.
        "message" => (
            Access::Open,
            &[Keys::Strings(&["media", "path", "filePath", "attachments"])],
        ),
        _ => return None,
    })
}

/// Whether `tool` is one this rule reads the params of.
pub fn is_guarded(tool: &str) -> bool {
    guarded(tool).is_some()
}

/// Tool names this rule reads the params of (for the engine's interest).
pub const TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "apply_patch",
    "ls",
    "find",
    "grep",
    "view_image",
    "pdf",
    "image_generate",
    "video_generate",
    "music_generate",
    "message",
];

/// What the rule knows of an agent's filesystem, from OpenClaw's config
/// (the hook's ctx has no workspace).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentFs {
    /// Directories a relative path may be resolved against: the run's cwd
    /// (`agents.*.cwd`) and the workspace. Empty: unknown.
    pub roots: Vec<PathBuf>,
    /// Whether every session of the agent runs in OpenClaw's sandbox
    /// (`sandbox.mode: "all"`), so `exec` can't see the host's files.
    pub sandboxed: bool,
}

/// Per-agent filesystem facts, set by the plugin from OpenClaw's config.
#[derive(Debug, Clone, Default)]
pub struct AgentFsTable {
    pub agents: HashMap<String, AgentFs>,
    /// For an agent not listed.
    pub default: AgentFs,
}

impl AgentFsTable {
    pub fn get(&self, agent: Option<&str>) -> &AgentFs {
        agent
            .and_then(|a| self.agents.get(a))
            .unwrap_or(&self.default)
    }
}

/// The map and its directory, by (device, inode), read when a call is decided
/// (a rotation renames a new file over the map, so its inode changes).
pub struct Protected {
    map: PathBuf,
    map_id: Option<(u64, u64)>,
    dir_id: Option<(u64, u64)>,
    /// The directories above the map's (refused to `Access::Tree` tools).
    above: Vec<(u64, u64)>,
    /// The map's file name and its directory's name, for relative paths
    /// when no workspace is known.
    names: (OsString, OsString),
}

fn id(path: &Path) -> Option<(u64, u64)> {
    crate::sys::stat(path).ok().map(|s| (s.dev, s.ino))
}

impl Protected {
    pub fn new(map_path: &Path) -> Protected {
        let dir_path = map_path.parent().unwrap_or(Path::new("/"));
        let dir_real =
            crate::sys::canonicalize(dir_path).unwrap_or_else(|_| dir_path.to_path_buf());
        let above = dir_real.ancestors().skip(1).filter_map(id).collect();
        let name = |p: &Path| p.file_name().map(OsString::from).unwrap_or_default();
        Protected {
            map: map_path.to_path_buf(),
            map_id: id(map_path),
            dir_id: id(&dir_real),
            above,
            names: (name(map_path), name(&dir_real)),
        }
    }
}

/// The strings a guarded call names as paths.
fn named_paths<'p>(keys: &[Keys], params: &'p Params) -> Vec<&'p str> {
    let mut out = Vec::new();
    for k in keys {
        match k {
            Keys::Strings(names) => {
                for name in *names {
                    collect_strings(params.get(*name), &mut out);
                }
            }
            Keys::Patch(names) => {
                for name in *names {
                    if let Some(Value::String(body)) = params.get(*name) {
                        out.extend(patch_paths(body));
                    }
                }
            }
        }
    }
    out
}

/// A string, the strings of a list, or the `media`/`path` of each object in
/// a list (`message`'s `attachments`).
fn collect_strings<'p>(v: Option<&'p Value>, out: &mut Vec<&'p str>) {
    match v {
        Some(Value::String(s)) => out.push(s),
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::String(s) => out.push(s),
                    Value::Object(o) => {
                        for k in ["media", "path", "filePath"] {
                            if let Some(Value::String(s)) = o.get(k) {
                                out.push(s);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// Every path an `apply_patch` body names: `*** Add File: p`,
/// `*** Update File: p`, `*** Delete File: p` and `*** Move to: p`. Any
/// line that trims to such a header counts, wherever it is (OpenClaw trims
/// header lines and accepts a `<<EOF` wrapper); reading too many is safe.
pub fn patch_paths(body: &str) -> impl Iterator<Item = &str> {
    const MARKERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    body.lines().filter_map(|line| {
        let line = line.trim();
        MARKERS
            .iter()
            .find_map(|m| line.strip_prefix(m))
            .filter(|p| !p.is_empty())
    })
}

/// The forms OpenClaw may open for one path string: it strips a malformed
/// `</arg_value>>` suffix, and a leading `@` unless `./@…` exists.
fn spellings(raw: &str) -> Vec<String> {
    let mut s = raw.to_owned();
    if s.contains("</arg_value>") {
        s = s
            .trim_end_matches('>')
            .trim_end_matches("</arg_value")
            .to_owned();
    }
    if let Some(rest) = s.strip_prefix("file://") {
        s = percent_decode(rest);
    }
    let mut out = vec![s.clone()];
    if let Some(rest) = s.strip_prefix('@') {
        out.push(rest.to_owned());
    }
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `~` and `~/…` to `home`, relative paths onto `root`, then `..` and `.`
/// lexically, as Node's `path.resolve` does.
fn absolute(path: &str, home: Option<&Path>, root: &Path) -> PathBuf {
    let joined = match (path, home) {
        ("~", Some(h)) => h.to_path_buf(),
        (p, Some(h)) if p.starts_with("~/") => h.join(&p[2..]),
        (p, _) => root.join(p),
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// `path` with every symlink resolved, as far as it exists; the rest is
/// appended as named. Unlike `canonicalize`, a dangling symlink is followed
/// too: a write through it creates its target.
fn resolve(path: &Path) -> PathBuf {
    let mut todo: Vec<OsString> = path
        .components()
        .rev()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    let mut cur = PathBuf::from("/");
    let mut hops = 0;
    let mut exists = true;
    while let Some(c) = todo.pop() {
        if c == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&c);
        if exists {
            match std::fs::symlink_metadata(&next) {
                Ok(m) if m.file_type().is_symlink() && hops < 40 => {
                    hops += 1;
                    if let Ok(target) = std::fs::read_link(&next) {
                        if target.is_absolute() {
                            cur = PathBuf::from("/");
                        }
                        for t in target.components().rev() {
                            match t {
                                Component::Normal(n) => todo.push(n.to_owned()),
                                Component::ParentDir => todo.push("..".into()),
                                _ => {}
                            }
                        }
                        continue;
                    }
                }
                Ok(_) => {}
                Err(_) => exists = false,
            }
        }
        cur = next;
    }
    cur
}

/// Why a resolved path reaches the map, if it does.
fn reaches(p: &Path, access: Access, prot: &Protected) -> Option<&'static str> {
    let own = id(p);
    if own.is_some() && own == prot.map_id {
        return Some("is the token map (or a link to it)");
    }
    if own.is_some() && own == prot.dir_id {
        return Some("is the token map's directory");
    }
    if p.ancestors()
        .skip(1)
        .filter_map(id)
        .any(|a| Some(a) == prot.dir_id)
    {
        return Some("is inside the token map's directory");
    }
    if access == Access::Tree && own.is_some_and(|o| prot.above.contains(&o)) {
        return Some("is a directory above the token map");
    }
    None
}

/// The block reason for `tool` naming `raw`, or `None` to pass. The reason
/// names the rule and the map's path (never its content).
pub fn evaluate(
    tool: &str,
    params: &Params,
    agent: &AgentFs,
    home: Option<&Path>,
    prot: &Protected,
) -> Option<String> {
    let (access, keys) = guarded(tool)?;
    for raw in named_paths(keys, params) {
        for spelled in spellings(raw) {
            if spelled.is_empty() {
                continue;
            }
            let relative =
                !(spelled.starts_with('/') || spelled == "~" || spelled.starts_with("~/"));
            if relative && agent.roots.is_empty() {
                // No workspace known: fail closed on the map's own names.
                let lexical = absolute(&spelled, None, Path::new("/"));
                let names: Vec<_> = lexical.components().map(|c| c.as_os_str()).collect();
                if names.contains(&prot.names.0.as_os_str())
                    || names.contains(&prot.names.1.as_os_str())
                {
                    return Some(reason(
                        tool,
                        raw,
                        "may name the token map (the agent's workspace is unknown)",
                        prot,
                    ));
                }
                continue;
            }
            let roots: Vec<&Path> = if relative {
                agent.roots.iter().map(PathBuf::as_path).collect()
            } else {
                vec![Path::new("/")]
            };
            for root in roots {
                let p = resolve(&absolute(&spelled, home, root));
                if let Some(why) = reaches(&p, access, prot) {
                    return Some(reason(tool, raw, why, prot));
                }
            }
        }
    }
    None
}

/// The block reason for `exec`/`process` under `protectMap: "strict"`.
pub fn exec_reason(tool: &str, agent: Option<&str>) -> String {
    format!(
        "{RULE_ID}: {tool} is blocked for agent {}: it runs on the gateway's host, where a shell can read the token map, and protectMap is \"strict\". Use read/write/edit for files; the operator can run this agent in OpenClaw's sandbox (agents.list[].sandbox.mode: \"all\") to allow {tool}.",
        shown(agent.unwrap_or("(unknown)"))
    )
}

fn reason(tool: &str, raw: &str, why: &str, prot: &Protected) -> String {
    format!(
        "{RULE_ID}: {tool} refused: the path \"{}\" {why} ({}), which holds every agent's credentials; no tool may read, change, move or delete it. Work on other files.",
        shown(raw),
        prot.map.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _tmp: TempDir,
        root: PathBuf,
        home: PathBuf,
        ws: PathBuf,
        map: PathBuf,
    }

    struct TempDir(PathBuf);
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn fixture(tag: &str) -> Fixture {
        let root = std::env::temp_dir().join(format!("ci-map-access-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let home = root.join("home");
        let ws = home.join("ws");
        let dir = home.join(".config/micelclaw");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        let map = dir.join("agent-tokens.json");
        std::fs::write(&map, "{}").unwrap();
        Fixture {
            _tmp: TempDir(root.clone()),
            root,
            home,
            ws,
            map,
        }
    }

    impl Fixture {
        fn agent(&self) -> AgentFs {
            AgentFs {
                roots: vec![self.ws.clone()],
                sandboxed: false,
            }
        }
        fn check(&self, tool: &str, params: serde_json::Value) -> Option<String> {
            let Value::Object(p) = params else { panic!() };
            evaluate(
                tool,
                &p,
                &self.agent(),
                Some(&self.home),
                &Protected::new(&self.map),
            )
        }
    }

    #[test]
    fn every_spelling_of_the_map_is_refused_to_read() {
        let f = fixture("spell");
        let abs = f.map.display().to_string();
        for path in [
            abs.clone(),
            "~/.config/micelclaw/agent-tokens.json".into(),
            "../.config/micelclaw/agent-tokens.json".into(),
            "./../.config/./micelclaw//agent-tokens.json".into(),
            "nonexistent/../../.config/micelclaw/agent-tokens.json".into(),
            format!("@{abs}"),
            format!("{abs}</arg_value>>"),
            format!("file://{}", abs.replace("micelclaw", "micel%63law")),
        ] {
            let r = f.check("read", json!({ "path": path }));
            let r = r.unwrap_or_else(|| panic!("{path} passed"));
            assert!(r.starts_with("map-access: read refused"), "{r}");
        }
        for key in ["file_path", "filePath"] {
            assert!(f.check("read", json!({ key: abs })).is_some(), "{key}");
        }
    }

    #[test]
    fn other_files_pass() {
        let f = fixture("pass");
        std::fs::write(f.ws.join("notes.md"), "x").unwrap();
        for (tool, p) in [
            ("read", json!({"path": "notes.md"})),
            ("write", json!({"path": "new/file.txt", "content": "x"})),
            ("ls", json!({"path": "~"})),
            ("ls", json!({})),
            ("read", json!({"path": "~/.config"})),
            ("edit", json!({"path": "/etc/hosts", "edits": []})),
        ] {
            assert_eq!(f.check(tool, p.clone()), None, "{tool} {p}");
        }
        assert_eq!(f.check("exec", json!({"command": "cat x"})), None);
    }

    #[test]
    fn symlinks_and_hard_links_to_the_map_are_caught() {
        let f = fixture("links");
        symlink(&f.map, f.ws.join("innocent.txt")).unwrap();
        symlink(f.map.parent().unwrap(), f.ws.join("cfg")).unwrap();
        std::fs::hard_link(&f.map, f.ws.join("copy.json")).unwrap();
        // A dangling link into the map's directory: writing through it creates a file there.
        symlink(
            f.map.parent().unwrap().join("new.json"),
            f.ws.join("dangling"),
        )
        .unwrap();
        for (tool, path) in [
            ("read", "innocent.txt"),
            ("read", "cfg/agent-tokens.json"),
            ("ls", "cfg"),
            ("read", "copy.json"),
            ("write", "dangling"),
            ("write", "cfg/other.json"),
        ] {
            assert!(
                f.check(tool, json!({"path": path, "content": "{}"}))
                    .is_some(),
                "{tool} {path}"
            );
        }
    }

    #[test]
    fn writers_may_not_touch_directories_above_the_map() {
        let f = fixture("above");
        assert!(f
            .check("write", json!({"path": "~/.config", "content": ""}))
            .is_some());
        assert!(f
            .check("grep", json!({"path": "~", "pattern": "x"}))
            .is_some());
        assert_eq!(f.check("read", json!({"path": "~/.config"})), None);
        assert_eq!(
            f.check("ls", json!({"path": f.root.display().to_string()})),
            None
        );
    }

    #[test]
    fn every_path_of_a_patch_is_checked() {
        let f = fixture("patch");
        let ok = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch";
        assert_eq!(f.check("apply_patch", json!({ "input": ok })), None);
        for header in [
            "*** Add File: ../.config/micelclaw/agent-tokens.json\n+{}",
            "*** Delete File: ~/.config/micelclaw/agent-tokens.json",
            "*** Update File: ~/.config/micelclaw/agent-tokens.json\n@@\n-{}\n+{ }",
            "*** Update File: a.txt\n*** Move to: ~/.config/micelclaw/agent-tokens.json\n@@\n-x\n+y",
            "  *** Delete File: ~/.config/micelclaw/agent-tokens.json  ",
        ] {
            let body = format!("*** Begin Patch\n{header}\n*** End Patch");
            assert!(f.check("apply_patch", json!({ "input": body })).is_some(), "{header}");
        }
        let wrapped = "<<EOF\n*** Begin Patch\r\n*** Delete File: ~/.config/micelclaw/agent-tokens.json\r\n*** End Patch\nEOF";
        assert!(f
            .check("apply_patch", json!({ "input": wrapped }))
            .is_some());
    }

    #[test]
    fn media_tools_and_attachments_are_checked() {
        let f = fixture("media");
        let abs = f.map.display().to_string();
        assert!(f.check("pdf", json!({"pdfs": ["a.pdf", abs]})).is_some());
        assert!(f.check("view_image", json!({"paths": [abs]})).is_some());
        assert!(f
            .check(
                "message",
                json!({"action": "send", "attachments": [{"media": abs}]})
            )
            .is_some());
        assert!(f
            .check("message", json!({"action": "send", "media": abs}))
            .is_some());
        assert_eq!(
            f.check("message", json!({"action": "send", "message": abs})),
            None
        );
    }

    #[test]
    fn a_rotated_map_is_still_caught() {
        let f = fixture("rotate");
        let tmp = f.map.with_extension("tmp");
        std::fs::write(&tmp, "{}").unwrap();
        std::fs::rename(&tmp, &f.map).unwrap();
        assert!(f
            .check(
                "read",
                json!({"path": "~/.config/micelclaw/agent-tokens.json"})
            )
            .is_some());
    }

    #[test]
    fn without_a_workspace_relative_paths_fail_closed_on_the_maps_names() {
        let f = fixture("nows");
        let Value::Object(p) = json!({"path": "x/agent-tokens.json"}) else {
            panic!()
        };
        let prot = Protected::new(&f.map);
        let none = AgentFs::default();
        assert!(evaluate("read", &p, &none, Some(&f.home), &prot).is_some());
        let Value::Object(p) = json!({"path": "src/main.rs"}) else {
            panic!()
        };
        assert_eq!(evaluate("read", &p, &none, Some(&f.home), &prot), None);
    }

    #[test]
    fn reasons_never_carry_a_token_and_name_the_rule() {
        let f = fixture("reason");
        let tok = "ab".repeat(32);
        std::fs::write(&f.map, format!("{{\"a\":\"{tok}\"}}")).unwrap();
        let r = f.check("read", json!({"path": f.map})).unwrap();
        assert!(
            r.starts_with("map-access: ") && !r.contains(&tok[..16]),
            "{r}"
        );
    }

    #[test]
    fn params_lists_every_key_the_rule_reads() {
        for tool in TOOLS {
            let (_, keys) = guarded(tool).unwrap();
            for k in keys {
                let names = match k {
                    Keys::Strings(n) | Keys::Patch(n) => *n,
                };
                for n in names {
                    assert!(PARAMS.contains(n), "{tool}: {n}");
                }
            }
        }
        assert!(!is_guarded("exec") && !is_guarded("claw-os__x"));
    }
}
