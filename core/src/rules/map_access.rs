//! Rule `map-access`: the agents' own tools must not reach the token map,
//! and (rule `layer-controls`, whose files are listed in
//! `rules/layer_controls.rs`) must not reach what controls the layer:
//! OpenClaw's config and the secrets beside it, and the plugin's code.
//! OpenClaw's file and media tools run as the gateway's uid, which owns all
//! of these, so a model that names one could read every agent's token,
//! replace the map, or switch the layer off.
//!
//! A call is decided on the paths OpenClaw will open, not on a picture of
//! them. For every path a tool names:
//! 1. it is read the way that tool reads it, in OpenClaw 2026.9.6's own code
//!    (`crate::paths` names each function): an `@` file reference, a broken
//!    `</arg_value>>` suffix, a `MEDIA:` prefix, a `file:` URL through
//!    Node's own `fileURLToPath`, `~` with each of OpenClaw's three homes;
//! 2. a relative path is resolved against the directory that tool runs in:
//!    the session's spawned cwd, the agent's `cwd`, else its workspace as
//!    OpenClaw resolves it (where OpenClaw's own answer is not at hand,
//!    every workspace it may pick); an absent path is that directory itself;
//! 3. the kernel resolves it (symlinks, `..` after them) as far as it
//!    exists, and the rest is taken as named, so a location that doesn't
//!    exist yet is refused all the same;
//! 4. it is compared with every protected location by real path, by
//!    lexical path and by (device, inode) of the file and its directory, so
//!    a symlink, a hard link or a bind mount of one is caught too.
//!
//! Shells are a different matter: no path check sees what `exec` opens
//! (docs/threat-model.md). `protectMap: "strict"` refuses them to agents
//! outside OpenClaw's sandbox.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::{Context, Decision, Params, ToolCall};
use crate::paths;
use crate::protected::{Guard, Location};
use crate::redact::shown;
use crate::route::Route;
use crate::sys;

pub const RULE_ID: &str = "map-access";

/// Tools that run a shell or a program: no path check can see what they
/// open. `protectMap: "strict"` blocks them for agents without a sandbox.
pub const EXEC_TOOLS: [&str; 4] = ["exec", "bash", "process", "terminal"];

/// `protectMap`: how far the layer keeps the map from the agents' tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProtectMap {
    /// No path guard for the map (the result redaction is separate).
    Off,
    /// Block tool calls whose paths reach the map (the default).
    #[default]
    Paths,
    /// `paths`, and block shells for agents not known to run in OpenClaw's
    /// sandbox.
    Strict,
}

/// What a tool does with a path it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads the file (or uploads it somewhere).
    Read,
    /// Lists the directory.
    List,
    /// Reads every file under it (grep, find, a directory fetch), or runs
    /// there (a spawned child's cwd, a shell's workdir).
    Search,
    /// Creates, changes, moves or deletes it.
    Write,
}

impl Location {
    fn refuses(&self, access: Access) -> bool {
        self.secret || access == Access::Write
    }
}

/// A location as it is now: its real path and identity, where it exists.
#[derive(Debug, Clone)]
struct Resolved {
    loc: Location,
    /// Its path and its real path, in the form paths are compared in
    /// (`paths::key`: on Windows, case and the names Win32 strips folded).
    spots: Vec<PathBuf>,
    id: Option<(u64, u64)>,
}

/// The protected locations, resolved; made again at least every
/// [`REFRESH`] and whenever the map's watcher saw a change.
#[derive(Debug)]
pub struct Protected {
    items: Vec<Resolved>,
    made: Instant,
    generation: u64,
}

/// How long a resolved set of protected locations is used: a rotation of
/// the map changes its inode, a re-pointed symlink its real path. The
/// lexical paths, which catch most, never go stale.
pub const REFRESH: Duration = Duration::from_millis(500);

