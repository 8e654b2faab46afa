//! The token map: `{ "<agentId>": "<64 hex token>" }`, parsed, validated and
//! read through the permission gate. Pure Rust; no N-API types.

mod gate;

pub use gate::{read_map, GateOptions, MapFile};

use std::collections::{HashMap, HashSet};

use rustc_hash::FxBuildHasher;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use crate::redact;

/// Largest map accepted, in bytes. 100,000 agents take about 9.5 MB in the
/// canonical format (see BENCHMARKS.md); 16 MiB leaves room for whitespace and
/// long ids while keeping a load well under a second.
pub const DEFAULT_MAX_MAP_BYTES: u64 = 16 * 1024 * 1024;

/// A 64-hex-digit secret. Its `Debug` and `Display` show only the fingerprint,
/// so no format string can print it by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(Arc<str>);

impl Token {
    /// The secret itself, for handing to the tool call. Nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn fingerprint(&self) -> String {
        redact::fingerprint(&self.0)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(sha256:{})", self.fingerprint())
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.fingerprint())
    }
}

/// OpenClaw's agent id rule: `^[a-z0-9][a-z0-9_-]{0,63}$`.
pub fn is_agent_id(id: &str) -> bool {
    let b = id.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b[1..]
            .iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
}

/// Exactly 64 hex digits (either case).
pub fn is_token(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|c| c.is_ascii_hexdigit())
}

/// One validated snapshot of the map. Lookups are exact: there is no prototype
/// chain here, so `__proto__` resolves only if the file holds it (and it
/// cannot, since it is not a valid agent id).
#[derive(Debug, Default, Clone)]
pub struct TokenMap {
    tokens: HashMap<Box<str>, Token, FxBuildHasher>,
}

impl TokenMap {
    pub fn get(&self, agent_id: &str) -> Option<&Token> {
        self.tokens.get(agent_id)
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The tokens it serves, as a set: what a reload compares other tokens
    /// with, in one pass however large the map is.
    pub fn token_set(&self) -> HashSet<&str, FxBuildHasher> {
        self.tokens.values().map(Token::expose).collect()
    }

    /// Agents in a stable (sorted) order, for operator output.
    pub fn sorted(&self) -> Vec<(&str, &Token)> {
        let mut v: Vec<_> = self.tokens.iter().map(|(k, t)| (&**k, t)).collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
    }
}

/// Why a map file as a whole was refused. It never holds file content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapError {
    pub kind: MapErrorKind,
    /// What logs, errors and `stats().lastError` show: the problem, followed
    /// by ` (fix: …)` when the refusal was made [`MapError::with_fix`].
    pub message: String,
    /// What to do about it, for tools (doctor, audit) that show the problem
    /// and its fix apart: they read it here, never out of `message`.
    pub fix: Option<String>,
    /// `message` without the fix it quotes.
    problem: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapErrorKind {
    NotFound,
    Io,
    Unsafe,
    TooLarge,
    Invalid,
}

impl MapError {
    pub fn new(kind: MapErrorKind, message: impl Into<String>) -> Self {
        let message = redact::scrub(&message.into());
        Self {
            kind,
            problem: message.clone(),
            message,
            fix: None,
        }
    }

    /// A refusal whose message ends with its fix: `"<problem> (fix: <fix>)"`.
    pub fn with_fix(kind: MapErrorKind, problem: &str, fix: &str) -> Self {
        let (problem, fix) = (redact::scrub(problem), redact::scrub(fix));
        Self {
            kind,
            message: format!("{problem} (fix: {fix})"),
            problem,
            fix: Some(fix),
        }
    }

    /// The same refusal with a fix that its message does not quote.
    fn fixed_by(self, fix: &str) -> Self {
        Self {
            fix: Some(fix.to_owned()),
            ..self
        }
    }

