//! Windows paths, for the WebAssembly build on a native Windows gateway.
//!
//! WASI names files by POSIX paths, so there each drive is preopened under
//! its own name (`lib/wasi.cjs`): `C:\Users\me` is `/C:/Users/me` to the
//! Rust code, the *guest* path. A path on a share, `\\server\share\a`, is
//! `/UNC:/server/share/a` (a colon: no Windows name can be either); WASI
//! can't open it, so the host's `stat` gives its
//! identity (`sys::real_path`).
//!
//! OpenClaw resolves a tool's path with Node's `path.resolve`, which on
//! Windows is `path.win32.resolve`: both separators, drive-absolute
//! (`C:\a`), rooted (`\a`: the base's drive), drive-relative (`C:a`), UNC
//! (`\\server\share\a`) and device (`\\?\C:\a`, `\\.\C:\a`) paths.
//! [`resolve`] follows it. What it does not see, Windows' own reading when
//! the file is opened, [`key`] folds away for comparisons: case, the
//! trailing dots and spaces Win32 strips, an NTFS stream (`name::$DATA` is
//! the file itself).

use std::path::{Path, PathBuf};

fn is_sep(c: char) -> bool {
    c == '\\' || c == '/'
}

/// Where a Windows path starts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Root {
    /// `C:\…`: the drive's root.
    Drive(char),
    /// `\\server\share\…` (and `\\?\UNC\server\share\…`, and the device
    /// namespace, `\\?\Volume{…}\…`, as server `?`).
    Unc(String, String),
    /// `\…`: the root of the base's drive.
    Rooted,
    /// `C:…`: relative to drive `C:`'s current directory.
    DriveRelative(char),
    /// `a\b`: relative to the base.
    Relative,
}

/// `C` of `C` or `c`.
fn drive_letter(s: &str) -> Option<char> {
    let mut c = s.chars();
    match (c.next(), c.next()) {
        (Some(d), None) if d.is_ascii_alphabetic() => Some(d.to_ascii_uppercase()),
        _ => None,
    }
}

/// `C` of `C:` or `c:`.
fn drive_of(s: &str) -> Option<char> {
    s.strip_suffix(':').and_then(drive_letter)
}

/// Servers that are this machine: `\\localhost\C$\a` is `C:\a`.
fn loopback(server: &str) -> bool {
    [
        "localhost",
        "127.0.0.1",
        "::1",
        "0--1.ipv6-literal.net",
        ".",
    ]
    .iter()
    .any(|l| server.eq_ignore_ascii_case(l))
}

/// The names of `s`, between separators of either kind.
fn parts(s: &str) -> Vec<&str> {
    s.split(is_sep).filter(|c| !c.is_empty()).collect()
}

/// A Windows path's root and the components after it. A guest path
/// (`/C:/a`, `/UNC:/srv/sh/a`, as `~` expands onto a guest home) is taken
/// as the path it stands for: Windows can open no `\C:\…` or `\UNC:\…`,
/// since a colon in a name starts a stream.
fn parse(p: &str) -> (Root, Vec<&str>) {
    if let Some(rest) = p.strip_prefix('/') {
        let comps = parts(rest);
        if let Some(d) = comps.first().and_then(|c| drive_of(c)) {
            return (Root::Drive(d), comps[1..].to_vec());
        }
        if let ["UNC:", server, share, rest @ ..] = comps.as_slice() {
            let root = Root::Unc((*server).to_owned(), (*share).to_owned());
            return (root, rest.to_vec());
        }
    }
    let mut chars = p.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some(a), Some(b), _) if is_sep(a) && is_sep(b) => {
            let comps = parts(&p[2..]);
            if let ["?" | ".", d, rest @ ..] = comps.as_slice() {
                if let Some(d) = drive_of(d) {
                    return (Root::Drive(d), rest.to_vec());
                }
            }
            let (server, share, rest) = match comps.as_slice() {
                ["?" | ".", unc, server, share, rest @ ..] if unc.eq_ignore_ascii_case("UNC") => {
                    (*server, *share, rest)
                }
                [server, share, rest @ ..] => (*server, *share, rest),
                [server] => (*server, "", &[][..]),
                [] => ("", "", &[][..]),
            };
            match share.strip_suffix('$').and_then(drive_letter) {
                Some(d) if loopback(server) => (Root::Drive(d), rest.to_vec()),
                _ => (
                    Root::Unc(server.to_owned(), share.to_owned()),
                    rest.to_vec(),
                ),
            }
        }
        (Some(d), Some(':'), third) if d.is_ascii_alphabetic() => {
            let d = d.to_ascii_uppercase();
            match third {
                Some(c) if is_sep(c) => (Root::Drive(d), parts(&p[3..])),
                _ => (Root::DriveRelative(d), parts(&p[2..])),
            }
        }
        (Some(a), _, _) if is_sep(a) => (Root::Rooted, parts(&p[1..])),
        _ => (Root::Relative, parts(p)),
    }
}