impl Protected {
    pub fn resolve(locations: &[Location], generation: u64) -> Protected {
        let items = locations
            .iter()
            .map(|loc| {
                let (real, id) = match sys::real_path(&loc.path) {
                    Ok((real, st)) => (Some(real), Some((st.dev, st.ino))),
                    Err(_) => (
                        // Missing: its directory's real path, and the rest as named.
                        Some(kernel_path(&loc.path)).filter(|r| *r != loc.path),
                        None,
                    ),
                };
                let spots = std::iter::once(&loc.path)
                    .chain(real.as_ref())
                    .map(|p| paths::key(p).into_owned())
                    .collect();
                Resolved {
                    loc: loc.clone(),
                    spots,
                    id,
                }
            })
            .collect();
        Protected {
            items,
            made: Instant::now(),
            generation,
        }
    }

    pub fn fresh(&self, generation: u64) -> bool {
        self.generation == generation && self.made.elapsed() < REFRESH
    }
}

/// What the rule knows of each agent's file system, from OpenClaw's config
/// (the hook's ctx has no workspace): where its tools run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentFs {
    /// The run's cwd (`agents.entries.<id>.cwd`, else `agents.defaults.cwd`).
    pub cwd: Option<PathBuf>,
    /// Its workspace: OpenClaw's own answer (`resolveAgentWorkspaceDir`,
    /// handed over by the plugin), or every workspace OpenClaw may pick
    /// where that answer is not at hand.
    pub workspaces: Vec<PathBuf>,
    /// Whether every session of the agent runs in OpenClaw's sandbox
    /// (`sandbox.mode: "all"`), so its shells can't see the host's files.
    pub sandboxed: bool,
}

/// Per-agent file-system facts, set by the plugin from OpenClaw's config.
#[derive(Debug, Clone, Default)]
pub struct AgentFsTable {
    pub agents: HashMap<String, AgentFs>,
    /// For an agent the config doesn't list.
    pub default: DefaultFs,
}

/// What an agent the config doesn't list gets: the defaults' cwd and
/// sandbox, and the workspaces `resolveAgentWorkspaceDir`
/// (`agent-scope-config-*.mjs`) may give any agent id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DefaultFs {
    pub cwd: Option<PathBuf>,
    pub sandboxed: bool,
    /// `agents.defaults.workspace`: the owner agent's workspace itself, and
    /// `<it>/<id>` for the others.
    pub defaults_workspace: Option<PathBuf>,
    /// The owner agent's when `agents.defaults.workspace` is unset
    /// (`resolveDefaultAgentWorkspaceDir`): `OPENCLAW_WORKSPACE_DIR`, else
    /// `<stateDir>/workspace` or the profile's.
    pub env_workspaces: Vec<PathBuf>,
    /// `<stateDir>`, for `<stateDir>/workspace-<id>`.
    pub state_dir: PathBuf,
}

impl DefaultFs {
    /// Every workspace OpenClaw may give agent `id` (whether it is the
    /// owner agent depends on state OpenClaw keeps to itself).
    pub fn workspaces_of(&self, id: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        match &self.defaults_workspace {
            Some(w) => {
                out.push(w.clone());
                out.push(w.join(id));
            }
            None => {
                out.extend(self.env_workspaces.iter().cloned());
                out.push(self.state_dir.join(format!("workspace-{id}")));
            }
        }
        out
    }
}

impl AgentFsTable {
    /// Where `agent`'s tools run.
    pub fn get(&self, agent: Option<&str>) -> Cow<'_, AgentFs> {
        if let Some(a) = agent.and_then(|a| self.agents.get(a)) {
            return Cow::Borrowed(a);
        }
        let d = &self.default;
        Cow::Owned(AgentFs {
            cwd: d.cwd.clone(),
            workspaces: agent.map(|id| d.workspaces_of(id)).unwrap_or_default(),
            sandboxed: d.sandboxed,
        })
    }
}

/// What the rule knows of the host: the agents' file systems, and the
/// locations it keeps out of their reach.
#[derive(Debug, Default)]
pub struct Facts {
    pub agents: AgentFsTable,
    pub locations: Vec<Location>,
    /// The resolved locations, remade when stale.
    pub resolved: parking_lot::Mutex<Option<Arc<Protected>>>,
}

