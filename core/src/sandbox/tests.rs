//! The bwrap command line, one test per mask and flag, on a host made up
//! here (so each test says exactly what the host holds). The escape suite
//! (`__test__/sandbox.test.mjs`) runs real commands under the real one.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::host::{aliases_in, parse_mountinfo};
use super::probe::{classify, key};
use super::*;
use crate::openclaw::sandbox_contract::{
    Mount, OpenClawSession, WorkspaceAccess, AGENT_WORKSPACE_MOUNT,
};
use crate::options::{Network, SandboxOptions};
use crate::protected::{self, map_locations, Guard, Location, OpenClawFiles};

#[derive(Clone)]
enum Node {
    Dir,
    File { links: u64 },
    Link(PathBuf),
}

/// A host: its paths, bind-mount aliases and programs.
#[derive(Default, Clone)]
struct Fake {
    nodes: BTreeMap<PathBuf, Node>,
    aliases: BTreeMap<PathBuf, Vec<PathBuf>>,
    programs: BTreeSet<PathBuf>,
}

impl Fake {
    /// A typical Debian root and a gateway user `u` with its token map.
    fn new() -> Fake {
        let mut f = Fake::default();
        f.dir("/");
        for d in [
            "/usr/bin",
            "/usr/lib",
            "/etc",
            "/home/u",
            "/var/tmp",
            "/proc",
            "/dev",
            "/tmp",
            "/run/user/1000",
            "/sys",
            "/srv",
        ] {
            f.dir(d);
        }
        f.link("/bin", "usr/bin");
        f.link("/lib", "usr/lib");
        f.file("/swapfile");
        f.dir("/home/u/.config/micelclaw");
        f.file("/home/u/.config/micelclaw/agent-tokens.json");
        f.dir("/home/u/.openclaw/workspace");
        f.file("/home/u/.openclaw/openclaw.json");
        f.dir("/home/u/.openclaw/credentials");
        f.dir("/srv/ws/paco");
        f
    }
    fn dir(&mut self, p: &str) {
        let mut cur = PathBuf::from("/");
        for c in Path::new(p).components().skip(1) {
            cur.push(c);
            self.nodes.entry(cur.clone()).or_insert(Node::Dir);
        }
        self.nodes.insert(p.into(), Node::Dir);
    }
    fn file(&mut self, p: &str) {
        self.dir(Path::new(p).parent().unwrap().to_str().unwrap());
        self.nodes.insert(p.into(), Node::File { links: 1 });
    }
    fn link(&mut self, p: &str, target: &str) {
        self.nodes.insert(p.into(), Node::Link(target.into()));
    }
    /// Resolves every symlink of `p`, component by component.
    fn resolve(&self, p: &Path, hops: usize) -> Option<PathBuf> {
        let mut cur = PathBuf::from("/");
        let comps: Vec<_> = p.components().skip(1).collect();
        for (i, c) in comps.iter().enumerate() {
            let next = cur.join(c);
            match self.nodes.get(&next)? {
                Node::Link(t) if hops < 20 => {
                    let target = crate::paths::resolve(&cur, t);
                    let rest: PathBuf = comps[i + 1..].iter().collect();
                    return self.resolve(&target.join(rest), hops + 1);
                }
                Node::Link(_) => return None,
                _ => cur = next,
            }
        }
        Some(cur)
    }
}

impl HostView for Fake {
    fn root_entries(&self) -> Vec<(OsString, Entry)> {
        self.nodes
            .iter()
            .filter(|(p, _)| p.parent() == Some(Path::new("/")))
            .map(|(p, n)| {
                let e = match n {
                    Node::Dir => Entry::Dir,
                    Node::Link(t) => Entry::Link(t.clone()),
                    Node::File { .. } => Entry::Other,
                };
                (p.file_name().unwrap().to_owned(), e)
            })
            .collect()
    }
    fn kind(&self, path: &Path) -> Kind {
        match self
            .resolve(path, 0)
            .and_then(|r| self.nodes.get(&r).cloned())
        {
            None => Kind::Missing,
            Some(Node::Dir) => Kind::Dir,
            Some(_) => Kind::File,
        }
    }
    fn real(&self, path: &Path) -> Option<PathBuf> {
        self.resolve(path, 0)
    }
    fn list(&self, dir: &Path) -> Vec<OsString> {
        self.nodes
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .map(|p| p.file_name().unwrap().to_owned())
            .collect()
    }
    fn links(&self, path: &Path) -> u64 {
        match self.real(path).and_then(|r| self.nodes.get(&r).cloned()) {
            Some(Node::File { links }) => links,
            _ => 1,
        }
    }
    fn aliases(&self, real: &Path) -> Vec<PathBuf> {
        self.aliases.get(real).cloned().unwrap_or_default()
    }
    fn program(&self, name: &str, path: &str) -> Option<PathBuf> {
        path.split(':')
            .map(|d| Path::new(d).join(name))
            .find(|p| self.programs.contains(p))
    }
}

const MAP: &str = "/home/u/.config/micelclaw/agent-tokens.json";
const MAP_DIR: &str = "/home/u/.config/micelclaw";
const WS: &str = "/srv/ws/paco";

