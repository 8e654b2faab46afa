//! The `proxy` option: which MCP servers the layer serves on its loopback
//! proxy, where each upstream is, and where the agent's credential goes
//! (`crate::proxy`). Parsed strictly, like every security option.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Handles live this long unless `handleTtlMs` says otherwise: longer than
/// OpenClaw's longest plugin approval (`MAX_PLUGIN_APPROVAL_TIMEOUT_MS`,
/// 10 minutes, `plugin-approvals-*.mjs`), so a call held for an approval
/// still finds its handle.
pub const DEFAULT_HANDLE_TTL_MS: u64 = 15 * 60 * 1000;
/// The env var a stdio upstream gets the agent's credential in, by default.
pub const DEFAULT_ENV: &str = "CLAW_TOKEN";

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProxyOptions {
    /// The proxy's port on 127.0.0.1 (every server is a path on it).
    pub port: u16,
    pub handle_ttl_ms: u64,
    /// By the `mcp.servers` key each one stands in for.
    pub servers: BTreeMap<String, ProxyServer>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProxyServer {
    pub upstream: Upstream,
    pub credential: Credential,
    /// The agent whose credential lists tools, resources and prompts (the
    /// requests that carry no handle, so name no agent); `None`: they go
    /// without one.
    pub list_as: Option<String>,
    /// The prefix OpenClaw gives this server's tool ids
    /// (`crate::openclaw::tool_names::server_prefix`), computed once: every
    /// owned call looks its server up by it.
    pub tool_prefix: String,
}

/// Where a proxied server really is.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Upstream {
    /// Streamable HTTP.
    Url(HttpUpstream),
    /// A stdio child, one per agent (its env may carry the credential).
    Stdio(StdioUpstream),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpUpstream {
    pub url: String,
    /// Static headers sent with every request (not a credential's place).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdioUpstream {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
}

/// Where the upstream takes the agent's credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// `Authorization: Bearer <token>` on every request (HTTP).
    Bearer,
    /// A header of this name (HTTP), lowercased.
    Header(String),
    /// The tool argument `tokenParam`, as claw-os takes it without the proxy.
    Argument,
    /// This env var of the agent's own stdio child.
    Env(String),
}

