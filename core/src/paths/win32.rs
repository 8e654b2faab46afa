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

fn drive_of(s: &str) -> Option<char> {
    let mut c = s.chars();
    match (c.next(), c.next(), c.next()) {
        (Some(d), Some(':'), None) if d.is_ascii_alphabetic() => Some(d.to_ascii_uppercase()),
        _ => None,
    }
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
        match comps.as_slice() {
            [d, rest @ ..] if drive_of(d).is_some() => {
                return (Root::Drive(drive_of(d).unwrap_or('C')), rest.to_vec())
            }
            ["UNC:", server, share, rest @ ..] => {
                return (
                    Root::Unc((*server).to_owned(), (*share).to_owned()),
                    rest.to_vec(),
                )
            }
            _ => {}
        }
    }
    let mut chars = p.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some(a), Some(b), _) if is_sep(a) && is_sep(b) => {
            let comps = parts(&p[2..]);
            let (server, share, rest) = match comps.as_slice() {
                ["?" | ".", d, rest @ ..] if drive_of(d).is_some() => {
                    return (Root::Drive(drive_of(d).unwrap_or('C')), rest.to_vec())
                }
                ["?" | ".", unc, server, share, rest @ ..] if unc.eq_ignore_ascii_case("UNC") => {
                    (*server, *share, rest)
                }
                [server, share, rest @ ..] => (*server, *share, rest),
                [server] => (*server, "", &[][..]),
                [] => ("", "", &[][..]),
            };
            match share.strip_suffix('$').and_then(drive_of_letter) {
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

fn drive_of_letter(s: &str) -> Option<char> {
    let mut c = s.chars();
    match (c.next(), c.next()) {
        (Some(d), None) if d.is_ascii_alphabetic() => Some(d.to_ascii_uppercase()),
        _ => None,
    }
}

/// A guest path's root (`/C:` or `/UNC:/server/share`) and the rest.
fn guest_root(guest: &Path) -> (Option<String>, Vec<String>) {
    let s = guest.to_string_lossy();
    let comps: Vec<String> = s
        .split('/')
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect();
    match comps.first().map(String::as_str) {
        Some(d) if drive_of(d).is_some() => (Some(format!("/{d}")), comps[1..].to_vec()),
        Some("UNC:") if comps.len() >= 3 => (
            Some(format!("/UNC:/{}/{}", comps[1], comps[2])),
            comps[3..].to_vec(),
        ),
        _ => (None, comps),
    }
}

/// The current directory of drive `d` that the Windows shell hands down
/// (`=D:`), which `path.win32.resolve` reads, when it is on that drive.
fn other_drive_cwd(d: char) -> Option<(Option<String>, Vec<String>)> {
    let v = crate::sys::env_var(&format!("={d}:"))?;
    let v = v.to_str()?;
    match parse(v) {
        (Root::Drive(e), rest) if e == d => Some((
            Some(format!("/{d}:")),
            rest.iter().map(|c| (*c).to_owned()).collect(),
        )),
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
    let drive = |d: char| format!("/{d}:");
    let (root, mut comps): (String, Vec<String>) = match root {
        Root::Drive(d) => (drive(d), Vec::new()),
        Root::Unc(server, share) => (format!("/UNC:/{server}/{share}"), Vec::new()),
        Root::Rooted => (base_root.unwrap_or_default(), Vec::new()),
        Root::DriveRelative(d) if base_root.as_deref() == Some(drive(d).as_str()) => {
            (drive(d), base_rest)
        }
        Root::DriveRelative(d) => other_drive_cwd(d)
            .map(|(r, rest)| (r.unwrap_or_else(|| drive(d)), rest))
            .unwrap_or_else(|| (drive(d), Vec::new())),
        Root::Relative => (base_root.unwrap_or_default(), base_rest),
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
    let mut out = if root.is_empty() {
        String::from("/")
    } else {
        root
    };
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
    let (root, rest) = guest_root(guest);
    let host_root = match root.as_deref() {
        Some(r) if r.starts_with("/UNC:/") => {
            format!("\\\\{}", r["/UNC:/".len()..].replace('/', "\\"))
        }
        Some(r) => r[1..].to_owned(),
        None => return guest.to_string_lossy().into_owned(),
    };
    if rest.is_empty() {
        return if host_root.ends_with(':') {
            format!("{host_root}\\")
        } else {
            host_root
        };
    }
    format!("{host_root}\\{}", rest.join("\\"))
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
