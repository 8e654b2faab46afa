//! The path guard, case by case: every way OpenClaw 2026.9.6's tools read a
//! path that reaches a protected location is refused, and other paths pass.

use std::collections::HashMap;
use std::os::unix::fs::symlink;

use serde_json::json;

use super::*;
use crate::agent_fs::{AgentFs, AgentFsTable, DefaultFs};
use crate::options::Options;
use crate::protected::map_locations;
use crate::protected::resolved::Facts;
use crate::rules::{MapView, Verdict};
use crate::sessions::{Host, Known, SessionEntry};
use crate::testing::TempDir;
use crate::token_map::TokenMap;

/// A home with a workspace, a map in `~/.config/micelclaw`, an OpenClaw
/// state dir with its config, and an installed plugin.
struct Fixture {
    /// Removes the files when the test ends (none on the Windows fixture).
    _tmp: Option<TempDir>,
    root: PathBuf,
    home: PathBuf,
    ws: PathBuf,
    map: PathBuf,
    config: PathBuf,
    plugin: PathBuf,
}

fn fixture(tag: &str) -> Fixture {
    let tmp = TempDir::new(&format!("map-access-{tag}"));
    let root = tmp.path().to_path_buf();
    let home = root.join("home");
    let ws = home.join("ws");
    let dir = home.join(".config/micelclaw");
    let state = home.join(".openclaw");
    let plugin = state.join("extensions/claw-identity");
    for d in [&dir, &ws, &plugin] {
        std::fs::create_dir_all(d).unwrap();
    }
    let map = dir.join("agent-tokens.json");
    std::fs::write(&map, "{}").unwrap();
    let config = state.join("openclaw.json");
    std::fs::write(&config, "{}").unwrap();
    Fixture {
        _tmp: Some(tmp),
        root,
        home,
        ws,
        map,
        config,
        plugin,
    }
}

/// OpenClaw as the rule asks it: a home, a cwd, session entries.
struct TestHost {
    homes: Vec<PathBuf>,
    cwd: PathBuf,
}

impl Host for TestHost {
    fn session(&self, _: &str, _: &str) -> Result<Option<SessionEntry>, String> {
        Ok(None)
    }
    fn homes(&self) -> Vec<PathBuf> {
        self.homes.clone()
    }
    fn cwd(&self) -> PathBuf {
        self.cwd.clone()
    }
}

impl Fixture {
    fn locations(&self) -> Vec<Location> {
        let mut l = map_locations(&self.map);
        let layer = |what, path: &Path, dir, secret| Location {
            guard: Guard::Layer,
            what,
            path: path.to_path_buf(),
            dir,
            secret,
        };
        l.push(layer("OpenClaw's config file", &self.config, false, true));
        l.push(layer(
            "claw-identity's installed files",
            &self.plugin,
            true,
            false,
        ));
        l
    }

    fn facts(&self, agent: AgentFs) -> Facts {
        Facts {
            agents: AgentFsTable {
                agents: HashMap::from([("paco--francis".to_owned(), agent)]),
                default: DefaultFs::default(),
            },
            locations: self.locations(),
            ..Facts::default()
        }
    }

    fn in_ws(&self) -> AgentFs {
        AgentFs {
            cwd: None,
            workspaces: vec![self.ws.clone()],
            sandboxed: false,
        }
    }