    /// The problem alone: `message` without the fix it may quote.
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MapError {}

/// A parsed map plus one warning per entry that was skipped.
#[derive(Debug)]
pub struct Parsed {
    pub map: TokenMap,
    pub skipped: Vec<String>,
}

/// Parses map file content. The whole file is refused on a syntax error, a
/// non-object top level, a duplicate agent id or a token given to two
/// agents; single bad entries are skipped with a warning naming the agent
/// (never the token).
///
/// Duplicate keys refuse the file: JSON parsers disagree on which duplicate
/// wins, so a file with two tokens for one agent is ambiguous about who holds
/// which credential, and we would rather keep the last good map than guess.
pub fn parse(bytes: &[u8]) -> Result<Parsed, MapError> {
    // RFC 8259 lets a parser ignore a byte order mark; editors on some systems add one.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let duplicate = std::cell::Cell::new(false);
    let entries = {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let refused = |e: serde_json::Error| {
            json_error(&e).fixed_by(if duplicate.get() {
                DUPLICATE_FIX
            } else {
                JSON_FIX
            })
        };
        let entries = EntriesVisitor {
            duplicate: &duplicate,
        }
        .deserialize(&mut de)
        .map_err(refused)?;
        de.end().map_err(refused)?;
        entries.0
    };

    let mut tokens = HashMap::with_capacity_and_hasher(entries.len(), FxBuildHasher);
    // Who holds each credential (its 32 bytes: tokens differing only in case are one).
    let mut holders: HashMap<[u8; 32], Box<str>> = HashMap::with_capacity(entries.len());
    let mut skipped = Vec::new();
    for (agent, value) in entries {
        if !is_agent_id(&agent) {
            skipped.push(format!(
                "agent id \"{}\" is not a valid OpenClaw agent id (^[a-z0-9][a-z0-9_-]{{0,63}}$); entry skipped",
                redact::shown(&agent)
            ));
            continue;
        }
        match value {
            serde_json::Value::String(s) if is_token(&s) => {
                let agent = agent.into_boxed_str();
                if let Some(first) = holders.insert(token_bytes(&s), agent.clone()) {
                    return Err(shared_token(&first, &agent, &s));
                }
                tokens.insert(agent, Token(Arc::from(s)));
            }
            serde_json::Value::String(_) => skipped.push(format!(
                "agent \"{}\": token is not 64 hex characters; entry skipped",
                redact::shown(&agent)
            )),
            other => skipped.push(format!(
                "agent \"{}\": token must be a string, found {}; entry skipped",
                redact::shown(&agent),
                json_type(&other)
            )),
        }
    }
    Ok(Parsed {
        map: TokenMap { tokens },
        skipped,
    })
}

/// The bytes a (validated, 64-hex) token stands for.
fn token_bytes(token: &str) -> [u8; 32] {
    let digit = |c: u8| (c as char).to_digit(16).expect("validated hex") as u8;
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(token.as_bytes().chunks_exact(2)) {
        *byte = digit(pair[0]) << 4 | digit(pair[1]);
    }
    out
}

/// One token for two agents refuses the file, like a duplicate agent id: the
/// server maps a token to one user and scope, so it can't tell the two apart,
/// and the map can't say which of them really owns it.
fn shared_token(first: &str, second: &str, token: &str) -> MapError {
    MapError::new(
        MapErrorKind::Invalid,
        format!(
            "agents \"{}\" and \"{}\" {SHARED_TOKEN} (sha256:{}), so its owner is ambiguous; give each agent its own token",
            redact::shown(first),
            redact::shown(second),
            redact::fingerprint(token)
        ),
    )
    .fixed_by(SHARED_TOKEN_FIX)
}

/// In the message of a map refused for a shared token.
pub const SHARED_TOKEN: &str = "have the same token";

const SHARED_TOKEN_FIX: &str = "mint a token for each agent and rewrite the map (the server can't tell two agents with one token apart); claw-identity write-map refuses shared tokens";
const DUPLICATE_FIX: &str = "keep one entry per agent: with two, nobody can tell which token the agent holds; claw-identity write-map refuses duplicates";
const JSON_FIX: &str = "rewrite it as a JSON object {\"<agentId>\": \"<64 hex token>\"}; claw-identity write-map validates a map before it writes it";

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn json_error(e: &serde_json::Error) -> MapError {
    // serde_json's syntax errors carry only a position; our own visitor errors
    // below never quote content. Scrub anyway.
    MapError::new(
        MapErrorKind::Invalid,
        format!("not a valid token map: {e}; expected a JSON object {{\"<agentId>\": \"<64 hex token>\"}}"),
    )
}

/// Entries in file order; a duplicate agent id refuses the file.
struct RawEntries(Vec<(String, serde_json::Value)>);

/// Reads [`RawEntries`], and sets `duplicate` when it refuses a duplicate
/// (the error itself is serde's, with the position it adds).
struct EntriesVisitor<'a> {
    duplicate: &'a std::cell::Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for EntriesVisitor<'_> {
    type Value = RawEntries;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawEntries, D::Error> {
        d.deserialize_any(self)
    }
}

macro_rules! refuse_top_level {
    ($($method:ident($ty:ty) => $what:literal),* $(,)?) => {
        $(fn $method<E: de::Error>(self, _: $ty) -> Result<Self::Value, E> {
            // Never `invalid_type(Unexpected::Str(v))`: that would quote the value.
            Err(E::custom(concat!("the top level is ", $what, ", not an object")))
        })*
    };
}

impl<'de> Visitor<'de> for EntriesVisitor<'_> {
    type Value = RawEntries;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of agent id to token")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<RawEntries, A::Error> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(access.size_hint().unwrap_or(0));
        while let Some(key) = access.next_key::<String>()? {
            let value: serde_json::Value = access.next_value()?;
            if !seen.insert(key.clone()) {
                self.duplicate.set(true);
                return Err(de::Error::custom(format!(
                    "agent id \"{}\" appears more than once (ambiguous owner); remove the duplicate",
                    redact::shown(&key)
                )));
            }
            out.push((key, value));
        }
        Ok(RawEntries(out))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<RawEntries, A::Error> {
        Err(de::Error::custom(
            "the top level is an array, not an object",
        ))
    }

