//! The atomic token map writer, for the service that mints tokens.
//!
//! No reader (the plugin's watcher or anyone else) may ever see a half-written
//! or over-readable map, and writers running at once must never tear it:
//! 1. the whole input goes through the plugin's own parser first, and nothing
//!    is written if any entry is invalid;
//! 2. the output is canonical (keys sorted, one layout), so equal maps are
//!    equal bytes and an unchanged map is not rewritten: watchers don't churn;
//! 3. the bytes go to a uniquely named temporary file in the map's directory,
//!    created with `O_EXCL` and mode 0600 (no chmod window), fsynced, read
//!    back through the plugin's permission gate, renamed over the map (atomic
//!    on POSIX), and the directory is fsynced so the rename survives a crash.
//!
//! Each writer has its own temporary file, so concurrent writers (threads or
//! processes) race only on the rename: the last rename wins, and every reader
//! sees one whole map.
//!
//! A writer killed between creating and renaming its temporary file leaves it
//! behind as `.<map name>.tmp-<pid>-<n>-<random>`: mode 0600 in the map's
//! directory, so it exposes nothing beyond the owner; the watcher ignores it
//! (it filters events by name) and `claw-identity doctor` lists it. A writer
//! never deletes another writer's temporary file, since that writer may be
//! about to rename it.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::redact;
use crate::sys::{self, OsStrExt};
use crate::token_map::{self, GateOptions, MapErrorKind, TokenMap, DEFAULT_MAX_MAP_BYTES};

/// What the temporary file's name adds after `.<map name>`.
const TEMP_MARK: &str = ".tmp-";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteErrorKind {
    /// The input is not a valid token map; nothing was touched.
    Invalid,
    /// The plugin's permission gate would refuse the result (for example a
    /// directory others can write); nothing was published.
    Unsafe,
    Io,
}

/// Why nothing was written. The message names the path and the problem,
/// never file content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteError {
    pub kind: WriteErrorKind,
    pub message: String,
}

impl WriteError {
    fn new(kind: WriteErrorKind, path: &Path, what: impl std::fmt::Display) -> Self {
        WriteError {
            kind,
            message: redact::scrub(&format!(
                "refusing to write {}: {what}",
                crate::paths::shown(path)
            )),
        }
    }

