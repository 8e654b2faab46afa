//! Tokens out of tool results: every piece of a token the redactor knows
//! that is longer than [`MAX_SHOWN`] hex digits, in any letter case, is
//! replaced by `sha256:<12 hex>`, the whole token's fingerprint, before any
//! model sees the result. A whole token is such a piece; so are the 63
//! digits a `read` with an offset or a line cap leaves, which with 16
//! guesses would give the token back.
//!
//! How it stays at memory speed on text with no token (most results):
//! - a run of 17 hex digits covers one position of every residue mod 17, so
//!   only every 17th byte is looked at until one is a hex digit, and only
//!   runs of 17 or more are searched;
//! - each token is indexed by its 8 aligned 8-digit pieces (offsets 0, 8,
//!   …, 56): a 17-digit piece of a token holds one of them, so a run is
//!   searched window by window for those, behind a bitset that rejects most
//!   windows with one memory read, and a hit is extended digit by digit.
//!
//! This catches tokens as written. It cannot catch a token a shell has
//! encoded (base64, hex dump, reversed): see docs/threat-model.md.

use std::borrow::Cow;
use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

use super::{fingerprint, FINGERPRINT_HEX};

/// How long a token out of force is still redacted: a result computed just
/// before a rotation (a long `exec`) may hold it.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(300);

/// The most hex digits of a token a result may show: the bound the
/// end-to-end leak scan checks.
pub const MAX_SHOWN: usize = 16;

/// Every token of the map is 64 hex digits (32 bytes).
const TOKEN_HEX: usize = 64;
/// The indexed pieces: 8 digits at every 8th offset.
const PIECE: usize = 8;
const SAMPLE: usize = MAX_SHOWN + 1;
/// `sha256:` and the fingerprint: what a token is shown as.
const SHOWN: usize = "sha256:".len() + FINGERPRINT_HEX;

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

/// The tokens to redact, each by its 64 digits (as nibbles, so any letter
/// case matches) and the fingerprint it is shown as.
///
/// A layer rebuilds it on every reload for the map in force and every token
/// in the grace (thousands after a burst of rotations), so it is three flat
/// allocations whatever the number of tokens: no allocation per token or
/// per piece, which left the watcher thread's heap fragmented at several
/// times what was live.
pub struct Redactor {
    tokens: Vec<Known>,
    /// Every aligned piece as (piece value, token index × 8 + piece index),
    /// sorted by value (then token, so hits come in token order).
    pieces: Vec<(u32, u32)>,
    /// One bit per piece value's hash: most windows are rejected here.
    filter: Vec<u64>,
}

struct Known {
    nibbles: [u8; TOKEN_HEX],
    /// `sha256:<fingerprint>`, ASCII.
    shown: [u8; SHOWN],
}

impl Known {
    fn shown(&self) -> &str {
        // Always ASCII (built from a format of hex digits).
        std::str::from_utf8(&self.shown).unwrap_or("sha256:?")
    }
}

fn filter_bit(piece: u32, bits: usize) -> usize {
    // A multiplicative hash; `bits` is a power of two.
    ((piece.wrapping_mul(0x9E37_79B1)) as usize) & (bits - 1)
}

