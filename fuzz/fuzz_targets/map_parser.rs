//! The token map parser on arbitrary bytes: it must never panic, must accept
//! only valid agent ids with 64-hex tokens, and nothing it says (the refusal
//! message, the per-entry warnings) may hold a long hex run, which could be
//! a token.
#![no_main]

use claw_identity_core::token_map::{is_agent_id, is_token, parse};
use libfuzzer_sys::fuzz_target;

/// The layer prints no run of this many hex digits (see `redact`).
const HEX_RUN: usize = 16;

fn longest_hex_run(text: &str) -> usize {
    let (mut best, mut run) = (0, 0);
    for b in text.bytes() {
        run = if b.is_ascii_hexdigit() { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

fuzz_target!(|bytes: &[u8]| {
    match parse(bytes) {
        Err(e) => assert!(
            longest_hex_run(&e.message) < HEX_RUN,
            "refusal message holds a hex run: {}",
            e.message
        ),
        Ok(parsed) => {
            for w in &parsed.skipped {
                assert!(longest_hex_run(w) < HEX_RUN, "warning holds a hex run: {w}");
            }
            let entries = parsed.map.sorted();
            for (agent, token) in &entries {
                assert!(is_agent_id(agent), "accepted a bad agent id");
                assert!(is_token(token.expose()), "accepted a bad token");
            }
            // What was accepted survives a round trip unchanged.
            let canonical: serde_json::Map<String, serde_json::Value> = entries
                .iter()
                .map(|(a, t)| (a.to_string(), t.expose().into()))
                .collect();
            let canonical = serde_json::Value::Object(canonical).to_string();
            let again = parse(canonical.as_bytes()).expect("a canonical map parses");
            assert_eq!(again.map.len(), parsed.map.len());
            assert!(again.skipped.is_empty());
            for (agent, token) in &entries {
                assert!(again.map.get(agent) == Some(*token));
            }
        }
    }
});
