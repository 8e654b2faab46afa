//! Where OpenClaw's tools and OpenClaw itself find a path: its homes, `~`,
//! its state and config locations, and the spellings of a path its file
//! tools read (an `@` reference, a broken `</arg_value>>` suffix, a
//! `MEDIA:` prefix, the read tool's name variants). Node's own path
//! semantics (`path.resolve`, `fileURLToPath`, `os.homedir`) are in
//! `crate::paths`, under this.

use std::path::{Path, PathBuf};

use crate::paths::{js_trim, node_homedir, parent_of, process_cwd, resolve};
use crate::sys;

fn env_trimmed(name: &str) -> Option<String> {
    let v = sys::env_var(name)?;
    let v = js_trim(v.to_str()?).to_owned();
    // resolveOsHomeDir ignores the strings a shell makes of an unset variable.
    (!v.is_empty() && v != "undefined" && v != "null").then_some(v)
}

/// An environment variable as OpenClaw reads a path from one: trimmed,
/// `~` onto the effective home, resolved against the process's cwd
/// (`resolveUserPath`); unset, empty or `undefined` is none.
pub fn env_path(name: &str) -> Option<PathBuf> {
    env_trimmed(name).map(|v| resolve_user_path(&v))
}

/// The "OS home" of the file tools (`resolveOsHomeDir`,
/// `home-dir-*.mjs`): `HOME`, then `USERPROFILE`, then
/// `os.homedir()`, each trimmed, then `path.resolve`d.
pub fn os_home() -> Option<PathBuf> {
    env_trimmed("HOME")
        .or_else(|| env_trimmed("USERPROFILE"))
        .map(|h| resolve(&process_cwd(), Path::new(&h)))
        .or_else(node_homedir)
}

/// The "effective home" of config, workspace and media paths
/// (`resolveEffectiveHomeDir`): `OPENCLAW_HOME` (its own `~` expanded with
/// the OS home) `path.resolve`d, else the OS home.
pub fn effective_home() -> Option<PathBuf> {
    match env_trimmed("OPENCLAW_HOME") {
        Some(h) => Some(resolve(
            &process_cwd(),
            &expand_tilde(&h, os_home().as_deref()),
        )),
        None => os_home(),
    }
}

/// Every home a `~` in a tool's path may stand for, without repeats.
pub fn homes() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for h in [os_home(), effective_home(), node_homedir()]
        .into_iter()
        .flatten()
    {
        if !out.contains(&h) {
            out.push(h);
        }
    }
    out
}

/// `~` or `~/…` (and `~\…`, which `expandHomePrefix`'s `^~(?=$|[\\/])`
/// also takes) onto `home`; any other path unchanged. No `~user`: OpenClaw
/// has none.
pub fn expand_tilde(p: &str, home: Option<&Path>) -> PathBuf {
    match (p.strip_prefix('~'), home) {
        (Some(""), Some(h)) => h.to_path_buf(),
        (Some(rest), Some(h)) if rest.starts_with('/') || rest.starts_with('\\') => {
            h.join(rest[1..].trim_start_matches(['/', '\\']))
        }
        _ => PathBuf::from(p),
    }
}

/// `resolveUserPath` (`home-dir-*.mjs`), which hands its input to
/// `resolveHomeRelativePath`: trim, `~` onto the effective home
/// (`resolveRequiredHomeDir`), `path.resolve` against the process's cwd.
pub fn resolve_user_path(p: &str) -> PathBuf {
    let cwd = process_cwd();
    resolve(&cwd, &expand_tilde(js_trim(p), effective_home().as_deref()))
}

/// Where OpenClaw keeps its state (`resolveStateDir`, `paths-*.mjs`):
/// `OPENCLAW_STATE_DIR`, else `<effective home>/.openclaw`, or the legacy
/// `<effective home>/.clawdbot` where only that one exists
/// (`resolveStateDirFromHome`).
pub fn state_dir() -> PathBuf {
    match env_trimmed("OPENCLAW_STATE_DIR") {
        Some(d) => resolve_user_path(&d),
        None => {
            let home = effective_home().unwrap_or_else(|| PathBuf::from("/"));
            let new = home.join(".openclaw");
            let legacy = home.join(LEGACY_STATE_DIR);
            if !new.exists() && legacy.exists() {
                legacy
            } else {
                new
            }
        }
    }
}

/// OpenClaw's legacy state directory name (`LEGACY_STATE_DIRNAMES`).
pub const LEGACY_STATE_DIR: &str = ".clawdbot";

