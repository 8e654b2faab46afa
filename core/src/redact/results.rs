//! Tokens out of tool results: every run of hex digits that holds a piece
//! of [`PIECE`] (16) or more consecutive digits of a token the redactor
//! knows, in any letter case, is replaced WHOLE by `sha256:<12 hex>`, the
//! token's fingerprint, before any model sees the result.
//!
//! Whole, because anything less is an oracle. When only the piece went (or
//! when a 16-digit piece showed and a 17-digit one did not), a model that
//! knows some digits of a token could echo `<known digits><guess>` and see
//! from the output whether its guess was the token's next digit: 16 known
//! digits gave the other 48 back in about 400 echoes. Now a run is shown as
//! it is, or as one fingerprint, and which of the two depends only on
//! whether the run holds 16 consecutive digits of a token. So a guess is
//! seen to be right only when the model already knew 15 consecutive
//! digits; with fewer it must guess the missing ones all at once
//! (docs/threat-model.md works the numbers).
//!
//! How it stays at memory speed on text with no token (most results):
//! - a run of 16 hex digits covers one position of every residue mod 16, so
//!   only every 16th byte is looked at until one is a hex digit, and only
//!   runs of 16 or more are searched;
//! - each token is indexed by its 8 aligned 8-digit keys (offsets 0, 8,
//!   …, 56): a 16-digit piece of a token holds one of them, so a run is
//!   searched window by window for those, behind a bitset that rejects most
//!   windows with one memory read, and a hit is extended digit by digit;
//!   the search of a run stops at its first piece, since the run goes whole.
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

/// The shortest piece of a token that makes its run go: 16 consecutive hex
/// digits (64 bits), the same length at which the token-blind printers
/// (`redact::shown`, `redact::scrub`) hide any hex run. The choice is
/// argued in docs/threat-model.md ("Redaction without an oracle").
pub const PIECE: usize = super::SUSPICIOUS_HEX_RUN;

/// The most consecutive digits of a token a result may show: the bound
/// the end-to-end leak scan checks.
pub const MAX_SHOWN: usize = PIECE - 1;

/// Every token of the map is 64 hex digits (32 bytes).
const TOKEN_HEX: usize = 64;
/// The indexed keys: 8 digits at every 8th offset. A piece of [`PIECE`]
/// digits at any offset holds one whole (it needs `PIECE >= 2 * KEY - 1`).
const KEY: usize = 8;
const _: () = assert!(PIECE >= 2 * KEY - 1 && PIECE <= TOKEN_HEX);
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
/// per key, which left the watcher thread's heap fragmented at several
/// times what was live.
pub struct Redactor {
    tokens: Vec<Known>,
    /// Every aligned key as (key value, token index × 8 + key index),
    /// sorted by value (then token, so hits come in token order).
    keys: Vec<(u32, u32)>,
    /// One bit per key value's hash: most windows are rejected here.
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

/// What one redaction replaced: how many runs, and the fingerprints of the
/// tokens they held (the first few): the layer's compromise signal
/// (`Layer::note_redaction`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Hits {
    /// Runs replaced.
    pub runs: u64,
    /// `sha256:<12 hex>` of the distinct tokens found, in the order found,
    /// at most [`Hits::KEPT`].
    fingerprints: Vec<String>,
}

impl Hits {
    /// Distinct tokens a hit report keeps (the count goes on).
    pub const KEPT: usize = 4;

    fn note(&mut self, shown: &str) {
        self.runs += 1;
        self.keep(shown);
    }

    fn keep(&mut self, shown: &str) {
        if self.fingerprints.len() < Hits::KEPT && !self.fingerprints.iter().any(|f| f == shown) {
            self.fingerprints.push(shown.to_owned());
        }
    }

