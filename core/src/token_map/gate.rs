//! The permission gate, after OpenSSH's `sshkey_perm_ok`/`safe_path` and
//! libpq's `.pgpass` check: a credential file that others can write (or, by
//! default, read) is refused, and so is one in a directory others can write.
//! Every check is made on a descriptor (`fstat`), and the map is opened
//! relative to the descriptor of the directory that was checked (`openat`),
//! so a swap of the path between check and read cannot slip an unchecked file
//! past us.
//!
//! On Windows (the WebAssembly build) files have an owner and a DACL instead
//! of a uid and mode bits; the same checks are made on those (`crate::acl`):
//! owned by the user, SYSTEM or Administrators, and no one else may write
//! the map or its directory, nor read the map unless `allowGroupReadable`.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::acl::{self, Verdict};
use crate::sys::{self, Access, AsRawFd, FromRawFd, OsStrExt};

use super::{MapError, MapErrorKind};

#[derive(Debug, Clone)]
pub struct GateOptions {
    /// Downgrade "readable by group or others" from a refusal to a warning
    /// (Kubernetes mounts secrets 0644 unless `defaultMode` is set).
    pub allow_group_readable: bool,
    pub max_bytes: u64,
}

/// The bytes of a map file that passed the gate, plus warnings to log.
#[derive(Debug)]
pub struct MapFile {
    pub bytes: Vec<u8>,
    pub warnings: Vec<String>,
}

/// Our effective uid. `read_map` checks Unix owners only where it is known
/// (Windows has owners and DACLs instead), so the stand-in only ever shows
/// in a message: `(uid_t)-1` is no one's uid.
fn euid() -> u32 {
    sys::euid().unwrap_or(u32::MAX)
}

fn io_error(path: &Path, what: &str, e: &std::io::Error) -> MapError {
    let shown = crate::paths::shown(path);
    match e.kind() {
        std::io::ErrorKind::NotFound => MapError::new(
            MapErrorKind::NotFound,
            format!("{shown}: not found; create it (claw-identity write-map --map {shown}) or set tokenMapPath"),
        ),
        std::io::ErrorKind::PermissionDenied => MapError::new(
            MapErrorKind::Io,
            format!("{shown}: permission denied while {what}; make it readable by uid {} (chown/chmod)", euid()),
        ),
        _ => MapError::new(MapErrorKind::Io, format!("{shown}: {what} failed: {e}")),
    }
}

fn unsafe_file(path: &Path, problem: String, fix: String) -> MapError {
    MapError::with_fix(
        MapErrorKind::Unsafe,
        &format!(
            "{}: {problem}; refusing to load it",
            crate::paths::shown(path)
        ),
        &fix,
    )
}

fn owner_ok(uid: u32) -> bool {
    uid == euid() || uid == 0
}

/// What the gate checks a file for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Subject {
    /// A directory that holds the map: its owner, and who else may write it.
    Dir,
    /// The map: its owner, who else may write it, and who else may read it.
    Map,
}

/// The owner and permission checks of `path`, in its platform's terms (see
/// the module docs). Returns the warnings to log.
fn check_access(
    path: &Path,
    access: &Access,
    subject: Subject,
    opts: &GateOptions,
) -> Result<Vec<String>, MapError> {
    match access {
        Access::Unix(o) => check_unix(path, o.uid, o.mode, subject, opts),
        Access::Windows(d) => check_windows(path, d, subject, opts),
    }
}