/// OpenClaw's config file (`resolveConfigPath`): `OPENCLAW_CONFIG_PATH`,
/// else `<stateDir>/openclaw.json`.
pub fn config_path() -> PathBuf {
    match env_trimmed("OPENCLAW_CONFIG_PATH") {
        Some(p) => resolve_user_path(&p),
        None => state_dir().join("openclaw.json"),
    }
}

/// OpenClaw's config directory (`resolveConfigDir`, `utils-*.mjs`): the
/// state dir when `OPENCLAW_STATE_DIR` is set, else the config file's
/// directory when `OPENCLAW_CONFIG_PATH` is, else `~/.openclaw`.
pub fn config_dir() -> PathBuf {
    if env_trimmed("OPENCLAW_STATE_DIR").is_some() {
        return state_dir();
    }
    if env_trimmed("OPENCLAW_CONFIG_PATH").is_some() {
        return parent_of(&config_path());
    }
    state_dir()
}

/// `normalizeFileReferencePrefix` (`sandbox-paths-*.mjs`) and
/// `preserveAtPrefixedRelativePath` (`path-policy-*.mjs`): one leading `@`
/// is a file reference, unless `./@x` exists, which OpenClaw then opens.
/// Both readings are returned.
pub fn at_prefix_readings(p: &str) -> Vec<String> {
    match p.strip_prefix('@') {
        Some(rest) => vec![p.to_owned(), rest.to_owned()],
        None => vec![p.to_owned()],
    }
}