/// The layer's locations for a map at `map` (as `Engine::locations` has
/// them), with OpenClaw's state dir `/home/u/.openclaw`.
fn protected(host: &Fake, map: &str, files: &OpenClawFiles) -> Vec<Location> {
    // OpenClaw's state dir is then /home/u/.openclaw (the options tests set
    // HOME the same; no other variable is touched, tests run in parallel).
    std::env::set_var("HOME", "/home/u");
    let mut out = protected::locations(Path::new(map), files);
    // map_locations resolves symlinks on the real host; do it on this one.
    if let Some(real) = host.real(Path::new(map)) {
        if real != Path::new(map) {
            out.extend(map_locations(&real));
        }
    }
    out
}

fn inputs_for(host: &Fake, files: &OpenClawFiles) -> Inputs {
    Inputs {
        protected: protected(host, MAP, files),
        hidden: hidden(
            host,
            &[PathBuf::from("/home/u/.openclaw")],
            &[PathBuf::from("/home/u")],
            &[],
        ),
        run_later: vec![
            (
                PathBuf::from("/home/u"),
                "a home directory of the gateway's user",
            ),
            (
                PathBuf::from("/usr/bin"),
                "a directory of the gateway's PATH",
            ),
        ],
        network: Network::None,
        workspace_hooks: false,
    }
}

fn ws_mount() -> Vec<Mount> {
    vec![Mount {
        host: WS.into(),
        at: WS.into(),
        writable: true,
    }]
}

fn plan_on(host: &Fake, inputs: &Inputs, mounts: &[Mount]) -> Plan {
    plan(host, inputs, mounts, Path::new(WS), vec!["/bin/sh".into()]).unwrap()
}

fn default_plan(host: &Fake) -> Plan {
    plan_on(
        host,
        &inputs_for(host, &OpenClawFiles::default()),
        &ws_mount(),
    )
}

fn has(p: &Plan, op: Op) -> bool {
    p.ops.contains(&op)
}

fn pos(p: &Plan, op: &Op) -> usize {
    p.ops
        .iter()
        .position(|o| o == op)
        .unwrap_or_else(|| panic!("no {op:?} in {:#?}", p.ops))
}

fn pb(s: &str) -> PathBuf {
    PathBuf::from(s)
}

fn masks(p: &Plan) -> Vec<PathBuf> {
    p.ops
        .iter()
        .filter_map(|o| match o {
            Op::Tmpfs(d) | Op::NullFile(d) => Some(d.clone()),
            _ => None,
        })
        .collect()
}

// ---- flags ----

#[test]
fn own_user_namespace_and_no_nested_one() {
    let f = flags(Network::None);
    assert!(f.contains(&"--unshare-user") && f.contains(&"--disable-userns"));
}

#[test]
fn own_pid_namespace() {
    assert!(flags(Network::None).contains(&"--unshare-pid"));
}

#[test]
fn own_ipc_uts_and_cgroup_namespaces() {
    let f = flags(Network::None);
    for flag in ["--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"] {
        assert!(f.contains(&flag), "{flag}");
    }
}

#[test]
fn no_network_by_default_and_the_hosts_only_when_asked() {
    assert!(flags(Network::None).contains(&"--unshare-net"));
    assert!(!flags(Network::Host).contains(&"--unshare-net"));
    let o: SandboxOptions = serde_json::from_str("{}").unwrap();
    assert_eq!(o.network, Network::None);
}

#[test]
fn dies_with_the_gateway() {
    assert!(flags(Network::None).contains(&"--die-with-parent"));
}

#[test]
fn a_new_session() {
    assert!(flags(Network::None).contains(&"--new-session"));
}

#[test]
fn no_capabilities() {
    let f = flags(Network::None);
    let i = f.iter().position(|x| *x == "--cap-drop").unwrap();
    assert_eq!(f[i + 1], "ALL");
}

#[test]
fn the_argv_is_bwrap_flags_ops_chdir_and_the_command() {
    let host = Fake::new();
    let p = default_plan(&host);
    let argv = p.argv(Path::new("/usr/bin/bwrap"));
    assert_eq!(argv[0], "/usr/bin/bwrap");
    assert_eq!(argv[1], "--unshare-user");
    let dd = argv.iter().position(|a| a == "--").unwrap();
    assert_eq!(
        &argv[dd - 2..dd],
        &[OsString::from("--chdir"), OsString::from(WS)]
    );
    assert_eq!(&argv[dd + 1..], &[OsString::from("/bin/sh")]);
}

// ---- the root ----

#[test]
fn the_hosts_root_is_read_only() {
    let host = Fake::new();
    let p = default_plan(&host);
    for d in ["/usr", "/etc", "/home", "/var", "/srv", "/sys"] {
        assert!(has(&p, Op::RoBind(pb(d), pb(d))), "{d}");
    }
    assert!(
        !p.ops
            .iter()
            .any(|o| matches!(o, Op::Bind(s, _) if !s.starts_with(WS))),
        "{:#?}",
        p.ops
    );
    // The root (bwrap's tmpfs) is read-only too, last.
    assert_eq!(p.ops.last(), Some(&Op::RemountRo(pb("/"))));
}

#[test]
fn root_symlinks_are_made_again() {
    let p = default_plan(&Fake::new());
    assert!(has(&p, Op::Symlink(pb("usr/bin"), pb("/bin"))));
    assert!(has(&p, Op::Symlink(pb("usr/lib"), pb("/lib"))));
}

#[test]
fn files_at_the_root_such_as_a_swap_file_are_left_out() {
    let p = default_plan(&Fake::new());
    assert!(!p.ops.iter().any(|o| format!("{o:?}").contains("swapfile")));
}

