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

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Context, Decision, Params, Reads, ToolCall};
use crate::openclaw::paths::{absolutes, Reading};
use crate::options::ProtectMap;
use crate::paths;
use crate::protected::resolved::{reaches, Access};
use crate::protected::{Guard, Location};
use crate::redact::shown;

pub const RULE_ID: &str = crate::call::rule_id::MAP_ACCESS;

/// Tools that run a shell or a program: no path check can see what they
/// open. `protectMap: "strict"` blocks them for agents without a sandbox.
pub const EXEC_TOOLS: [&str; 4] = ["exec", "bash", "process", "terminal"];

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
    let homes = cx.host.homes();
    for r in raw {
        let mut opened = absolutes(r, reading, &bases, &homes, &|u| cx.host.file_url_to_path(u));
        if variants {
            let more: Vec<PathBuf> = opened
                .iter()
                .flat_map(|a| crate::openclaw::paths::read_variants(a))
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
pub fn read<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    decide_paths(
        cx,
        call,
        named(reads, call.params),
        Reading::File,
        Access::Read,
    )
}

/// `ls`: lists the directory it names, or its own.
pub fn list<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    decide_paths(
        cx,
        call,
        named(reads, call.params),
        Reading::File,
        Access::List,
    )
}

/// `grep`, `find`: read the tree they name, or their own directory's.
pub fn search<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    decide_paths(
        cx,
        call,
        named(reads, call.params),
        Reading::File,
        Access::Search,
    )
}

/// `write`, `edit`: change the files they name.
pub fn write<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    let raw = named(reads, call.params);
    if raw.is_empty() {
        return Decision::pass(); // OpenClaw refuses a write without a path
    }
    decide_paths(cx, call, raw, Reading::File, Access::Write)
}

/// `apply_patch`: every path its headers name, and every path OpenClaw
/// derived from them for the policy tier (`event.derivedPaths`, absolute,
/// resolved against the run's own directory): both are checked.
pub fn patch<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    let mut raw: Vec<&str> = Vec::new();
    for name in reads {
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
pub fn media<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    let raw = named(reads, call.params);
    if raw.is_empty() {
        return Decision::pass();
    }
    decide_paths(cx, call, raw, Reading::Media, Access::Read)
}

/// `message`: reads the files it attaches and sends them to a chat.
pub fn message<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    let raw = named(reads, call.params);
    if raw.is_empty() {
        return Decision::pass();
    }
    decide_paths(cx, call, raw, Reading::Message, Access::Read)
}

/// Tools whose paths are on a paired node or in the browser's sandboxed
/// folders, which may be this host: read as absolute host paths.
pub fn node_files<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    let raw = named(reads, call.params);
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
pub fn node_output<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, reads: Reads) -> Decision<'a> {
    let raw = named(reads, call.params);
    if raw.is_empty() {
        return Decision::pass();
    }
    decide_paths(cx, call, raw, Reading::GatewayCwd, Access::Write)
}

/// The `browser` tool: `path` is where a download or a screenshot is
/// written, `paths` files it uploads.
pub fn browser<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
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
pub fn suggest_task<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
    future_cwds(cx, call, named(&["cwd"], call.params)).unwrap_or_else(Decision::pass)
}

/// A shell or a program, under `protectMap: "strict"`: refused to agents not
/// known to run in OpenClaw's sandbox.
pub fn exec<'a>(cx: &Context<'_, 'a>, call: &ToolCall<'a>, _: Reads) -> Decision<'a> {
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
    if p.judged() && p.mode == crate::options::PostureMode::Enforce {
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
