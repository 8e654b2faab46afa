//! Single-use handles: what the trusted policy writes into a proxied call
//! instead of the token. A handle is 192 random bits, names nothing, and
//! is good once, for one agent, one server and one tool, until it expires.
//! It holds no token: the proxy reads the agent's token from the map in
//! force when it redeems it, so a token rotated or revoked meanwhile is
//! never sent.
//!
//! One store per process, not per layer: the plugin's `register()` runs
//! several times and each run may put a new layer in force; a call minted
//! under one must still redeem under the next.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Every handle starts with this, so a log, a hook or an operator sees at
/// once that the value is a handle, not a token.
pub const PREFIX: &str = "clh1_";
/// Random bytes per handle (192 bits; the issue asks at least 128).
const RANDOM_BYTES: usize = 24;
/// Live handles at most: a flood of calls that are never redeemed (Tool
/// Search mints one per inner call) cannot grow the store without bound.
/// Past it, expired handles are swept; if none is, the call is refused.
pub const CAP: usize = 65_536;

/// What a handle was minted for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub agent: String,
    /// The `mcp.servers` key the call goes to.
    pub server: String,
    /// The tool id as the hook saw it (`claw-os__claw_notes`).
    pub tool: String,
    /// OpenClaw's tool call id, when it gave one: for the log.
    pub call_id: Option<String>,
}

struct Entry {
    grant: Grant,
    expires: Instant,
}

/// Why a handle does not redeem. Never says which part of a guess was right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not a handle's shape, or no such handle (never minted, or spent).
    Unknown,
    Expired,
    /// Minted for another server or tool: spent now all the same.
    Mismatch,
}

#[derive(Default)]
pub struct Handles {
    live: Mutex<HashMap<String, Entry>>,
}

/// The process's store.
pub fn store() -> &'static Handles {
    static STORE: OnceLock<Handles> = OnceLock::new();
    STORE.get_or_init(Handles::default)
}

/// A fresh handle: [`PREFIX`] and 32 base64url characters.
fn fresh() -> Option<String> {
    let mut bytes = [0u8; RANDOM_BYTES];
    getrandom::fill(&mut bytes).ok()?;
    let b64 = crate::openclaw::base64::encode(&bytes)
        .replace('+', "-")
        .replace('/', "_");
    Some(format!("{PREFIX}{b64}"))
}

impl Handles {
    /// A handle for `grant`, good for `ttl`; `None` when the system has no
    /// randomness to give or the store is full of live handles (the call is
    /// then refused, never sent with a guessable value).
    pub fn mint(&self, grant: Grant, ttl: Duration) -> Option<String> {
        let now = Instant::now();
        let mut live = self.live.lock();
        if live.len() >= CAP {
            live.retain(|_, e| e.expires > now);
            if live.len() >= CAP {
                return None;
            }
        }
        let handle = fresh()?;
        live.insert(
            handle.clone(),
            Entry {
                grant,
                expires: now + ttl,
            },
        );
        Some(handle)
    }

    /// Spends `handle` (whatever the outcome: a handle shown once is never
    /// good again) and gives its grant if it is live and was minted for
    /// `server`'s tool `tool_id`.
    pub fn redeem(&self, handle: &str, server: &str, tool_id: &str) -> Result<Grant, Refused> {
        if !handle.starts_with(PREFIX) {
            return Err(Refused::Unknown);
        }
        let entry = self.live.lock().remove(handle).ok_or(Refused::Unknown)?;
        if entry.expires <= Instant::now() {
            return Err(Refused::Expired);
        }
        if entry.grant.server != server || entry.grant.tool != tool_id {
            return Err(Refused::Mismatch);
        }
        Ok(entry.grant)
    }

    pub fn live(&self) -> usize {
        self.live.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant() -> Grant {
        Grant {
            agent: "paco--francis".into(),
            server: "claw-os".into(),
            tool: "claw-os__claw_notes".into(),
            call_id: Some("call_1".into()),
        }
    }

    #[test]
    fn a_handle_is_long_random_and_good_once() {
        let h = Handles::default();
        let a = h.mint(grant(), Duration::from_secs(60)).unwrap();
        let b = h.mint(grant(), Duration::from_secs(60)).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), PREFIX.len() + 32);
        assert!(
            a[PREFIX.len()..]
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'),
            "{a}"
        );
        assert_eq!(h.redeem(&a, "claw-os", "claw-os__claw_notes"), Ok(grant()));
        assert_eq!(
            h.redeem(&a, "claw-os", "claw-os__claw_notes"),
            Err(Refused::Unknown)
        );
        assert_eq!(h.live(), 1);
    }

    #[test]
    fn expired_forged_and_mismatched_handles_are_refused_and_spent() {
        let h = Handles::default();
        let gone = h.mint(grant(), Duration::ZERO).unwrap();
        assert_eq!(
            h.redeem(&gone, "claw-os", "claw-os__claw_notes"),
            Err(Refused::Expired)
        );
        let other = h.mint(grant(), Duration::from_secs(60)).unwrap();
        assert_eq!(
            h.redeem(&other, "claw-os", "claw-os__claw_tasks"),
            Err(Refused::Mismatch)
        );
        assert_eq!(
            h.redeem(&other, "claw-os", "claw-os__claw_notes"),
            Err(Refused::Unknown)
        );
        let elsewhere = h.mint(grant(), Duration::from_secs(60)).unwrap();
        assert_eq!(
            h.redeem(&elsewhere, "notes", "claw-os__claw_notes"),
            Err(Refused::Mismatch)
        );
        let forged = format!("{PREFIX}{}", "A".repeat(32));
        assert_eq!(
            h.redeem(&forged, "claw-os", "claw-os__claw_notes"),
            Err(Refused::Unknown)
        );
        assert_eq!(
            h.redeem("0123abcd", "claw-os", "claw-os__claw_notes"),
            Err(Refused::Unknown)
        );
        assert_eq!(h.live(), 0);
    }

    #[test]
    fn a_full_store_sweeps_the_expired_and_refuses_past_its_cap() {
        let h = Handles::default();
        for _ in 0..CAP {
            h.mint(grant(), Duration::ZERO).unwrap();
        }
        // All expired: swept, so the next one fits.
        let live = h.mint(grant(), Duration::from_secs(60)).unwrap();
        assert_eq!(h.live(), 1);
        for _ in 1..CAP {
            h.mint(grant(), Duration::from_secs(60)).unwrap();
        }
        assert_eq!(h.mint(grant(), Duration::from_secs(60)), None);
        assert!(h.redeem(&live, "claw-os", "claw-os__claw_notes").is_ok());
    }
}
