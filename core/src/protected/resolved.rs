//! The protected locations as they are now, and whether a path a tool
//! opens reaches one: each location's real path and (device, inode),
//! remade when stale, compared by real path, lexical path and identity. The
//! path guard (`crate::rules::map_access`) asks this for every path.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Guard, Location};
use crate::agent_fs::AgentFsTable;
use crate::paths;
use crate::sys;

/// What a tool does with a path it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads the file (or uploads it somewhere).
    Read,
    /// Lists the directory.
    List,
    /// Reads every file under it (grep, find, a directory fetch), or runs
    /// there (a spawned child's cwd, a shell's workdir).
    Search,
    /// Creates, changes, moves or deletes it.
    Write,
}

impl Location {
    pub(crate) fn refuses(&self, access: Access) -> bool {
        self.secret || access == Access::Write
    }
}

/// A location as it is now: its real path and identity, where it exists.
#[derive(Debug, Clone)]
struct Resolved {
    loc: Location,
    /// Its path and its real path, in the form paths are compared in
    /// (`paths::key`: on Windows, case and the names Win32 strips folded).
    spots: Vec<PathBuf>,
    id: Option<(u64, u64)>,
}

/// The protected locations, resolved; made again at least every
/// [`REFRESH`] and whenever the map's watcher saw a change.
#[derive(Debug)]
pub struct Protected {
    items: Vec<Resolved>,
    made: Instant,
    generation: u64,
}

/// How long a resolved set of protected locations is used: a rotation of
/// the map changes its inode, a re-pointed symlink its real path. The
/// lexical paths, which catch most, never go stale.
pub const REFRESH: Duration = Duration::from_millis(500);

impl Protected {
    pub fn resolve(locations: &[Location], generation: u64) -> Protected {
        let items = locations
            .iter()
            .map(|loc| {
                let (real, id) = match sys::real_path(&loc.path) {
                    Ok((real, st)) => (Some(real), Some((st.dev, st.ino))),
                    Err(_) => (
                        // Missing: its directory's real path, and the rest as named.
                        Some(kernel_path(&loc.path)).filter(|r| *r != loc.path),
                        None,
                    ),
                };
                let spots = std::iter::once(&loc.path)
                    .chain(real.as_ref())
                    .map(|p| paths::key(p).into_owned())
                    .collect();
                Resolved {
                    loc: loc.clone(),
                    spots,
                    id,
                }
            })
            .collect();
        Protected {
            items,
            made: Instant::now(),
            generation,
        }
    }

    pub fn fresh(&self, generation: u64) -> bool {
        self.generation == generation && self.made.elapsed() < REFRESH
    }
}

/// What the rule knows of the host: the agents' file systems, and the
/// locations it keeps out of their reach.
#[derive(Debug, Default)]
pub struct Facts {
    pub agents: AgentFsTable,
    pub locations: Vec<Location>,
    /// The resolved locations, remade when stale.
    pub resolved: parking_lot::Mutex<Option<Arc<Protected>>>,
}

impl Facts {
    /// The protected locations, resolved now or recently (`generation`: the
    /// map watcher's count of changes).
    pub(crate) fn protected(&self, generation: u64) -> Arc<Protected> {
        let mut slot = self.resolved.lock();
        if let Some(p) = slot.as_ref().filter(|p| p.fresh(generation)) {
            return p.clone();
        }
        let p = Arc::new(Protected::resolve(&self.locations, generation));
        *slot = Some(p.clone());
        p
    }
}

/// `path` as the kernel resolves it, as far as it exists (symlinks, then
/// `..` after them); the rest appended as named. A dangling symlink is
/// followed too: a write through it creates its target.
pub(crate) fn kernel_path(path: &Path) -> PathBuf {
    kernel_path_hops(path, 0).0
}

/// [`kernel_path`], with the identity (device, inode) of what it names when
/// all of it exists: the file a tool would open.
pub(crate) fn kernel_path_hops(path: &Path, hops: usize) -> (PathBuf, Option<(u64, u64)>) {
    if let Ok((real, st)) = sys::real_path(path) {
        return (real, Some((st.dev, st.ino)));
    }
    if hops < 40 {
        if let Some(target) = sys::link_target(path) {
            let parent = paths::parent_of(path);
            return kernel_path_hops(&paths::resolve(&parent, &target), hops + 1);
        }
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if parent != path => {
            (kernel_path_hops(parent, hops).0.join(name), None)
        }
        _ => (path.to_path_buf(), None),
    }
}

