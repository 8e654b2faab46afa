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

/// Servers that are this machine, so `\\localhost\C$\a` is `C:\a`: a
/// name of it (`localhost`, the `COMPUTERNAME` Windows sets, with or
/// without a trailing dot), `.`, and every address of it as Windows'
/// resolver reads one: all of 127.0.0.0/8 in every `inet_aton` spelling
/// (`127.1`, `0x7f.1`, `0177.0.0.1`, `2130706433`), the unspecified
/// `0.0.0.0`, and `::1`, `::`, `::ffff:127.x.x.x` in any IPv6 spelling,
/// bracketed or as a `*.ipv6-literal.net` name.
fn loopback(server: &str) -> bool {
    let name = server.trim_end_matches('.');
    if server == "." || name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let this_host = |var: &str| {
        crate::sys::env_var(var)
            .and_then(|v| v.into_string().ok())
            .is_some_and(|h| !h.is_empty() && name.eq_ignore_ascii_case(h.trim_end_matches('.')))
    };
    if this_host("COMPUTERNAME") {
        return true;
    }
    if let Some(v4) = inet_aton(name) {
        return v4 >> 24 == 127 || v4 == 0;
    }
    let v6 = match name.len().checked_sub(".ipv6-literal.net".len()) {
        Some(i)
            if name.is_char_boundary(i) && name[i..].eq_ignore_ascii_case(".ipv6-literal.net") =>
        {
            // `-` stands for `:`, `s` for the zone's `%`.
            name[..i]
                .replace('-', ":")
                .split(['s', 'S'])
                .next()
                .unwrap_or("")
                .to_owned()
        }
        _ => name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split('%')
            .next()
            .unwrap_or("")
            .to_owned(),
    };
    match v6.parse::<std::net::Ipv6Addr>() {
        Ok(a) => {
            a.is_loopback()
                || a.is_unspecified()
                || a.to_ipv4_mapped().is_some_and(|v| v.is_loopback())
        }
        Err(_) => false,
    }
}

/// An IPv4 address as `inet_aton` (and Windows' `inet_addr`) reads it: one
/// to four parts, each decimal, octal (`0…`) or hex (`0x…`), the last
/// filling the bytes left.
fn inet_aton(s: &str) -> Option<u32> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let num = |p: &str| -> Option<u64> {
        let (digits, radix) = match p.get(..2) {
            Some(x) if x.eq_ignore_ascii_case("0x") => (&p[2..], 16),
            _ if p.len() > 1 && p.starts_with('0') => (&p[1..], 8),
            _ => (p, 10),
        };
        if digits.is_empty() && radix != 16 {
            return None;
        }
        if digits.is_empty() {
            return Some(0);
        }
        if digits.len() > 11 || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        u64::from_str_radix(digits, radix).ok()
    };
    let nums = parts.iter().map(|p| num(p)).collect::<Option<Vec<u64>>>()?;
    let (last, head) = nums.split_last()?;
    if head.iter().any(|h| *h > 255) || *last >= 1u64 << (32 - 8 * head.len()) {
        return None;
    }
    let v = head
        .iter()
        .enumerate()
        .fold(*last, |v, (i, h)| v | h << (24 - 8 * i));
    u32::try_from(v).ok()
}

/// The names, after `\\?\` or `\\.\`, that lead through the NT object
/// namespace back to the DOS device names a drive letter is (`\\?\C:` is
/// `\??\C:`): `GLOBALROOT` (the namespace's root), `??`, `DosDevices`
/// (a link to `\??`), `GLOBAL??` and `Global` (links to it).
fn namespace_hop(c: &str) -> bool {
    ["GLOBALROOT", "??", "DosDevices", "GLOBAL??", "Global"]
        .iter()
        .any(|h| c.eq_ignore_ascii_case(h))
}

/// After a device prefix (`\\?\`, `\\.\`): the drive or share it names.
/// `\Device\Mup` and `\Device\LanmanRedirector` are the redirector of
/// UNC paths. Anything else (a volume, a disk, a shadow copy) is left as
/// the share `\\?\<name>`, which [`unplaced`] tells apart.
fn device_root<'p>(comps: &[&'p str]) -> (Root, Vec<&'p str>) {
    let mut rest = comps;
    while let [hop, more @ ..] = rest {
        if !namespace_hop(hop) {
            break;
        }
        rest = more;
    }
    if let [device, redirector, more @ ..] = rest {
        let redirects = ["Mup", "LanmanRedirector"]
            .iter()
            .any(|r| redirector.eq_ignore_ascii_case(r));
        if device.eq_ignore_ascii_case("Device") && redirects {
            return unc(more);
        }
    }
    if let Some((d, more)) = rest
        .split_first()
        .and_then(|(d, m)| Some((drive_of(d)?, m)))
    {
        return (Root::Drive(d), more.to_vec());
    }
    match rest {
        [u, more @ ..] if u.eq_ignore_ascii_case("UNC") => unc(more),
        [name, more @ ..] => (Root::Unc("?".to_owned(), (*name).to_owned()), more.to_vec()),
        [] => (Root::Unc("?".to_owned(), String::new()), Vec::new()),
    }
}

