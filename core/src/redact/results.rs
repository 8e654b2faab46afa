//! Tokens out of tool results: every occurrence of a token of the map in
//! force (and, for a short grace period after a rotation, of the previous
//! map) in a tool's result is replaced by `sha256:<12 hex>`, its
//! fingerprint, before any model sees the result. Matching ignores ASCII
//! case (`ABCD…` is the same token to the service that checks it).
//!
//! This catches tokens as written, also inside a longer run of hex digits. It cannot catch a token a shell has
//! encoded (base64, hex dump, split across lines): see docs/threat-model.md.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fingerprint;
use crate::token_map::TokenMap;

/// How long the previous map's tokens are still redacted after a rotation:
/// a result computed just before the swap (a long `exec`) may hold them.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(300);

/// Every token of the map is 64 hex digits (32 bytes).
const TOKEN_HEX: usize = 64;

/// The tokens to redact, by the 32 bytes they encode (so any letter case
/// matches), with the fingerprint each is shown as. Building one hashes each
/// token once; no automaton, so a map at the size cap costs a few tens of
/// milliseconds, not a pattern compile.
pub struct Redactor {
    tokens: HashMap<[u8; 32], String>,
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The 32 bytes 64 hex digits encode.
fn decode(hex: &[u8]) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        out[i] = hex_val(pair[0])? << 4 | hex_val(pair[1])?;
    }
    Some(out)
}