#[test]
fn proc_is_the_sandboxs_own() {
    let p = default_plan(&Fake::new());
    assert!(has(&p, Op::Proc(pb("/proc"))));
    assert!(!has(&p, Op::RoBind(pb("/proc"), pb("/proc"))));
}

#[test]
fn dev_is_the_sandboxs_own() {
    let p = default_plan(&Fake::new());
    assert!(has(&p, Op::Dev(pb("/dev"))));
    assert!(!has(&p, Op::RoBind(pb("/dev"), pb("/dev"))));
}

#[test]
fn tmp_is_private() {
    let p = default_plan(&Fake::new());
    assert!(has(&p, Op::Tmpfs(pb("/tmp"))));
    assert!(!has(&p, Op::RoBind(pb("/tmp"), pb("/tmp"))));
}

#[test]
fn run_and_its_control_sockets_are_empty() {
    // /run/user/<uid> (D-Bus, systemd), /run/docker.sock, /run/dbus: all under it.
    let p = default_plan(&Fake::new());
    assert!(has(&p, Op::Tmpfs(pb("/run"))));
    assert!(!p
        .ops
        .iter()
        .any(|o| matches!(o, Op::RoBind(s, _) if s.starts_with("/run"))));
}

// ---- OpenClaw's mounts ----

#[test]
fn the_workspace_is_writable() {
    let p = default_plan(&Fake::new());
    assert!(has(&p, Op::Bind(pb(WS), pb(WS))));
    assert_eq!(p.workdir, pb(WS));
}

#[test]
fn the_mounts_follow_openclaws_workspace_access() {
    let s = |access| OpenClawSession {
        workspace_dir: pb("/st/sandboxes/x"),
        agent_workspace_dir: pb(WS),
        workspace_access: access,
        skill_mounts: vec![(pb("/st/sandboxes/x/skills"), pb("/w/skills"))],
        resource_mounts: vec![(pb("/st/att"), pb("/openclaw/attachments"))],
    };
    let none = s(WorkspaceAccess::None).mounts(Path::new("/w"));
    assert_eq!(
        none[0],
        Mount {
            host: pb("/st/sandboxes/x"),
            at: pb("/w"),
            writable: true
        }
    );
    assert!(!none
        .iter()
        .any(|m| m.at == Path::new(AGENT_WORKSPACE_MOUNT)));
    let ro = s(WorkspaceAccess::Ro).mounts(Path::new("/w"));
    assert!(!ro[0].writable);
    assert!(ro.contains(&Mount {
        host: pb(WS),
        at: pb("/agent"),
        writable: false
    }));
    let rw = s(WorkspaceAccess::Rw).mounts(Path::new("/w"));
    assert!(rw.contains(&Mount {
        host: pb(WS),
        at: pb("/agent"),
        writable: true
    }));
    for m in [&none, &ro, &rw] {
        assert!(m.contains(&Mount {
            host: pb("/st/sandboxes/x/skills"),
            at: pb("/w/skills"),
            writable: false
        }));
        assert!(m.contains(&Mount {
            host: pb("/st/att"),
            at: pb("/openclaw/attachments"),
            writable: false
        }));
    }
}

#[test]
fn a_read_only_workspace_is_bound_read_only() {
    let host = Fake::new();
    let mut m = ws_mount();
    m[0].writable = false;
    let p = plan_on(&host, &inputs_for(&host, &OpenClawFiles::default()), &m);
    assert!(has(&p, Op::RoBind(pb(WS), pb(WS))));
    assert!(!has(&p, Op::Bind(pb(WS), pb(WS))));
}

// ---- the protected locations ----

#[test]
fn the_maps_directory_is_empty_and_read_only() {
    let p = default_plan(&Fake::new());
    let t = pos(&p, &Op::Tmpfs(pb(MAP_DIR)));
    let r = pos(&p, &Op::RemountRo(pb(MAP_DIR)));
    assert!(t < r);
    // The file itself needs no mask of its own: it is inside.
    assert!(!has(&p, Op::NullFile(pb(MAP))));
}

#[test]
fn a_symlinked_maps_real_directory_is_masked_too() {
    let mut host = Fake::new();
    host.dir("/data/secrets");
    host.file("/data/secrets/tokens.json");
    host.link(
        "/home/u/.config/micelclaw/agent-tokens.json",
        "/data/secrets/tokens.json",
    );
    let p = default_plan(&host);
    assert!(has(&p, Op::Tmpfs(pb("/data/secrets"))), "{:#?}", masks(&p));
    assert!(has(&p, Op::Tmpfs(pb(MAP_DIR))));
}

#[test]
fn every_bind_mount_of_the_maps_directory_is_masked() {
    let mut host = Fake::new();
    host.dir("/mnt/cfg-copy");
    host.aliases.insert(pb(MAP_DIR), vec![pb("/mnt/cfg-copy")]);
    let p = default_plan(&host);
    assert!(has(&p, Op::Tmpfs(pb("/mnt/cfg-copy"))), "{:#?}", masks(&p));
}

#[test]
fn a_hard_linked_map_is_refused() {
    let mut host = Fake::new();
    host.nodes.insert(pb(MAP), Node::File { links: 2 });
    let inputs = inputs_for(&host, &OpenClawFiles::default());
    let r = plan(&host, &inputs, &ws_mount(), Path::new(WS), vec![]).unwrap_err();
    assert!(r.why.contains("2 hard links"), "{r}");
    assert!(r.fix.contains("-samefile"), "{r}");
}