    /// The verdict through the route table, as the engine reaches it.
    fn decide(
        &self,
        agent: AgentFs,
        sessions: &Known,
        session: Option<&str>,
        tool: &str,
        params: Value,
    ) -> Decision<'static> {
        self.decide_with(agent, sessions, session, tool, params, &[], json!({}))
    }

    #[allow(clippy::too_many_arguments)]
    fn decide_with(
        &self,
        agent: AgentFs,
        sessions: &Known,
        session: Option<&str>,
        tool: &str,
        params: Value,
        derived: &[String],
        extra: Value,
    ) -> Decision<'static> {
        let Value::Object(p) = params else { panic!() };
        let mut o = json!({"tokenMapPath": self.map});
        o.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let opts = Options::from_json(&o.to_string()).unwrap();
        let Some(route) = crate::route::Router::new(&opts).route(tool) else {
            return Decision::pass();
        };
        let map: &'static TokenMap = Box::leak(Box::default());
        let view = MapView {
            map,
            generation: 0,
            loaded: true,
            stale: false,
            redactor: None,
        };
        let fs = self.facts(agent);
        let host = TestHost {
            homes: vec![self.home.clone()],
            cwd: self.root.clone(),
        };
        let cx = Context {
            opts: &opts,
            view: &view,
            sessions,
            fs: &fs,
            host: &host,
            generation: 0,
            posture: &crate::posture::Judged::new(crate::posture::Posture::unjudged(
                crate::options::PostureMode::Enforce,
            )),
        };
        let params: &'static Params = Box::leak(Box::new(p));
        let derived: &'static [String] = Box::leak(derived.to_vec().into_boxed_slice());
        let call = ToolCall {
            tool: Box::leak(tool.to_owned().into_boxed_str()),
            agent_id: Some("paco--francis"),
            session_key: session.map(|s| &*Box::leak(s.to_owned().into_boxed_str())),
            params,
            derived_paths: derived,
            call_id: None,
        };
        (route.decide)(&cx, &call, route.reads)
    }

    /// The block reason, if the call is refused; the agent works in `ws`, no session.
    fn check(&self, tool: &str, params: Value) -> Option<String> {
        blocked(self.decide(self.in_ws(), &Known::default(), None, tool, params))
    }
}