impl Credential {
    pub fn describe(&self, token_param: &str) -> String {
        match self {
            Credential::Bearer => "the Authorization header (Bearer)".into(),
            Credential::Header(h) => format!("the {h} header"),
            Credential::Argument => format!("the tool argument {token_param}"),
            Credential::Env(e) => format!("the env var {e} of the agent's own server process"),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct RawProxy {
    port: Option<u16>,
    handle_ttl_ms: Option<u64>,
    #[serde(default)]
    servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    upstream: Upstream,
    credential: Option<RawCredential>,
    list_as: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCredential {
    #[serde(rename = "in")]
    place: Place,
    name: Option<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Place {
    Bearer,
    Header,
    Argument,
    Env,
}

/// A header name as HTTP allows it (an RFC 9110 token).
fn header_name(h: &str) -> bool {
    !h.is_empty()
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl RawProxy {
    pub(super) fn resolve(self) -> Result<ProxyOptions, String> {
        let mut servers = BTreeMap::new();
        for (name, raw) in self.servers {
            let at = format!("proxy.servers[\"{}\"]", crate::redact::shown(&name));
            if name.is_empty() || name.len() > 64 || name.contains(['/', '?', '#', '%']) {
                return Err(format!("{at}: a server name must be the mcp.servers key it stands in for (1 to 64 characters, no / ? # %)"));
            }
            let http = match &raw.upstream {
                Upstream::Url(HttpUpstream { url, headers }) => {
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        return Err(format!(
                            "{at}.upstream.url must be an http:// or https:// URL"
                        ));
                    }
                    if let Some(h) = headers.keys().find(|h| !header_name(h)) {
                        return Err(format!(
                            "{at}.upstream.headers: \"{}\" is not a header name",
                            crate::redact::shown(h)
                        ));
                    }
                    true
                }
                Upstream::Stdio(StdioUpstream { command, .. }) => {
                    if command.is_empty() {
                        return Err(format!("{at}.upstream.command must not be empty"));
                    }
                    false
                }
            };
            let (place, name_given) = match raw.credential {
                Some(c) => (c.place, c.name),
                None if http => (Place::Bearer, None),
                None => (Place::Env, None),
            };
            let credential = match (place, name_given) {
                (Place::Bearer, None) if http => Credential::Bearer,
                (Place::Header, Some(h)) if http && header_name(&h) => {
                    let h = h.to_ascii_lowercase();
                    if h == "authorization" {
                        Credential::Bearer
                    } else {
                        Credential::Header(h)
                    }
                }
                (Place::Argument, None) => Credential::Argument,
                (Place::Env, name) if !http => {
                    let e = name.unwrap_or_else(|| DEFAULT_ENV.into());
                    if e.is_empty() || e.contains(['=', '\0']) {
                        return Err(format!("{at}.credential.name: \"{}\" is not an env var name", crate::redact::shown(&e)));
                    }
                    Credential::Env(e)
                }
                (Place::Bearer | Place::Header, _) if !http => {
                    return Err(format!("{at}.credential: a header needs an HTTP upstream (upstream.url); a stdio upstream takes the credential in \"env\" or \"argument\""))
                }
                (Place::Env, _) => {
                    return Err(format!("{at}.credential: \"env\" needs a stdio upstream (upstream.command); an HTTP upstream takes it in \"bearer\", \"header\" or \"argument\""))
                }
                (Place::Header, _) => {
                    return Err(format!("{at}.credential: \"header\" needs a valid header name in \"name\""))
                }
                (Place::Bearer | Place::Argument, Some(_)) => {
                    return Err(format!("{at}.credential: \"name\" applies only to \"header\" and \"env\""))
                }
                (Place::Bearer, None) => unreachable!("http checked above"),
            };
            if raw.list_as.as_deref() == Some("") {
                return Err(format!("{at}.listAs must name an agent of the token map"));
            }
            let tool_prefix = crate::openclaw::tool_names::server_prefix(&name);
            servers.insert(
                name,
                ProxyServer {
                    upstream: raw.upstream,
                    credential,
                    list_as: raw.list_as,
                    tool_prefix,
                },
            );
        }
        let port = match (self.port, servers.is_empty()) {
            (Some(0), false) | (None, false) => {
                return Err("proxy.port: give the port (1-65535) the proxy listens on at 127.0.0.1; OpenClaw's mcp.servers entries point at it".into())
            }
            (p, _) => p.unwrap_or(0),
        };
        let handle_ttl_ms = self.handle_ttl_ms.unwrap_or(DEFAULT_HANDLE_TTL_MS);
        if handle_ttl_ms == 0 {
            return Err("proxy.handleTtlMs must be at least 1".into());
        }
        Ok(ProxyOptions {
            port,
            handle_ttl_ms,
            servers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<ProxyOptions, String> {
        serde_json::from_str::<RawProxy>(json)
            .map_err(|e| e.to_string())?
            .resolve()
    }

    #[test]
    fn each_upstream_gets_its_natural_credential_by_default() {
        let o = parse(
            r#"{"port": 9, "servers": {
                "a": {"upstream": {"url": "http://127.0.0.1:1/mcp"}},
                "b": {"upstream": {"command": "node", "args": ["s.mjs"]}},
                "c": {"upstream": {"url": "http://127.0.0.1:1/mcp"}, "credential": {"in": "argument"}},
                "d": {"upstream": {"url": "https://x/mcp"}, "credential": {"in": "header", "name": "X-Api-Key"}}
            }}"#,
        )
        .unwrap();
        assert_eq!(o.servers["a"].credential, Credential::Bearer);
        assert_eq!(
            o.servers["b"].credential,
            Credential::Env("CLAW_TOKEN".into())
        );
        assert_eq!(o.servers["c"].credential, Credential::Argument);
        assert_eq!(
            o.servers["d"].credential,
            Credential::Header("x-api-key".into())
        );
        assert_eq!(o.handle_ttl_ms, DEFAULT_HANDLE_TTL_MS);
    }

    #[test]
    fn a_credential_that_cannot_reach_its_upstream_is_refused() {
        for (bad, says) in [
            (
                r#"{"port":9,"servers":{"a":{"upstream":{"command":"n"},"credential":{"in":"bearer"}}}}"#,
                "needs an HTTP upstream",
            ),
            (
                r#"{"port":9,"servers":{"a":{"upstream":{"url":"http://h/"},"credential":{"in":"env"}}}}"#,
                "needs a stdio upstream",
            ),
            (
                r#"{"port":9,"servers":{"a":{"upstream":{"url":"http://h/"},"credential":{"in":"header"}}}}"#,
                "valid header name",
            ),
            (
                r#"{"port":9,"servers":{"a":{"upstream":{"url":"http://h/"},"credential":{"in":"header","name":"a b"}}}}"#,
                "valid header name",
            ),
            (
                r#"{"port":9,"servers":{"a":{"upstream":{"url":"ftp://h/"}}}}"#,
                "http:// or https://",
            ),
            (
                r#"{"servers":{"a":{"upstream":{"url":"http://h/"}}}}"#,
                "proxy.port",
            ),
            (
                r#"{"port":9,"servers":{"a/b":{"upstream":{"url":"http://h/"}}}}"#,
                "server name",
            ),
            (r#"{"port":9,"handleTtlMs":0}"#, "handleTtlMs"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(parse(r#"{"port":9,"servers":{"a":{"upstream":{"url":"http://h/"},"credential":{"in":"smoke"}}}}"#).is_err());
        assert!(parse(r#"{"port":9,"extra":1}"#).is_err());
    }
}
