//! How OpenClaw names the tools a `toolPrefix` must match, and what it
//! does to a name before the `before_tool_call` hook sees it:
//! - an MCP tool's id is `<server>__<tool>`, each part sanitized
//!   (`sanitizeToolFragment`, `sanitizeServerName`, `assignSafeServerNames`,
//!   `buildSafeToolName` in `agent-bundle-mcp-names-*.mjs`): only
//!   `A-Z a-z 0-9 _ -`, a server part that starts with a letter and is at
//!   most 30 characters, an id of at most 64;
//! - the hook gets the id trimmed and lowercased, `bash`, `apply-patch` and
//!   `cron` aliased (`normalizeToolPolicyName`, `tool-policy-shared-*.mjs`,
//!   called by `runBeforeToolCallHook`, `agent-tools.before-tool-call-*.mjs`).

use std::collections::HashSet;

use crate::paths::js_trim;

/// OpenClaw's limits on a tool id `<server>__<tool>` (`agent-bundle-mcp-names-*.mjs`).
pub const SERVER_MAX: usize = 30;
pub const ID_MAX: usize = 64;

/// `sanitizeToolFragment`: what OpenClaw keeps of a server or tool name. The
/// JS regex replaces each UTF-16 unit outside `[A-Za-z0-9_-]`, so a
/// character outside the BMP becomes two dashes.
pub fn fragment(raw: &str, fallback: &str, max: Option<usize>) -> String {
    let mut s = String::new();
    for c in js_trim(raw).chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            s.push(c);
        } else {
            (0..c.len_utf16()).for_each(|_| s.push('-'));
        }
    }
    if s.is_empty() {
        s = fallback.to_owned();
    }
    if !s.starts_with(|c: char| c.is_ascii_alphabetic()) {
        s = format!("{fallback}-{s}");
    }
    if let Some(max) = max {
        // ASCII only by now.
        s.truncate(max);
    }
    s
}

/// `assignSafeServerNames`: each server's name in tool ids, a later one
/// that collides (ignoring case) with an earlier one suffixed `-2`, `-3`...
pub fn safe_server_names(names: &[&str]) -> Vec<String> {
    let mut used = HashSet::new();
    names
        .iter()
        .map(|n| {
            let base = fragment(n, "mcp", Some(SERVER_MAX));
            let mut candidate = base.clone();
            let mut k = 2;
            while used.contains(&candidate.to_lowercase()) {
                let suffix = format!("-{k}");
                let keep = SERVER_MAX
                    .saturating_sub(suffix.len())
                    .max(1)
                    .min(base.len());
                candidate = format!("{}{suffix}", &base[..keep]);
                k += 1;
            }
            used.insert(candidate.to_lowercase());
            candidate
        })
        .collect()
}

/// `buildSafeToolName`: a tool's id as OpenClaw names it (without the
/// suffix it adds when another tool already took that id).
pub fn tool_id(safe_server: &str, tool: &str) -> String {
    let clean = fragment(tool, "tool", None);
    let max = ID_MAX.saturating_sub(safe_server.len() + 2).max(1);
    let tool = &clean[..max.min(clean.len())];
    format!(
        "{safe_server}__{}",
        if tool.is_empty() { "tool" } else { tool }
    )
}

/// The prefix of every tool id of the MCP server `server`, as the hook
/// compares ids: its server part (`sanitizeServerName`, without the `-2`
/// OpenClaw gives a server whose name collides with an earlier one's),
/// lowercased, then `__`.
pub fn server_prefix(server: &str) -> String {
    format!(
        "{}__",
        fragment(server, "mcp", Some(SERVER_MAX)).to_lowercase()
    )
}

/// `toolPrefix` as the hook will compare it: trimmed and lowercased, as
/// OpenClaw normalizes the tool names it hands the hook, so `Claw-OS__` owns
/// `claw-os__claw_notes`. The prefix names MCP tools (the layer's owned
/// tools), and one no MCP tool id can start with is an error
/// that says why and shows the normalized form: a character OpenClaw never
/// keeps in an id, a first character an MCP server part can't start with,
/// more than an id's 64 characters, or a server part longer than the 30
/// OpenClaw keeps.
pub fn tool_prefix(raw: &str) -> Result<String, String> {
    let p = js_trim(raw).to_lowercase();
    let why = if p.is_empty() {
        "is empty (an empty prefix would inject tokens into every tool)".to_owned()
    } else if let Some(c) = p
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == '-'))
    {
        format!(
            "holds {:?}, and OpenClaw's MCP tool ids hold only letters, digits, _ and - (it turns anything else in a server or tool name into -)",
            c
        )
    } else if !p.starts_with(|c: char| c.is_ascii_lowercase()) {
        "does not start with a letter, and the server part of an MCP tool id always does (OpenClaw puts mcp- before any other)".to_owned()
    } else if p.len() > ID_MAX {
        format!("is longer than the {ID_MAX} characters of an MCP tool id")
    } else if !server_part_fits(&p) {
        format!(
            "needs a server part longer than the {SERVER_MAX} characters OpenClaw keeps of an MCP server's name: write the first {SERVER_MAX} characters of the server name, then __"
        )
    } else {
        return Ok(p);
    };
    Err(format!(
        "toolPrefix \"{}\" (\"{}\" as OpenClaw compares tool ids) can never match an MCP tool: it {why}",
        crate::redact::shown(raw),
        crate::redact::shown(&p),
    ))
}