impl Redactor {
    /// A redactor for these tokens (anything that is not 64 hex digits is
    /// dropped; repeats are kept once).
    pub fn new<'a>(tokens: impl IntoIterator<Item = &'a str>) -> Redactor {
        let tokens = tokens.into_iter();
        let mut seen = HashSet::with_capacity(tokens.size_hint().0);
        let mut known = Vec::with_capacity(tokens.size_hint().0);
        for t in tokens {
            let b = t.as_bytes();
            if b.len() != TOKEN_HEX || !b.iter().all(|c| is_hex(*c)) {
                continue;
            }
            let mut nibbles = [0u8; TOKEN_HEX];
            for (i, c) in b.iter().enumerate() {
                nibbles[i] = nibble(*c).unwrap_or(0);
            }
            if seen.insert(nibbles) {
                let lower = t.to_ascii_lowercase();
                let mut shown = [0u8; SHOWN];
                let text = format!("sha256:{}", fingerprint(&lower));
                shown.copy_from_slice(&text.as_bytes()[..SHOWN]);
                known.push(Known { nibbles, shown });
            }
        }
        drop(seen);
        known.shrink_to_fit();
        let mut pieces: Vec<(u32, u32)> = Vec::with_capacity(known.len() * (TOKEN_HEX / PIECE));
        for (i, k) in known.iter().enumerate() {
            for p in 0..TOKEN_HEX / PIECE {
                let v = value(&k.nibbles[p * PIECE..(p + 1) * PIECE]);
                pieces.push((v, (i as u32) << 3 | p as u32));
            }
        }
        pieces.sort_unstable();
        // About 64 bits per piece value: a miss rate near 1/64 for a random window.
        let distinct = pieces.chunk_by(|a, b| a.0 == b.0).count();
        let bits = (distinct * 64).next_power_of_two().max(1024);
        let mut filter = vec![0u64; bits / 64];
        for (v, _) in &pieces {
            let b = filter_bit(*v, bits);
            filter[b / 64] |= 1 << (b % 64);
        }
        Redactor {
            tokens: known,
            pieces,
            filter,
        }
    }

    /// Whether there is anything to redact at all.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// How many tokens it redacts.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    fn maybe(&self, piece: u32) -> bool {
        let bits = self.filter.len() * 64;
        let b = filter_bit(piece, bits);
        self.filter[b / 64] & (1 << (b % 64)) != 0
    }

    /// The spans of `text` that are pieces of a token longer than
    /// [`MAX_SHOWN`] digits, in order, each with the token's index.
    fn spans(&self, text: &[u8]) -> Vec<(usize, usize, u32)> {
        let mut out = Vec::new();
        let n = text.len();
        let mut p = MAX_SHOWN;
        while p < n {
            if !is_hex(text[p]) {
                p += SAMPLE;
                continue;
            }
            let mut start = p;
            while start > 0 && is_hex(text[start - 1]) {
                start -= 1;
            }
            let mut end = p + 1;
            while end < n && is_hex(text[end]) {
                end += 1;
            }
            if end - start > MAX_SHOWN {
                self.search_run(text, start, end, &mut out);
            }
            p = end + SAMPLE;
        }
        out
    }

    /// Searches one run of hex digits `text[start..end]`.
    fn search_run(
        &self,
        text: &[u8],
        start: usize,
        end: usize,
        out: &mut Vec<(usize, usize, u32)>,
    ) {
        let mut i = start;
        let mut window: u32 = 0;
        let mut filled = 0;
        let mut j = start;
        while j < end {
            window = (window << 4) | u32::from(nibble(text[j]).unwrap_or(0));
            filled += 1;
            j += 1;
            if filled < PIECE {
                continue;
            }
            let at = j - PIECE; // the window is text[at..j]
            if at < i || !self.maybe(window) {
                continue;
            }
            let from = self.pieces.partition_point(|&(v, _)| v < window);
            let hits = self.pieces[from..]
                .iter()
                .take_while(|&&(v, _)| v == window);
            let mut best: Option<(usize, usize, u32)> = None;
            for &(_, at_piece) in hits {
                let (tok, piece) = (at_piece >> 3, at_piece & 7);
                let t = &self.tokens[tok as usize].nibbles;
                let t0 = piece as usize * PIECE; // token offset of the window
                                                 // Extend left and right while the text goes on with the token.
                let mut l = 0;
                while l < t0 && at - l > start && nibble(text[at - l - 1]) == Some(t[t0 - l - 1]) {
                    l += 1;
                }
                let mut r = 0;
                while t0 + PIECE + r < TOKEN_HEX
                    && j + r < end
                    && nibble(text[j + r]) == Some(t[t0 + PIECE + r])
                {
                    r += 1;
                }
                let (s, e) = (at - l, j + r);
                if e - s > MAX_SHOWN && best.is_none_or(|b| e - s > b.1 - b.0) {
                    best = Some((s, e, tok));
                }
            }
            if let Some((s, e, tok)) = best {
                let s = s.max(i);
                match out.last_mut() {
                    // Touching or overlapping pieces become one span.
                    Some(last) if last.1 >= s => last.1 = last.1.max(e),
                    _ => out.push((s, e, tok)),
                }
                i = e;
                // Start the next window after this piece.
                filled = 0;
                j = e;
                window = 0;
            }
        }
    }

    /// `text` with every piece of a token longer than [`MAX_SHOWN`] digits
    /// replaced by the token's fingerprint; borrowed when there is none.
    pub fn redact_str<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.is_empty() || text.len() <= MAX_SHOWN {
            return Cow::Borrowed(text);
        }
        let spans = self.spans(text.as_bytes());
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        for (s, e, tok) in spans {
            // Hex digits are ASCII, so span ends are char boundaries.
            out.push_str(&text[copied..s]);
            out.push_str(self.tokens[tok as usize].shown());
            copied = e;
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
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

/// The value of 8 nibbles.
fn value(nibbles: &[u8]) -> u32 {
    nibbles.iter().fold(0u32, |v, n| (v << 4) | u32::from(*n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
    /// Random-looking, as minted tokens are.
    const C: &str = "5b97e5cf762f6106612a771fa2b42f9afc2458e2932e8598133c798f9782e8b9";

    fn fp(t: &str) -> String {
        format!("sha256:{}", fingerprint(t))
    }

    /// The longest run of consecutive hex digits of `text` that is a piece of `token`.
    fn longest_piece(text: &str, token: &str) -> usize {
        let (t, x) = (token.to_ascii_lowercase(), text.to_ascii_lowercase());
        let mut best = 0;
        for len in (1..=64).rev() {
            if (0..=64 - len).any(|o| x.contains(&t[o..o + len])) {
                best = len;
                break;
            }
        }
        best
    }

    #[test]
    fn every_occurrence_in_any_case_becomes_its_fingerprint() {
        let r = Redactor::new([A, B]);
        let text = format!(
            "{{\"paco\":\"{A}\",\"dali\":\"{B}\"}} again {} and {A} {B}",
            A.to_uppercase()
        );
        let out = r.redact_str(&text);
        assert!(
            longest_piece(&out, A) <= MAX_SHOWN && longest_piece(&out, B) <= MAX_SHOWN,
            "{out}"
        );
        assert_eq!(out.matches(&fp(A)).count(), 3, "{out}");
        assert_eq!(out.matches(&fp(B)).count(), 2, "{out}");
        assert!(out.starts_with("{\"paco\":\"sha256:") && out.contains(" again sha256:"));
    }

    #[test]
    fn a_token_cut_anywhere_shows_at_most_16_of_its_digits() {
        let r = Redactor::new([C]);
        for (from, to) in [
            (1, 64),
            (0, 63),
            (5, 40),
            (47, 64),
            (10, 27),
            (0, 17),
            (30, 47),
        ] {
            for (pre, post) in [("", ""), ("x", "y"), ("cafe", ""), ("", "beef"), ("0", "0")] {
                let text = format!("{pre}{}{post}", &C[from..to]);
                let out = r.redact_str(&text);
                assert!(
                    longest_piece(&out, C) <= MAX_SHOWN,
                    "{from}..{to} {pre:?} {post:?}: {out}"
                );
                assert!(out.contains(&fp(C)), "{from}..{to}");
            }
        }
        // 16 digits may show: not a secret on their own.
        let sixteen = &C[20..36];
        assert!(matches!(
            r.redact_str(&format!(" {sixteen} ")),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn pieces_of_two_tokens_in_one_run_are_both_taken() {
        let r = Redactor::new([A, C]);
        let text = format!("{}{}", &C[3..40], &A[10..60]);
        let out = r.redact_str(&text);
        assert!(
            longest_piece(&out, A) <= MAX_SHOWN && longest_piece(&out, C) <= MAX_SHOWN,
            "{out}"
        );
    }

    #[test]
    fn text_without_tokens_is_borrowed_untouched() {
        let r = Redactor::new([A]);
        let text = format!(
            "{} is a prefix of a long hash only? no: {}, and é ünïcode",
            &A[..16],
            "deadbeef".repeat(10)
        );
        assert!(
            matches!(r.redact_str(&text), Cow::Borrowed(_)),
            "{}",
            r.redact_str(&text)
        );
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
    fn a_hex_run_holding_a_token_keeps_its_other_digits() {
        let r = Redactor::new([C]);
        let text = format!("abc{C}def");
        let out = r.redact_str(&text);
        assert_eq!(out, format!("abc{}def", fp(C)));
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
        assert!(longest_piece(&s, A) <= MAX_SHOWN, "{s}");
        assert_eq!(v["details"]["map"][fp(A)], "paco");
        let mut clean = json!({"content": [{"type": "text", "text": "nothing"}]});
        assert_eq!(r.redact_value(&mut clean), 0);
    }

    #[test]
    fn the_fingerprint_is_the_one_doctor_shows() {
        let m = crate::token_map::parse(format!(r#"{{"paco": "{C}"}}"#).as_bytes())
            .unwrap()
            .map;
        let r = Redactor::new([C]);
        let shown = m.get("paco").unwrap().fingerprint();
        assert_eq!(r.redact_str(C), format!("sha256:{shown}"));
        assert_eq!(r.redact_str(&C.to_uppercase()), format!("sha256:{shown}"));
    }

    #[test]
    fn a_generated_sweep_never_leaves_a_long_piece() {
        // Deterministic pseudo-random tokens, cut at every length from every offset.
        let mut seed = 0x2545F4914F6CDD1Du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let tokens: Vec<String> = (0..20)
            .map(|_| (0..4).map(|_| format!("{:016x}", next())).collect())
            .collect();
        let r = Redactor::new(tokens.iter().map(String::as_str));
        for t in &tokens {
            for from in (0..48).step_by(7) {
                for len in [17, 18, 31, 47, 64 - from]
                    .into_iter()
                    .filter(|l| from + l <= 64)
                {
                    let piece = &t[from..from + len];
                    let glue = format!("{:x}", next() % 16);
                    let text = format!("{glue}{piece}{glue}");
                    let out = r.redact_str(&text);
                    assert!(longest_piece(&out, t) <= MAX_SHOWN, "{from}+{len}: {out}");
                }
            }
        }
    }
}