impl Facts {
    /// The protected locations, resolved now or recently (`generation`: the
    /// map watcher's count of changes).
    fn protected(&self, generation: u64) -> Arc<Protected> {
        let mut slot = self.resolved.lock();
        if let Some(p) = slot.as_ref().filter(|p| p.fresh(generation)) {
            return p.clone();
        }
        let p = Arc::new(Protected::resolve(&self.locations, generation));
        *slot = Some(p.clone());
        p
    }
}

/// The directories a relative path of `agent`'s tools is resolved against,
/// as OpenClaw picks them (`createOpenClawCodingToolsInternal`'s
/// `codingRoot`, `agent-tools-*.mjs`): the session's spawned cwd, else the
/// agent's cwd, else its workspace; a root workspace means the gateway's
/// own cwd (`resolveWorkspaceRoot`). `message` resolves host media against
/// the workspace instead (`createAgentScopedHostMediaReadFile`).
fn bases(
    cx: &Context<'_, '_>,
    call: &ToolCall<'_>,
    reading: Reading,
) -> Result<Vec<PathBuf>, Need> {
    let process_cwd = || cx.host.cwd();
    if matches!(reading, Reading::GatewayCwd) {
        return Ok(vec![process_cwd()]);
    }
    let entry = match call.session_key {
        Some(key) => match cx.sessions.get(key) {
            None => return Err(Need::Session(key.to_owned())),
            Some(e) => e,
        },
        None => None,
    };
    let fs = cx.fs.agents.get(call.agent_id);
    let spawned = |f: fn(&crate::sessions::SessionEntry) -> Option<&PathBuf>| {
        entry.as_ref().and_then(|e| f(e).cloned())
    };
    let mut out: Vec<PathBuf> = match reading {
        Reading::Message => spawned(|e| e.spawned_workspace.as_ref())
            .map(|w| vec![w])
            .unwrap_or_else(|| fs.workspaces.clone()),
        _ => match spawned(|e| e.spawned_cwd.as_ref()).or_else(|| fs.cwd.clone()) {
            Some(cwd) => vec![cwd],
            None => spawned(|e| e.spawned_workspace.as_ref())
                .map(|w| vec![w])
                .unwrap_or_else(|| fs.workspaces.clone()),
        },
    };
    if out.is_empty() || out.iter().any(|b| b.parent().is_none()) {
        out.push(process_cwd());
    }
    out.dedup();
    Ok(out)
}

/// The pipeline must look a session up first.
enum Need {
    Session(String),
}

/// How a tool reads the paths it is given (OpenClaw 2026.9.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// `read`, `write`, `edit`, `ls` (`createOpenClawReadTool` and the host
    /// write/edit operations): an `@` reference, a `</arg_value>>` suffix,
    /// `file://` through `fileURLToPath`, `~` as the OS home; not trimmed.
    File,
    /// The media tools (`view_image`, `pdf`, `*_generate`): trimmed, an `@`
    /// and a `MEDIA:` prefix taken off, `file:` in any case, `~` as the
    /// effective home (`normalizeMediaReferenceInputs`).
    Media,
    /// `message` media (`resolveLocalMediaPath`): as `Media`, but a relative
    /// path is the workspace's.
    Message,
    /// Paths resolved against the gateway process's cwd, with no `~`
    /// (`nodes` `outPath`, `sessions_spawn`'s `cwd` through
    /// `resolveUserPath`, which does expand `~`: both readings are taken).
    GatewayCwd,
}

/// Every way `raw` may be read as a path by a tool that reads it `reading`.
fn spellings(raw: &str, reading: Reading, host: &dyn crate::sessions::Host) -> Vec<PathBuf> {
    let mut texts: Vec<String> = Vec::new();
    let base = match reading {
        Reading::File => paths::strip_arg_value_suffix(raw).to_owned(),
        Reading::Media | Reading::Message | Reading::GatewayCwd => {
            let t = paths::js_trim(raw);
            let t = t.strip_prefix('@').map(paths::js_trim).unwrap_or(t);
            paths::strip_media_prefix(t).to_owned()
        }
    };
    for t in paths::at_prefix_readings(&base) {
        if !texts.contains(&t) {
            texts.push(t);
        }
    }
    let mut out = Vec::new();
    let homes = host.homes();
    for t in texts {
        if paths::is_file_url(&t) {
            if let Some(p) = host.file_url_to_path(&t) {
                out.push(p);
            }
        }
        if t == "~" || t.starts_with("~/") || t.starts_with("~\\") {
            for h in &homes {
                out.push(paths::expand_tilde(&t, Some(h)));
            }
        }
        out.push(PathBuf::from(t));
    }
    out
}