/// Whether an id `<server>__<tool>` with a server part of at most
/// [`SERVER_MAX`] characters can start with `p`: the server part may go on
/// past `p`, or `__` (or its first `_`, at the end of `p`) follows it
/// within [`SERVER_MAX`] characters. A server part may itself hold `__`.
fn server_part_fits(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() <= SERVER_MAX || (1..=SERVER_MAX).any(|s| b[s..].starts_with(b"__") || &b[s..] == b"_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_ids_are_built_as_openclaw_builds_them() {
        assert_eq!(tool_id("claw-os", "claw_notes"), "claw-os__claw_notes");
        assert_eq!(
            tool_id("claw-os", "notes.save v2"),
            "claw-os__notes-save-v2"
        );
        assert_eq!(tool_id("claw-os", "9lives"), "claw-os__tool-9lives");
        assert_eq!(tool_id("claw-os", "  "), "claw-os__tool");
        assert_eq!(tool_id("claw-os", &"x".repeat(80)).len(), 64);
        assert_eq!(fragment("claw os 🦀", "mcp", Some(30)), "claw-os---");
        assert_eq!(fragment("_private", "mcp", Some(30)), "mcp-_private");
        assert_eq!(fragment(&"s".repeat(40), "mcp", Some(30)).len(), 30);
        assert_eq!(
            safe_server_names(&["claw os", "claw-os", "Claw-OS"]),
            ["claw-os", "claw-os-2", "Claw-OS-3"]
        );
    }

    #[test]
    fn a_prefix_is_compared_as_openclaw_compares_tool_names() {
        assert_eq!(tool_prefix("Claw-OS__").as_deref(), Ok("claw-os__"));
        assert_eq!(tool_prefix("  claw-os__ ").as_deref(), Ok("claw-os__"));
        assert_eq!(tool_prefix("claw").as_deref(), Ok("claw"));
        // Every id OpenClaw builds for a server starts with the prefix of its safe name.
        for server in [
            "claw-os",
            "Claw OS",
            "a-very-long-server-name-beyond-thirty-characters",
        ] {
            let safe = &safe_server_names(&[server])[0];
            let id = tool_id(safe, "notes").to_lowercase();
            let p = tool_prefix(&format!("{safe}__")).unwrap();
            assert!(id.starts_with(&p), "{id} {p}");
        }
        assert!(tool_prefix(&format!("{}__", "s".repeat(30))).is_ok());
        assert!(tool_prefix(&format!("{}_", "s".repeat(30))).is_ok());
        assert!(tool_prefix("a__b__c").is_ok());
    }

    #[test]
    fn a_prefix_that_can_never_match_is_refused_saying_why() {
        for (raw, why) in [
            ("", "is empty"),
            ("   ", "is empty"),
            ("claw os__", "holds ' '"),
            ("claw.os__", "holds '.'"),
            ("claw-os:", "holds ':'"),
            ("Clé__", "holds 'é'"),
            ("_claw__", "does not start with a letter"),
            ("9lives__", "does not start with a letter"),
            ("mcp-", ""),
        ] {
            let r = tool_prefix(raw);
            if why.is_empty() {
                assert!(r.is_ok(), "{raw:?}: {r:?}");
                continue;
            }
            let e = r.unwrap_err();
            assert!(
                e.contains(why) && e.contains("can never match"),
                "{raw:?}: {e}"
            );
        }
        let long = "s".repeat(31) + "__";
        let e = tool_prefix(&long).unwrap_err();
        assert!(
            e.contains("30 characters") && e.contains(&format!("\"{long}\"")),
            "{e}"
        );
        assert!(tool_prefix(&"a".repeat(65)).unwrap_err().contains("64"));
        // A token pasted as a prefix is shown by its fingerprint only.
        let token = "5b97e5cf762f6106612a771fa2b42f9afc2458e2932e8598133c798f9782e8b9X";
        let e = tool_prefix(token).unwrap_err();
        assert!(!e.contains(&token[..16]), "{e}");
    }
}