/// A path's bytes, without a trailing separator (but the root's): the form
/// [`is_under`] compares, far cheaper than `Path`'s component walk, on the
/// every-call path with a hundred locations.
fn bytes(p: &Path) -> &[u8] {
    let b = p.as_os_str().as_encoded_bytes();
    match b {
        [rest @ .., b'/'] if !rest.is_empty() => rest,
        _ => b,
    }
}

/// Whether `p` is `s` or below it, for absolute, lexically normal paths
/// (what `Path::starts_with` says of them).
fn is_under(p: &[u8], s: &[u8]) -> bool {
    p.starts_with(s) && (p.len() == s.len() || s.last() == Some(&b'/') || p[s.len()] == b'/')
}

/// Whether `p` is the directory holding `s` (`s.parent() == Some(p)`).
fn is_parent(p: &[u8], s: &[u8]) -> bool {
    s.len() > p.len() && is_under(s, p) && {
        let rest = &s[p.len()..];
        let rest = rest.strip_prefix(b"/").unwrap_or(rest);
        !rest.is_empty() && !rest.contains(&b'/')
    }
}

/// Why `abs`, opened for `access`, reaches a protected location, if it does.
pub(crate) fn reaches<'p>(
    abs: &Path,
    access: Access,
    prot: &'p Protected,
    guards: &[Guard],
) -> Option<(&'p Location, &'static str)> {
    // The identity comes with the real path (one `open`): no second `stat`.
    let (real, own) = kernel_path_hops(abs, 0);
    let parent = sys::stat(&paths::parent_of(&real))
        .ok()
        .map(|s| (s.dev, s.ino));
    let (real, abs) = (paths::key(&real), paths::key(abs));
    let (real, abs) = (bytes(&real), bytes(&abs));
    for item in prot.items.iter().filter(|i| guards.contains(&i.loc.guard)) {
        let loc = &item.loc;
        let spots = item.spots.iter().map(|s| bytes(s));
        let same = |p: &[u8]| spots.clone().any(|s| s == p);
        let under = |p: &[u8]| spots.clone().any(|s| is_under(p, s));
        let above = |p: &[u8]| spots.clone().any(|s| is_under(s, p) && s != p);
        if loc.refuses(access) {
            if loc.dir {
                if under(real) || under(abs) || (own.is_some() && own == item.id) {
                    return Some((loc, "is or is inside"));
                }
                if parent.is_some() && parent == item.id {
                    return Some((loc, "is inside"));
                }
            } else if same(real) || same(abs) || (own.is_some() && own == item.id) {
                return Some((loc, "is"));
            }
        }
        // A tree read reaches everything below; a listing names what is
        // directly inside.
        if access == Access::Search && loc.secret && (above(real) || above(abs)) {
            return Some((loc, "holds"));
        }
        let names = |p: &[u8]| spots.clone().any(|s| is_parent(p, s));
        if access == Access::List && loc.secret && (names(real) || names(abs)) {
            return Some((loc, "lists"));
        }
        // No tool writes a directory above the map (as before: a writer
        // must not get near it).
        if access == Access::Write
            && loc.guard == Guard::Map
            && loc.dir
            && (above(real) || above(abs))
        {
            return Some((loc, "is a directory above"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte comparisons say what `Path` says of normal absolute paths.
    #[test]
    fn byte_comparisons_agree_with_path() {
        let ps = ["/", "/a", "/a/b", "/a/bc", "/ab", "/a/b/c", "/C:/x", "/C:"];
        for p in ps {
            for s in ps {
                let (pp, sp) = (Path::new(p), Path::new(s));
                assert_eq!(
                    is_under(bytes(pp), bytes(sp)),
                    pp.starts_with(sp),
                    "{p} under {s}"
                );
                assert_eq!(
                    is_parent(bytes(pp), bytes(sp)),
                    sp.parent() == Some(pp),
                    "{p} parent of {s}"
                );
            }
        }
        assert_eq!(bytes(Path::new("/a/b/")), b"/a/b");
        assert_eq!(bytes(Path::new("/")), b"/");
    }
}
