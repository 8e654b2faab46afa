//! Windows: who owns a file and who else may read or write it, from its
//! owner and DACL. Windows files have no owner uid and no mode bits, so on
//! a Windows host (the WebAssembly build) the permission gate asks this
//! instead. The facts come from OpenClaw's own reader, `readOwnerAndDacl`
//! of `@openclaw/fs-safe/permissions` (its native helper, or Windows
//! PowerShell), in that function's shape; what they mean is decided here,
//! by the policy of fs-safe's secure read (`readSecureFile`,
//! `windows-security-facts.js` `summarize` and
//! `validateSecureWindowsSecurityFacts`): the owner must be the current
//! user, SYSTEM or Administrators; an allow entry for anyone else that
//! grants a write right lets others write, one that grants a read right
//! lets others read; a missing DACL lets everyone do both; deny entries
//! are not subtracted; and facts that are incomplete, of an entry type it
//! can't read, or from a network share can't be verified.

use serde::Deserialize;

/// LocalSystem.
pub const SYSTEM: &str = "s-1-5-18";
/// BUILTIN\Administrators.
pub const ADMINISTRATORS: &str = "s-1-5-32-544";

/// Rights that read the content or its attributes: GENERIC_ALL,
/// GENERIC_READ, FILE_READ_DATA, FILE_READ_EA, FILE_READ_ATTRIBUTES
/// (fs-safe's secure-read mask, 0x90000089).
const READ_RIGHTS: u32 = 0x9000_0089;
/// Rights that change the file, its ACL or its owner, or (on a
/// directory) add or delete entries: GENERIC_ALL, GENERIC_WRITE, DELETE,
/// WRITE_DAC, WRITE_OWNER, FILE_WRITE_DATA / ADD_FILE, FILE_APPEND_DATA /
/// ADD_SUBDIRECTORY, FILE_WRITE_EA, FILE_DELETE_CHILD, FILE_WRITE_ATTRIBUTES
/// (fs-safe's mask, 0x500d0156).
const WRITE_RIGHTS: u32 = 0x500d_0156;