impl Redactor {
    /// A redactor for these tokens (anything that is not 64 hex digits is dropped).
    pub fn new<'a>(tokens: impl IntoIterator<Item = &'a str>) -> Redactor {
        let tokens = tokens
            .into_iter()
            .filter(|t| t.len() == TOKEN_HEX)
            .filter_map(|t| Some((decode(t.as_bytes())?, format!("sha256:{}", fingerprint(t)))))
            .collect();
        Redactor { tokens }
    }

    /// The tokens in force: the current map's, and the previous map's while
    /// `now` is within `grace` of the rotation that replaced it.
    pub fn for_maps(
        current: &TokenMap,
        previous: Option<(&TokenMap, Instant)>,
        grace: Duration,
        now: Instant,
    ) -> Redactor {
        let prev = previous
            .filter(|(_, rotated)| now.saturating_duration_since(*rotated) < grace)
            .map(|(m, _)| m);
        let tokens = current
            .sorted()
            .into_iter()
            .chain(prev.map(TokenMap::sorted).unwrap_or_default())
            .map(|(_, t)| t.expose());
        Redactor::new(tokens)
    }

    /// Whether there is anything to redact at all.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// `text` with every token replaced; borrowed when nothing matched. One
    /// pass: each run of 64 or more hex digits is checked window by window.
    pub fn redact_str<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.is_empty() || text.len() < TOKEN_HEX {
            return Cow::Borrowed(text);
        }
        let bytes = text.as_bytes();
        let mut out: Option<String> = None;
        let (mut copied, mut i) = (0, 0);
        while i + TOKEN_HEX <= bytes.len() {
            // Skip to the end of the hex run if it is too short to hold a token.
            let run = bytes[i..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            if run < TOKEN_HEX {
                i += run + 1;
                continue;
            }
            let end = i + run;
            while i + TOKEN_HEX <= end {
                let fp = decode(&bytes[i..i + TOKEN_HEX]).and_then(|k| self.tokens.get(&k));
                if let Some(fp) = fp {
                    let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    // Hex digits are ASCII, so these are char boundaries.
                    o.push_str(&text[copied..i]);
                    o.push_str(fp);
                    i += TOKEN_HEX;
                    copied = i;
                } else {
                    i += 1;
                }
            }
            i = end;
        }
        match out {
            None => Cow::Borrowed(text),
            Some(mut o) => {
                o.push_str(&text[copied..]);
                Cow::Owned(o)
            }
        }
    }

    /// Redacts every string in `value` (object keys too), in place. Returns
    /// how many strings changed, so the caller can skip copying back when 0.
    pub fn redact_value(&self, value: &mut Value) -> usize {
        if self.is_empty() {
            return 0;
        }
        match value {
            Value::String(s) => match self.redact_str(s) {
                Cow::Borrowed(_) => 0,
                Cow::Owned(r) => {
                    *s = r;
                    1
                }
            },
            Value::Array(items) => items.iter_mut().map(|v| self.redact_value(v)).sum(),
            Value::Object(map) => {
                let mut changed: usize = map.values_mut().map(|v| self.redact_value(v)).sum();
                let renamed: Vec<(String, String)> = map
                    .keys()
                    .filter_map(|k| match self.redact_str(k) {
                        Cow::Owned(r) => Some((k.clone(), r)),
                        Cow::Borrowed(_) => None,
                    })
                    .collect();
                for (old, new) in renamed {
                    if let Some(v) = map.remove(&old) {
                        map.insert(new, v);
                        changed += 1;
                    }
                }
                changed
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

    fn fp(t: &str) -> String {
        format!("sha256:{}", fingerprint(t))
    }

    fn map(pairs: &[(&str, &str)]) -> TokenMap {
        let obj: serde_json::Map<String, Value> = pairs
            .iter()
            .map(|(a, t)| (a.to_string(), Value::String(t.to_string())))
            .collect();
        crate::token_map::parse(Value::Object(obj).to_string().as_bytes())
            .unwrap()
            .map
    }

    #[test]
    fn every_occurrence_in_any_case_becomes_its_fingerprint() {
        let r = Redactor::new([A, B]);
        let text = format!(
            "{{\"paco\":\"{A}\",\"dali\":\"{B}\"}} again {} and {A}{B}",
            A.to_uppercase()
        );
        let out = r.redact_str(&text);
        assert!(!out.to_ascii_lowercase().contains(&A[..20]), "{out}");
        assert!(!out.to_ascii_lowercase().contains(&B[..20]), "{out}");
        assert_eq!(out.matches(&fp(A)).count(), 3, "{out}");
        assert_eq!(out.matches(&fp(B)).count(), 2, "{out}");
        assert!(out.starts_with("{\"paco\":\"sha256:") && out.contains(" again sha256:"));
    }

    #[test]
    fn text_without_tokens_is_borrowed_untouched() {
        let r = Redactor::new([A]);
        let text = format!("{} is a prefix only, and é ünïcode", &A[..63]);
        assert!(matches!(r.redact_str(&text), Cow::Borrowed(_)));
        assert!(matches!(r.redact_str("short"), Cow::Borrowed(_)));
        assert!(Redactor::new([]).is_empty());
        assert!(
            Redactor::new(["abc"]).is_empty(),
            "short patterns are never searched"
        );
    }

    #[test]
    fn unicode_around_a_token_survives() {
        let r = Redactor::new([A]);
        let text = format!("«{A}»✓");
        assert_eq!(r.redact_str(&text), format!("«{}»✓", fp(A)));
    }

    #[test]
    fn every_string_of_a_result_is_redacted_keys_too() {
        let r = Redactor::new([A]);
        let mut v = json!({
            "content": [{"type": "text", "text": format!("token: {A}")}],
            "details": {"map": {A: "paco"}, "list": [A, 3, null, {"deep": [A.to_uppercase()]}]},
        });
        assert_eq!(r.redact_value(&mut v), 4);
        let s = v.to_string();
        assert!(!s.to_ascii_lowercase().contains(&A[..20]), "{s}");
        assert_eq!(v["details"]["map"][fp(A)], "paco");
        let mut clean = json!({"content": [{"type": "text", "text": "nothing"}]});
        assert_eq!(r.redact_value(&mut clean), 0);
    }

    #[test]
    fn the_previous_maps_tokens_count_only_within_the_grace_period() {
        let current = map(&[("paco", A)]);
        let previous = map(&[("paco", B)]);
        let rotated = Instant::now();
        let grace = Duration::from_secs(300);
        let text = format!("{A} {B}");
        let within = Redactor::for_maps(
            &current,
            Some((&previous, rotated)),
            grace,
            rotated + Duration::from_secs(299),
        );
        assert_eq!(within.redact_str(&text), format!("{} {}", fp(A), fp(B)));
        let after =
            Redactor::for_maps(&current, Some((&previous, rotated)), grace, rotated + grace);
        assert_eq!(after.redact_str(&text), format!("{} {B}", fp(A)));
        let none = Redactor::for_maps(&current, None, grace, rotated);
        assert_eq!(none.redact_str(&text), format!("{} {B}", fp(A)));
    }

    #[test]
    fn the_fingerprint_is_the_one_doctor_shows() {
        let m = map(&[("paco", A)]);
        let r = Redactor::for_maps(&m, None, DEFAULT_GRACE, Instant::now());
        let shown = m.get("paco").unwrap().fingerprint();
        assert_eq!(r.redact_str(A), format!("sha256:{shown}"));
    }
}
