//! Where the map path leads: the symlinks it resolves through and the file
//! it ends at. Both watchers watch the directory of each (`inotify.rs` on
//! the native build, `node.rs` with Node's `fs.watch` on the WebAssembly
//! build): a change of any of them moves the map.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The symlinks a path resolves through, and where it ends.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Chain {
    /// Every symlink met, in order (those in directory components too), each
    /// as a path through real directories.
    pub links: Vec<PathBuf>,
    /// The real path it ends at. What cannot be resolved (a missing entry,
    /// too many links) is kept as written.
    pub target: PathBuf,
}

/// Resolves an absolute path component by component, as realpath(3) does,
/// but keeps every link it meets: a change of any of them moves the map.
pub(crate) fn resolve_chain(path: &Path) -> Chain {
    const MAX_LINKS: usize = 40; // Linux's MAXSYMLINKS
    let parts = |p: &Path| -> Vec<OsString> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_os_string()),
                Component::ParentDir => Some("..".into()),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
            })
            .collect()
    };
    let mut links = Vec::new();
    let mut cur = PathBuf::from("/");
    let mut todo: VecDeque<OsString> = parts(path).into();
    let mut resolving = true;
    while let Some(c) = todo.pop_front() {
        if c == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&c);
        if resolving {
            match std::fs::symlink_metadata(&next) {
                Ok(m) if m.file_type().is_symlink() && links.len() < MAX_LINKS => {
                    if let Ok(to) = std::fs::read_link(&next) {
                        links.push(next);
                        if to.is_absolute() {
                            cur = PathBuf::from("/");
                        }
                        for part in parts(&to).into_iter().rev() {
                            todo.push_front(part);
                        }
                        continue;
                    }
                }
                Ok(_) => {}
                // Missing (or unreadable): the rest is taken as written.
                Err(_) => resolving = false,
            }
        }
        cur = next;
    }
    Chain { links, target: cur }
}

/// The directories the map depends on, in order: the map's own, that of
/// every link of its chain, and that of the file it ends at (repeats
/// included; the callers merge them their own way).
pub(crate) fn dirs_of<'c>(path: &'c Path, chain: &'c Chain) -> impl Iterator<Item = &'c Path> {
    path.parent()
        .into_iter()
        .chain(chain.links.iter().filter_map(|l| l.parent()))
        .chain(chain.target.parent())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A private directory (removed when the first half drops) and its
    /// path through real directories, as resolve_chain reports them.
    pub(crate) fn tmpdir(name: &str) -> (crate::testing::TempDir, PathBuf) {
        let t = crate::testing::TempDir::new(&format!("watch-{name}"));
        let d = std::fs::canonicalize(t.path()).unwrap();
        (t, d)
    }

    /// `links/m.json` -> `links/hop` -> `real/m.json`, in a private directory.
    pub(crate) fn linked_map(name: &str) -> (crate::testing::TempDir, PathBuf) {
        let (t, d) = tmpdir(name);
        std::fs::create_dir(d.join("links")).unwrap();
        std::fs::create_dir(d.join("real")).unwrap();
        std::fs::write(d.join("real/m.json"), "{}").unwrap();
        symlink("../real/m.json", d.join("links/hop")).unwrap();
        symlink("hop", d.join("links/m.json")).unwrap();
        (t, d)
    }

    #[test]
    fn a_plain_file_has_no_links() {
        let (_t, d) = tmpdir("plain");
        std::fs::write(d.join("m.json"), "{}").unwrap();
        let c = resolve_chain(&d.join("m.json"));
        assert_eq!(
            c,
            Chain {
                links: vec![],
                target: d.join("m.json")
            }
        );
    }

    #[test]
    fn a_chain_lists_every_link_and_where_it_ends() {
        let (_t, d) = tmpdir("chain");
        for sub in ["a", "b", "c"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        std::fs::write(d.join("c/real.json"), "{}").unwrap();
        symlink("../c/real.json", d.join("b/hop")).unwrap(); // relative, with ..
        symlink(d.join("b/hop"), d.join("a/m.json")).unwrap(); // absolute
        let c = resolve_chain(&d.join("a/m.json"));
        assert_eq!(c.links, vec![d.join("a/m.json"), d.join("b/hop")]);
        assert_eq!(c.target, d.join("c/real.json"));
        assert_eq!(c.target, std::fs::canonicalize(d.join("a/m.json")).unwrap());
    }

    #[test]
    fn a_link_in_a_directory_component_counts_too() {
        // Kubernetes: m.json -> ..data/m.json, ..data -> ..2026_1
        let (_t, d) = tmpdir("k8s");
        std::fs::create_dir(d.join("..2026_1")).unwrap();
        std::fs::write(d.join("..2026_1/m.json"), "{}").unwrap();
        symlink("..2026_1", d.join("..data")).unwrap();
        symlink("..data/m.json", d.join("m.json")).unwrap();
        let c = resolve_chain(&d.join("m.json"));
        assert_eq!(c.links, vec![d.join("m.json"), d.join("..data")]);
        assert_eq!(c.target, d.join("..2026_1/m.json"));
    }

    #[test]
    fn a_dangling_link_ends_where_it_points() {
        let (_t, d) = tmpdir("dangling");
        symlink("gone/real.json", d.join("m.json")).unwrap();
        let c = resolve_chain(&d.join("m.json"));
        assert_eq!(c.links, vec![d.join("m.json")]);
        assert_eq!(c.target, d.join("gone/real.json"));
    }

    #[test]
    fn a_link_loop_ends() {
        let (_t, d) = tmpdir("loop");
        symlink("b", d.join("a")).unwrap();
        symlink("a", d.join("b")).unwrap();
        let c = resolve_chain(&d.join("a"));
        assert_eq!(c.links.len(), 40);
    }
}
