//! How OpenClaw launches an MCP server from its `mcp.servers` entry
//! (`resolveMcpTransportConfig`, `mcp-transport-config-*.mjs`): the
//! transport, the command or URL with `${VAR}` substituted, env, headers
//! and timeouts. `doctor --mcp` connects the same way (`crate::ops::mcp`).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::paths::js_trim;
use crate::redact::shown;

/// Why a server can't be launched as OpenClaw would, in the operator's
/// terms: what is wrong, and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unlaunchable {
    pub detail: String,
    pub fix: String,
}

/// OpenClaw's defaults (`mcp-transport-config-*.mjs`).
const CONNECT_TIMEOUT_MS: u64 = 30_000;

const REQUEST_TIMEOUT_MS: u64 = 60_000;

/// JS timers take at most a signed 32-bit delay.
const MAX_TIMEOUT_MS: u64 = 2_147_483_647;

/// How OpenClaw would launch one server, for the JS side to connect to it
/// the same way. Holds the config's env and headers: never printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Launch {
    /// The key under `mcp.servers`.
    pub server: String,
    /// `stdio`, `sse` or `streamable-http`.
    pub transport: &'static str,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub connect_timeout_ms: u64,
    pub request_timeout_ms: u64,
    /// The name its tool ids start with (`<safe>__<tool>`). Not for JS.
    #[serde(skip)]
    pub safe_name: String,
    /// claw-identity's: the launch is of a proxied server's upstream
    /// (`crate::ops::mcp::plan`), not of OpenClaw's entry.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub proxied: bool,
}

impl Launch {
    /// How a finding names it: the command or the URL without its query or
    /// credentials, never args, env or headers (they may hold secrets).
    pub fn shown(&self) -> String {
        match (&self.command, &self.url) {
            (Some(c), _) => format!("stdio: {}", shown(c)),
            (None, Some(u)) => format!("{}: {}", self.transport, shown(&url_shown(u))),
            _ => self.transport.to_owned(),
        }
    }
}

