//! Everything the layer prints goes through here first: a token, or anything
//! that could be one, must never reach a log line, an error or a block reason.

use std::fmt::{self, Write as _};

use sha2::{Digest, Sha256};

/// Tool-result redaction (the `agentToolResultMiddleware` side).
pub mod results;

/// Number of hex digits in a fingerprint. The token-minting service stores the
/// same 12-digit sha256 prefix, so operators can match the two.
pub const FINGERPRINT_HEX: usize = 12;

/// Any run of this many hex digits in text we print is treated as a possible
/// secret. Agent ids and tool names never need that many. The tool-result
/// redactor replaces a run holding this many digits of a known token
/// ([`results::PIECE`]): no surface shows 16 consecutive digits of a token.
const SUSPICIOUS_HEX_RUN: usize = 16;

/// The first [`FINGERPRINT_HEX`] hex digits of the sha256 of `secret`.
pub fn fingerprint(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    let mut out = String::with_capacity(FINGERPRINT_HEX);
    for byte in digest.iter().take(FINGERPRINT_HEX / 2) {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// A printable form of an identifier that came from outside (an agent id from
/// the map or from ctx, a tool name, a session key): control characters are
/// escaped, length is bounded, and a value holding a long hex run, which may
/// be a token pasted in the wrong place, is shown only by its fingerprint.
pub fn shown(value: &str) -> String {
    Shown(value).to_string()
}

/// [`shown`] as a `Display`, for formatting without an allocation of its
/// own (the per-call log line uses it).
#[derive(Clone, Copy)]
pub struct Shown<'a>(pub &'a str);

/// Longer values are cut there by [`shown`].
const MAX_CHARS: usize = 96;

/// Whether [`shown`] prints `value` as it is: short printable ASCII with no
/// run of hex digits that could be a token (the common case, checked in
/// one pass).
pub fn as_is(value: &str) -> bool {
    if value.len() > MAX_CHARS {
        return false;
    }
    let mut run = 0;
    for b in value.bytes() {
        if !(0x20..0x7f).contains(&b) {
            return false;
        }
        run = if b.is_ascii_hexdigit() { run + 1 } else { 0 };
        if run >= SUSPICIOUS_HEX_RUN {
            return false;
        }
    }
    true
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = self.0;
        if as_is(value) {
            return f.write_str(value);
        }
        if has_hex_run(value, SUSPICIOUS_HEX_RUN) {
            return write!(f, "<redacted sha256:{}>", fingerprint(value));
        }
        for (i, c) in value.chars().enumerate() {
            if i == MAX_CHARS {
                return f.write_char('…');
            }
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                f.write_char(c)?;
            }
        }
        Ok(())
    }
}

/// Replaces every run of [`SUSPICIOUS_HEX_RUN`] or more hex digits in `text`
/// with a fingerprint. The last line of defence for messages that embed text
/// we did not write (OS errors, parser errors).
pub fn scrub(text: &str) -> String {
    if !has_hex_run(text, SUSPICIOUS_HEX_RUN) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let run = bytes[i..]
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        if run >= SUSPICIOUS_HEX_RUN {
            out.push_str(&format!(
                "<redacted sha256:{}>",
                fingerprint(&text[i..i + run])
            ));
            i += run;
        } else if run > 0 {
            out.push_str(&text[i..i + run]);
            i += run;
        } else {
            let ch = text[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn has_hex_run(text: &str, min: usize) -> bool {
    let mut run = 0;
    for b in text.bytes() {
        if b.is_ascii_hexdigit() {
            run += 1;
            if run >= min {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn fingerprint_is_twelve_hex_digits_of_sha256() {
        // sha256("abc") = ba7816bf8f01cfea...
        assert_eq!(fingerprint("abc"), "ba7816bf8f01");
    }

    #[test]
    fn shown_keeps_ordinary_ids() {
        assert_eq!(shown("paco--francis"), "paco--francis");
    }

    #[test]
    fn shown_hides_a_token_used_as_an_id() {
        let s = shown(TOKEN);
        assert!(!s.contains(&TOKEN[..16]));
        assert!(s.starts_with("<redacted sha256:"));
    }

    #[test]
    fn shown_escapes_control_characters_and_bounds_length() {
        assert_eq!(shown("a\nb"), "a\\nb");
        assert_eq!(shown(&"x".repeat(500)).chars().count(), 97);
    }

    #[test]
    fn shown_fast_path_for_printable_ascii_keeps_the_same_rules() {
        let max = "x".repeat(96);
        assert_eq!(shown(&max), max);
        assert_eq!(shown(&"x".repeat(97)), format!("{max}…"));
        assert_eq!(shown("a\u{7f}b"), "a\\u{7f}b");
        assert_eq!(shown("agent é"), "agent é");
        assert_eq!(Shown("paco--francis").to_string(), "paco--francis");
        assert!(Shown(TOKEN).to_string().starts_with("<redacted sha256:"));
    }

    #[test]
    fn scrub_replaces_every_long_hex_run() {
        let text = format!("before {TOKEN} middle {} after", &TOKEN[..20]);
        let s = scrub(&text);
        assert!(!s.contains(&TOKEN[..16]));
        assert!(s.starts_with("before <redacted sha256:"));
        assert!(s.ends_with(" after"));
        assert_eq!(scrub("short abc123 text"), "short abc123 text");
    }
}