/// A root's guest name: `/C:`, `/UNC:/server/share`; none for the others.
fn guest_name(root: &Root) -> Option<String> {
    match root {
        Root::Drive(d) => Some(format!("/{d}:")),
        Root::Unc(server, share) => Some(format!("/UNC:/{server}/{share}")),
        _ => None,
    }
}

/// A guest path's root (`/C:` or `/UNC:/server/share`) and the rest.
fn guest_root(guest: &Path) -> (Option<String>, Vec<String>) {
    let s = guest.to_string_lossy();
    let (root, rest) = parse(&s);
    (
        guest_name(&root),
        rest.into_iter().map(str::to_owned).collect(),
    )
}

/// The current directory of drive `d` that the Windows shell hands down
/// (`=D:`), which `path.win32.resolve` reads, when it is on that drive: the
/// names below the drive's root.
fn other_drive_cwd(d: char) -> Option<Vec<String>> {
    let v = crate::sys::env_var(&format!("={d}:"))?;
    match parse(v.to_str()?) {
        (Root::Drive(e), rest) if e == d => Some(rest.into_iter().map(str::to_owned).collect()),
        _ => None,
    }
}

/// Whether `p` names the same place whatever the base: a drive-absolute,
/// UNC or device path. `\a` and `C:a` are not: they need the base's drive.
pub fn is_absolute(p: &str) -> bool {
    matches!(parse(p).0, Root::Drive(_) | Root::Unc(..))
}

/// Node's `path.win32.resolve(base, p)`, as a guest path: `base` is a guest
/// path, `p` a Windows path (either separator). `.` and `..` are taken out
/// lexically, never above the root. A drive-relative path on a drive other
/// than the base's is taken from that drive's root (Node reads the `=C:`
/// variable the Windows shell hands down, and so does this).
pub fn resolve(base: &Path, p: &str) -> PathBuf {
    let (root, rest) = parse(p);
    let (base_root, base_rest) = guest_root(base);
    let (root, mut comps): (Option<String>, Vec<String>) = match root {
        Root::Drive(_) | Root::Unc(..) => (guest_name(&root), Vec::new()),
        Root::Rooted => (base_root, Vec::new()),
        Root::DriveRelative(d) => {
            let drive = guest_name(&Root::Drive(d));
            let cwd = if base_root == drive {
                base_rest
            } else {
                other_drive_cwd(d).unwrap_or_default()
            };
            (drive, cwd)
        }
        Root::Relative => (base_root, base_rest),
    };
    for c in rest {
        match c {
            "." => {}
            ".." => {
                comps.pop();
            }
            c => comps.push(c.to_owned()),
        }
    }
    let mut out = root.unwrap_or_else(|| String::from("/"));
    for c in comps {
        if !out.ends_with('/') {
            out.push('/');
        }
        out.push_str(&c);
    }
    PathBuf::from(out)
}

/// The Windows path a guest path stands for (`/C:/a` is `C:\a`); a guest
/// path on no drive or share (a POSIX path) as it is.
pub fn to_host(guest: &Path) -> String {
    let s = guest.to_string_lossy();
    let (root, rest) = parse(&s);
    let root = match root {
        Root::Drive(d) if rest.is_empty() => return format!("{d}:\\"),
        Root::Drive(d) => format!("{d}:"),
        Root::Unc(server, share) => format!("\\\\{server}\\{share}"),
        _ => return s.into_owned(),
    };
    std::iter::once(root.as_str())
        .chain(rest)
        .collect::<Vec<_>>()
        .join("\\")
}