#[test]
fn the_maps_directory_inside_the_workspace_is_masked_over_it() {
    let mut host = Fake::new();
    host.dir("/srv/ws/paco/secrets");
    host.file("/srv/ws/paco/secrets/m.json");
    let mut inputs = inputs_for(&host, &OpenClawFiles::default());
    inputs.protected = protected(
        &host,
        "/srv/ws/paco/secrets/m.json",
        &OpenClawFiles::default(),
    );
    let p = plan_on(&host, &inputs, &ws_mount());
    assert!(pos(&p, &Op::Bind(pb(WS), pb(WS))) < pos(&p, &Op::Tmpfs(pb("/srv/ws/paco/secrets"))));
}

#[test]
fn openclaws_config_file_can_not_be_opened() {
    // Config outside the state dir, so no hidden directory covers it.
    let mut host = Fake::new();
    host.file("/etc/openclaw/openclaw.json");
    let mut inputs = inputs_for(&host, &OpenClawFiles::default());
    // As protected::locations has it with OPENCLAW_CONFIG_PATH set.
    inputs.protected.push(Location {
        guard: Guard::Layer,
        what: "OpenClaw's config file",
        path: pb("/etc/openclaw/openclaw.json"),
        dir: false,
        secret: true,
    });
    let p = plan_on(&host, &inputs, &ws_mount());
    assert!(
        has(&p, Op::NullFile(pb("/etc/openclaw/openclaw.json"))),
        "{:#?}",
        masks(&p)
    );
    // A NullFile is /dev/null bound read-only (and nodev): no open succeeds.
    let mut argv = Vec::new();
    Op::NullFile(pb("/x")).args(&mut argv);
    assert_eq!(argv, ["--ro-bind", "/dev/null", "/x"].map(OsString::from));
}

#[test]
fn an_included_config_file_can_not_be_opened() {
    let mut host = Fake::new();
    host.file("/etc/openclaw/agents.json5");
    let files = OpenClawFiles {
        includes: vec![pb("/etc/openclaw/agents.json5")],
        ..Default::default()
    };
    let p = plan_on(&host, &inputs_for(&host, &files), &ws_mount());
    assert!(has(&p, Op::NullFile(pb("/etc/openclaw/agents.json5"))));
}

#[test]
fn the_gateway_env_directory_is_empty() {
    let mut host = Fake::new();
    host.file("/home/u/.config/openclaw/gateway.env");
    let p = default_plan(&host);
    assert!(has(&p, Op::Tmpfs(pb("/home/u/.config/openclaw"))));
}

#[test]
fn the_plugins_installed_files_in_the_workspace_are_empty_and_read_only() {
    let mut host = Fake::new();
    host.dir("/srv/ws/paco/claw-identity");
    host.dir("/opt/claw-identity");
    let files = OpenClawFiles {
        plugin_dirs: vec![pb("/srv/ws/paco/claw-identity"), pb("/opt/claw-identity")],
        ..Default::default()
    };
    let p = plan_on(&host, &inputs_for(&host, &files), &ws_mount());
    let d = pb("/srv/ws/paco/claw-identity");
    assert!(pos(&p, &Op::Bind(pb(WS), pb(WS))) < pos(&p, &Op::Tmpfs(d.clone())));
    assert!(has(&p, Op::RemountRo(d)));
    // Elsewhere the root is read-only already: no mask, no second bind.
    assert!(!p
        .ops
        .iter()
        .any(|o| format!("{o:?}").contains("/opt/claw-identity")));
}

#[test]
fn what_holds_a_protected_location_in_the_workspace_is_pinned_so_it_cant_be_renamed_away() {
    // `mv plugins x` would take a mask on plugins/claw-identity along and
    // free the path: the outermost directory below the workspace is the
    // mount point (empty, read-only), which no command can rename.
    let mut host = Fake::new();
    host.dir("/srv/ws/paco/plugins/claw-identity");
    let files = OpenClawFiles {
        plugin_dirs: vec![pb("/srv/ws/paco/plugins/claw-identity")],
        ..Default::default()
    };
    let p = plan_on(&host, &inputs_for(&host, &files), &ws_mount());
    let top = pb("/srv/ws/paco/plugins");
    assert!(pos(&p, &Op::Bind(pb(WS), pb(WS))) < pos(&p, &Op::Tmpfs(top.clone())));
    assert!(!masks(&p).contains(&pb("/srv/ws/paco/plugins/claw-identity")));
    // The same for a secret: the map's directory deep in the workspace.
    let mut host = Fake::new();
    host.file("/srv/ws/paco/a/secrets/m.json");
    let mut inputs = inputs_for(&host, &OpenClawFiles::default());
    inputs.protected = protected(
        &host,
        "/srv/ws/paco/a/secrets/m.json",
        &OpenClawFiles::default(),
    );
    let p = plan_on(&host, &inputs, &ws_mount());
    assert!(has(&p, Op::Tmpfs(pb("/srv/ws/paco/a"))), "{:#?}", masks(&p));
}