/// A file's owner and DACL: `readOwnerAndDacl`'s result (status "supported").
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub owner_sid: String,
    pub current_user_sid: String,
    pub dacl_present: bool,
    pub is_local: bool,
    pub complete: bool,
    #[serde(default)]
    pub unsupported_ace_types: Vec<u32>,
    pub aces: Vec<Ace>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ace {
    pub sid: String,
    pub mask: u32,
    pub ace_type: AceType,
    pub flags: AceFlags,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AceType {
    Allow,
    Deny,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AceFlags {
    /// The entry applies to children only, not to this file.
    pub inherit_only: bool,
}

/// What a descriptor lets in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The facts can't be trusted to say who may use the file, and why.
    Unverifiable(String),
    Checked {
        /// The owner, shown, when it is not the current user, SYSTEM or Administrators.
        foreign_owner: Option<String>,
        /// Everyone else who may write it, shown.
        writers: Vec<String>,
        /// Everyone else who may read it, shown.
        readers: Vec<String>,
    },
}

fn is_sid(s: &str) -> bool {
    let mut parts = s.split('-');
    parts.next() == Some("s")
        && parts.clone().count() >= 3
        && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A SID as people write it (`S-1-5-18`), with its well-known name when it has one.
pub fn show(sid: &str) -> String {
    let name = match sid {
        SYSTEM => "SYSTEM",
        ADMINISTRATORS => "Administrators",
        "s-1-1-0" => "Everyone",
        "s-1-5-11" => "Authenticated Users",
        "s-1-5-32-545" => "Users",
        "s-1-5-32-546" => "Guests",
        "s-1-5-7" => "Anonymous Logon",
        "s-1-5-4" => "Interactive",
        "s-1-5-2" => "Network",
        "s-1-3-0" => "Creator Owner",
        _ => return sid.to_ascii_uppercase(),
    };
    format!("{name} ({})", sid.to_ascii_uppercase())
}

impl Descriptor {
    /// The current user, as icacls takes it (`*S-1-5-21-...`).
    pub fn me(&self) -> String {
        format!("*{}", self.current_user_sid.to_ascii_uppercase())
    }

    /// Who may use the file.
    pub fn verdict(&self) -> Verdict {
        let sids = std::iter::once(&self.owner_sid)
            .chain(std::iter::once(&self.current_user_sid))
            .chain(self.aces.iter().map(|a| &a.sid));
        if let Some(bad) = sids.into_iter().find(|s| !is_sid(s)) {
            return Verdict::Unverifiable(format!(
                "the ACL reader gave {bad:?} where a SID belongs"
            ));
        }
        if !self.complete || !self.unsupported_ace_types.is_empty() {
            return Verdict::Unverifiable(format!(
                "its DACL holds entries of a type that can't be checked ({:?})",
                self.unsupported_ace_types
            ));
        }
        if !self.is_local {
            return Verdict::Unverifiable(
                "it is on a network share, where the ACL the server enforces can't be checked from here".into(),
            );
        }
        let trusted =
            |sid: &str| sid == self.current_user_sid || sid == SYSTEM || sid == ADMINISTRATORS;
        let foreign_owner = (!trusted(&self.owner_sid)).then(|| show(&self.owner_sid));
        let (mut writers, mut readers) = (Vec::new(), Vec::new());
        if !self.dacl_present {
            let everyone = "everyone (it has no DACL)".to_owned();
            writers.push(everyone.clone());
            readers.push(everyone);
        }
        for ace in &self.aces {
            if ace.ace_type != AceType::Allow || ace.flags.inherit_only || trusted(&ace.sid) {
                continue;
            }
            let who = show(&ace.sid);
            if ace.mask & WRITE_RIGHTS != 0 && !writers.contains(&who) {
                writers.push(who.clone());
            }
            if ace.mask & READ_RIGHTS != 0 && !readers.contains(&who) {
                readers.push(who);
            }
        }
        Verdict::Checked {
            foreign_owner,
            writers,
            readers,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "s-1-5-21-1004336348-1177238915-682003330-1001";
    const BOB: &str = "s-1-5-21-1004336348-1177238915-682003330-1002";
    const FULL: u32 = 0x001f_01ff;
    const READ_EXECUTE: u32 = 0x0012_00a9;
    const MODIFY: u32 = 0x0013_01bf;

    fn ace(sid: &str, mask: u32) -> Ace {
        Ace {
            sid: sid.into(),
            mask,
            ace_type: AceType::Allow,
            flags: AceFlags {
                inherit_only: false,
            },
        }
    }

    /// A file in a user's profile: owned by them, SYSTEM, Administrators and them with full control.
    fn profile_file() -> Descriptor {
        Descriptor {
            owner_sid: ME.into(),
            current_user_sid: ME.into(),
            dacl_present: true,
            is_local: true,
            complete: true,
            unsupported_ace_types: vec![],
            aces: vec![ace(SYSTEM, FULL), ace(ADMINISTRATORS, FULL), ace(ME, FULL)],
        }
    }

    fn checked(d: &Descriptor) -> (Option<String>, Vec<String>, Vec<String>) {
        match d.verdict() {
            Verdict::Checked {
                foreign_owner,
                writers,
                readers,
            } => (foreign_owner, writers, readers),
            v => panic!("expected a checked verdict, got {v:?}"),
        }
    }

    #[test]
    fn a_file_only_its_owner_system_and_administrators_reach_is_private() {
        assert_eq!(checked(&profile_file()), (None, vec![], vec![]));
    }

    #[test]
    fn users_who_may_modify_are_writers_and_readers() {
        let mut d = profile_file();
        d.aces.push(ace("s-1-5-32-545", MODIFY));
        let (_, writers, readers) = checked(&d);
        assert_eq!(writers, ["Users (S-1-5-32-545)"]);
        assert_eq!(readers, ["Users (S-1-5-32-545)"]);
    }

    #[test]
    fn read_and_execute_for_everyone_is_a_reader_only() {
        let mut d = profile_file();
        d.aces.push(ace("s-1-1-0", READ_EXECUTE));
        let (_, writers, readers) = checked(&d);
        assert!(writers.is_empty());
        assert_eq!(readers, ["Everyone (S-1-1-0)"]);
    }

    #[test]
    fn another_user_with_write_attributes_only_is_a_writer() {
        let mut d = profile_file();
        d.aces.push(ace(BOB, 0x100));
        assert_eq!(checked(&d).1, [BOB.to_ascii_uppercase()]);
    }

    #[test]
    fn a_deny_entry_takes_nothing_away_and_an_inherit_only_one_does_not_apply() {
        let mut d = profile_file();
        let mut deny = ace("s-1-1-0", FULL);
        deny.ace_type = AceType::Deny;
        let mut inherit_only = ace(BOB, FULL);
        inherit_only.flags.inherit_only = true;
        d.aces.push(deny);
        d.aces.push(inherit_only);
        assert_eq!(checked(&d), (None, vec![], vec![]));
        d.aces.push(ace(BOB, FULL));
        assert_eq!(checked(&d).1, [BOB.to_ascii_uppercase()]);
    }

    #[test]
    fn no_dacl_lets_everyone_in() {
        let mut d = profile_file();
        d.dacl_present = false;
        d.aces.clear();
        let (_, writers, readers) = checked(&d);
        assert_eq!(writers, ["everyone (it has no DACL)"]);
        assert_eq!(readers, ["everyone (it has no DACL)"]);
    }

    #[test]
    fn the_owner_may_be_the_user_system_or_administrators_only() {
        for owner in [ME, SYSTEM, ADMINISTRATORS] {
            let mut d = profile_file();
            d.owner_sid = owner.into();
            assert_eq!(checked(&d).0, None, "{owner}");
        }
        let mut d = profile_file();
        d.owner_sid = BOB.into();
        assert_eq!(checked(&d).0, Some(BOB.to_ascii_uppercase()));
    }

    #[test]
    fn facts_that_cannot_be_trusted_are_unverifiable() {
        let mut incomplete = profile_file();
        incomplete.complete = false;
        incomplete.unsupported_ace_types = vec![5];
        let mut remote = profile_file();
        remote.is_local = false;
        let mut garbled = profile_file();
        garbled.aces.push(ace("Everyone", FULL));
        for d in [incomplete, remote, garbled] {
            assert!(matches!(d.verdict(), Verdict::Unverifiable(_)), "{d:?}");
        }
    }

    #[test]
    fn it_reads_fs_safe_read_owner_and_dacl_output() {
        let json = r#"{"status":"supported","ownerSid":"s-1-5-21-1-2-3-1001","currentUserSid":"s-1-5-21-1-2-3-1001",
          "daclPresent":true,"isLocal":true,"complete":true,"unsupportedAceTypes":[],
          "aces":[{"sid":"s-1-5-18","mask":2032127,"aceType":"allow","flags":{"raw":16,"objectInherit":false,
          "containerInherit":false,"noPropagateInherit":false,"inheritOnly":false,"inherited":true,
          "successfulAccess":false,"failedAccess":false}}]}"#;
        let d: Descriptor = serde_json::from_str(json).unwrap();
        assert_eq!(d.aces[0].mask, FULL);
        assert_eq!(checked(&d), (None, vec![], vec![]));
        assert_eq!(d.me(), "*S-1-5-21-1-2-3-1001");
    }
}