    fn visit_unit<E: de::Error>(self) -> Result<RawEntries, E> {
        Err(E::custom("the top level is null, not an object"))
    }

    refuse_top_level! {
        visit_bool(bool) => "a boolean",
        visit_i64(i64) => "a number",
        visit_u64(u64) => "a number",
        visit_f64(f64) => "a number",
        visit_str(&str) => "a string",
        visit_borrowed_str(&'de str) => "a string",
        visit_string(String) => "a string",
    }
}

/// Every run of exactly 64 hex digits in `bytes`: the tokens a file holds,
/// whatever else it holds, for the redactor (never served). Sorted, each
/// once, in time linear in the file (a map at the size cap holds 180,000).
pub fn tokens_in(bytes: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_hexdigit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
            i += 1;
        }
        if i - start == 64 {
            out.push(String::from_utf8_lossy(&bytes[start..i]).to_ascii_lowercase());
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The bytes of the map file as it is, whatever the gate thinks of it, to
/// learn the tokens of a map that is not served (for the redactor only):
/// a regular file, at most `max_bytes`, opened without blocking on a FIFO.
pub fn read_unserved(path: &std::path::Path, max_bytes: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = crate::sys::open_nonblocking(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max_bytes {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub use crate::testing::{T1, T2};

    fn ok(json: &str) -> Parsed {
        parse(json.as_bytes()).expect("map parses")
    }

    fn err(json: &[u8]) -> MapError {
        parse(json).expect_err("map is refused")
    }

    #[test]
    fn valid_map_parses() {
        let p = ok(&format!(
            r#"{{"paco--francis": "{T1}", "paco--dali": "{T2}"}}"#
        ));
        assert_eq!(p.map.len(), 2);
        assert_eq!(p.map.get("paco--francis").unwrap().expose(), T1);
        assert!(p.skipped.is_empty());
    }

    #[test]
    fn empty_object_is_a_valid_empty_map() {
        assert!(ok("{}").map.is_empty());
    }

    #[test]
    fn bad_entries_are_skipped_with_a_warning_naming_the_agent_only() {
        let p = ok(&format!(
            r#"{{"ok": "{T1}", "short": "abc", "Upper": "{T2}", "num": 5, "{T2}": "x"}}"#
        ));
        assert_eq!(p.map.len(), 1);
        assert_eq!(p.skipped.len(), 4);
        let all = p.skipped.join("\n");
        assert!(all.contains("\"short\": token is not 64 hex"));
        assert!(all.contains("\"Upper\" is not a valid OpenClaw agent id"));
        assert!(all.contains("\"num\": token must be a string, found a number"));
        // A token pasted as a key is a valid-looking id: it must not be printed.
        assert!(!all.contains(&T2[..16]), "{all}");
    }

    #[test]
    fn duplicate_keys_refuse_the_whole_file() {
        let e = err(format!(r#"{{"a": "{T1}", "a": "{T2}"}}"#).as_bytes());
        assert_eq!(e.kind, MapErrorKind::Invalid);
        assert!(
            e.message.contains("\"a\" appears more than once"),
            "{}",
            e.message
        );
    }

    #[test]
    fn one_token_for_two_agents_refuses_the_whole_file() {
        let fp = redact::fingerprint(T1);
        // Agents of two users, of one user, and the same token in another case.
        for (json, a, b) in [
            (
                format!(r#"{{"paco--francis": "{T1}", "x": "{T2}", "pepito--atlas": "{T1}"}}"#),
                "paco--francis",
                "pepito--atlas",
            ),
            (
                format!(r#"{{"paco--francis": "{T1}", "paco--dali": "{T1}"}}"#),
                "paco--francis",
                "paco--dali",
            ),
            (
                format!(
                    r#"{{"b": "{}", "a": "{}"}}"#,
                    "AB".repeat(32),
                    "ab".repeat(32)
                ),
                "b",
                "a",
            ),
        ] {
            let e = err(json.as_bytes());
            assert_eq!(e.kind, MapErrorKind::Invalid);
            assert!(
                e.message.starts_with(&format!(
                    "agents \"{a}\" and \"{b}\" {SHARED_TOKEN} (sha256:"
                )),
                "{}",
                e.message
            );
            // Nothing token-like: the fingerprint stands for the token.
            assert_eq!(redact::scrub(&e.message), e.message);
        }
        let e = err(format!(r#"{{"a": "{T1}", "b": "{T1}"}}"#).as_bytes());
        assert!(
            e.message.contains(&format!("(sha256:{fp})")),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_bom_is_ignored() {
        let mut bytes = b"\xEF\xBB\xBF".to_vec();
        bytes.extend_from_slice(format!(r#"{{"a": "{T1}"}}"#).as_bytes());
        assert_eq!(parse(&bytes).unwrap().map.len(), 1);
    }

    #[test]
    fn non_utf8_is_refused() {
        let e = err(b"{\"a\": \"\xff\xfe\"}");
        assert_eq!(e.kind, MapErrorKind::Invalid);
    }

    #[test]
    fn a_non_object_top_level_is_refused_without_quoting_it() {
        let e = err(format!("\"{T1}\"").as_bytes());
        assert!(
            e.message.contains("the top level is a string"),
            "{}",
            e.message
        );
        assert!(!e.message.contains(&T1[..16]));
        for doc in ["[]", "null", "5", "true"] {
            assert_eq!(err(doc.as_bytes()).kind, MapErrorKind::Invalid, "{doc}");
        }
    }

    #[test]
    fn truncated_json_is_refused() {
        let full = format!(r#"{{"a": "{T1}"}}"#);
        for cut in 0..full.len() {
            assert!(parse(&full.as_bytes()[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn trailing_garbage_is_refused() {
        assert!(parse(format!(r#"{{"a": "{T1}"}} x"#).as_bytes()).is_err());
    }

    #[test]
    fn agent_id_rule_matches_openclaw() {
        for good in ["a", "0", "paco--francis", "a_b-c", &"a".repeat(64)] {
            assert!(is_agent_id(good), "{good}");
        }
        for bad in [
            "",
            "-a",
            "_a",
            "A",
            "a.b",
            "a b",
            "__proto__",
            &"a".repeat(65),
            "é",
        ] {
            assert!(!is_agent_id(bad), "{bad}");
        }
    }

    #[test]
    fn token_debug_and_display_show_only_a_fingerprint() {
        let p = ok(&format!(r#"{{"a": "{T1}"}}"#));
        let t = p.map.get("a").unwrap();
        assert!(!format!("{t:?} {t}").contains(&T1[..16]));
    }

    #[test]
    fn each_refusal_of_the_content_carries_its_own_fix_outside_its_message() {
        let fix = |json: &str| {
            let e = err(json.as_bytes());
            assert_eq!(e.problem(), e.message, "the message quotes no fix");
            e.fix.expect("a fix")
        };
        assert!(fix("{").starts_with("rewrite it as a JSON object"));
        assert!(fix("[]").starts_with("rewrite it as a JSON object"));
        assert!(fix(&format!(r#"{{"a": "{T1}", "a": "{T2}"}}"#))
            .starts_with("keep one entry per agent"));
        assert!(fix(&format!(r#"{{"a": "{T1}", "b": "{T1}"}}"#))
            .starts_with("mint a token for each agent"));
    }
}