fn check_unix(
    path: &Path,
    uid: u32,
    mode: u32,
    subject: Subject,
    opts: &GateOptions,
) -> Result<Vec<String>, MapError> {
    let dir = subject == Subject::Dir;
    let what = if dir { "directory is" } else { "is" };
    if !owner_ok(uid) {
        return Err(unsafe_file(
            path,
            format!("{what} owned by uid {uid}, not by uid {} or root", euid()),
            format!("chown {} {}", euid(), crate::paths::shown(path)),
        ));
    }
    if mode & 0o022 != 0 {
        return Err(unsafe_file(
            path,
            format!("{what} writable by group or others (mode {mode:04o})"),
            if dir {
                format!("chmod go-w {}", crate::paths::shown(path))
            } else {
                format!("chmod 600 {}", crate::paths::shown(path))
            },
        ));
    }
    let mut warnings = Vec::new();
    if !dir && mode & 0o044 != 0 {
        if opts.allow_group_readable {
            warnings.push(format!(
                "{}: is readable by group or others (mode {mode:04o}); allowed by allowGroupReadable, but chmod 600 is safer",
                crate::paths::shown(path)
            ));
        } else {
            return Err(unsafe_file(
                path,
                format!("is readable by group or others (mode {mode:04o})"),
                format!(
                    "chmod 600 {}, or set allowGroupReadable for a Kubernetes secret volume",
                    crate::paths::shown(path)
                ),
            ));
        }
    }
    Ok(warnings)
}

fn check_windows(
    path: &Path,
    d: &acl::Descriptor,
    subject: Subject,
    opts: &GateOptions,
) -> Result<Vec<String>, MapError> {
    let dir = subject == Subject::Dir;
    let what = if dir { "directory is" } else { "is" };
    let shown = crate::paths::shown(path);
    // OpenClaw's own reset (fs-safe `formatIcaclsResetCommand`): full control
    // for the user and SYSTEM only, nothing inherited.
    let grant = if dir { "(OI)(CI)F" } else { "F" };
    let reset = format!(
        "icacls \"{shown}\" /inheritance:r /grant:r \"{}:{grant}\" /grant:r \"*S-1-5-18:{grant}\"",
        d.me()
    );
    let (foreign_owner, writers, readers) =
        match d.verdict() {
            Verdict::Unverifiable(why) => return Err(unsafe_file(
                path,
                format!("can't tell who may write it: {why}"),
                "keep the map on a local NTFS drive, in a folder under the gateway user's profile"
                    .into(),
            )),
            Verdict::Checked {
                foreign_owner,
                writers,
                readers,
            } => (foreign_owner, writers, readers),
        };
    if let Some(owner) = foreign_owner {
        return Err(unsafe_file(
            path,
            format!(
                "{what} owned by {owner}, not by you ({}), SYSTEM or Administrators",
                acl::show(&d.current_user_sid)
            ),
            format!("takeown /f \"{shown}\""),
        ));
    }
    if !writers.is_empty() {
        return Err(unsafe_file(
            path,
            format!(
                "{what} writable by others than you, SYSTEM and Administrators: {}",
                writers.join(", ")
            ),
            reset,
        ));
    }
    let mut warnings = Vec::new();
    if !dir && !readers.is_empty() {
        let readers = readers.join(", ");
        if opts.allow_group_readable {
            warnings.push(format!(
                "{shown}: is readable by others than you, SYSTEM and Administrators: {readers}; allowed by allowGroupReadable, but {reset} is safer"
            ));
        } else {
            return Err(unsafe_file(
                path,
                format!("is readable by others than you, SYSTEM and Administrators: {readers}"),
                format!("{reset}, or set allowGroupReadable"),
            ));
        }
    }
    Ok(warnings)
}

/// Fails unless this platform can say who may read and write a file: a
/// uid and mode bits (Unix), or an owner and DACL (Windows). Unix facts
/// without our own uid can't be judged.
fn platform_checkable(path: &Path) -> Result<(), MapError> {
    if sys::is_windows() {
        return Ok(());
    }
    sys::euid().map(drop).map_err(|e| {
        unsafe_file(
            path,
            format!("can't tell who may read it: {e}"),
            "run OpenClaw where files have an owner and permission bits (Linux, macOS, WSL)".into(),
        )
    })
}