/// `server\share\rest`: a share, or the drive a loopback admin share is.
fn unc<'p>(comps: &[&'p str]) -> (Root, Vec<&'p str>) {
    let (server, share, rest) = match comps {
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

/// Whether a guest path is in the device namespace but on no drive or
/// share the layer can place (`\\?\Volume{…}\`, `\\?\GLOBALROOT\Device\
/// HarddiskVolume3\`): which file it is, only Windows knows.
pub fn unplaced(guest: &Path) -> bool {
    let s = guest.to_string_lossy();
    s.starts_with("/UNC:/?/") || s == "/UNC:/?" || s.starts_with("/UNC:/./")
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
            match comps.as_slice() {
                ["?" | ".", rest @ ..] => device_root(rest),
                _ => unc(&comps),
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
            // The NT object namespace back to the drive, every spelling.
            (r"\\?\GLOBALROOT\??\C:\Users\me\x", "/C:/Users/me/x"),
            (r"\\?\GLOBALROOT\DosDevices\C:\Users\me\x", "/C:/Users/me/x"),
            (r"\\?\globalroot\GLOBAL??\c:\Users\me\x", "/C:/Users/me/x"),
            (r"\\.\GLOBAL??\C:\Users\me\x", "/C:/Users/me/x"),
            (r"\\.\Global\C:\Users\me\x", "/C:/Users/me/x"),
            (r"\\?\GLOBALROOT\??\Global\C:\Users\me\x", "/C:/Users/me/x"),
            (r"//./GLOBALROOT/DosDevices/C:/Users/me/x", "/C:/Users/me/x"),
            (
                r"\\?\GLOBALROOT\??\UNC\localhost\C$\Users\me\x",
                "/C:/Users/me/x",
            ),
            (
                r"\\?\GLOBALROOT\Device\Mup\127.0.0.1\C$\Users\me\x",
                "/C:/Users/me/x",
            ),
            (
                r"\\?\GLOBALROOT\Device\LanmanRedirector\srv\sh\a",
                "/UNC:/srv/sh/a",
            ),
            // Every loopback spelling of a host.
            (r"\\localhost.\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\LOCALHOST\c$\Users\me\x", "/C:/Users/me/x"),
            (r"\\127.1\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\127.0.1\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\127.255.255.254\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\127.0.0.1.\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\2130706433\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\0x7f000001\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\0x7f.1\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\0177.0.0.1\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\017700000001\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\0.0.0.0\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\[::1]\C$\Users\me\x", "/C:/Users/me/x"),
            (r"\\0--1.ipv6-literal.net\C$\Users\me\x", "/C:/Users/me/x"),
            (
                r"\\0-0-0-0-0-0-0-1.IPV6-LITERAL.NET\C$\Users\me\x",
                "/C:/Users/me/x",
            ),
            (
                r"\\--ffff-7f00-1.ipv6-literal.net\C$\Users\me\x",
                "/C:/Users/me/x",
            ),
            (r"\\0--1s4.ipv6-literal.net\C$\Users\me\x", "/C:/Users/me/x"),
            // Not this machine.
            (r"\\128.0.0.1\C$\x", "/UNC:/128.0.0.1/C$/x"),
            (r"\\127.256\C$\x", "/C:/x"), // inet_aton: 127.0.1.0
            (r"\\127.0.0.1.5\C$\x", "/UNC:/127.0.0.1.5/C$/x"),
            (r"\\127.0.0.0x1g\C$\x", "/UNC:/127.0.0.0x1g/C$/x"),
            (r"\\localhostx\C$\x", "/UNC:/localhostx/C$/x"),
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
    fn device_paths_on_no_drive_or_share_are_told_apart() {
        let base = Path::new("/C:/Users/me/ws");
        for p in [
            r"\\?\Volume{1234}\Users\me\x",
            r"\\?\GLOBALROOT\Device\HarddiskVolume3\Users\me\x",
            r"\\.\GLOBALROOT\Device\HarddiskVolumeShadowCopy1\x",
            r"\\?\GLOBALROOT\??\Volume{1234}\x",
            r"\\.\PhysicalDrive0",
        ] {
            assert!(unplaced(&resolve(base, p)), "{p}");
            assert!(is_absolute(p), "{p}");
        }
        for p in [r"\\?\C:\x", r"\\srv\sh\x", r"\\?\GLOBALROOT\??\C:\x", "x"] {
            assert!(!unplaced(&resolve(base, p)), "{p}");
        }
    }

    #[test]
    fn this_machines_name_is_a_loopback_host() {
        // COMPUTERNAME is set by Windows; a test sets it for this process only
        // through the name it reads, so use one no other test uses.
        std::env::set_var("COMPUTERNAME", "CI-GUARD-HOST");
        let base = Path::new("/C:/Users/me/ws");
        assert_eq!(resolve(base, r"\\ci-guard-host\C$\x"), Path::new("/C:/x"));
        assert_eq!(resolve(base, r"\\CI-GUARD-HOST.\d$\x"), Path::new("/D:/x"));
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