/// The absolute paths a tool opens for `raw`.
fn absolutes(
    raw: &str,
    reading: Reading,
    bases: &[PathBuf],
    host: &dyn crate::sessions::Host,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in spellings(raw, reading, host) {
        if paths::is_absolute(&p.to_string_lossy()) {
            out.push(paths::resolve(Path::new("/"), &p));
        } else {
            for b in bases {
                out.push(paths::resolve(b, &p));
            }
        }
    }
    out.dedup();
    out
}

/// `path` as the kernel resolves it, as far as it exists (symlinks, then
/// `..` after them); the rest appended as named. A dangling symlink is
/// followed too: a write through it creates its target.
fn kernel_path(path: &Path) -> PathBuf {
    kernel_path_hops(path, 0).0
}

/// [`kernel_path`], with the identity (device, inode) of what it names when
/// all of it exists: the file a tool would open.
fn kernel_path_hops(path: &Path, hops: usize) -> (PathBuf, Option<(u64, u64)>) {
    if let Ok((real, st)) = sys::real_path(path) {
        return (real, Some((st.dev, st.ino)));
    }
    if hops < 40 {
        if let Some(target) = sys::link_target(path) {
            let parent = paths::parent_of(path);
            return kernel_path_hops(&paths::resolve(&parent, &target), hops + 1);
        }
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if parent != path => {
            (kernel_path_hops(parent, hops).0.join(name), None)
        }
        _ => (path.to_path_buf(), None),
    }
}

/// A path's bytes, without a trailing separator (but the root's): the form
/// [`is_under`] compares, far cheaper than `Path`'s component walk, on the
/// every-call path with a hundred locations.
fn bytes(p: &Path) -> &[u8] {
    let b = p.as_os_str().as_encoded_bytes();
    match b {
        [rest @ .., b'/'] if !rest.is_empty() => rest,
        _ => b,
    }
}

/// Whether `p` is `s` or below it, for absolute, lexically normal paths
/// (what `Path::starts_with` says of them).
fn is_under(p: &[u8], s: &[u8]) -> bool {
    p.starts_with(s) && (p.len() == s.len() || s.last() == Some(&b'/') || p[s.len()] == b'/')
}

/// Whether `p` is the directory holding `s` (`s.parent() == Some(p)`).
fn is_parent(p: &[u8], s: &[u8]) -> bool {
    s.len() > p.len() && is_under(s, p) && {
        let rest = &s[p.len()..];
        let rest = rest.strip_prefix(b"/").unwrap_or(rest);
        !rest.is_empty() && !rest.contains(&b'/')
    }
}

/// Why `abs`, opened for `access`, reaches a protected location, if it does.
fn reaches<'p>(
    abs: &Path,
    access: Access,
    prot: &'p Protected,
    guards: &[Guard],
) -> Option<(&'p Location, &'static str)> {
    // The identity comes with the real path (one `open`): no second `stat`.
    let (real, own) = kernel_path_hops(abs, 0);
    let parent = sys::stat(&paths::parent_of(&real))
        .ok()
        .map(|s| (s.dev, s.ino));
    let (real, abs) = (paths::key(&real), paths::key(abs));
    let (real, abs) = (bytes(&real), bytes(&abs));
    for item in prot.items.iter().filter(|i| guards.contains(&i.loc.guard)) {
        let loc = &item.loc;
        let spots = item.spots.iter().map(|s| bytes(s));
        let same = |p: &[u8]| spots.clone().any(|s| s == p);
        let under = |p: &[u8]| spots.clone().any(|s| is_under(p, s));
        let above = |p: &[u8]| spots.clone().any(|s| is_under(s, p) && s != p);
        if loc.refuses(access) {
            if loc.dir {
                if under(real) || under(abs) || (own.is_some() && own == item.id) {
                    return Some((loc, "is or is inside"));
                }
                if parent.is_some() && parent == item.id {
                    return Some((loc, "is inside"));
                }
            } else if same(real) || same(abs) || (own.is_some() && own == item.id) {
                return Some((loc, "is"));
            }
        }
        // A tree read reaches everything below; a listing names what is
        // directly inside.
        if access == Access::Search && loc.secret && (above(real) || above(abs)) {
            return Some((loc, "holds"));
        }
        let names = |p: &[u8]| spots.clone().any(|s| is_parent(p, s));
        if access == Access::List && loc.secret && (names(real) || names(abs)) {
            return Some((loc, "lists"));
        }
        // No tool writes a directory above the map (as before: a writer
        // must not get near it).
        if access == Access::Write
            && loc.guard == Guard::Map
            && loc.dir
            && (above(real) || above(abs))
        {
            return Some((loc, "is a directory above"));
        }
    }
    None
}