/// A URL as findings show it: no `user:password@`, no query, no fragment.
fn url_shown(url: &str) -> String {
    let cut = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..cut];
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (auth, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// OpenClaw's `${VAR}` substitution in config strings: uppercase names only,
/// `$${VAR}` for a literal `${VAR}`, and a missing or empty variable left
/// as written. Variables come from the environment, then the config's
/// `env.vars` (which OpenClaw applies when the environment lacks them).
fn substitute(s: &str, vars: &dyn Fn(&str) -> Option<String>, missing: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$${") {
            if let Some((name, _)) = after.split_once('}').filter(|(n, _)| is_var_name(n)) {
                out.push_str("${");
                out.push_str(name);
                out.push('}');
                rest = &after[name.len() + 1..];
                continue;
            }
        }
        if let Some(after) = tail.strip_prefix("${") {
            if let Some((name, _)) = after.split_once('}').filter(|(n, _)| is_var_name(n)) {
                match vars(name).filter(|v| !v.is_empty()) {
                    Some(v) => out.push_str(&v),
                    None => {
                        if !missing.iter().any(|m| m == name) {
                            missing.push(name.to_owned());
                        }
                        out.push_str(&tail[..name.len() + 3]);
                    }
                }
                rest = &after[name.len() + 1..];
                continue;
            }
        }
        out.push('$');
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

fn is_var_name(n: &str) -> bool {
    let mut chars = n.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `toMcpStringRecord`: string, number and boolean values, as strings.
fn string_record(
    v: Option<&Value>,
    sub: &mut dyn FnMut(&str) -> String,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (k, v) in v.and_then(Value::as_object).into_iter().flatten() {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => continue,
        };
        out.insert(k.clone(), sub(&text));
    }
    out
}

fn timeout(raw: &Map<String, Value>, key: &str, default: u64) -> u64 {
    match raw.get(key).and_then(Value::as_f64) {
        Some(ms) if ms.is_finite() && ms > 0.0 => (ms.ceil() as u64).min(MAX_TIMEOUT_MS),
        _ => default,
    }
}

fn text_field<'a>(raw: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    raw.get(key)
        .and_then(Value::as_str)
        .filter(|s| !js_trim(s).is_empty())
}

pub const PROBE_HINT: &str = "openclaw mcp probe";

/// How OpenClaw would launch `raw` (`resolveMcpTransportConfig`), or why it
/// can't be checked.
pub fn launch(
    name: &str,
    safe_name: &str,
    raw: &Value,
    vars: &dyn Fn(&str) -> Option<String>,
) -> Result<Launch, Unlaunchable> {
    let key = format!("mcp.servers.{}", shown(name));
    let skip = |detail: String, fix: String| Unlaunchable { detail, fix };
    let Some(raw) = raw.as_object() else {
        return Err(skip(
            format!("{key} is not an object, so OpenClaw does not start it"),
            format!("make {key} an object with command (stdio) or url"),
        ));
    };
    let mut missing = Vec::new();
    let mut sub = |s: &str| substitute(s, vars, &mut missing);
    let connect_timeout_ms = timeout(raw, "connectionTimeoutMs", CONNECT_TIMEOUT_MS);
    let request_timeout_ms = timeout(raw, "requestTimeoutMs", REQUEST_TIMEOUT_MS);
    let l = if let Some(command) = text_field(raw, "command") {
        Launch {
            server: name.to_owned(),
            transport: "stdio",
            command: Some(sub(command)),
            args: raw
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(&mut sub)
                .collect(),
            env: string_record(raw.get("env"), &mut sub),
            cwd: text_field(raw, "cwd")
                .or_else(|| text_field(raw, "workingDirectory"))
                .map(&mut sub),
            url: None,
            headers: BTreeMap::new(),
            connect_timeout_ms,
            request_timeout_ms,
            safe_name: safe_name.to_owned(),
            proxied: false,
        }
    } else {
        let transport = text_field(raw, "transport")
            .map(|t| js_trim(t).to_lowercase())
            .or_else(|| {
                text_field(raw, "type").and_then(|t| match js_trim(t).to_lowercase().as_str() {
                    "http" | "streamable-http" => Some("streamable-http".to_owned()),
                    "sse" => Some("sse".to_owned()),
                    _ => None,
                })
            });
        let transport = match transport.as_deref() {
            None | Some("sse") => "sse",
            Some("streamable-http") => "streamable-http",
            Some(other) => {
                return Err(skip(
                    format!("{key} asks for transport \"{}\", which OpenClaw does not support, so it skips the server", shown(other)),
                    format!("use a command (stdio), or a url with transport \"sse\" or \"streamable-http\" in {key}"),
                ))
            }
        };
        let Some(url) = text_field(raw, "url") else {
            return Err(skip(
                format!("{key} has neither a command nor a url, so OpenClaw does not start it"),
                format!("set {key}.command (stdio) or {key}.url"),
            ));
        };
        if raw.get("auth").and_then(Value::as_str) == Some("oauth") {
            return Err(skip(
                format!("{key} signs in with OAuth, which doctor does not do, so its tool schemas were not read"),
                format!("{PROBE_HINT} {} --json lists its tools as OpenClaw sees them: check that each owned tool declares the injected params as optional", shown(name)),
            ));
        }
        Launch {
            server: name.to_owned(),
            transport,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: Some(sub(js_trim(url))),
            headers: string_record(raw.get("headers"), &mut sub),
            connect_timeout_ms,
            request_timeout_ms,
            safe_name: safe_name.to_owned(),
            proxied: false,
        }
    };
    if !missing.is_empty() {
        return Err(skip(
            format!(
                "{key} uses ${{{}}}, which is not set here, so doctor can't start the server as the gateway would",
                missing.join("}, ${")
            ),
            "run doctor with the gateway's environment (or set the variables in the config's env.vars)".into(),
        ));
    }
    Ok(l)
}