fn blocked(d: Decision<'_>) -> Option<String> {
    match d.verdict {
        Verdict::Block(r) => Some(r),
        _ => None,
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
fn file_urls_are_read_as_nodes_file_url_to_path_reads_them() {
    let f = fixture("urls");
    let abs = f.map.display().to_string();
    let tail = abs.trim_start_matches('/');
    for url in [
        format!("file://localhost/{tail}"),
        format!("FILE://LocalHost/{tail}"),
        format!("file:///{tail}?download=1"),
        format!("file:///{tail}#top"),
        format!("file:///{}", tail.replace('/', "\\")),
        format!("file:///{}", tail.replace("agent-tokens", "agent-to\tkens")),
        format!("file:///{}", tail.replace("agent-tokens", "agent-to\nkens")),
        format!("file:/{tail}"),
    ] {
        for tool in ["read", "edit", "write"] {
            assert!(
                f.check(tool, json!({"path": url, "content": "x"}))
                    .is_some(),
                "{tool} {url:?}"
            );
        }
        assert!(
            f.check("view_image", json!({"path": url})).is_some(),
            "view_image {url:?}"
        );
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
        ("read", json!({"path": f.plugin.join("index.js")})),
        ("message", json!({"action": "send", "message": f.map})),
    ] {
        assert_eq!(f.check(tool, p.clone()), None, "{tool} {p}");
    }
    assert_eq!(f.check("exec", json!({"command": "cat x"})), None);
}

#[test]
fn the_default_agents_own_workspace_is_where_its_relative_paths_start() {
    // OpenClaw gives the owner agent agents.defaults.workspace itself (not
    // <workspace>/<id>); the config may not say which agent that is, so
    // every workspace OpenClaw may pick is a base.
    let f = fixture("owner");
    let cfg = crate::openclaw::config::OpenClawConfig::from_text(&format!(
        r#"{{ agents: {{ defaults: {{ workspace: "{}" }}, entries: {{ "paco--francis": {{ default: true }}, "paco--dali": {{}} }} }} }}"#,
        f.ws.display()
    ));
    let table = cfg.agent_fs();
    let francis = table.get(Some("paco--francis")).into_owned();
    assert!(francis.workspaces.contains(&f.ws), "{francis:?}");
    let rel = "../.config/micelclaw/agent-tokens.json";
    for (tool, p) in [
        ("read", json!({"path": rel})),
        ("edit", json!({"path": rel, "edits": []})),
        ("write", json!({"path": rel, "content": "{}"})),
    ] {
        let d = f.decide(francis.clone(), &Known::default(), None, tool, p);
        assert!(blocked(d).is_some(), "{tool}");
    }
    // An agent the config doesn't list gets the workspaces of any id.
    let ghost = table.get(Some("ghost")).into_owned();
    assert!(ghost.workspaces.contains(&f.ws.join("ghost")) && ghost.workspaces.contains(&f.ws));
}

#[test]
fn a_spawned_childs_paths_start_in_its_spawned_cwd() {
    let f = fixture("spawned");
    let child = "agent:paco--francis:subagent:1";
    let known = Known::default();
    // Its entry isn't known yet: look it up first.
    let d = f.decide(
        f.in_ws(),
        &known,
        Some(child),
        "read",
        json!({"path": "agent-tokens.json"}),
    );
    assert_eq!(
        d.need_session.map(|n| n.session_key),
        Some(child.to_owned())
    );
    known.note(
        child,
        Some(SessionEntry {
            spawned_cwd: Some(f.map.parent().unwrap().to_path_buf()),
            ..Default::default()
        }),
    );
    for (tool, p) in [
        ("read", json!({"path": "agent-tokens.json"})),
        ("edit", json!({"path": "agent-tokens.json", "edits": []})),
        ("grep", json!({"pattern": "[0-9a-f]"})),
        ("ls", json!({})),
        ("ls", json!({"path": ""})),
    ] {
        let d = f.decide(f.in_ws(), &known, Some(child), tool, p.clone());
        assert!(blocked(d).is_some(), "{tool} {p}");
    }
    // An absolute path needs no session.
    let d = f.decide(
        f.in_ws(),
        &Known::default(),
        Some("agent:x:subagent:2"),
        "read",
        json!({"path": "/etc/hostname"}),
    );
    assert!(d.need_session.is_none() && blocked(d).is_none());
}

#[test]
fn a_spawn_whose_cwd_is_in_a_protected_directory_is_refused() {
    let f = fixture("spawncwd");
    let dir = f.map.parent().unwrap().display().to_string();
    for cwd in [
        dir.clone(),
        format!("{dir}/sub"),
        "~/.config/micelclaw".into(),
        // Above it: the child's relative paths reach it from there.
        "~/.config".into(),
        "~".into(),
        f.home.display().to_string(),
        "/".into(),
    ] {
        let r = f.check("sessions_spawn", json!({"task": "t", "cwd": cwd}));
        assert!(
            r.is_some_and(|r| r.starts_with("map-access: sessions_spawn refused")),
            "{cwd}"
        );
    }
    assert_eq!(
        f.check("sessions_spawn", json!({"task": "t", "cwd": f.ws})),
        None
    );
}

#[test]
fn grep_without_a_path_searches_its_cwd_and_may_not_from_above_the_map() {
    let f = fixture("grep");
    let home_agent = AgentFs {
        cwd: Some(f.home.clone()),
        workspaces: vec![],
        sandboxed: false,
    };
    for p in [json!({"pattern": "x"}), json!({"pattern": "x", "path": ""})] {
        let d = f.decide(
            home_agent.clone(),
            &Known::default(),
            None,
            "grep",
            p.clone(),
        );
        assert!(blocked(d).is_some_and(|r| r.contains("holds")), "{p}");
    }
    assert!(f
        .check("grep", json!({"pattern": "x", "path": "~"}))
        .is_some());
    assert_eq!(
        f.check("grep", json!({"pattern": "x"})),
        None,
        "its workspace holds no secret"
    );
    // A listing of the directory above names the map's directory: refused; two above: passes.
    assert!(f.check("ls", json!({"path": "~/.config"})).is_some());
    assert_eq!(f.check("ls", json!({"path": "~"})), None);
}

#[test]
fn the_maps_location_is_refused_while_its_directory_is_missing() {
    let f = fixture("missing");
    std::fs::remove_dir_all(f.map.parent().unwrap()).unwrap();
    let rel = "../.config/micelclaw/agent-tokens.json";
    for (tool, p) in [
        ("write", json!({"path": f.map, "content": "{}"})),
        ("write", json!({"path": rel, "content": "{}"})),
        (
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Add File: {}\n+{{}}\n*** End Patch", f.map.display())}),
        ),
        ("read", json!({"path": f.map})),
    ] {
        assert!(f.check(tool, p.clone()).is_some(), "{tool} {p}");
    }
}

#[test]
fn a_symlinked_maps_real_directory_is_guarded_like_its_configured_one() {
    let f = fixture("linkedmap");
    let real_dir = f.root.join("secrets");
    std::fs::create_dir_all(&real_dir).unwrap();
    let real = real_dir.join("tokens.json");
    std::fs::rename(&f.map, &real).unwrap();
    symlink(&real, &f.map).unwrap();
    for (tool, p) in [
        ("ls", json!({"path": real_dir})),
        ("grep", json!({"pattern": "x", "path": real_dir})),
        (
            "write",
            json!({"path": real_dir.join("other.json"), "content": "x"}),
        ),
        ("read", json!({"path": real})),
    ] {
        assert!(f.check(tool, p.clone()).is_some(), "{tool} {p}");
    }
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
fn every_path_of_a_patch_is_checked_as_openclaws_parser_reads_its_headers() {
    let f = fixture("patch");
    let ok = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch";
    assert_eq!(f.check("apply_patch", json!({ "input": ok })), None);
    for header in [
        "*** Add File: ../.config/micelclaw/agent-tokens.json\n+{}",
        "*** Delete File: ~/.config/micelclaw/agent-tokens.json",
        "*** Update File: ~/.config/micelclaw/agent-tokens.json\n@@\n-{}\n+{ }",
        "*** Update File: a.txt\n*** Move to: ~/.config/micelclaw/agent-tokens.json\n@@\n-x\n+y",
        "  *** Delete File: ~/.config/micelclaw/agent-tokens.json  ",
        // JS trim() takes U+FEFF and U+3000 off too.
        "\u{feff}*** Delete File: ~/.config/micelclaw/agent-tokens.json",
        "\u{feff}*** Add File: ../.config/micelclaw/agent-tokens.json\n+{}",
        "*** Update File: a.txt\n\u{feff}*** Move to: ~/.config/micelclaw/agent-tokens.json",
        "\u{3000}*** Delete File: ~/.config/micelclaw/agent-tokens.json",
    ] {
        let body = format!("*** Begin Patch\n{header}\n*** End Patch");
        assert!(
            f.check("apply_patch", json!({ "input": body })).is_some(),
            "{header:?}"
        );
    }
    let wrapped = "<<EOF\n*** Begin Patch\r\n*** Delete File: ~/.config/micelclaw/agent-tokens.json\r\n*** End Patch\nEOF";
    assert!(f
        .check("apply_patch", json!({ "input": wrapped }))
        .is_some());
}

#[test]
fn openclaws_own_derived_patch_paths_are_checked_too() {
    let f = fixture("derived");
    let body = json!({"input": "*** Begin Patch\n*** Add File: harmless.txt\n+x\n*** End Patch"});
    let derived = [f.map.display().to_string()];
    let d = f.decide_with(
        f.in_ws(),
        &Known::default(),
        None,
        "apply_patch",
        body.clone(),
        &derived,
        json!({}),
    );
    assert!(blocked(d).is_some());
    let d = f.decide_with(
        f.in_ws(),
        &Known::default(),
        None,
        "apply_patch",
        body,
        &[f.ws.join("harmless.txt").display().to_string()],
        json!({}),
    );
    assert!(blocked(d).is_none());
}

#[test]
fn media_tools_and_every_message_media_key_are_checked() {
    let f = fixture("media");
    let abs = f.map.display().to_string();
    for (tool, p) in [
        ("pdf", json!({"pdfs": ["a.pdf", abs]})),
        ("view_image", json!({"paths": [abs]})),
        ("view_image", json!({"path": format!("  @ MEDIA: {abs}")})),
        ("video_generate", json!({"prompt": "x", "videos": [abs]})),
        ("video_generate", json!({"prompt": "x", "audioRef": abs})),
        (
            "image_generate",
            json!({"prompt": "x", "image": format!("FILE://{abs}")}),
        ),
        (
            "message",
            json!({"action": "send", "attachments": [{"media": abs}]}),
        ),
        (
            "message",
            json!({"action": "send", "attachments": [{"url": format!("file://{abs}")}]}),
        ),
        (
            "message",
            json!({"action": "send", "attachments": [{"fileUrl": abs}]}),
        ),
        ("message", json!({"action": "send", "media": abs})),
        ("message", json!({"action": "send", "mediaUrl": abs})),
        ("message", json!({"action": "send", "fileUrl": abs})),
        ("message", json!({"action": "send", "image": abs})),
        ("message", json!({"action": "send", "mediaUrls": [abs]})),
        ("message", json!({"action": "send", "media_urls": [abs]})),
        ("message", json!({"action": "send", "file_path": abs})),
    ] {
        assert!(f.check(tool, p.clone()).is_some(), "{tool} {p}");
    }
}

#[test]
fn every_tool_that_reaches_a_host_path_is_checked() {
    let f = fixture("tools");
    let abs = f.map.display().to_string();
    for (tool, p) in [
        ("memory_get", json!({"path": abs})),
        ("file_fetch", json!({"node": "n", "path": abs})),
        (
            "dir_list",
            json!({"node": "n", "path": f.map.parent().unwrap()}),
        ),
        ("dir_fetch", json!({"node": "n", "path": f.home})),
        (
            "file_write",
            json!({"node": "n", "path": abs, "contentBase64": ""}),
        ),
        ("browser", json!({"action": "upload", "paths": [abs]})),
        ("browser", json!({"action": "screenshot", "path": abs})),
        (
            "nodes",
            json!({"action": "screen_snapshot", "outPath": abs}),
        ),
    ] {
        assert!(f.check(tool, p.clone()).is_some(), "{tool} {p}");
    }
}

#[test]
fn a_tilde_with_home_unset_is_the_password_databases_home_too() {
    // The host's homes are HOME, USERPROFILE, os.homedir() and OPENCLAW_HOME:
    // any of them may be the one `~` stands for.
    let f = fixture("nohome");
    let other = TestHost {
        homes: vec![f.root.join("elsewhere"), f.home.clone()],
        cwd: f.root.clone(),
    };
    let Value::Object(p) = json!({"path": "~/.config/micelclaw/agent-tokens.json"}) else {
        panic!()
    };
    let bases = vec![f.ws.clone()];
    let all = absolutes(
        p["path"].as_str().unwrap(),
        Reading::File,
        &bases,
        &other.homes(),
        &|u| other.file_url_to_path(u),
    );
    assert!(all.contains(&f.map), "{all:?}");
}

#[test]
fn the_layers_own_controls_are_out_of_reach() {
    let f = fixture("layer");
    // The config can be neither read nor changed; the plugin's files not changed.
    for (tool, p) in [
        ("read", json!({"path": f.config})),
        ("edit", json!({"path": f.config, "edits": []})),
        ("write", json!({"path": f.config, "content": "{}"})),
        (
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Delete File: {}\n*** End Patch", f.config.display())}),
        ),
        (
            "write",
            json!({"path": f.plugin.join("index.js"), "content": ""}),
        ),
        (
            "write",
            json!({"path": f.plugin.join("lib/new.js"), "content": ""}),
        ),
    ] {
        let r = f
            .check(tool, p.clone())
            .unwrap_or_else(|| panic!("{tool} {p} passed"));
        assert!(
            r.starts_with(&format!("layer-controls: {tool} refused")),
            "{r}"
        );
    }
    // Off: only the map is guarded.
    let off = json!({"rules": {"layerControls": {"enabled": false}}});
    let d = f.decide_with(
        f.in_ws(),
        &Known::default(),
        None,
        "write",
        json!({"path": f.config, "content": "{}"}),
        &[],
        off.clone(),
    );
    assert!(blocked(d).is_none());
    let d = f.decide_with(
        f.in_ws(),
        &Known::default(),
        None,
        "read",
        json!({"path": f.map}),
        &[],
        off,
    );
    assert!(blocked(d).is_some());
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
fn an_unlisted_agent_is_checked_against_every_workspace_it_may_have() {
    let f = fixture("unlisted");
    let d = f.decide(
        AgentFs {
            cwd: None,
            workspaces: vec![f.root.join("a/b"), f.ws.clone()],
            sandboxed: false,
        },
        &Known::default(),
        None,
        "read",
        json!({"path": "../.config/micelclaw/agent-tokens.json"}),
    );
    assert!(blocked(d).is_some());
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

/// A gateway on native Windows (the WebAssembly build), by guest path:
/// `C:\Users\me` is `/C:/Users/me` (`paths::win32`). Nothing of it exists
/// here, so each case is decided on how OpenClaw resolves the name
/// (`path.win32.resolve`) and how Windows reads it, not on a lookup.
fn windows_fixture() -> Fixture {
    crate::paths::test_windows::set(true);
    let root = PathBuf::from("/C:");
    let home = root.join("Users/me");
    let state = home.join(".openclaw");
    Fixture {
        _tmp: None,
        ws: home.join("ws"),
        map: home.join(".config/micelclaw/agent-tokens.json"),
        config: state.join("openclaw.json"),
        plugin: state.join("extensions/claw-identity"),
        home,
        root,
    }
}

#[test]
fn on_windows_every_spelling_of_the_map_is_refused() {
    let f = windows_fixture();
    for path in [
        r"C:\Users\me\.config\micelclaw\agent-tokens.json",
        r"c:/users/ME/.CONFIG/micelclaw/Agent-Tokens.JSON",
        r"C:\Users\me\.config\micelclaw\agent-tokens.json.",
        r"C:\Users\me\.config\micelclaw\agent-tokens.json::$DATA",
        r"C:\Users\me\.config\micelclaw. \agent-tokens.json ",
        r"..\.config\micelclaw\agent-tokens.json",
        r"..\..\me\.config/micelclaw\agent-tokens.json",
        r"\Users\me\.config\micelclaw\agent-tokens.json",
        r"C:..\.config\micelclaw\agent-tokens.json",
        r"~\.config\micelclaw\agent-tokens.json",
        r"\\?\C:\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\.\C:\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\localhost\c$\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\?\UNC\127.0.0.1\C$\Users\me\.config\micelclaw\agent-tokens.json",
        // The NT object namespace's ways back to drive C:.
        r"\\?\GLOBALROOT\??\C:\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\?\GLOBALROOT\DosDevices\C:\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\.\GLOBAL??\C:\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\?\Global\c:\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\?\GLOBALROOT\Device\Mup\localhost\C$\Users\me\.config\micelclaw\agent-tokens.json",
        // Every spelling of a loopback host.
        r"\\localhost.\C$\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\127.1\C$\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\127.0.1\C$\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\127.9.8.7\C$\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\2130706433\C$\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\0x7f.1\C$\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\0177.0.0.1\C$\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\0--1.ipv6-literal.net\C$\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\[::1]\C$\Users\me\.config\micelclaw\agent-tokens.json",
    ] {
        let r = f.check("read", json!({ "path": path }));
        let r = r.unwrap_or_else(|| panic!("{path} passed"));
        assert!(r.starts_with("map-access: read refused"), "{path}: {r}");
        // The reason names the map as Windows does.
        assert!(
            r.contains(r"(C:\Users\me\.config\micelclaw\agent-tokens.json)"),
            "{r}"
        );
    }
    for (tool, p) in [
        (
            "write",
            json!({"path": r"C:\USERS\me\.config\micelclaw\new.json", "content": "x"}),
        ),
        ("ls", json!({"path": r"C:\Users\Me\.config\MICELCLAW"})),
        (
            "grep",
            json!({"pattern": "x", "path": r"c:\users\me\.config"}),
        ),
        (
            "edit",
            json!({"path": r"C:\Users\me\.openclaw\OpenClaw.json", "edits": []}),
        ),
        (
            "write",
            json!({"path": r"c:\users\me\.openclaw\extensions\Claw-Identity\index.js", "content": "x"}),
        ),
    ] {
        assert!(f.check(tool, p.clone()).is_some(), "{tool} {p}");
    }
    crate::paths::test_windows::set(false);
}

#[test]
fn on_windows_a_device_path_on_no_drive_is_refused() {
    let f = windows_fixture();
    for path in [
        r"\\?\Volume{0b1c2d3e-0000-0000-0000-100000000000}\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\?\GLOBALROOT\Device\HarddiskVolume3\Users\me\.config\micelclaw\agent-tokens.json",
        r"\\.\GLOBALROOT\Device\HarddiskVolumeShadowCopy1\Users\me\.config\micelclaw\agent-tokens.json",
    ] {
        for tool in ["read", "write"] {
            let r = f.check(tool, json!({ "path": path, "content": "x" }));
            let r = r.unwrap_or_else(|| panic!("{tool} {path} passed"));
            assert!(r.contains("names a Windows device"), "{r}");
        }
    }
    crate::paths::test_windows::set(false);
}

#[test]
fn on_windows_other_files_pass() {
    let f = windows_fixture();
    for (tool, p) in [
        ("read", json!({"path": r"notes.md"})),
        (
            "read",
            json!({"path": r"D:\Users\me\.config\micelclaw\agent-tokens.json"}),
        ),
        (
            "read",
            json!({"path": r"C:\Users\me\.config\micelclaw-old\agent-tokens.json"}),
        ),
        ("read", json!({"path": r"\\server\share\agent-tokens.json"})),
        ("write", json!({"path": r"..\ws2\x.txt", "content": "x"})),
        (
            "read",
            json!({"path": r"C:\Users\me\.openclaw\extensions\claw-identity\index.js"}),
        ),
    ] {
        assert_eq!(f.check(tool, p.clone()), None, "{tool} {p}");
    }
    crate::paths::test_windows::set(false);
}

#[test]
fn a_path_with_a_nul_in_it_is_refused() {
    let f = fixture("nul");
    let abs = f.map.display().to_string();
    let tail = abs.trim_start_matches('/');
    for (tool, p) in [
        ("read", json!({"path": format!("{abs}\u{0}")})),
        ("read", json!({"path": format!("{abs}\u{0}.txt")})),
        (
            "write",
            json!({"path": abs.replace("agent-tokens", "agent\u{0}-tokens"), "content": "{}"}),
        ),
        ("read", json!({"path": format!("file:///{tail}%00")})),
        ("read", json!({"path": "notes\u{0}.md"})),
        ("view_image", json!({"path": format!("{abs}\u{0}")})),
        (
            "sessions_spawn",
            json!({"task": "t", "cwd": format!("{}\u{0}", f.map.parent().unwrap().display())}),
        ),
    ] {
        let r = f
            .check(tool, p.clone())
            .unwrap_or_else(|| panic!("{tool} {p} passed"));
        assert!(r.starts_with("map-access: ") && r.contains("NUL"), "{r}");
        assert!(!r.contains('\0'), "the reason echoes the NUL: {r:?}");
    }
    // With the map guard off, layer-controls refuses it.
    let d = f.decide_with(
        f.in_ws(),
        &Known::default(),
        None,
        "read",
        json!({"path": "a\u{0}b"}),
        &[],
        json!({"protectMap": "off"}),
    );
    assert!(blocked(d).is_some_and(|r| r.starts_with("layer-controls: ")));
}

#[test]
fn the_read_tools_other_spellings_of_a_file_name_are_refused() {
    // OpenClaw's read opens another spelling of a missing name (Unicode
    // spaces, quotes, NFC/NFD): a secret file named with any of them (here
    // OpenClaw's config, in a directory that is not itself protected) is
    // reached through the others.
    let mut f = fixture("variants");
    f.config = f
        .config
        .with_file_name("paco\u{2019}s caf\u{e9} config.json");
    std::fs::write(&f.config, "{}").unwrap();
    let dir = f.config.parent().unwrap().display().to_string();
    for name in [
        "paco's caf\u{e9} config.json",
        "paco\u{2018}s caf\u{e9} config.json",
        "paco\u{2019}s cafe\u{301} config.json",
        "paco\u{2019}s\u{a0}caf\u{e9}\u{3000}config.json",
        "paco's\u{2009}cafe\u{301} config.json",
    ] {
        let path = format!("{dir}/{name}");
        let r = f.check("read", json!({ "path": path }));
        assert!(
            r.is_some_and(|r| r.starts_with("layer-controls: read refused")),
            "{name:?} passed"
        );
        // Only the read tool probes other spellings: a write makes the name given.
        assert_eq!(
            f.check("write", json!({ "path": path, "content": "x" })),
            None
        );
    }
    assert_eq!(
        f.check(
            "read",
            json!({ "path": format!("{dir}/paco's notes.json") })
        ),
        None
    );
}

#[test]
fn every_param_that_sets_a_future_runs_cwd_is_checked_as_a_spawns_cwd() {
    let f = fixture("future-cwd");
    let map_dir = f.map.parent().unwrap().display().to_string();
    let above = f.home.display().to_string();
    for cwd in [&map_dir, &above] {
        for (tool, p) in [
            ("sessions_spawn", json!({"task": "t", "cwd": cwd})),
            (
                "suggest_task",
                json!({"title": "t", "prompt": "p", "tldr": "t", "cwd": cwd}),
            ),
            (
                "workboard_create",
                json!({"title": "t", "workspace": {"kind": "dir", "path": cwd}}),
            ),
            (
                "workboard_specify",
                json!({"id": "c", "workspace": {"kind": "worktree", "path": cwd}}),
            ),
            (
                "workboard_decompose",
                json!({"id": "c", "children": [{"title": "a"}, {"title": "b", "workspace": {"kind": "dir", "path": cwd}}]}),
            ),
            (
                "workboard_board_create",
                json!({"id": "b", "defaultWorkspace": {"kind": "dir", "path": cwd}}),
            ),
        ] {
            let r = f
                .check(tool, p.clone())
                .unwrap_or_else(|| panic!("{tool} {p} passed"));
            assert!(r.starts_with("map-access: "), "{r}");
        }
    }
    // A cwd in a location no tool may change (the plugin's files here; a
    // hook folder, OpenClaw's package): the run's relative writes land there.
    let code = f.plugin.display().to_string();
    for (tool, p) in [
        ("sessions_spawn", json!({"task": "t", "cwd": code})),
        (
            "workboard_create",
            json!({"title": "t", "workspace": {"kind": "dir", "path": code}}),
        ),
    ] {
        let r = f
            .check(tool, p.clone())
            .unwrap_or_else(|| panic!("{tool} {p} passed"));
        assert!(r.starts_with("layer-controls: "), "{r}");
    }
    // With layer-controls off (so a stream job is not refused as such), an
    // automation's cwd is still checked.
    for p in [
        json!({"action": "add", "kind": "stream", "command": ["sh"], "cwd": map_dir}),
        json!({"action": "add", "job": {"payload": {"kind": "command", "argv": ["sh"], "cwd": above}}}),
    ] {
        let d = f.decide_with(
            f.in_ws(),
            &Known::default(),
            None,
            "automations",
            p.clone(),
            &[],
            json!({"rules": {"layerControls": {"enabled": false}}}),
        );
        assert!(
            blocked(d).is_some_and(|r| r.starts_with("map-access: ")),
            "{p}"
        );
    }
    // Beside the map: runs.
    let beside = f.ws.display().to_string();
    for (tool, p) in [
        (
            "suggest_task",
            json!({"title": "t", "prompt": "p", "tldr": "t", "cwd": beside}),
        ),
        (
            "workboard_create",
            json!({"title": "t", "workspace": {"kind": "dir", "path": beside}}),
        ),
    ] {
        assert_eq!(f.check(tool, p.clone()), None, "{tool} {p}");
    }
}

#[test]
fn an_automation_that_runs_a_host_process_is_refused_to_every_agent() {
    let f = fixture("automations");
    let sandboxed = AgentFs {
        sandboxed: true,
        ..f.in_ws()
    };
    for p in [
        json!({"action": "add", "job": {"schedule": {"kind": "stream", "command": ["sh"]}, "payload": {"kind": "agentTurn", "message": "m"}}}),
        json!({"action": "add", "kind": "stream", "command": ["cat", "/x"], "message": "m"}),
        json!({"action": "add", "job": {}, "command": "sleep 1", "message": "m"}),
        json!({"action": "add", "job": {"schedule": {"kind": "On-Exit", "command": "x"}, "message": "m"}}),
        json!({"action": "add", "job": {"data": {"payload": {"kind": "command", "argv": ["sh"]}}}}),
        json!({"action": "add", "job": {"script": "x", "everyMs": 1000}}),
        json!({"action": "add", "job": {"trigger": {"script": "x"}, "everyMs": 1000, "message": "m"}}),
        json!({"action": "update", "jobId": "j", "job": {"payload": {"argv": ["sh"]}}}),
    ] {
        for agent in [f.in_ws(), sandboxed.clone()] {
            let d = f.decide(agent, &Known::default(), None, "automations", p.clone());
            let r = blocked(d).unwrap_or_else(|| panic!("{p} passed"));
            assert!(r.starts_with("layer-controls: automations "), "{r}");
            assert!(r.contains("openclaw cron add"), "{r}");
        }
    }
    for p in [
        json!({"action": "add", "job": {"schedule": {"kind": "every", "everyMs": 60000}, "payload": {"kind": "agentTurn", "message": "m"}}}),
        json!({"action": "add", "message": "m", "everyMs": 1000}),
        json!({"action": "run", "jobId": "j"}),
    ] {
        assert_eq!(f.check("automations", p.clone()), None, "{p}");
    }
}