/// A string, the strings of a list, or the path-like strings of each
/// object in a list (`message`'s `attachments`).
fn collect_strings<'p>(v: Option<&'p Value>, keys: &[&str], out: &mut Vec<&'p str>) {
    match v {
        Some(Value::String(s)) => out.push(s),
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::String(s) => out.push(s),
                    Value::Object(o) => {
                        for k in keys {
                            if let Some(Value::String(s)) = o.get(*k) {
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

/// The keys of a `message` attachment that OpenClaw reads a file from
/// (`readStructuredAttachmentMediaParam`, `openclaw-tools-*.mjs`).
const ATTACHMENT_KEYS: &[&str] = &[
    "media",
    "mediaUrl",
    "media_url",
    "path",
    "filePath",
    "file_path",
    "fileUrl",
    "file_url",
    "url",
];

/// The strings a call names as paths, in `names`.
fn named<'p>(names: &[&str], params: &'p Params) -> Vec<&'p str> {
    let mut out = Vec::new();
    for name in names {
        collect_strings(params.get(*name), ATTACHMENT_KEYS, &mut out);
    }
    out
}

/// Every path an `apply_patch` body names: `*** Add File: p`,
/// `*** Update File: p`, `*** Delete File: p` and `*** Move to: p`. A line
/// is a header once JS's `trim()` (which takes U+FEFF too) leaves one, as
/// OpenClaw's `parseOneHunk` reads it; reading too many is safe.
pub fn patch_paths(body: &str) -> impl Iterator<Item = &str> {
    const MARKERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    body.lines().filter_map(|line| {
        let line = paths::js_trim(line);
        MARKERS.iter().find_map(|m| line.strip_prefix(m))
    })
}

/// The guards the options switch on.
fn guards(cx: &Context<'_, '_>) -> Vec<Guard> {
    let mut g = Vec::new();
    if cx.opts.protect_map != ProtectMap::Off {
        g.push(Guard::Map);
    }
    if cx.opts.rules.layer_controls.enabled {
        g.push(Guard::Layer);
    }
    g
}

/// The tools that open another spelling of a file name when the name given
/// is missing (`resolveReadToolPathFromAbsolute`, tools-*.mjs, probes
/// `getReadPathVariants`): every spelling is checked.
const READ_VARIANT_TOOLS: [&str; 1] = ["read"];

/// Decides on `paths` (raw strings as the call names them), each read
/// `reading` and opened for `access`; an empty list means the tool's own
/// directory (a path left out, or `""`).
fn decide_paths<'a>(
    cx: &Context<'_, 'a>,
    call: &ToolCall<'a>,
    raw: Vec<&str>,
    reading: Reading,
    access: Access,
) -> Decision<'a> {
    let guards = guards(cx);
    if guards.is_empty() {
        return Decision::pass();
    }
    let needs_base = raw.is_empty() || raw.iter().any(|r| !paths::is_absolute(r.trim()));
    let bases = if needs_base {
        match bases(cx, call, reading) {
            Ok(b) => b,
            Err(Need::Session(key)) => return Decision::need_session(key, call.agent_id),
        }
    } else {
        Vec::new()
    };
    let prot = cx.fs.protected(cx.generation);
    let empty = [""];
    let raw: Vec<&str> = if raw.iter().all(|r| r.is_empty()) {
        empty.to_vec()
    } else {
        raw
    };
    let variants = READ_VARIANT_TOOLS.contains(&call.tool);
    for r in raw {
        let mut opened = absolutes(r, reading, &bases, cx.host);
        if variants {
            let more: Vec<PathBuf> = opened
                .iter()
                .flat_map(|a| paths::read_variants(a))
                .collect();
            opened.extend(more);
        }
        for abs in opened {
            if let Some(why) = unreadable(&abs) {
                let rule = guards[0].rule();
                return Decision::block(rule, unreadable_reason(rule, call.tool, r, why));
            }
            if let Some((loc, how)) = reaches(&abs, access, &prot, &guards) {
                return Decision::block(loc.guard.rule(), reason(call.tool, r, how, loc));
            }
        }
    }
    Decision::pass()
}