/// A failure to read who may use `path`. On Windows it is a refusal that
/// says so, and how to fix it: the gate serves no map whose ACL it could not
/// read.
fn access_error(path: &Path, e: &std::io::Error) -> MapError {
    if sys::is_windows() && e.kind() != std::io::ErrorKind::Interrupted {
        return unsafe_file(
            path,
            format!("can't read its owner and ACL: {e}"),
            "OpenClaw's fs-safe reads them: run claw-identity in OpenClaw, installed with `openclaw plugins install` (which links OpenClaw's package into it), and let the gateway's user run Windows PowerShell (fs-safe's way where its native helper is missing)".into(),
        );
    }
    io_error(path, "fstat", e)
}

/// Opens a directory that holds the map and checks it on the descriptor:
/// owned by us (or root, SYSTEM, Administrators), not writable by others.
fn open_checked_dir(dir: &Path, opts: &GateOptions) -> Result<File, MapError> {
    let handle = sys::open_dir(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => MapError::new(
            MapErrorKind::NotFound,
            format!(
                "{}: directory not found; create it (mkdir -m 700 {}) or set tokenMapPath",
                crate::paths::shown(dir),
                crate::paths::shown(dir)
            ),
        ),
        _ => io_error(dir, "opening the directory", &e),
    })?;
    let access = sys::owner_of(&handle, dir).map_err(|e| access_error(dir, &e))?;
    check_access(dir, &access, Subject::Dir, opts)?;
    Ok(handle)
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn c_name(path: &Path) -> Result<CString, MapError> {
    path.file_name()
        .and_then(|n| CString::new(n.as_bytes()).ok())
        .ok_or_else(|| {
            MapError::new(
                MapErrorKind::Io,
                format!(
                    "{}: not a file path; set tokenMapPath to a file",
                    crate::paths::shown(path)
                ),
            )
        })
}

/// (device, inode) of the entry `name` in `dir`, without following a symlink.
fn entry_id(dir: &File, name: &CStr) -> Option<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: valid descriptor, NUL-terminated name, and a buffer the size of `stat`.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: fstatat succeeded, so it filled the buffer.
    let st = unsafe { st.assume_init() };
    Some((st.st_dev, st.st_ino))
}