/// The other spellings of `abs`'s file name that the read tool opens when
/// `abs` itself is missing (`collectReadPathVariants`, path-utils-*.mjs,
/// with NFD as `getReadQueuePaths` takes it): Unicode spaces as ASCII
/// spaces, then a space before `AM`/`PM` as U+202F (macOS screenshot
/// names), each with straight and with curly quotes, each in NFC and NFD.
/// Only the file name varies; the directory is as given.
pub fn read_variants(abs: &Path) -> Vec<PathBuf> {
    use unicode_normalization::UnicodeNormalization;
    let Some(name) = abs.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let parent = abs.parent().unwrap_or(Path::new(""));
    let ascii: String = name
        .chars()
        .map(|c| match c {
            '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => ' ',
            c => c,
        })
        .collect();
    let mut out: Vec<PathBuf> = Vec::new();
    for spaced in [ascii.clone(), screenshot_spaces(&ascii)] {
        let straight = spaced.replace(['\u{2018}', '\u{2019}'], "'");
        let curly = spaced.replace(['\'', '\u{2018}'], "\u{2019}");
        for quoted in [straight, curly] {
            for form in [quoted.nfc().collect::<String>(), quoted.nfd().collect()] {
                let p = parent.join(&form);
                if form != name && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// `tryMacOSScreenshotPath`: `/ (?=(?:AM|PM)(?:\b|\.))/gi` to U+202F.
fn screenshot_spaces(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let word = |c: Option<&char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_');
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let meridiem = chars
                .get(i + 1)
                .is_some_and(|a| a.eq_ignore_ascii_case(&'a') || a.eq_ignore_ascii_case(&'p'))
                && chars
                    .get(i + 2)
                    .is_some_and(|m| m.eq_ignore_ascii_case(&'m'))
                && !word(chars.get(i + 3));
            if c == ' ' && meridiem {
                '\u{202f}'
            } else {
                c
            }
        })
        .collect()
}

/// `stripMalformedXmlArgValueSuffix`: a `</arg_value>>` suffix a model's
/// broken tool call leaves is taken off before the tool opens the path.
pub fn strip_arg_value_suffix(p: &str) -> &str {
    let t = p.trim_end_matches('>');
    match t.strip_suffix("</arg_value") {
        Some(rest) if p.len() - t.len() >= 1 => rest,
        _ => p,
    }
}

/// `normalizeMediaReferenceSource` (`media-reference-*.mjs`): the media
/// tools take off a legacy `MEDIA:` prefix, in any case and spacing.
pub fn strip_media_prefix(p: &str) -> &str {
    let t = p.trim_start();
    if t.len() >= 5 && t[..5].eq_ignore_ascii_case("media") {
        let rest = t[5..].trim_start();
        if let Some(rest) = rest.strip_prefix(':') {
            return rest.trim_start();
        }
    }
    p
}

/// Node's `url.fileURLToPath`, as the host offers it.
pub type FileUrl<'f> = &'f dyn Fn(&str) -> Option<PathBuf>;

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
/// `homes`: every home `~` may stand for (the host's, [`homes`] without
/// one); `file_url`: Node's `fileURLToPath`, `None` where it throws.
pub fn spellings(
    raw: &str,
    reading: Reading,
    homes: &[PathBuf],
    file_url: FileUrl<'_>,
) -> Vec<PathBuf> {
    let mut texts: Vec<String> = Vec::new();
    let base = match reading {
        Reading::File => strip_arg_value_suffix(raw).to_owned(),
        Reading::Media | Reading::Message | Reading::GatewayCwd => {
            let t = js_trim(raw);
            let t = t.strip_prefix('@').map(js_trim).unwrap_or(t);
            strip_media_prefix(t).to_owned()
        }
    };
    for t in at_prefix_readings(&base) {
        if !texts.contains(&t) {
            texts.push(t);
        }
    }
    let mut out = Vec::new();
    for t in texts {
        if crate::paths::is_file_url(&t) {
            if let Some(p) = file_url(&t) {
                out.push(p);
            }
        }
        if t == "~" || t.starts_with("~/") || t.starts_with("~\\") {
            for h in homes {
                out.push(expand_tilde(&t, Some(h)));
            }
        }
        out.push(PathBuf::from(t));
    }
    out
}

/// The absolute paths a tool opens for `raw`.
pub fn absolutes(
    raw: &str,
    reading: Reading,
    bases: &[PathBuf],
    homes: &[PathBuf],
    file_url: FileUrl<'_>,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in spellings(raw, reading, homes, file_url) {
        if crate::paths::is_absolute(&p.to_string_lossy()) {
            out.push(resolve(Path::new("/"), &p));
        } else {
            for b in bases {
                out.push(resolve(b, &p));
            }
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tilde_is_the_home_alone_or_before_a_separator() {
        let h = Path::new("/home/u");
        assert_eq!(expand_tilde("~", Some(h)), h);
        assert_eq!(expand_tilde("~/a/b", Some(h)), h.join("a/b"));
        assert_eq!(expand_tilde("~\\a", Some(h)), h.join("a"));
        assert_eq!(expand_tilde("~user/a", Some(h)), Path::new("~user/a"));
        assert_eq!(expand_tilde("~/a", None), Path::new("~/a"));
    }

    #[test]
    fn broken_arg_value_suffixes_and_media_prefixes_come_off() {
        assert_eq!(strip_arg_value_suffix("/a/b</arg_value>>"), "/a/b");
        assert_eq!(strip_arg_value_suffix("/a/b</arg_value>>>"), "/a/b");
        assert_eq!(strip_arg_value_suffix("/a/b>"), "/a/b>");
        assert_eq!(strip_media_prefix(" media : /a"), "/a");
        assert_eq!(strip_media_prefix("MEDIA:/a"), "/a");
        assert_eq!(strip_media_prefix("/media/a"), "/media/a");
    }

    #[test]
    fn read_variants_are_collect_read_path_variants() {
        let v = |p: &str| -> Vec<String> {
            read_variants(Path::new(p))
                .into_iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect()
        };
        // Unicode spaces become ASCII; straight and curly quotes; NFC and NFD.
        assert!(v("/d/my\u{a0}tokens.json").contains(&"/d/my tokens.json".to_owned()));
        assert!(v("/d/my\u{3000}tokens.json").contains(&"/d/my tokens.json".to_owned()));
        assert!(v("/d/paco\u{2019}s.json").contains(&"/d/paco's.json".to_owned()));
        assert!(v("/d/paco's.json").contains(&"/d/paco\u{2019}s.json".to_owned()));
        assert!(v("/d/cafe\u{301}.json").contains(&"/d/caf\u{e9}.json".to_owned()));
        assert!(v("/d/caf\u{e9}.json").contains(&"/d/cafe\u{301}.json".to_owned()));
        // A space before AM/PM is U+202F, as a macOS screenshot name has it.
        assert!(v("/d/Shot 9.41.07 PM.png").contains(&"/d/Shot 9.41.07\u{202f}PM.png".to_owned()));
        assert!(!v("/d/Shot 9 AMX.png").contains(&"/d/Shot 9\u{202f}AMX.png".to_owned()));
        // Only the file name varies, and the name itself is no variant.
        assert!(v("/d\u{a0}x/plain.json").is_empty());
    }

    #[test]
    fn an_at_prefix_is_read_both_ways() {
        assert_eq!(at_prefix_readings("@/a"), vec!["@/a", "/a"]);
        assert_eq!(at_prefix_readings("/a"), vec!["/a"]);
    }
}