    /// Adds `other`'s runs and tokens to these.
    pub fn add(&mut self, other: &Hits) {
        self.runs += other.runs;
        for f in &other.fingerprints {
            self.keep(f);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.runs == 0
    }

    /// The tokens found, as `sha256:<12 hex>`.
    pub fn fingerprints(&self) -> &[String] {
        &self.fingerprints
    }
}

fn filter_bit(key: u32, bits: usize) -> usize {
    // A multiplicative hash; `bits` is a power of two.
    ((key.wrapping_mul(0x9E37_79B1)) as usize) & (bits - 1)
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
        let mut keys: Vec<(u32, u32)> = Vec::with_capacity(known.len() * (TOKEN_HEX / KEY));
        for (i, k) in known.iter().enumerate() {
            for p in 0..TOKEN_HEX / KEY {
                let v = value(&k.nibbles[p * KEY..(p + 1) * KEY]);
                keys.push((v, (i as u32) << 3 | p as u32));
            }
        }
        keys.sort_unstable();
        // About 64 bits per key value: a miss rate near 1/64 for a random window.
        let distinct = keys.chunk_by(|a, b| a.0 == b.0).count();
        let bits = (distinct * 64).next_power_of_two().max(1024);
        let mut filter = vec![0u64; bits / 64];
        for (v, _) in &keys {
            let b = filter_bit(*v, bits);
            filter[b / 64] |= 1 << (b % 64);
        }
        Redactor {
            tokens: known,
            keys,
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

    fn maybe(&self, key: u32) -> bool {
        let bits = self.filter.len() * 64;
        let b = filter_bit(key, bits);
        self.filter[b / 64] & (1 << (b % 64)) != 0
    }

    /// The runs of hex digits of `text` that hold a piece of [`PIECE`] or
    /// more digits of a token, in order, each with the first such token.
    fn runs(&self, text: &[u8]) -> Vec<(usize, usize, u32)> {
        let mut out = Vec::new();
        let n = text.len();
        let mut p = PIECE - 1;
        while p < n {
            if !is_hex(text[p]) {
                p += PIECE;
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
            if end - start >= PIECE {
                if let Some(tok) = self.search_run(&text[start..end]) {
                    out.push((start, end, tok));
                }
            }
            // A run of PIECE digits after this one holds end + PIECE.
            p = end + PIECE;
        }
        out
    }

    /// The first token a run of hex digits holds a piece of [`PIECE`] or
    /// more digits of, if any.
    fn search_run(&self, run: &[u8]) -> Option<u32> {
        let mut window: u32 = 0;
        for (j, c) in run.iter().enumerate() {
            window = (window << 4) | u32::from(nibble(*c).unwrap_or(0));
            if j + 1 < KEY || !self.maybe(window) {
                continue;
            }
            let at = j + 1 - KEY; // the window is run[at..j + 1]
            let from = self.keys.partition_point(|&(v, _)| v < window);
            for &(_, at_key) in self.keys[from..].iter().take_while(|&&(v, _)| v == window) {
                let (tok, key) = (at_key >> 3, at_key & 7);
                let t = &self.tokens[tok as usize].nibbles;
                let t0 = key as usize * KEY; // the token offset of the window
                                             // Extend left and right while the run goes on with the token.
                let mut l = 0;
                while l < t0 && l < at && nibble(run[at - l - 1]) == Some(t[t0 - l - 1]) {
                    l += 1;
                }
                let mut r = 0;
                while t0 + KEY + r < TOKEN_HEX
                    && j + 1 + r < run.len()
                    && nibble(run[j + 1 + r]) == Some(t[t0 + KEY + r])
                {
                    r += 1;
                }
                if l + KEY + r >= PIECE {
                    return Some(tok);
                }
            }
        }
        None
    }

    /// `text` with every run of hex digits that holds a piece of a token
    /// replaced by the token's fingerprint; borrowed when there is none.
    pub fn redact_str<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.redact_str_noting(text, &mut Hits::default())
    }

    /// [`Redactor::redact_str`], adding what it replaced to `hits`.
    pub fn redact_str_noting<'t>(&self, text: &'t str, hits: &mut Hits) -> Cow<'t, str> {
        match self.redact_bytes_noting(text.as_bytes(), hits) {
            None => Cow::Borrowed(text),
            // Runs are ASCII hex digits: what is left around them is whole characters.
            Some(b) => Cow::Owned(
                String::from_utf8(b)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// `bytes` (text or not: a decoded attachment) with every run of hex
    /// digits that holds a piece of a token replaced by the token's
    /// fingerprint, adding what it replaced to `hits`; `None` when there
    /// is none.
    pub fn redact_bytes_noting(&self, bytes: &[u8], hits: &mut Hits) -> Option<Vec<u8>> {
        if self.is_empty() || bytes.len() < PIECE {
            return None;
        }
        let runs = self.runs(bytes);
        if runs.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut copied = 0;
        for (s, e, tok) in runs {
            out.extend_from_slice(&bytes[copied..s]);
            out.extend_from_slice(self.tokens[tok as usize].shown().as_bytes());
            copied = e;
            hits.note(self.tokens[tok as usize].shown());
        }
        out.extend_from_slice(&bytes[copied..]);
        Some(out)
    }

    /// Redacts every string in `value` (object keys too), in place. Returns
    /// how many strings changed, so the caller can skip copying back when 0.
    pub fn redact_value(&self, value: &mut Value) -> usize {
        self.redact_value_noting(value, &mut Hits::default())
    }

    /// [`Redactor::redact_value`], adding what it replaced to `hits`.
    pub fn redact_value_noting(&self, value: &mut Value, hits: &mut Hits) -> usize {
        if self.is_empty() {
            return 0;
        }
        match value {
            Value::String(s) => match self.redact_str_noting(s, hits) {
                Cow::Borrowed(_) => 0,
                Cow::Owned(r) => {
                    *s = r;
                    1
                }
            },
            Value::Array(items) => items
                .iter_mut()
                .map(|v| self.redact_value_noting(v, hits))
                .sum(),
            Value::Object(map) => {
                let mut changed: usize = map
                    .values_mut()
                    .map(|v| self.redact_value_noting(v, hits))
                    .sum();
                let renamed: Vec<(String, String)> = map
                    .keys()
                    .filter_map(|k| match self.redact_str_noting(k, hits) {
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
    fn a_token_cut_anywhere_shows_at_most_15_of_its_digits() {
        let r = Redactor::new([C]);
        for (from, to) in [
            (1, 64),
            (0, 63),
            (5, 40),
            (47, 64),
            (10, 27),
            (0, 17),
            (0, 16),
            (48, 64),
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
        // 15 digits may show: not a secret on their own.
        let fifteen = &C[20..35];
        assert!(matches!(
            r.redact_str(&format!(" {fifteen} ")),
            Cow::Borrowed(_)
        ));
    }

    const HEX: &[u8; 16] = b"0123456789abcdef";

    /// The 16 echoes of `known` with each possible next digit after it
    /// (`after`) or before it, as the oracle attack makes them.
    fn echoes(known: &str, after: bool) -> Vec<String> {
        HEX.iter()
            .map(|&g| {
                let g = g as char;
                if after {
                    format!("echo {known}{g} done")
                } else {
                    format!("echo {g}{known} done")
                }
            })
            .collect()
    }

    /// What the model learns from each echo: that it came back as it was
    /// (`None`), or what it came back as.
    fn views(r: &Redactor, echoes: &[String]) -> Vec<Option<String>> {
        echoes
            .iter()
            .map(|e| match r.redact_str(e) {
                Cow::Borrowed(_) => None,
                Cow::Owned(o) => Some(o),
            })
            .collect()
    }

    /// Whether the redacted echoes tell some guess from the others.
    fn tells(r: &Redactor, echoes: &[String]) -> bool {
        let v = views(r, echoes);
        v.iter().any(|x| *x != v[0])
    }

    /// The attacker at its best: it knows `known`, a piece of some token,
    /// and for the next digit on either side tries every run it can make
    /// of the known digits it picks (the last or first `w` of them) and one
    /// guess, keeping a digit when exactly one guess comes back unlike the
    /// others. Returns how many digits it learnt.
    fn attack(r: &Redactor, token: &str, from: usize, to: usize) -> usize {
        let (mut from, mut to) = (from, to);
        'grow: loop {
            for w in 1..=to - from {
                for after in [true, false] {
                    let (edge, known) = if after {
                        (to, &token[to - w..to])
                    } else {
                        (from.wrapping_sub(1), &token[from..from + w])
                    };
                    if edge >= token.len() {
                        continue;
                    }
                    let v = views(r, &echoes(known, after));
                    let odd: Vec<usize> = (0..16)
                        .filter(|&i| v.iter().filter(|x| **x == v[i]).count() == 1)
                        .collect();
                    let [i] = odd[..] else { continue };
                    assert!(HEX[i] == token.as_bytes()[edge], "the oracle lied");
                    if after {
                        to += 1;
                    } else {
                        from -= 1;
                    }
                    continue 'grow;
                }
            }
            return to - from;
        }
    }

    #[test]
    fn sixteen_known_digits_and_a_guess_look_the_same_whatever_the_guess() {
        // The issue's attack: `<16 known digits><guess>` was redacted
        // exactly when the guess was right. Now every one of the 16 echoes
        // comes back as the same fingerprint, on either side of the piece.
        let r = Redactor::new([A, C]);
        for from in [0, 7, 20, 47] {
            let known = &C[from..from + 16];
            for after in [true, false] {
                let echoes = echoes(known, after);
                assert!(!tells(&r, &echoes), "{from} {after}");
                assert!(r.redact_str(&echoes[0]).contains(&fp(C)));
            }
        }
    }

    #[test]
    fn with_fewer_than_15_known_digits_no_guess_is_told_from_another() {
        let r = Redactor::new([A, B, C]);
        for from in [0, 1, 9, 25, 50] {
            for j in 0..=14usize.min(64 - from) {
                let known = &C[from..from + j];
                for after in [true, false] {
                    let echoes = echoes(known, after);
                    for e in &echoes {
                        assert!(
                            matches!(r.redact_str(e), Cow::Borrowed(_)),
                            "{from} {j} {after}"
                        );
                    }
                }
            }
            // The best attacker, from 14 known digits: it learns nothing.
            if from + 14 <= 64 {
                assert_eq!(attack(&r, C, from, from + 14), 14, "from {from}");
            }
        }
        // Guessing two digits at once from 13 known: 256 echoes, none told
        // apart; three at once (16^3 echoes) is the price of one digit.
        let known = &C[30..43];
        let mut hits = 0;
        for a in HEX {
            for b in HEX {
                let e = format!("{known}{}{}", *a as char, *b as char);
                assert!(matches!(r.redact_str(&e), Cow::Borrowed(_)));
                for c in HEX {
                    let e = format!("{e}{}", *c as char);
                    hits += usize::from(r.redact_str(&e) != e);
                }
            }
        }
        assert_eq!(hits, 1, "exactly the right three digits are a piece");
    }

    #[test]
    fn fifteen_known_digits_are_the_threshold_the_threat_model_states() {
        // With 15 consecutive digits of a token, the right next digit makes
        // a 16-digit piece and its echo goes: from there the attacker reads
        // the token digit by digit (docs/threat-model.md).
        let r = Redactor::new([C]);
        let echoes = echoes(&C[10..25], true);
        assert!(tells(&r, &echoes));
        let gone: Vec<usize> = (0..16)
            .filter(|&i| r.redact_str(&echoes[i]) != echoes[i])
            .collect();
        assert!(
            gone.len() == 1 && HEX[gone[0]] == C.as_bytes()[25],
            "not just the right guess went"
        );
        assert_eq!(attack(&r, C, 10, 25), 64);
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
            &A[..15],
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
    fn a_hex_run_holding_a_piece_goes_whole() {
        let r = Redactor::new([C]);
        for text in [
            format!("abc{C}def"),
            format!("abc{}", &C[..16]),
            format!("{}0123456789", &C[40..56]),
        ] {
            assert_eq!(r.redact_str(&text), fp(C), "{text}");
        }
        assert_eq!(
            r.redact_str(&format!("x{C}-{}", &C[3..30])),
            format!("x{}-{}", fp(C), fp(C))
        );
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
    fn hits_count_every_run_and_name_each_token_once() {
        let r = Redactor::new([A, C]);
        let mut hits = Hits::default();
        let text = format!("{C} and {} and {A} and {}", &C[..20], &A[8..40]);
        assert_ne!(r.redact_str_noting(&text, &mut hits), text);
        assert_eq!(hits.runs, 4);
        assert_eq!(hits.fingerprints(), [fp(C), fp(A)]);
        let mut none = Hits::default();
        assert!(matches!(
            r.redact_str_noting("x", &mut none),
            Cow::Borrowed(_)
        ));
        assert!(none.is_empty());
        let mut v = json!({"a": [C], C: "k"});
        let mut in_value = Hits::default();
        r.redact_value_noting(&mut v, &mut in_value);
        assert_eq!((in_value.runs, in_value.fingerprints()), (2, &[fp(C)][..]));
        hits.add(&in_value);
        assert_eq!((hits.runs, hits.fingerprints().len()), (6, 2));
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
