//! Base64 as OpenClaw reads an attachment's content: `decodeStrictBase64`
//! of `sessions_spawn`'s attachment staging (`subagent-spawn-cleanup-*.mjs`,
//! `src/agents/subagents/spawn/subagent-attachments.ts`): whitespace taken
//! out, then only a whole, padded standard base64 text is decoded. Rule
//! `token-text` decodes what the tool will decode, takes the tokens out and
//! encodes it again as Node's `Buffer.toString("base64")` does.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// The bytes `value` stands for, or `None` where `decodeStrictBase64`
/// refuses it (OpenClaw then refuses the attachment). What JS's `\s`
/// matches is taken out first.
pub fn decode_strict(value: &str) -> Option<Vec<u8>> {
    let text: Vec<u8> = value
        .chars()
        .filter(|c| !crate::paths::is_js_space(*c))
        .map(|c| u8::try_from(u32::from(c)).unwrap_or(0))
        .collect();
    if text.is_empty() || !text.len().is_multiple_of(4) {
        return None;
    }
    let pad = text.iter().rev().take_while(|c| **c == b'=').count();
    if pad > 2 || pad == text.len() {
        return None;
    }
    let body = &text[..text.len() - pad];
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in body {
        acc = (acc << 6) | u32::from(sextet(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// `Buffer.from(bytes).toString("base64")`: standard alphabet, padded.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_as_node_does() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (&[0xff, 0xfe, 0x00][..], "//4A"),
        ] {
            assert_eq!(encode(bytes), text);
            if !text.is_empty() {
                assert_eq!(decode_strict(text).as_deref(), Some(bytes), "{text}");
            }
        }
        assert_eq!(decode_strict(" Zm9v\nYg== ").as_deref(), Some(&b"foob"[..]));
    }

    #[test]
    fn what_openclaw_refuses_is_refused() {
        for bad in [
            "",
            "Zm9",
            "Zm9v=",
            "Zm-v",
            "Zm_v",
            "====",
            "Zg===",
            "Z===",
            "Zm9vé===",
        ] {
            assert_eq!(decode_strict(bad), None, "{bad:?}");
        }
    }
}