/// Why the guard can't tell what a tool opens for `abs`, if it can't: a
/// NUL character, which no file name holds (Node refuses such a path, but
/// OpenClaw drops NULs from some paths before they reach Node, as
/// `stripNullBytes` in agent-scope-config-*.mjs does, and a path cut or
/// cleaned there is another path than the one checked); or a Windows
/// device path that names no drive or share (`paths::win32::unplaced`).
fn unreadable(abs: &Path) -> Option<&'static str> {
    if abs.as_os_str().as_encoded_bytes().contains(&0) {
        return Some("holds a NUL character, which no file name can hold: OpenClaw may drop it or cut the path there, and open another file than the one checked");
    }
    if paths::windows() && paths::win32::unplaced(abs) {
        return Some("names a Windows device the layer can't place on a drive or a share, so it can't tell which file that is");
    }
    None
}

fn unreadable_reason(rule: &str, tool: &str, raw: &str, why: &str) -> String {
    format!(
        "{rule}: {tool} refused: the path \"{}\" {why}. Name the file by its plain path.",
        shown(raw)
    )
}

/// Tools that read the files they name (`read`, `memory_get`).
pub fn read<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, route: &Route) -> Decision<'a> {
    decide_paths(
        cx,
        call,
        named(route.reads, call.params),
        Reading::File,
        Access::Read,
    )
}

/// `ls`: lists the directory it names, or its own.
pub fn list<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, route: &Route) -> Decision<'a> {
    decide_paths(
        cx,
        call,
        named(route.reads, call.params),
        Reading::File,
        Access::List,
    )
}

/// `grep`, `find`: read the tree they name, or their own directory's.
pub fn search<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, route: &Route) -> Decision<'a> {
    decide_paths(
        cx,
        call,
        named(route.reads, call.params),
        Reading::File,
        Access::Search,
    )
}

/// `write`, `edit`: change the files they name.
pub fn write<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, route: &Route) -> Decision<'a> {
    let raw = named(route.reads, call.params);
    if raw.is_empty() {
        return Decision::pass(); // OpenClaw refuses a write without a path
    }
    decide_paths(cx, call, raw, Reading::File, Access::Write)
}

/// `apply_patch`: every path its headers name, and every path OpenClaw
/// derived from them for the policy tier (`event.derivedPaths`, absolute,
/// resolved against the run's own directory): both are checked.
pub fn patch<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, route: &Route) -> Decision<'a> {
    let mut raw: Vec<&str> = Vec::new();
    for name in route.reads {
        if let Some(Value::String(body)) = call.params.get(*name) {
            raw.extend(patch_paths(body));
        }
    }
    raw.extend(call.derived_paths.iter().map(String::as_str));
    if raw.is_empty() {
        return Decision::pass();
    }
    decide_paths(cx, call, raw, Reading::File, Access::Write)
}

/// The media tools: read the files they name.
pub fn media<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, route: &Route) -> Decision<'a> {
    let raw = named(route.reads, call.params);
    if raw.is_empty() {
        return Decision::pass();
    }
    decide_paths(cx, call, raw, Reading::Media, Access::Read)
}

/// `message`: reads the files it attaches and sends them to a chat.
pub fn message<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, route: &Route) -> Decision<'a> {
    let raw = named(route.reads, call.params);
    if raw.is_empty() {
        return Decision::pass();
    }
    decide_paths(cx, call, raw, Reading::Message, Access::Read)
}