/// The form two guest paths are compared in: what Windows reads as the
/// same name is the same key. Case is folded, and each name loses an NTFS
/// stream (`:…`) and the trailing dots and spaces Win32 strips.
pub fn key(guest: &Path) -> PathBuf {
    let s = guest.to_string_lossy();
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        // The drive (`C:`) keeps its colon; in a name it starts a stream.
        let c = if i == 1 && (drive_of(c).is_some() || c == "UNC:") {
            c
        } else {
            c.split(':').next().unwrap_or(c)
        };
        let c = if c == "." || c == ".." {
            c
        } else {
            c.trim_end_matches(['.', ' '])
        };
        out.extend(c.chars().flat_map(char::to_lowercase));
    }
    PathBuf::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each expected value is what Node 24's path.win32.resolve gives, with
    // the drive or share written as its guest root; a loopback admin share
    // (`\\localhost\C$`) is the drive it shares, as Windows opens it.
    #[test]
    fn resolve_is_path_win32_resolve() {
        let base = Path::new("/C:/Users/me/ws");
        for (p, guest) in [
            (r"C:\Users\me\.config\x.json", "/C:/Users/me/.config/x.json"),
            ("c:/users/me/x", "/C:/users/me/x"),
            (r"..\..\.config\x", "/C:/Users/.config/x"),
            (r"..\.config/x", "/C:/Users/me/.config/x"),
            (r"\Users\me\x", "/C:/Users/me/x"),
            ("/Users/me/x", "/C:/Users/me/x"),
            ("C:x", "/C:/Users/me/ws/x"),
            ("c:..\\x", "/C:/Users/me/x"),
            ("D:x", "/D:/x"),
            (r"D:\a\..\..\b", "/D:/b"),
            (r"\\?\C:\Users\me\x", "/C:/Users/me/x"),
            (r"\\.\c:\Users\me\x", "/C:/Users/me/x"),
            (r"//?/C:/Users/me/x", "/C:/Users/me/x"),
            (r"\\localhost\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\127.0.0.1\c$\Users\me\x", "/C:/Users/me/x"),
            (r"\\?\UNC\localhost\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\server\share\a\..\..\b", "/UNC:/server/share/b"),
            (r"\\?\UNC\server\share\a", "/UNC:/server/share/a"),
            (
                r"\\?\Volume{1234}\Users\me",
                "/UNC:/?/Volume{1234}/Users/me",
            ),
            ("", "/C:/Users/me/ws"),
            (".", "/C:/Users/me/ws"),
            (r"..\..\..\..\..", "/C:"),
        ] {
            assert_eq!(resolve(base, p), Path::new(guest), "{p}");
        }
        // On a share, a rooted path is the share's root.
        assert_eq!(
            resolve(Path::new("/UNC:/srv/sh/ws"), r"\x"),
            Path::new("/UNC:/srv/sh/x")
        );
    }

    #[test]
    fn absolute_means_the_same_place_from_every_base() {
        for p in [
            r"C:\a",
            "c:/a",
            r"\\srv\sh\a",
            r"\\?\C:\a",
            "/C:/a",
            "/UNC:/srv/sh/a",
        ] {
            assert!(is_absolute(p), "{p}");
        }
        for p in [r"\a", "/a", "C:a", "a", r"..\a", ""] {
            assert!(!is_absolute(p), "{p}");
        }
    }

    #[test]
    fn a_guest_path_goes_back_to_the_windows_path() {
        for (guest, host) in [
            ("/C:/Users/me/x.json", r"C:\Users\me\x.json"),
            ("/C:", r"C:\"),
            ("/UNC:/srv/sh/a", r"\\srv\sh\a"),
            ("/UNC:/srv/sh", r"\\srv\sh"),
            ("/tmp/a", "/tmp/a"),
        ] {
            assert_eq!(to_host(Path::new(guest)), host, "{guest}");
            if guest.starts_with("/C:") || guest.starts_with("/UNC:") {
                assert_eq!(resolve(Path::new("/C:"), host), Path::new(guest));
            }
        }
    }

    #[test]
    fn key_folds_what_windows_reads_as_the_same_name() {
        let map = key(Path::new(
            "/C:/Users/me/.config/micelclaw/agent-tokens.json",
        ));
        for same in [
            "/C:/USERS/Me/.CONFIG/micelclaw/Agent-Tokens.JSON",
            "/c:/Users/me/.config/micelclaw/agent-tokens.json.",
            "/C:/Users/me/.config/micelclaw. /agent-tokens.json ",
            "/C:/Users/me/.config/micelclaw/agent-tokens.json::$DATA",
            "/C:/Users/me/.config/micelclaw/agent-tokens.json:x",
        ] {
            assert_eq!(key(Path::new(same)), map, "{same}");
        }
        assert_ne!(
            key(Path::new(
                "/D:/Users/me/.config/micelclaw/agent-tokens.json"
            )),
            map
        );
        assert_ne!(
            key(Path::new("/C:/Users/me/.config/micelclaw/agent-tokens.jso")),
            map
        );
    }
}