/// Opens `name` inside the already-checked directory `dir`. Opening relative
/// to the directory's descriptor, not by path, means the file comes from the
/// directory that was checked even if the path is swapped meanwhile.
fn open_in(dir: &File, name: &CStr, extra_flags: libc::c_int) -> std::io::Result<File> {
    // O_NONBLOCK: opening a FIFO planted at the path must not hang the watcher;
    // it is then refused as not a regular file.
    let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY | extra_flags;
    // SAFETY: valid descriptor and NUL-terminated name; the result is checked.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// A symlink chain moved between opening the map and checking where it led.
struct Swapped;

/// Opens the map: directly inside the checked directory, or, when the name
/// is a symlink (a Kubernetes secret volume), through the chain, after
/// checking the directory that holds the file it leads to.
fn open_map(
    path: &Path,
    dir: &File,
    name: &CStr,
    opts: &GateOptions,
) -> Result<Result<File, Swapped>, MapError> {
    let opening = |e: std::io::Error| io_error(path, "opening", &e);
    match open_in(dir, name, libc::O_NOFOLLOW) {
        Ok(file) => return Ok(Ok(file)),
        Err(e) if e.raw_os_error() != Some(libc::ELOOP) => return Err(opening(e)),
        Err(_) => {}
    }
    let file = open_in(dir, name, 0).map_err(opening)?;
    let id = sys::fstat(&file).map_err(|e| io_error(path, "fstat", &e))?;
    let real = sys::canonicalize(path).map_err(|e| io_error(path, "resolving the symlink", &e))?;
    let real_dir = open_checked_dir(&parent_of(&real), opts)?;
    // The checked directory must still hold the very file we opened.
    if entry_id(&real_dir, &c_name(&real)?) != Some((id.dev, id.ino)) {
        return Ok(Err(Swapped));
    }
    Ok(Ok(file))
}

/// Opens, checks and reads the map at `path`.
pub fn read_map(path: &Path, opts: &GateOptions) -> Result<MapFile, MapError> {
    platform_checkable(path)?;
    let name = c_name(path)?;
    let dir = open_checked_dir(&parent_of(path), opts)?;
    // A symlink swap racing the check is retried: the swap is legitimate. So
    // is a rename over the map between the WebAssembly build's open and the
    // host's stat of the same path (see `sys::owner_of`).
    let mut opened = None;
    for _ in 0..8 {
        let Ok(f) = open_map(path, &dir, &name, opts)? else {
            continue;
        };
        match sys::owner_of(&f, path) {
            Ok(access) => {
                opened = Some((f, access));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(access_error(path, &e)),
        }
    }
    let (mut file, access) = opened.ok_or_else(|| {
        MapError::new(
            MapErrorKind::Io,
            format!(
                "{}: it (or its symlink chain) kept changing while it was checked; it is read again at the next change",
                crate::paths::shown(path)
            ),
        )
    })?;
    let meta = file.metadata().map_err(|e| io_error(path, "fstat", &e))?;

    if !meta.file_type().is_file() {
        return Err(unsafe_file(
            path,
            "is not a regular file".into(),
            "replace it with a regular file, or a symlink to one".into(),
        ));
    }
    let warnings = check_access(path, &access, Subject::Map, opts)?;
    let too_large = || {
        MapError::new(
            MapErrorKind::TooLarge,
            format!(
                "{}: larger than the {} byte cap; refusing to load it",
                crate::paths::shown(path),
                opts.max_bytes
            ),
        )
    };
    if meta.len() > opts.max_bytes {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow while we read it: never read past the cap.
    (&mut file)
        .take(opts.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "reading", &e))?;
    if bytes.len() as u64 > opts.max_bytes {
        return Err(too_large());
    }
    Ok(MapFile { bytes, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{write, TempDir};
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn opts() -> GateOptions {
        GateOptions {
            allow_group_readable: false,
            max_bytes: 1024,
        }
    }

    /// A private directory (removed when the first half drops) and its path.
    fn tmpdir(name: &str) -> (TempDir, PathBuf) {
        let t = TempDir::new(&format!("gate-{name}"));
        let d = t.path().to_path_buf();
        (t, d)
    }

    #[test]
    fn a_private_file_is_read() {
        let (_t, d) = tmpdir("ok");
        let p = d.join("m.json");
        write(&p, "{}", 0o600);
        assert_eq!(read_map(&p, &opts()).unwrap().bytes, b"{}");
    }

    #[test]
    fn group_writable_file_is_refused_with_the_fix() {
        let (_t, d) = tmpdir("gw");
        let p = d.join("m.json");
        write(&p, "{}", 0o620);
        let e = read_map(&p, &opts()).unwrap_err();
        assert_eq!(e.kind, MapErrorKind::Unsafe);
        assert!(
            e.message
                .contains("writable by group or others (mode 0620)"),
            "{e}"
        );
        assert!(
            e.message
                .contains(&format!("chmod 600 {}", crate::paths::shown(&p))),
            "{e}"
        );
        // The fix is typed, and the message still ends with it.
        let fix = e.fix.as_deref().unwrap();
        assert!(fix.starts_with("chmod 600 "), "{fix}");
        assert!(!e.problem().contains("fix"), "{}", e.problem());
        assert_eq!(e.message, format!("{} (fix: {fix})", e.problem()));
    }

    #[test]
    fn readable_file_is_refused_unless_allowed() {
        let (_t, d) = tmpdir("gr");
        let p = d.join("m.json");
        write(&p, "{}", 0o644);
        assert_eq!(
            read_map(&p, &opts()).unwrap_err().kind,
            MapErrorKind::Unsafe
        );
        let allowed = GateOptions {
            allow_group_readable: true,
            ..opts()
        };
        let f = read_map(&p, &allowed).unwrap();
        assert_eq!(f.warnings.len(), 1);
    }

    #[test]
    fn writable_directory_is_refused() {
        let (_t, d) = tmpdir("dw");
        let p = d.join("m.json");
        write(&p, "{}", 0o600);
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        let e = read_map(&p, &opts()).unwrap_err();
        assert!(e.message.contains("chmod go-w"), "{e}");
    }

    #[test]
    fn a_directory_at_the_path_is_refused() {
        let (_t, d) = tmpdir("dir");
        let p = d.join("m.json");
        fs::create_dir(&p).unwrap();
        assert!(read_map(&p, &opts())
            .unwrap_err()
            .message
            .contains("not a regular file"));
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let (_t, d) = tmpdir("fifo");
        let p = d.join("m.json");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_map(&p, &opts())
            .unwrap_err()
            .message
            .contains("not a regular file"));
    }

    #[test]
    fn a_file_over_the_cap_is_refused() {
        let (_t, d) = tmpdir("big");
        let p = d.join("m.json");
        write(&p, " ".repeat(2000), 0o600);
        assert_eq!(
            read_map(&p, &opts()).unwrap_err().kind,
            MapErrorKind::TooLarge
        );
    }

    #[test]
    fn a_missing_file_says_how_to_create_it() {
        let (_t, d) = tmpdir("missing");
        let e = read_map(&d.join("m.json"), &opts()).unwrap_err();
        assert_eq!(e.kind, MapErrorKind::NotFound);
        assert!(e.message.contains("write-map"), "{e}");
    }

    #[test]
    fn a_symlink_chain_is_followed_and_its_target_directory_checked() {
        let (_t, d) = tmpdir("k8s");
        let data = d.join("..2026_11_30");
        fs::create_dir(&data).unwrap();
        fs::set_permissions(&data, fs::Permissions::from_mode(0o755)).unwrap();
        write(&data.join("m.json"), "{}", 0o600);
        std::os::unix::fs::symlink("..2026_11_30", d.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/m.json", d.join("m.json")).unwrap();
        assert!(read_map(&d.join("m.json"), &opts()).is_ok());
        fs::set_permissions(&data, fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(
            read_map(&d.join("m.json"), &opts()).unwrap_err().kind,
            MapErrorKind::Unsafe
        );
    }

    #[test]
    fn only_our_uid_or_root_may_own_the_map() {
        assert!(owner_ok(euid()));
        assert!(owner_ok(0));
        assert!(!owner_ok(euid().wrapping_add(1).max(1)));
    }

    /// Root owns everything these tests create, so give a file away to nobody.
    fn give_to_nobody(path: &Path) -> bool {
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: valid NUL-terminated path.
        unsafe { libc::lchown(c.as_ptr(), 65534, 65534) == 0 }
    }

    #[test]
    fn a_map_owned_by_another_uid_is_refused_naming_the_owner() {
        let (_t, d) = tmpdir("owner");
        let p = d.join("m.json");
        write(&p, "{}", 0o600);
        if euid() != 0 {
            // Only root can give a file away; the rule itself is covered above.
            assert!(!give_to_nobody(&p));
            return;
        }
        assert!(give_to_nobody(&p));
        let e = read_map(&p, &opts()).unwrap_err();
        assert_eq!(e.kind, MapErrorKind::Unsafe);
        assert!(e.message.contains("is owned by uid 65534"), "{e}");
    }

    #[test]
    fn a_directory_owned_by_another_uid_is_refused() {
        let (_t, d) = tmpdir("dirowner");
        let p = d.join("m.json");
        write(&p, "{}", 0o600);
        if euid() != 0 {
            assert!(!give_to_nobody(&d));
            return;
        }
        assert!(give_to_nobody(&d));
        let e = read_map(&p, &opts()).unwrap_err();
        assert!(e.message.contains("directory is owned by uid 65534"), "{e}");
    }

    #[test]
    fn a_missing_directory_says_how_to_create_it() {
        let (_t, d) = tmpdir("nodir");
        let e = read_map(&d.join("sub").join("m.json"), &opts()).unwrap_err();
        assert_eq!(e.kind, MapErrorKind::NotFound);
        assert!(e.message.contains("mkdir -m 700"), "{e}");
    }

    #[test]
    fn a_directory_replaced_by_a_symlink_is_checked_at_its_target() {
        let (_t, d) = tmpdir("dirlink");
        let good = d.join("good");
        let open_dir = d.join("open");
        for (dir, mode) in [(&good, 0o700), (&open_dir, 0o777)] {
            fs::create_dir(dir).unwrap();
            write(&dir.join("m.json"), "{}", 0o600);
            fs::set_permissions(dir, fs::Permissions::from_mode(mode)).unwrap();
        }
        let link = d.join("maps");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        assert!(read_map(&link.join("m.json"), &opts()).is_ok());
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&open_dir, &link).unwrap();
        let e = read_map(&link.join("m.json"), &opts()).unwrap_err();
        assert!(
            e.message
                .contains("directory is writable by group or others"),
            "{e}"
        );
    }

    #[test]
    fn a_symlink_into_an_open_directory_is_refused() {
        let (_t, d) = tmpdir("linkout");
        let open_dir = d.join("open");
        fs::create_dir(&open_dir).unwrap();
        write(&open_dir.join("real.json"), "{}", 0o600);
        fs::set_permissions(&open_dir, fs::Permissions::from_mode(0o1777)).unwrap();
        std::os::unix::fs::symlink(open_dir.join("real.json"), d.join("m.json")).unwrap();
        let e = read_map(&d.join("m.json"), &opts()).unwrap_err();
        assert_eq!(e.kind, MapErrorKind::Unsafe);
        assert!(e.message.contains("chmod go-w"), "{e}");
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        assert!(read_map(Path::new("/"), &opts())
            .unwrap_err()
            .message
            .contains("not a file path"));
    }

    // Windows: the same checks on the owner and DACL the host reads (the
    // WebAssembly build on Windows; the gate's wiring there is tested
    // through that build with the platform faked, __test__/windows.test.mjs).
    const ME: &str = "s-1-5-21-1-2-3-1001";

    fn windows(owner: &str, aces: &[(&str, u32)]) -> Access {
        let ace = |(sid, mask): &(&str, u32)| acl::Ace {
            sid: (*sid).into(),
            mask: *mask,
            ace_type: acl::AceType::Allow,
            flags: acl::AceFlags {
                inherit_only: false,
            },
        };
        Access::Windows(acl::Descriptor {
            owner_sid: owner.into(),
            current_user_sid: ME.into(),
            dacl_present: true,
            is_local: true,
            complete: true,
            unsupported_ace_types: vec![],
            aces: aces.iter().map(ace).collect(),
        })
    }

    const PRIVATE: [(&str, u32); 3] = [
        (acl::SYSTEM, 0x1f01ff),
        (acl::ADMINISTRATORS, 0x1f01ff),
        (ME, 0x1f01ff),
    ];

    #[test]
    fn windows_a_map_only_its_owner_system_and_administrators_reach_is_served() {
        let p = Path::new(r"C:\Users\gw\.config\micelclaw\agent-tokens.json");
        for subject in [Subject::Dir, Subject::Map] {
            let w = check_access(p, &windows(ME, &PRIVATE), subject, &opts()).unwrap();
            assert!(w.is_empty());
        }
    }

    #[test]
    fn windows_a_map_others_may_write_is_refused_naming_them_with_the_icacls_fix() {
        let p = Path::new(r"C:\maps\m.json");
        let mut aces = PRIVATE.to_vec();
        aces.push(("s-1-5-11", 0x1301bf)); // Authenticated Users: Modify
        for subject in [Subject::Map, Subject::Dir] {
            let e = check_access(p, &windows(ME, &aces), subject, &opts()).unwrap_err();
            assert_eq!(e.kind, MapErrorKind::Unsafe);
            assert!(e.message.contains("writable by others than you, SYSTEM and Administrators: Authenticated Users (S-1-5-11)"), "{e}");
            let grant = if subject == Subject::Dir {
                "(OI)(CI)F"
            } else {
                "F"
            };
            assert!(e.message.contains(&format!(r#"(fix: icacls "C:\maps\m.json" /inheritance:r /grant:r "*S-1-5-21-1-2-3-1001:{grant}" /grant:r "*S-1-5-18:{grant}")"#)), "{e}");
        }
    }

    #[test]
    fn windows_a_map_others_may_read_is_refused_unless_allowed_and_a_directory_they_may_read_is_fine(
    ) {
        let p = Path::new(r"C:\maps\m.json");
        let mut aces = PRIVATE.to_vec();
        aces.push(("s-1-5-32-545", 0x1200a9)); // Users: Read & execute
        let e = check_access(p, &windows(ME, &aces), Subject::Map, &opts()).unwrap_err();
        assert!(
            e.message.contains(
                "is readable by others than you, SYSTEM and Administrators: Users (S-1-5-32-545)"
            ),
            "{e}"
        );
        let allowed = GateOptions {
            allow_group_readable: true,
            ..opts()
        };
        let w = check_access(p, &windows(ME, &aces), Subject::Map, &allowed).unwrap();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("allowed by allowGroupReadable"), "{w:?}");
        assert!(check_access(p, &windows(ME, &aces), Subject::Dir, &opts())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn windows_a_map_owned_by_another_user_is_refused_with_takeown() {
        let p = Path::new(r"C:\maps\m.json");
        let e = check_access(
            p,
            &windows("s-1-5-21-1-2-3-1002", &PRIVATE),
            Subject::Map,
            &opts(),
        )
        .unwrap_err();
        assert!(e.message.contains("is owned by S-1-5-21-1-2-3-1002, not by you (S-1-5-21-1-2-3-1001), SYSTEM or Administrators"), "{e}");
        assert!(
            e.message.contains(r#"(fix: takeown /f "C:\maps\m.json")"#),
            "{e}"
        );
        for owner in [acl::SYSTEM, acl::ADMINISTRATORS] {
            assert!(check_access(p, &windows(owner, &PRIVATE), Subject::Map, &opts()).is_ok());
        }
    }

    #[test]
    fn windows_an_acl_that_cannot_be_verified_is_refused() {
        let p = Path::new(r"\\server\share\m.json");
        let Access::Windows(mut d) = windows(ME, &PRIVATE) else {
            unreachable!()
        };
        d.is_local = false;
        let e = check_access(p, &Access::Windows(d), Subject::Map, &opts()).unwrap_err();
        assert_eq!(e.kind, MapErrorKind::Unsafe);
        assert!(
            e.message
                .contains("can't tell who may write it: it is on a network share"),
            "{e}"
        );
    }

    #[test]
    fn a_map_renamed_over_while_being_read_is_never_refused_nor_torn() {
        let (_t, d) = tmpdir("swap");
        let p = d.join("m.json");
        let versions = ["{\"v\": 1}", "{\"v\": 22}"];
        write(&p, versions[0], 0o600);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (d, p, stop) = (d.clone(), p.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let tmp = d.join("m.json.tmp");
                    write(&tmp, versions[i % 2], 0o600);
                    fs::rename(&tmp, &p).unwrap();
                    i += 1;
                }
                i
            })
        };
        for _ in 0..3000 {
            let f = read_map(&p, &opts()).expect("a rename-over is never refused");
            assert!(versions.iter().any(|v| v.as_bytes() == f.bytes.as_slice()));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(writer.join().unwrap() > 0);
    }
}