/// Tools whose paths are on a paired node or in the browser's sandboxed
/// folders, which may be this host: read as absolute host paths.
pub fn node_files<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, route: &Route) -> Decision<'a> {
    let raw = named(route.reads, call.params);
    if raw.is_empty() {
        return Decision::pass();
    }
    let access = match call.tool {
        "file_write" => Access::Write,
        "dir_fetch" => Access::Search,
        "dir_list" => Access::List,
        _ => Access::Read,
    };
    decide_paths(cx, call, raw, Reading::Media, access)
}

/// `nodes` writes a screen capture to `outPath` on the gateway host,
/// relative to the gateway's cwd.
pub fn node_output<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, route: &Route) -> Decision<'a> {
    let raw = named(route.reads, call.params);
    if raw.is_empty() {
        return Decision::pass();
    }
    decide_paths(cx, call, raw, Reading::GatewayCwd, Access::Write)
}

/// The `browser` tool: `path` is where a download or a screenshot is
/// written, `paths` files it uploads.
pub fn browser<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: &Route) -> Decision<'a> {
    let out = named(&["path"], call.params);
    if !out.is_empty() {
        let d = decide_paths(cx, call, out, Reading::Media, Access::Write);
        if d.is_block() || d.need_session.is_some() {
            return d;
        }
    }
    let up = named(&["paths"], call.params);
    if up.is_empty() {
        return Decision::pass();
    }
    decide_paths(cx, call, up, Reading::Media, Access::Read)
}

/// `sessions_spawn`'s `cwd`: the child runs there (OpenClaw keeps it as the
/// session's `spawnedCwd`, through `resolveUserPath`: `~` expanded, a
/// relative one against the gateway's cwd), and its relative paths reach
/// everything below it. So a cwd in, or anywhere above, a secret location
/// is refused as a search of that tree would be. Not only its listing: the
/// child's run may take the cwd from the spawn itself before the session
/// entry holds it (`params.requestedCwd ?? sessionEntry.spawnedCwd` in
/// agent-turn-service-*.mjs, `opts.cwd ?? spawnedCwd` in agent-command-*.mjs),
/// and until then a guard that reads the entry would resolve the child's
/// paths against its workspace. The child's own paths are resolved against
/// the entry's cwd once it is there (sessions made by other means too).
pub fn spawn_cwd<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>) -> Option<Decision<'a>> {
    future_cwds(cx, call, named(&["cwd"], call.params))
}

/// Every param that sets the working directory of a run to come goes
/// through the same check as a spawn's `cwd` ([`spawn_cwd`]):
/// `sessions_spawn`'s `cwd`, `suggest_task`'s `cwd` (the session an
/// accepted suggestion starts), Workboard's `workspace.path` (a dispatched
/// card's worker runs there, `materializeWorkspace` in runtime-api-*.mjs),
/// and an automation's `schedule.cwd` and `payload.cwd`.
pub fn future_cwds<'a>(
    cx: &Context<'_, 'a>,
    call: &ToolCall<'a>,
    raw: Vec<&str>,
) -> Option<Decision<'a>> {
    if raw.iter().all(|r| paths::js_trim(r).is_empty()) {
        return None;
    }
    // In or above a secret location: a search of that tree. In a location
    // no tool may change (a hook folder, OpenClaw's package): what the run
    // writes by a relative path lands there, and a guard that resolves it
    // against another directory would let it.
    for access in [Access::Search, Access::Write] {
        let d = decide_paths(cx, call, raw.clone(), Reading::GatewayCwd, access);
        if d.is_block() || d.need_session.is_some() {
            return Some(d);
        }
    }
    None
}

/// `suggest_task`: records a follow-up whose session, once the operator
/// accepts it, runs in `cwd` (`createTaskSuggestionTools`,
/// openclaw-tools-*.mjs).
pub fn suggest_task<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: &Route) -> Decision<'a> {
    future_cwds(cx, call, named(&["cwd"], call.params)).unwrap_or_else(Decision::pass)
}

