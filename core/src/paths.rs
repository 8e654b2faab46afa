//! OpenClaw's own path resolution, reproduced from its source (the
//! `openclaw` 2026.9.6 package, `dist/`), for the rules that must know what
//! a tool will really open. Each function names the OpenClaw function it
//! follows. Where OpenClaw's tools disagree (it has three `~` expansions),
//! the rules take every variant, so a path refused under one reading is
//! refused under all.
//!
//! Also the one home of what every module needs to know about paths: the
//! home directory, `~` expansion, a path's parent.

use std::borrow::Cow;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::sys;

pub mod win32;

/// Whether the host's paths are Windows paths: the WebAssembly build on a
/// native Windows gateway (`paths::win32`). Never on the native builds.
pub fn windows() -> bool {
    sys::is_windows() || test_windows::on()
}

/// Tests of Windows paths on a POSIX host turn them on for their thread.
#[cfg(test)]
pub mod test_windows {
    use std::cell::Cell;
    thread_local!(static ON: Cell<bool> = const { Cell::new(false) });
    pub fn on() -> bool {
        ON.with(Cell::get)
    }
    pub fn set(on: bool) {
        ON.with(|c| c.set(on));
    }
}
#[cfg(not(test))]
mod test_windows {
    pub fn on() -> bool {
        false
    }
}

/// A path as the host names it (an option, the environment, OpenClaw's
/// config or session store, Node), as this crate names it: on Windows the
/// guest path (`C:\a` is `/C:/a`, relative to the process's cwd).
pub fn host_path(s: &str) -> PathBuf {
    if windows() {
        win32::resolve(&process_cwd(), s)
    } else {
        PathBuf::from(s)
    }
}

/// A path as the host names it, for messages: on Windows the Windows path
/// again (`/C:/a` is `C:\a`).
pub fn shown(p: &Path) -> impl std::fmt::Display + '_ {
    struct Shown<'p>(&'p Path);
    impl std::fmt::Display for Shown<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            if windows() {
                f.write_str(&win32::to_host(self.0))
            } else {
                self.0.display().fmt(f)
            }
        }
    }
    Shown(p)
}

/// The form paths are compared in: on Windows, what it opens as the same
/// name is the same (`win32::key`); elsewhere the path itself.
pub fn key(p: &Path) -> Cow<'_, Path> {
    if windows() {
        Cow::Owned(win32::key(p))
    } else {
        Cow::Borrowed(p)
    }
}

/// Whether `p` means the same place whatever directory a tool runs in.
pub fn is_absolute(p: &str) -> bool {
    if windows() {
        win32::is_absolute(p)
    } else {
        Path::new(p).is_absolute()
    }
}

/// The process's working directory (`/` if it has none).
pub fn process_cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

/// JavaScript's `String.prototype.trim`: Unicode white space and line
/// terminators (U+FEFF included), which OpenClaw's parsers use.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// What JS's `trim` takes off: `WhiteSpace` and `LineTerminator` of ECMA-262.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}'
            | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// Node's `os.homedir()`: `HOME`, else the password database's entry of the
/// effective user. OpenClaw's apply_patch uses it directly
/// (`normalizeSandboxInputPath`, `sandbox-paths-*.mjs`).
pub fn node_homedir() -> Option<PathBuf> {
    sys::home().map(|h| host_path(&h.to_string_lossy()))
}

/// Node's `path.resolve(base, p)` on POSIX: `p` onto `base` unless it is
/// absolute, then `.`, `..` and repeated separators taken out lexically.
/// On Windows, `path.win32.resolve` (`win32::resolve`).
pub fn resolve(base: &Path, p: &Path) -> PathBuf {
    if windows() {
        return win32::resolve(base, &p.to_string_lossy());
    }
    let joined = base.join(p);
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

/// The directory holding `path` (for `/`, `/` itself; for a bare name, `.`).
pub fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if p.as_os_str().is_empty() => PathBuf::from("."),
        Some(p) => p.to_path_buf(),
        None => path.to_path_buf(),
    }
}

/// Whether `p` starts `file:` in any case (the media tools'
/// `classifyMediaReferenceSource`; the file tools need exactly `file://`).
pub fn is_file_url(p: &str) -> bool {
    p.len() >= 5 && p[..5].eq_ignore_ascii_case("file:")
}

/// Node's `url.fileURLToPath` on POSIX, for hosts without Node (the fuzzer,
/// `cargo test`): the addon asks Node itself. `None` where Node throws (a
/// host other than `localhost`, an encoded `/`, not a file URL).
pub fn file_url_to_path(url: &str) -> Option<PathBuf> {
    // The URL parser drops tabs and newlines anywhere and C0 controls and
    // spaces at the ends; a special scheme takes `\` for `/`.
    let s: String = url
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .map(|c| if c == '\\' { '/' } else { c })
        .collect();
    if !is_file_url(&s) {
        return None;
    }
    let mut rest = &s[5..];
    rest = rest.split(['?', '#']).next().unwrap_or("");
    if let Some(after) = rest.strip_prefix("//") {
        let (host, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, "/"),
        };
        if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
            return None;
        }
        rest = path;
    }
    let raw = if rest.starts_with('/') {
        rest.to_owned()
    } else {
        format!("/{rest}")
    };
    let lower = raw.to_ascii_lowercase();
    if lower.contains("%2f") {
        return None;
    }
    // Dot segments, also percent-encoded ones, go as the URL parser takes them.
    let mut segments: Vec<OsString> = Vec::new();
    for seg in raw.split('/').skip(1) {
        let decoded = percent_decode(seg);
        match decoded.as_slice() {
            b"." => {}
            b".." => {
                segments.pop();
            }
            _ => segments.push(sys::os_string(decoded)),
        }
    }
    let mut out = PathBuf::from("/");
    for s in segments {
        out.push(s);
    }
    Some(out)
}

fn percent_decode(s: &str) -> Vec<u8> {
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_trim_takes_what_javascript_takes() {
        assert_eq!(
            js_trim("\u{feff} *** Delete File: x \u{3000}"),
            "*** Delete File: x"
        );
        assert_eq!(
            js_trim("\u{200b}x"),
            "\u{200b}x",
            "ZWSP is not white space in JS"
        );
    }

    #[test]
    fn resolve_is_nodes_path_resolve() {
        let b = Path::new("/w/ws");
        assert_eq!(resolve(b, Path::new("../x/./y//z")), Path::new("/w/x/y/z"));
        assert_eq!(resolve(b, Path::new("/a/../../b")), Path::new("/b"));
        assert_eq!(resolve(b, Path::new("")), b);
    }

    #[test]
    fn file_urls_read_as_node_reads_them() {
        for (url, path) in [
            ("file:///a/b", Some("/a/b")),
            ("file://localhost/a/b", Some("/a/b")),
            ("FILE://LocalHost/a/b", Some("/a/b")),
            ("file:///a/b?x=1#frag", Some("/a/b")),
            ("file:///a\\b", Some("/a/b")),
            ("file:///a/%62", Some("/a/b")),
            ("file:///a/b\t\n", Some("/a/b")),
            ("file:///a/b\tc", Some("/a/bc")),
            ("file:///a/../b", Some("/b")),
            ("file:///a/%2e%2e/b", Some("/b")),
            ("file:/a/b", Some("/a/b")),
            ("file:a/b", Some("/a/b")),
            ("file://host/a", None),
            ("file:///a%2fb", None),
            ("http://x/a", None),
        ] {
            assert_eq!(file_url_to_path(url), path.map(PathBuf::from), "{url}");
        }
    }
}