    fn io(path: &Path, what: &str, e: &std::io::Error) -> Self {
        WriteError {
            kind: WriteErrorKind::Io,
            message: redact::scrub(&format!(
                "cannot write {}: {what} failed: {e}; nothing was written",
                crate::paths::shown(path)
            )),
        }
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WriteError {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub path: PathBuf,
    pub agents: usize,
    /// False when the map already held exactly these bytes (nothing was written).
    pub changed: bool,
}

/// Validates map text with the plugin's parser, refusing what the plugin
/// would only skip: a map that loses an agent on the way is not written.
pub fn validate(json: &[u8]) -> Result<TokenMap, String> {
    let parsed = token_map::parse(json).map_err(|e| e.message)?;
    if parsed.skipped.is_empty() {
        return Ok(parsed.map);
    }
    let n = parsed.skipped.len();
    let list: Vec<&str> = parsed
        .skipped
        .iter()
        .map(|s| s.trim_end_matches("; entry skipped"))
        .collect();
    Err(format!(
        "{n} invalid entr{}: {}",
        if n == 1 { "y" } else { "ies" },
        list.join("; ")
    ))
}

/// The one byte layout of a map: keys sorted, two-space indent, a final
/// newline. Ids and tokens are validated ASCII with nothing to escape.
pub fn canonical(map: &TokenMap) -> Vec<u8> {
    let entries = map.sorted();
    if entries.is_empty() {
        return b"{}\n".to_vec();
    }
    let mut out = Vec::with_capacity(4 + entries.len() * (entries[0].0.len() + 76));
    out.extend_from_slice(b"{\n");
    for (i, (agent, token)) in entries.iter().enumerate() {
        out.extend_from_slice(b"  \"");
        out.extend_from_slice(agent.as_bytes());
        out.extend_from_slice(b"\": \"");
        out.extend_from_slice(token.expose().as_bytes());
        out.extend_from_slice(if i + 1 < entries.len() {
            b"\",\n"
        } else {
            b"\"\n"
        });
    }
    out.extend_from_slice(b"}\n");
    out
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `.<map name>.tmp-`: the start of every temporary file name of this map.
fn temp_prefix(name: &OsStr) -> OsString {
    let mut s = OsString::from(".");
    s.push(name);
    s.push(TEMP_MARK);
    s
}

/// Temporary files of this map left in its directory, sorted: normally none;
/// one that stays is from a writer that died before its rename.
pub fn leftover_temp_files(map_path: &Path) -> Vec<PathBuf> {
    let Some(name) = map_path.file_name() else {
        return Vec::new();
    };
    let prefix = temp_prefix(name);
    let dir = parent_of(map_path);
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().as_bytes().starts_with(prefix.as_bytes()))
        .map(|e| dir.join(e.file_name()))
        .collect();
    out.sort();
    out
}

fn random_u32() -> u32 {
    let mut buf = [0u8; 4];
    if sys::random_bytes(&mut buf) {
        return u32::from_ne_bytes(buf);
    }
    // Uniqueness comes from O_EXCL and the retry below; this only spreads names.
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
}

/// Removes the temporary file unless it was renamed into place.
struct TempFile {
    path: PathBuf,
    published: bool,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Creates a new temporary file next to the map: `O_EXCL` so it is ours
/// alone, mode 0600 from the first instant (umask can only narrow it).
fn create_temp(dir: &Path, name: &OsStr, map_path: &Path) -> Result<(TempFile, File), WriteError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut last_err = None;
    for _ in 0..16 {
        let mut file_name = temp_prefix(name);
        file_name.push(format!(
            "{}-{}-{:08x}",
            sys::pid(),
            SEQ.fetch_add(1, Ordering::Relaxed),
            random_u32()
        ));
        let path = dir.join(file_name);
        match sys::create_private(&path) {
            Ok(f) => {
                return Ok((
                    TempFile {
                        path,
                        published: false,
                    },
                    f,
                ))
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(WriteError::io(map_path, "creating the temporary file", &e)),
        }
    }
    Err(WriteError::io(
        map_path,
        "creating a uniquely named temporary file",
        &last_err.unwrap_or_else(|| ErrorKind::AlreadyExists.into()),
    ))
}

/// The gate options the writer holds its output to: the plugin's defaults.
fn gate() -> GateOptions {
    GateOptions {
        allow_group_readable: false,
        max_bytes: DEFAULT_MAX_MAP_BYTES,
    }
}

/// Validates `json` and writes it, canonically and atomically, to `path`.
/// See the module documentation for the steps and guarantees.
pub fn write_map(path: &Path, json: &[u8]) -> Result<Written, WriteError> {
    let map = validate(json).map_err(|why| {
        WriteError::new(
            WriteErrorKind::Invalid,
            path,
            format!("{why}; nothing was written"),
        )
    })?;
    let bytes = canonical(&map);
    if bytes.len() as u64 > DEFAULT_MAX_MAP_BYTES {
        return Err(WriteError::new(
            WriteErrorKind::Invalid,
            path,
            format!(
                "the map would be {} bytes, over the plugin's cap of {DEFAULT_MAX_MAP_BYTES}; nothing was written",
                bytes.len()
            ),
        ));
    }
    let Some(name) = path.file_name() else {
        return Err(WriteError::new(
            WriteErrorKind::Invalid,
            path,
            "the path does not name a file",
        ));
    };
    let dir = parent_of(path);
    sys::create_private_dir_all(&dir)
        .map_err(|e| WriteError::io(path, "creating its directory", &e))?;

    // Unchanged means: the plugin would already load exactly these bytes. A
    // file it would refuse (say mode 0644) is rewritten even if equal.
    if let Ok(current) = token_map::read_map(path, &gate()) {
        if current.bytes == bytes {
            return Ok(Written {
                path: path.to_path_buf(),
                agents: map.len(),
                changed: false,
            });
        }
    }

    let (mut tmp, mut file) = create_temp(&dir, name, path)?;
    file.write_all(&bytes)
        .map_err(|e| WriteError::io(path, "writing the temporary file", &e))?;
    file.sync_all()
        .map_err(|e| WriteError::io(path, "fsync of the temporary file", &e))?;
    drop(file);

    // Publish only what the plugin would load: its gate checks the directory,
    // owner and mode, and the read-back proves the bytes on disk.
    match token_map::read_map(&tmp.path, &gate()) {
        Ok(back) if back.bytes == bytes => {}
        Ok(_) => {
            return Err(WriteError::new(
                WriteErrorKind::Io,
                path,
                "the temporary file did not read back as written; nothing was written",
            ))
        }
        Err(e) if e.kind == MapErrorKind::Unsafe => {
            return Err(WriteError::new(
                WriteErrorKind::Unsafe,
                path,
                format!("the plugin would refuse it: {}", e.message),
            ))
        }
        Err(e) => {
            return Err(WriteError::new(
                WriteErrorKind::Io,
                path,
                format!("{}; nothing was written", e.message),
            ))
        }
    }

    fs::rename(&tmp.path, path).map_err(|e| WriteError::io(path, "renaming over the map", &e))?;
    tmp.published = true;

    // Make the rename durable. Some file systems cannot fsync a directory
    // (EINVAL): the map is in place either way.
    if let Err(e) = File::open(&dir).and_then(|d| d.sync_all()) {
        if e.raw_os_error() != Some(libc::EINVAL) {
            return Err(WriteError {
                kind: WriteErrorKind::Io,
                message: redact::scrub(&format!(
                    "wrote {}, but the fsync of its directory failed: {e}; the new map is in place but may not survive a crash",
                    crate::paths::shown(path)
                )),
            });
        }
    }
    Ok(Written {
        path: path.to_path_buf(),
        agents: map.len(),
        changed: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token_map::tests::{T1, T2};
    use std::collections::BTreeMap;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn tmpdir(name: &str) -> crate::testing::TempDir {
        crate::testing::TempDir::new(&format!("writer-{name}"))
    }

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().mode() & 0o7777
    }

    fn json(entries: &[(&str, &str)]) -> Vec<u8> {
        let m: BTreeMap<_, _> = entries.iter().copied().collect();
        serde_json::to_vec(&m).unwrap()
    }

    #[test]
    fn canonical_output_is_sorted_pretty_json_that_parses_back() {
        let map = validate(format!(r#"{{"zed": "{T2}", "alpha": "{T1}"}}"#).as_bytes()).unwrap();
        let bytes = canonical(&map);
        let expected: BTreeMap<&str, &str> = [("alpha", T1), ("zed", T2)].into_iter().collect();
        let mut pretty = serde_json::to_vec_pretty(&expected).unwrap();
        pretty.push(b'\n');
        assert_eq!(bytes, pretty);
        let back = token_map::parse(&bytes).unwrap();
        assert_eq!(back.map.sorted(), map.sorted());
        assert_eq!(canonical(&TokenMap::default()), b"{}\n");
    }

    #[test]
    fn equal_maps_in_any_order_or_layout_give_equal_bytes() {
        let a = validate(format!("{{\"b\":\"{T2}\",\"a\":\"{T1}\"}}").as_bytes()).unwrap();
        let b = validate(format!("\u{feff}{{\n\t\"a\" : \"{T1}\" ,\n\"b\": \"{T2}\"}}").as_bytes())
            .unwrap();
        assert_eq!(canonical(&a), canonical(&b));
    }

    #[test]
    fn an_invalid_entry_writes_nothing_not_even_the_directory() {
        let d = tmpdir("invalid");
        let p = d.join("new").join("m.json");
        let e = write_map(&p, &json(&[("good", T1), ("Bad", T2), ("short", "abc")])).unwrap_err();
        assert_eq!(e.kind, WriteErrorKind::Invalid);
        assert!(e.message.contains("2 invalid entries"), "{e}");
        assert!(
            e.message
                .contains("\"Bad\" is not a valid OpenClaw agent id"),
            "{e}"
        );
        assert!(e.message.contains("\"short\": token is not 64 hex"), "{e}");
        assert!(e.message.ends_with("; nothing was written"), "{e}");
        assert!(!e.message.contains(&T1[..16]) && !e.message.contains(&T2[..16]));
        assert!(!d.join("new").exists());
    }

    #[test]
    fn duplicate_keys_shared_tokens_and_bad_json_are_refused() {
        let d = tmpdir("dup");
        let p = d.join("m.json");
        let e = write_map(&p, format!(r#"{{"a": "{T1}", "a": "{T2}"}}"#).as_bytes()).unwrap_err();
        assert!(e.message.contains("\"a\" appears more than once"), "{e}");
        let e = write_map(&p, format!(r#"{{"a": "{T1}", "b": "{T1}"}}"#).as_bytes()).unwrap_err();
        assert_eq!(e.kind, WriteErrorKind::Invalid);
        assert!(
            e.message.contains("\"a\" and \"b\" have the same token"),
            "{e}"
        );
        assert_eq!(
            write_map(&p, b"{").unwrap_err().kind,
            WriteErrorKind::Invalid
        );
        assert_eq!(
            write_map(&p, b"[]").unwrap_err().kind,
            WriteErrorKind::Invalid
        );
        assert!(!p.exists());
    }

    #[test]
    fn creates_missing_directories_0700_and_the_map_0600_without_leftovers() {
        let d = tmpdir("create");
        let p = d.join("a").join("b").join("m.json");
        let w = write_map(&p, &json(&[("x", T1)])).unwrap();
        assert!(w.changed);
        assert_eq!(w.agents, 1);
        assert_eq!(mode(&d.join("a")), 0o700);
        assert_eq!(mode(&d.join("a").join("b")), 0o700);
        assert_eq!(mode(&p), 0o600);
        assert_eq!(
            fs::read(&p).unwrap(),
            format!("{{\n  \"x\": \"{T1}\"\n}}\n").as_bytes()
        );
        assert!(leftover_temp_files(&p).is_empty());
        assert_eq!(fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn an_unchanged_map_is_not_rewritten() {
        let d = tmpdir("same");
        let p = d.join("m.json");
        assert!(
            write_map(&p, &json(&[("x", T1), ("y", T2)]))
                .unwrap()
                .changed
        );
        let before = fs::metadata(&p).unwrap();
        let again = write_map(&p, format!(r#"{{"y": "{T2}", "x": "{T1}"}}"#).as_bytes()).unwrap();
        assert!(!again.changed);
        let after = fs::metadata(&p).unwrap();
        assert_eq!(
            (before.ino(), before.ctime_nsec()),
            (after.ino(), after.ctime_nsec())
        );
        assert!(write_map(&p, &json(&[("x", T1)])).unwrap().changed);
        assert_ne!(fs::metadata(&p).unwrap().ino(), before.ino());
    }

    #[test]
    fn equal_content_the_plugin_would_refuse_is_rewritten_private() {
        let d = tmpdir("loose");
        let p = d.join("m.json");
        write_map(&p, &json(&[("x", T1)])).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(write_map(&p, &json(&[("x", T1)])).unwrap().changed);
        assert_eq!(mode(&p), 0o600);
    }

    #[test]
    fn a_directory_others_can_write_is_refused_and_left_clean() {
        let d = tmpdir("opendir");
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        let p = d.join("m.json");
        let e = write_map(&p, &json(&[("x", T1)])).unwrap_err();
        assert_eq!(e.kind, WriteErrorKind::Unsafe, "{e}");
        assert!(e.message.contains("the plugin would refuse it"), "{e}");
        assert!(e.message.contains("chmod go-w"), "{e}");
        assert!(!p.exists());
        assert_eq!(
            fs::read_dir(&d).unwrap().count(),
            0,
            "temporary file left behind"
        );
    }

    #[test]
    fn leftover_temp_files_lists_only_this_maps_temporaries() {
        let d = tmpdir("leftover");
        let p = d.join("m.json");
        for name in [
            ".m.json.tmp-1-0-00000000",
            ".other.json.tmp-1-0-0",
            "m.json.tmp-x",
            "m.json",
        ] {
            fs::write(d.join(name), "").unwrap();
        }
        assert_eq!(
            leftover_temp_files(&p),
            vec![d.join(".m.json.tmp-1-0-00000000")]
        );
    }

    #[test]
    fn concurrent_writers_never_tear_the_map() {
        let d = tmpdir("race");
        let p = d.join("m.json");
        let maps: Vec<Vec<u8>> = (0..4)
            .map(|i| {
                // Distinct tokens: a map never gives one token to two agents.
                let t = format!("{i}").repeat(64);
                json(&[("a", &t), (&format!("w{i}"), &"f".repeat(64))])
            })
            .collect();
        let expected: Vec<Vec<u8>> = maps
            .iter()
            .map(|m| canonical(&validate(m).unwrap()))
            .collect();
        write_map(&p, &maps[0]).unwrap();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (p, done, expected) = (p.clone(), done.clone(), expected.clone());
            std::thread::spawn(move || {
                let mut reads = 0u32;
                while !done.load(Ordering::Relaxed) {
                    let bytes = fs::read(&p).unwrap();
                    assert!(
                        expected.contains(&bytes),
                        "torn read: {} bytes",
                        bytes.len()
                    );
                    reads += 1;
                }
                reads
            })
        };
        let writers: Vec<_> = maps
            .iter()
            .cloned()
            .map(|m| {
                let p = p.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        write_map(&p, &m).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        assert!(leftover_temp_files(&p).is_empty());
        assert_eq!(mode(&p), 0o600);
    }
}