/// A shell or a program, under `protectMap: "strict"`: refused to agents not
/// known to run in OpenClaw's sandbox.
pub fn exec<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: &Route) -> Decision<'a> {
    if cx.fs.agents.get(call.agent_id).sandboxed {
        return Decision::pass();
    }
    Decision::block(RULE_ID, exec_reason(call.tool, call.agent_id))
}

/// `sessions_spawn` with `runtime: "acp"` under `protectMap: "strict"`: an
/// external harness whose own tools run on the host, outside OpenClaw's
/// hooks.
pub fn spawn_runtime<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>) -> Option<Decision<'a>> {
    let acp = call
        .params
        .get("runtime")
        .and_then(Value::as_str)
        .map(paths::js_trim)
        == Some("acp");
    if !acp {
        return None;
    }
    // An ACP harness runs on the host with shells of its own, outside every
    // sandbox and every hook, and OpenClaw lets a workspaceOnly requester
    // start one (`resolveSpawnSandboxError`, `subagent-spawn-ownership-*.mjs`):
    // under an enforced posture no agent may.
    let p = &cx.posture.posture;
    if p.judged() && p.mode == crate::posture::Mode::Enforce {
        return Some(Decision::block(
            crate::posture::RULE_ID,
            format!(
                "{}: sessions_spawn with runtime \"acp\" refused for agent {}: an ACP harness runs on the gateway's host with its own shell, outside the sandbox and every hook, where it reaches the token map. Spawn a sub-agent without runtime \"acp\".",
                crate::posture::RULE_ID,
                shown(call.agent_id.unwrap_or("(unknown)"))
            ),
        ));
    }
    if cx.opts.protect_map != ProtectMap::Strict || cx.fs.agents.get(call.agent_id).sandboxed {
        return None;
    }
    Some(Decision::block(
        RULE_ID,
        exec_reason("sessions_spawn runtime \"acp\"", call.agent_id),
    ))
}

/// The block reason for `exec`/`process` under `protectMap: "strict"`.
pub fn exec_reason(tool: &str, agent: Option<&str>) -> String {
    format!(
        "{RULE_ID}: {tool} is blocked for agent {}: it runs on the gateway's host, where a shell can read the token map, and protectMap is \"strict\". Use read/write/edit for files; the operator can run this agent in a sandbox (sandbox.mode \"all\", with backend \"claw-identity\" where bubblewrap works) to allow {tool}.",
        shown(agent.unwrap_or("(unknown)"))
    )
}

fn reason(tool: &str, raw: &str, how: &str, loc: &Location) -> String {
    let given = if raw.is_empty() {
        "(its own directory)".to_owned()
    } else {
        format!("\"{}\"", shown(raw))
    };
    match loc.guard {
        Guard::Map => format!(
            "{RULE_ID}: {tool} refused: the path {given} {how} {} ({}), which holds every agent's credentials; no tool may read, change, move or delete it. Work on other files.",
            loc.what,
            paths::shown(&loc.path)
        ),
        Guard::Layer => format!(
            "{}: {tool} refused: the path {given} {how} {} ({}), which controls the identity layer{}; agents' tools may not {}. The operator changes it.",
            super::layer_controls::RULE_ID,
            loc.what,
            paths::shown(&loc.path),
            if loc.secret { " and holds the gateway's secrets" } else { "" },
            if loc.secret { "read or change it" } else { "change it" },
        ),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod byte_paths {
    use super::*;

    /// The byte comparisons say what `Path` says of normal absolute paths.
    #[test]
    fn byte_comparisons_agree_with_path() {
        let ps = ["/", "/a", "/a/b", "/a/bc", "/ab", "/a/b/c", "/C:/x", "/C:"];
        for p in ps {
            for s in ps {
                let (pp, sp) = (Path::new(p), Path::new(s));
                assert_eq!(
                    is_under(bytes(pp), bytes(sp)),
                    pp.starts_with(sp),
                    "{p} under {s}"
                );
                assert_eq!(
                    is_parent(bytes(pp), bytes(sp)),
                    sp.parent() == Some(pp),
                    "{p} parent of {s}"
                );
            }
        }
        assert_eq!(bytes(Path::new("/a/b/")), b"/a/b");
        assert_eq!(bytes(Path::new("/")), b"/");
    }
}