#[test]
fn nothing_is_bound_from_inside_a_writable_mount() {
    // A command could swap the source for a symlink while the next sandbox
    // is set up. OpenClaw's skill folder right in the workspace is left
    // out; its materialized skills under the pinned .openclaw are mounted.
    let mut host = Fake::new();
    host.dir("/srv/ws/paco/skills");
    host.dir("/srv/ws/paco/.openclaw/sandbox-skills/skills");
    let mut m = ws_mount();
    for sub in ["skills", ".openclaw/sandbox-skills/skills"] {
        let d = Path::new(WS).join(sub);
        m.push(Mount {
            host: d.clone(),
            at: d,
            writable: false,
        });
    }
    let files = OpenClawFiles {
        workspaces: vec![pb(WS)],
        ..Default::default()
    };
    let p = plan_on(&host, &inputs_for(&host, &files), &m);
    let binds_from_ws: Vec<_> = p
        .ops
        .iter()
        .filter_map(|o| match o {
            Op::Bind(s, _) | Op::RoBind(s, _) if s.starts_with(WS) && s != Path::new(WS) => {
                Some(s.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        binds_from_ws,
        vec![pb("/srv/ws/paco/.openclaw/sandbox-skills/skills")]
    );
    let pin = pb("/srv/ws/paco/.openclaw");
    let skills = pb("/srv/ws/paco/.openclaw/sandbox-skills/skills");
    assert!(pos(&p, &Op::Tmpfs(pin)) < pos(&p, &Op::RoBind(skills.clone(), skills)));
}

#[test]
fn a_plugin_folder_the_workspace_could_create_is_made_empty_and_read_only() {
    // <workspace>/.openclaw/extensions: OpenClaw loads plugins from it. Its
    // .openclaw is pinned whether it exists or not (bwrap makes it).
    for existing in [false, true] {
        let mut host = Fake::new();
        if existing {
            host.dir("/srv/ws/paco/.openclaw/extensions");
        }
        let files = OpenClawFiles {
            workspaces: vec![pb(WS)],
            ..Default::default()
        };
        let p = plan_on(&host, &inputs_for(&host, &files), &ws_mount());
        let top = pb("/srv/ws/paco/.openclaw");
        assert!(
            pos(&p, &Op::Tmpfs(top.clone())) < pos(&p, &Op::RemountRo(top)),
            "{existing}"
        );
        assert!(!masks(&p).contains(&pb("/srv/ws/paco/.openclaw/extensions")));
    }
}

#[test]
fn a_missing_secret_file_the_workspace_could_create_is_refused() {
    let host = Fake::new();
    let files = OpenClawFiles {
        includes: vec![pb("/srv/ws/paco/inc.json5")],
        ..Default::default()
    };
    let r = plan(
        &host,
        &inputs_for(&host, &files),
        &ws_mount(),
        Path::new(WS),
        vec![],
    )
    .unwrap_err();
    assert!(r.why.contains("does not exist"), "{r}");
}

// ---- what is hidden ----

#[test]
fn openclaws_state_directory_is_empty_with_the_workspace_inside_put_back() {
    let host = Fake::new();
    let ws = "/home/u/.openclaw/workspace";
    let m = vec![Mount {
        host: ws.into(),
        at: ws.into(),
        writable: true,
    }];
    let inputs = inputs_for(&host, &OpenClawFiles::default());
    let p = plan(&host, &inputs, &m, Path::new(ws), vec![]).unwrap();
    let t = pos(&p, &Op::Tmpfs(pb("/home/u/.openclaw")));
    assert!(t < pos(&p, &Op::Bind(pb(ws), pb(ws))));
    assert!(has(&p, Op::RemountRo(pb("/home/u/.openclaw"))));
    // The config and credentials inside are hidden with it: no mask of their own.
    let state = Path::new("/home/u/.openclaw");
    assert!(
        !masks(&p).iter().any(|m| m.starts_with(state) && m != state),
        "{:#?}",
        masks(&p)
    );
}

#[test]
fn other_openclaw_profiles_are_hidden() {
    let mut host = Fake::new();
    host.dir("/home/u/.openclaw-work");
    host.dir("/home/u/.clawdbot");
    let p = default_plan(&host);
    assert!(has(&p, Op::Tmpfs(pb("/home/u/.openclaw-work"))));
    assert!(has(&p, Op::Tmpfs(pb("/home/u/.clawdbot"))));
}

#[test]
fn the_homes_credential_stores_are_hidden() {
    let mut host = Fake::new();
    host.dir("/home/u/.ssh");
    host.file("/home/u/.netrc");
    let p = default_plan(&host);
    assert!(has(&p, Op::Tmpfs(pb("/home/u/.ssh"))));
    assert!(has(&p, Op::NullFile(pb("/home/u/.netrc"))));
    // Absent ones hide nothing and are left alone.
    assert!(!masks(&p).contains(&pb("/home/u/.aws")));
}

#[test]
fn the_operators_hidden_paths_are_hidden() {
    let mut host = Fake::new();
    host.dir("/srv/secrets");
    let mut inputs = inputs_for(&host, &OpenClawFiles::default());
    inputs.hidden = hidden(&host, &[], &[], &[pb("/srv/secrets")]);
    let p = plan_on(&host, &inputs, &ws_mount());
    assert!(has(&p, Op::Tmpfs(pb("/srv/secrets"))));
}

// ---- refusals ----

#[test]
fn a_writable_home_is_refused() {
    let host = Fake::new();
    let m = vec![Mount {
        host: "/home/u".into(),
        at: "/home/u".into(),
        writable: true,
    }];
    let r = plan(
        &host,
        &inputs_for(&host, &OpenClawFiles::default()),
        &m,
        Path::new("/home/u"),
        vec![],
    )
    .unwrap_err();
    assert!(r.why.contains("a home directory"), "{r}");
}

#[test]
fn a_writable_directory_above_the_gateways_path_is_refused() {
    let host = Fake::new();
    let m = vec![Mount {
        host: "/usr".into(),
        at: "/usr".into(),
        writable: true,
    }];
    let r = plan(
        &host,
        &inputs_for(&host, &OpenClawFiles::default()),
        &m,
        Path::new("/usr"),
        vec![],
    )
    .unwrap_err();
    assert!(r.why.contains("PATH"), "{r}");
}

#[test]
fn a_writable_root_is_refused() {
    let host = Fake::new();
    let m = vec![Mount {
        host: "/".into(),
        at: "/".into(),
        writable: true,
    }];
    let r = plan(
        &host,
        &inputs_for(&host, &OpenClawFiles::default()),
        &m,
        Path::new("/"),
        vec![],
    )
    .unwrap_err();
    assert!(r.why.contains("whole host"), "{r}");
}

#[test]
fn a_workdir_outside_the_mounts_is_refused() {
    let host = Fake::new();
    let inputs = inputs_for(&host, &OpenClawFiles::default());
    for w in ["/etc", "/home/u/.config/micelclaw", "relative"] {
        let r = plan(&host, &inputs, &ws_mount(), Path::new(w), vec![]).unwrap_err();
        assert!(r.why.contains("working directory"), "{w}: {r}");
    }
}

#[test]
fn a_missing_workspace_is_refused() {
    let host = Fake::new();
    let m = vec![Mount {
        host: "/srv/nope".into(),
        at: "/srv/nope".into(),
        writable: true,
    }];
    let r = plan(
        &host,
        &inputs_for(&host, &OpenClawFiles::default()),
        &m,
        Path::new("/srv/nope"),
        vec![],
    )
    .unwrap_err();
    assert!(r.why.contains("does not exist"), "{r}");
}

// ---- commands and env ----

#[test]
fn exec_runs_through_sh() {
    let host = Fake::new();
    let c = command(
        &host,
        &Run::Shell {
            command: "echo hi".into(),
            pty: false,
        },
        "/usr/bin",
    )
    .unwrap();
    assert_eq!(c, ["/bin/sh", "-c", "echo hi"].map(OsString::from));
}

#[test]
fn a_pty_comes_from_script_inside() {
    let mut host = Fake::new();
    host.programs.insert(pb("/usr/bin/script"));
    let c = command(
        &host,
        &Run::Shell {
            command: "top".into(),
            pty: true,
        },
        "/usr/local/bin:/usr/bin",
    )
    .unwrap();
    assert_eq!(
        c,
        ["/usr/bin/script", "-q", "-e", "-c", "top", "/dev/null"].map(OsString::from)
    );
    let r = command(
        &Fake::new(),
        &Run::Shell {
            command: "top".into(),
            pty: true,
        },
        "/usr/bin",
    )
    .unwrap_err();
    assert!(r.why.contains("script"), "{r}");
}

#[test]
fn a_shell_script_gets_its_args_after_its_name() {
    let c = command(
        &Fake::new(),
        &Run::Script {
            script: "cat \"$1\"".into(),
            args: vec!["a b".into()],
        },
        "",
    )
    .unwrap();
    assert_eq!(
        c,
        ["/bin/sh", "-c", "cat \"$1\"", "openclaw-sandbox-fs", "a b"].map(OsString::from)
    );
}

#[test]
fn the_gateways_credentials_and_token_values_stay_out_of_the_env() {
    let e = env(
        vec![
            ("PATH".into(), "/usr/bin".into()),
            ("OPENCLAW_GATEWAY_TOKEN".into(), "g".into()),
            ("openclaw_gateway_password".into(), "p".into()),
            ("MINE".into(), "has-a-token".into()),
        ],
        |v| v.contains("token"),
    );
    assert_eq!(e, vec![("PATH".to_owned(), "/usr/bin".to_owned())]);
}

#[test]
fn the_request_from_the_plugin_is_read_strictly() {
    let ok: Request = serde_json::from_value(serde_json::json!({
        "session": {"workspaceDir": WS, "agentWorkspaceDir": WS, "workspaceAccess": "rw", "workdir": WS},
        "run": {"command": "ls"}, "env": {"PATH": "/usr/bin"}
    }))
    .unwrap();
    assert_eq!(ok.session.workspace_access, WorkspaceAccess::Rw);
    assert!(serde_json::from_value::<Request>(serde_json::json!({
        "session": {"workspaceDir": WS, "agentWorkspaceDir": WS, "workdir": WS, "tmpfs": ["/x"]},
        "run": {"command": "ls"}
    }))
    .is_err());
}

// ---- the host facts ----

#[test]
fn mountinfo_names_every_bind_of_a_directory() {
    let text = "\
22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
30 22 8:1 /home/u/.config /mnt/cfg rw,relatime - ext4 /dev/sda1 rw
31 22 8:1 /home/u/.config/micelclaw/sub /mnt/sub rw - ext4 /dev/sda1 rw
32 22 0:5 / /proc rw - proc proc rw
33 22 8:1 /srv /srv\\040copy rw - ext4 /dev/sda1 rw";
    let m = parse_mountinfo(text);
    assert_eq!(m[4].mount_point, pb("/srv copy"));
    let a = aliases_in(&m, Path::new("/home/u/.config/micelclaw"));
    assert_eq!(a, vec![pb("/mnt/cfg/micelclaw"), pb("/mnt/sub")]);
    assert_eq!(aliases_in(&m, Path::new("/proc/1")), Vec::<PathBuf>::new());
}

#[test]
fn bwraps_failures_are_told_apart_with_their_fix() {
    let none = |_: &str| None;
    let r = classify("bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.", &none);
    assert!(r.why.contains("refuses user namespaces"), "{r}");
    let apparmor =
        |n: &str| (n == "kernel/apparmor_restrict_unprivileged_userns").then(|| "1".to_owned());
    let r = classify("bwrap: setting up uid map: Permission denied", &apparmor);
    assert!(
        r.why.contains("AppArmor") && r.fix.contains("apparmor_parser"),
        "{r}"
    );
    let clone = |n: &str| (n == "kernel/unprivileged_userns_clone").then(|| "0".to_owned());
    let r = classify("bwrap: No permissions to create new namespace", &clone);
    assert!(r.fix.contains("unprivileged_userns_clone=1"), "{r}");
    let r = classify(
        "bwrap: Creating new namespace failed: No space left on device",
        &none,
    );
    assert!(r.fix.contains("max_user_namespaces"), "{r}");
    let r = classify("bwrap: Unknown option --disable-userns", &none);
    assert!(r.fix.contains("0.8"), "{r}");
    let r = classify(
        "bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
        &none,
    );
    assert!(r.why.contains("Can't mount proc"), "{r}");
}

// ---- the probe, once per config ----

#[test]
fn a_probe_that_passed_is_not_run_again_for_the_same_key() {
    let passed = super::probe::Passed::new();
    let runs = std::cell::Cell::new(0);
    let run = |_: &Path| {
        runs.set(runs.get() + 1);
        Ok(())
    };
    for _ in 0..3 {
        let p = passed.probe("config a".into(), pb("/usr/bin/bwrap"), run);
        assert_eq!(p.result, Ok(()));
        assert_eq!(p.bwrap, Some(pb("/usr/bin/bwrap")));
    }
    assert_eq!(runs.get(), 1);
    passed.probe("config b".into(), pb("/usr/bin/bwrap"), run);
    passed.probe("config b".into(), pb("/usr/bin/bwrap"), run);
    assert_eq!(runs.get(), 2);
}

#[test]
fn a_probe_that_failed_is_not_kept() {
    let passed = super::probe::Passed::new();
    let runs = std::cell::Cell::new(0);
    let fail = |_: &Path| {
        runs.set(runs.get() + 1);
        Err(refuse("no user namespaces.", "allow them"))
    };
    for _ in 0..2 {
        let p = passed.probe("config a".into(), pb("/usr/bin/bwrap"), fail);
        assert_eq!(p.result.unwrap_err().why, "no user namespaces.");
    }
    assert_eq!(runs.get(), 2);
    // Fixed: it passes, and is kept from then on.
    let pass = |_: &Path| {
        runs.set(runs.get() + 1);
        Ok(())
    };
    passed.probe("config a".into(), pb("/usr/bin/bwrap"), pass);
    passed.probe("config a".into(), pb("/usr/bin/bwrap"), fail);
    assert_eq!(runs.get(), 3);
}

#[test]
fn the_probes_key_changes_with_the_options_the_config_the_maps_real_place_and_the_bwrap_file() {
    let dir = crate::testing::TempDir::new("probe-key");
    let bwrap = dir.join("bwrap");
    std::fs::write(&bwrap, "#!/bin/sh\n").unwrap();
    let host = Fake::new();
    let opts = SandboxOptions::default();
    let inputs = inputs_for(&host, &OpenClawFiles::default());
    let k = key(&host, &opts, &inputs, &bwrap);
    assert_eq!(key(&host, &opts, &inputs, &bwrap), k, "the same config");

    let network = SandboxOptions {
        network: Network::Host,
        ..Default::default()
    };
    assert_ne!(key(&host, &network, &inputs, &bwrap), k, "an option");

    let mut more = inputs.clone();
    more.hidden.push(pb("/srv/secret"));
    assert_ne!(key(&host, &opts, &more, &bwrap), k, "a hidden path");
    let mut moved = inputs_for(&host, &OpenClawFiles::default());
    moved.protected = protected(
        &host,
        "/srv/map/agent-tokens.json",
        &OpenClawFiles::default(),
    );
    assert_ne!(
        key(&host, &opts, &moved, &bwrap),
        k,
        "the map configured elsewhere"
    );

    // The same configured path, whose directory is now a symlink to another.
    let mut relinked = host.clone();
    relinked.nodes.remove(Path::new(MAP_DIR));
    relinked.dir("/srv/tokens");
    relinked.file("/srv/tokens/agent-tokens.json");
    relinked.link(MAP_DIR, "/srv/tokens");
    assert_ne!(
        key(&relinked, &opts, &inputs, &bwrap),
        k,
        "the map's real place"
    );

    // The same bwrap path, another file there (an upgrade).
    std::fs::write(&bwrap, "#!/bin/sh\n# 0.9\n").unwrap();
    assert_ne!(key(&host, &opts, &inputs, &bwrap), k, "the bwrap file");
}

#[test]
fn the_sandbox_options_are_checked() {
    let o = crate::options::Options::from_json(
        r#"{"sandbox": {"network": "host", "hide": ["/srv/x"]}}"#,
    )
    .unwrap();
    assert_eq!(o.sandbox.network, Network::Host);
    for bad in [
        r#"{"sandbox": {"network": "lan"}}"#,
        r#"{"sandbox": {"bwrap": "bwrap"}}"#,
        r#"{"sandbox": {"hide": ["rel"]}}"#,
        r#"{"sandbox": {"binds": []}}"#,
    ] {
        assert!(crate::options::Options::from_json(bad).is_err(), "{bad}");
    }
}

#[test]
fn other_agents_workspaces_are_hidden_and_pinned_inside_this_one() {
    // agents.defaults.workspace: the owner's workspace is D, another's D/<id>.
    let mut host = Fake::new();
    host.file("/srv/ws/paco/notes.md");
    host.file("/srv/ws/paco/pepito/diary.md");
    host.file("/srv/ws/atlas/x");
    let mut inputs = inputs_for(&host, &OpenClawFiles::default());
    inputs
        .hidden
        .extend([pb(WS), pb("/srv/ws/paco/pepito"), pb("/srv/ws/atlas")]);
    let p = plan_on(&host, &inputs, &ws_mount());
    // Its own shows, writable (no hide under it, no remount of it); the one
    // inside it is an empty mount point; the other one is hidden.
    assert!(has(&p, Op::Bind(pb(WS), pb(WS))));
    assert!(!has(&p, Op::Tmpfs(pb(WS))) && !has(&p, Op::RemountRo(pb(WS))));
    assert!(pos(&p, &Op::Bind(pb(WS), pb(WS))) < pos(&p, &Op::Tmpfs(pb("/srv/ws/paco/pepito"))));
    assert!(has(&p, Op::Tmpfs(pb("/srv/ws/atlas"))));
    // In pepito's sandbox, the owner's workspace around it is hidden first.
    let m = vec![Mount {
        host: "/srv/ws/paco/pepito".into(),
        at: "/srv/ws/paco/pepito".into(),
        writable: true,
    }];
    let p = plan(&host, &inputs, &m, Path::new("/srv/ws/paco/pepito"), vec![]).unwrap();
    let own = pb("/srv/ws/paco/pepito");
    assert!(pos(&p, &Op::Tmpfs(pb(WS))) < pos(&p, &Op::Bind(own.clone(), own)));
}

#[test]
fn the_terminal_marker_of_rule_sandbox_pty_becomes_a_pty_and_leaves_the_env() {
    let mut host = Fake::new();
    host.file("/usr/bin/bwrap");
    host.programs.insert(pb("/usr/bin/script"));
    let opts = SandboxOptions {
        bwrap: Some(pb("/usr/bin/bwrap")),
        ..Default::default()
    };
    let req: Request = serde_json::from_value(serde_json::json!({
        "session": {"workspaceDir": WS, "agentWorkspaceDir": WS, "workspaceAccess": "rw", "workdir": WS},
        "run": {"command": "top"},
        "env": {"PATH": "/usr/bin", PTY_MARKER: "1"}
    }))
    .unwrap();
    let inputs = inputs_for(&host, &OpenClawFiles::default());
    let s = spawn_for(&host, &opts, &inputs, &req, "/usr/bin", |_| false).unwrap();
    let dd = s.argv.iter().position(|a| a == "--").unwrap();
    assert_eq!(s.argv[dd + 1], "/usr/bin/script");
    assert!(!s.env.contains_key(PTY_MARKER));
    assert!(s.pty);
}

#[test]
fn docker_binds_are_refused() {
    let host = Fake::new();
    let req: Request = serde_json::from_value(serde_json::json!({
        "session": {"workspaceDir": WS, "agentWorkspaceDir": WS, "workdir": WS, "binds": ["/srv:/srv:ro"]},
        "run": {"command": "ls"}
    }))
    .unwrap();
    let r = spawn_for(
        &host,
        &SandboxOptions::default(),
        &inputs_for(&host, &OpenClawFiles::default()),
        &req,
        "/usr/bin",
        |_| false,
    )
    .unwrap_err();
    assert!(r.why.contains("sandbox.docker.binds"), "{r}");
}

#[test]
fn without_bwrap_the_reason_counts_the_gateways_path_and_never_prints_it() {
    let mut host = Fake::new();
    let opts = SandboxOptions::default();
    // A relative entry is never searched (OpenClaw's gateway PATH is absolute).
    let path = "/opt/tools-of-this-host/bin:/usr/local/bin:/usr/bin:relative";
    let r = super::probe::find_bwrap(&host, &opts, path).unwrap_err();
    assert_eq!(
        r.why,
        "bubblewrap (bwrap) is not installed here: no bwrap on the gateway's PATH (3 directories searched)."
    );
    assert!(r.fix.contains("apt-get install bubblewrap"), "{r}");
    for (path, count) in [
        ("/usr/bin", "1 directory searched"),
        ("", "it names no absolute directory"),
    ] {
        let r = super::probe::find_bwrap(&host, &opts, path).unwrap_err();
        assert!(r.why.ends_with(&format!("PATH ({count}).")), "{r}");
    }
    host.programs.insert(pb("/usr/bin/bwrap"));
    assert_eq!(
        super::probe::find_bwrap(&host, &opts, path).unwrap(),
        pb("/usr/bin/bwrap")
    );
}
