//! The MCP servers whose tools the layer owns, and whether their tool
//! schemas let the params it injects through (`doctor --mcp`, `audit --mcp`).
//!
//! Everything is decided here: which `mcp.servers` entries have tools whose
//! ids match `toolPrefix` (ids built as OpenClaw builds them), how OpenClaw
//! would launch each one, and what each owned tool's `inputSchema` means for
//! the injected params. The JS side only connects with the official MCP SDK
//! and lists the tools (lib/probe.js): it never calls a tool and never sends
//! a token.
//!
//! Two traps motivate the checks:
//! - the MCP SDK drops every argument a tool's schema does not declare, so an
//!   undeclared `auth_token` never reaches the server;
//! - OpenClaw validates the model's arguments against the schema before any
//!   plugin runs (agent-core's `validateToolArguments`, `errorKind:
//!   "argument-validation"`), so a `required` `auth_token` that the model
//!   leaves out fails before claw-identity can set it.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::finding::{Finding, Severity};
use crate::openclaw::config::{OpenClawConfig, PLUGIN_ID};
use crate::openclaw::mcp::{launch, Launch, PROBE_HINT};
use crate::openclaw::tool_names::{fragment, safe_server_names, tool_id, SERVER_MAX};
use crate::options::proxy::Upstream;
use crate::options::Options;
use crate::paths::js_trim;
use crate::redact::{scrub, shown};
use crate::rules::auth_token::owns;

/// How much of a server's error (and stderr) a finding quotes.
const ERROR_CHARS: usize = 400;

/// What the fixes recommend: the schema OpenClaw's own onepassword plugin
/// uses for the param its policy injects.
pub const INTERNAL_DESCRIPTION: &str =
    "Internal. Injected by the gateway; never set this manually.";

/// The servers to connect to, and what the config alone already says.
#[derive(Debug, Default)]
pub struct Plan {
    pub launches: Vec<Launch>,
    pub found: Vec<Finding>,
}

/// Whether any tool id of this server could start with one of `prefixes`.
/// The hook sees tool names lowercased, and so does `owns`.
fn could_own(prefixes: &[String], safe_server: &str) -> bool {
    let ids = format!("{}__", safe_server.to_lowercase());
    prefixes
        .iter()
        .any(|p| ids.starts_with(p.as_str()) || p.starts_with(&ids))
}

fn found(
    id: &'static str,
    severity: Severity,
    label: &'static str,
    title: &'static str,
    detail: String,
    fix: Option<String>,
) -> Finding {
    Finding::new(id, severity, label, title, detail, fix)
}

/// The servers of `mcp.servers` that have tools the layer owns, and what the
/// config alone says about them.
pub fn plan(c: &OpenClawConfig, opts: &Options) -> Plan {
    let mut plan = Plan::default();
    let prefixes = &opts.tool_prefixes;
    let shown_prefixes = prefixes
        .iter()
        .map(|p| format!("\"{}\"", shown(p)))
        .collect::<Vec<_>>()
        .join(", ");
    let servers = c
        .get(&["mcp", "servers"])
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty());
    let Some(servers) = servers else {
        plan.found.push(found(
            "mcp_no_servers",
            Severity::Warn,
            "mcp servers",
            "the config has no MCP server, so no tool schema could be checked",
            format!("mcp.servers is empty or not set, so nothing in this config offers the tools toolPrefix {shown_prefixes} names"),
            Some("add the claw-os server under mcp.servers (command and args for stdio, or url): openclaw mcp set claw-os '<json>'".into()),
        ));
        return plan;
    };
    // serde_json keeps keys sorted: OpenClaw suffixes colliding names in
    // declaration order, which this config reader does not keep.
    let names: Vec<&str> = servers.keys().map(String::as_str).collect();
    let safe = safe_server_names(&names);
    let mut by_safe: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for n in &names {
        by_safe
            .entry(fragment(n, "mcp", Some(SERVER_MAX)).to_lowercase())
            .or_default()
            .push(n);
    }
    for (id, group) in by_safe.iter().filter(|(_, g)| g.len() > 1) {
        plan.found.push(found(
            "mcp_server_names_collide",
            Severity::Warn,
            "mcp servers",
            "two MCP servers get the same tool-id prefix",
            format!(
                "servers {} all become \"{}\" in tool ids: OpenClaw suffixes all but the first declared with -2, -3..., so which one's tools match toolPrefix depends on the order in the file",
                group.iter().map(|g| format!("\"{}\"", shown(g))).collect::<Vec<_>>().join(", "),
                shown(id)
            ),
            Some("give each server a name that stays distinct once OpenClaw keeps only A-Z, a-z, 0-9, _ and - (30 characters at most)".into()),
        ));
    }
    let env_vars = c
        .get(&["env", "vars"])
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let vars = move |name: &str| {
        crate::sys::env_var(name)
            .and_then(|v| v.into_string().ok())
            .filter(|v| !v.is_empty())
            .or_else(|| {
                env_vars
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
    };
    for ((name, raw), safe) in servers.iter().zip(&safe) {
        if !could_own(prefixes, safe) {
            continue;
        }
        let upstream;
        let raw = match opts.proxy.servers.get(name) {
            Some(p) => {
                // Its tools are listed from the upstream itself, with no
                // credential (the proxy answers the gateway alone).
                upstream = match &p.upstream {
                    Upstream::Url(u) => {
                        serde_json::json!({"url": u.url, "headers": u.headers, "transport": "streamable-http"})
                    }
                    Upstream::Stdio(c) => {
                        serde_json::json!({"command": c.command, "args": c.args, "env": c.env, "cwd": c.cwd})
                    }
                };
                &upstream
            }
            None => raw,
        };
        match launch(name, safe, raw, &vars) {
            Ok(mut l) => {
                l.proxied = opts.proxy.servers.contains_key(name);
                plan.launches.push(l)
            }
            Err(why) => plan.found.push(found(
                "mcp_server_unchecked",
                Severity::Warn,
                "mcp server",
                "an MCP server whose tools claw-identity owns could not be checked",
                why.detail,
                Some(why.fix),
            )),
        }
    }
    if plan.launches.is_empty() && plan.found.is_empty() {
        plan.found.push(found(
            "mcp_no_owned_server",
            Severity::Warn,
            "mcp servers",
            "no configured MCP server has tools that toolPrefix matches",
            format!(
                "toolPrefix {shown_prefixes} matches the tool ids of none of mcp.servers ({}): OpenClaw names a server's tools <server>__<tool>, so claw-identity injects into none of them",
                names.iter().map(|n| format!("\"{}\"", shown(n))).collect::<Vec<_>>().join(", ")
            ),
            Some(format!("set toolPrefix to \"<server>__\" for the server that checks tokens: openclaw config set plugins.entries.{PLUGIN_ID}.config.toolPrefix '\"claw-os__\"' --strict-json")),
        ));
    }
    plan
}

/// Whether each server the proxy serves is one OpenClaw reaches through
/// it: the config alone says (doctor and audit, with or without `--mcp`).
pub fn proxy_routes(c: &OpenClawConfig, opts: &Options) -> Vec<Finding> {
    let servers = c.get(&["mcp", "servers"]).and_then(Value::as_object);
    let mut out = Vec::new();
    for name in opts.proxy.servers.keys() {
        match servers.and_then(|s| s.get(name)) {
            Some(raw) => out.push(proxy_route(opts, name, raw)),
            None => out.push(found(
                "proxy_server_unused",
                Severity::Warn,
                "mcp proxy",
                "the proxy serves a server OpenClaw does not use",
                format!("proxy.servers names \"{}\", and mcp.servers has no entry of that name, so OpenClaw never calls it through the proxy", shown(name)),
                Some(format!("point OpenClaw at the proxy: openclaw mcp set {} '{}'", shown(name), proxy_entry(opts, name))),
            )),
        }
    }
    out
}

/// The `mcp.servers` entry that sends `name`'s calls through the proxy.
pub fn proxy_entry(opts: &Options, name: &str) -> String {
    serde_json::json!({"url": proxy_url(opts, name), "transport": "streamable-http"}).to_string()
}

fn proxy_url(opts: &Options, name: &str) -> String {
    format!("http://127.0.0.1:{}/{name}", opts.proxy.port)
}

/// Whether OpenClaw's entry for a proxied server goes through the proxy:
/// its calls carry handles, which only the proxy can turn into a credential.
fn proxy_route(opts: &Options, name: &str, raw: &Value) -> Finding {
    let key = format!("mcp.servers.{}", shown(name));
    let url = raw.get("url").and_then(Value::as_str).map(js_trim);
    let transport = raw.get("transport").and_then(Value::as_str);
    let want = proxy_url(opts, name);
    let through = url.is_some_and(|u| u.trim_end_matches('/') == want)
        && transport == Some("streamable-http");
    if through {
        return found(
            "proxy_in_path",
            Severity::Pass,
            "mcp proxy",
            "",
            format!("{key} goes through claw-identity's proxy ({want}): its calls carry handles, and its upstream gets each agent's credential"),
            None,
        );
    }
    let now = match (url, transport) {
        (Some(u), Some("streamable-http")) => format!("goes to {}", shown(u)),
        (Some(u), _) => format!(
            "goes to {} without transport \"streamable-http\" (OpenClaw then speaks legacy SSE)",
            shown(u)
        ),
        (None, _) => "is not a URL".to_owned(),
    };
    found(
        "proxy_not_in_path",
        Severity::Fail,
        "mcp proxy",
        "a proxied MCP server is not reached through the proxy: its calls fail",
        format!("{key} {now}, not {want}: the layer writes a single-use handle where the token was, and only the proxy can turn it into the agent's credential, so these calls fail authentication"),
        Some(format!("openclaw mcp set {} '{}'", shown(name), proxy_entry(opts, name))),
    )
}

/// One server's answer, from the JS side: its tools, or why it gave none.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    pub server: String,
    #[serde(default)]
    pub tools: Option<Vec<ListedTool>>,
    #[serde(default)]
    pub error: Option<String>,
    /// The end of a stdio server's stderr, when it failed.
    #[serde(default)]
    pub stderr: Option<String>,
    /// The HTTP status an HTTP server refused the list with.
    #[serde(default)]
    pub http_status: Option<u16>,
}

/// One entry of `tools/list`: its name and its input schema.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedTool {
    pub name: String,
    #[serde(default)]
    pub input_schema: Value,
}

/// Text from outside (a server's error, its stderr) as a finding quotes it:
/// one line, bounded, long hex runs fingerprinted.
fn quoted(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = one.chars().take(ERROR_CHARS).collect();
    let cut = if cut.len() < one.len() {
        format!("{cut}…")
    } else {
        cut
    };
    scrub(&cut)
}

/// What a schema says about one param.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Param {
    Undeclared,
    Declared {
        required: bool,
        bad_type: Option<String>,
    },
}

/// The top-level `properties` and `required` of a schema, with those of its
/// `allOf` parts (a schema built from pieces).
fn param(schema: &Value, name: &str) -> Param {
    let parts: Vec<&Value> = std::iter::once(schema)
        .chain(
            schema
                .get("allOf")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        )
        .collect();
    let prop = parts
        .iter()
        .find_map(|p| p.get("properties").and_then(Value::as_object)?.get(name));
    let Some(prop) = prop else {
        return Param::Undeclared;
    };
    let required = parts.iter().any(|p| {
        p.get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(name)))
    });
    let bad_type = match prop.get("type") {
        None => None,
        Some(Value::String(t)) if t == "string" => None,
        Some(Value::Array(ts)) if ts.iter().any(|t| t.as_str() == Some("string")) => None,
        Some(t) => Some(match t {
            Value::String(s) => format!("\"{}\"", shown(s)),
            other => shown(&other.to_string()),
        }),
    };
    Param::Declared { required, bad_type }
}

/// The checks of one owned tool's schema.
fn tool_findings(server: &str, id: &str, schema: &Value, opts: &Options) -> Vec<Finding> {
    let token = opts.token_param.as_str();
    let conv = &opts.rules.conversation_id;
    let tool = format!("{} (server \"{}\")", shown(id), shown(server));
    let zod = |p: &str| format!("{p}: z.string().optional().describe(\"{INTERNAL_DESCRIPTION}\")");
    let mut out = Vec::new();
    let t = param(schema, token);
    let c = conv.enabled.then(|| param(schema, &conv.param));
    if t == Param::Undeclared {
        out.push(found(
            "mcp_token_param_undeclared",
            Severity::Critical,
            "mcp tool",
            "an owned MCP tool does not declare the token parameter: its server drops the token",
            format!("{tool} does not declare {token} in its inputSchema: the MCP SDK drops every argument a tool's schema does not declare, so the token claw-identity sets never reaches the server, and the call fails authentication or runs without its agent's identity"),
            Some(format!("declare {token} in the tool's inputSchema as an optional string described as internal, e.g. with zod: {}", zod(token))),
        ));
    }
    if c == Some(Param::Undeclared) {
        out.push(found(
            "mcp_conversation_param_undeclared",
            Severity::Warn,
            "mcp tool",
            "an owned MCP tool does not declare the conversation parameter: its server drops it",
            format!("{tool} does not declare {} in its inputSchema while rule conversation-id is on: the MCP SDK drops it, so the server never learns which conversation a call came from, and its approval cards lose their chat", shown(&conv.param)),
            Some(format!("declare it in the tool's inputSchema as an optional string described as internal ({}); or, if the server does not route by conversation, turn the rule off: openclaw config set plugins.entries.{PLUGIN_ID}.config.rules.conversationId.enabled false --strict-json", zod(&conv.param))),
        ));
    }
    let required: Vec<String> = [
        (token.to_owned(), Some(&t)),
        (conv.param.clone(), c.as_ref()),
    ]
    .into_iter()
    .filter(|(_, p)| matches!(p, Some(Param::Declared { required: true, .. })))
    .map(|(n, _)| shown(&n))
    .collect();
    if !required.is_empty() {
        let (names, it) = match required.len() {
            1 => (required[0].clone(), "it"),
            _ => (required.join(" and "), "them"),
        };
        out.push(found(
            "mcp_injected_param_required",
            Severity::Warn,
            "mcp tool",
            "an owned MCP tool requires a parameter claw-identity injects: a call that leaves it out is refused before any plugin runs",
            format!("{tool} lists {names} in required: where OpenClaw offers the tool to the model by name (tools.toolSearch false, for one), it validates the model's arguments against the schema before any plugin runs (argument-validation), so a call whose model leaves {it} out, as a model that has learned not to handle the secret does, is refused before claw-identity can set {it} (Tool Search's tool_call does not check an MCP tool's arguments)"),
            Some(format!("make {it} optional in the tool's inputSchema (drop {names} from required) and describe {it} as internal, injected by the gateway, e.g. with zod: {}", zod(&required[0]))),
        ));
    }
    for (name, p) in [(token, Some(&t)), (conv.param.as_str(), c.as_ref())] {
        if let Some(Param::Declared {
            bad_type: Some(ty), ..
        }) = p
        {
            out.push(found(
                "mcp_injected_param_type",
                Severity::Warn,
                "mcp tool",
                "an owned MCP tool declares an injected parameter with a type other than string",
                format!("{tool} declares {} with type {ty}: claw-identity sets a string, which the server's own validation refuses", shown(name)),
                Some(format!("declare {} as an optional string: {}", shown(name), zod(name))),
            ));
        }
    }
    if out.is_empty() {
        let declared = match &c {
            Some(_) => format!("{token} and {}", shown(&conv.param)),
            None => token.to_owned(),
        };
        out.push(found(
            "mcp_tool_ok",
            Severity::Pass,
            "mcp tool",
            "",
            format!("{tool} declares {declared}, optional: the server gets what claw-identity sets, and a model that leaves them out is not refused"),
            None,
        ));
    }
    out
}

/// Every finding about the owned MCP servers: the config's ([`plan`]), and
/// each server's answer in `probes`.
pub fn findings(c: &OpenClawConfig, opts: &Options, probes: &[Probe]) -> Vec<Finding> {
    let plan = plan(c, opts);
    let mut out = plan.found;
    for l in &plan.launches {
        let key = format!("mcp.servers.{}", shown(&l.server));
        let probe = probes.iter().find(|p| p.server == l.server);
        if let Some(p) = opts.proxy.servers.get(&l.server) {
            out.extend(proxied_findings(opts, l, &p.credential, probe));
            continue;
        }
        let tools = match probe {
            Some(Probe {
                tools: Some(tools), ..
            }) => tools,
            _ => {
                let why = match probe {
                    None => "it was not asked".to_owned(),
                    Some(p) => {
                        let mut why = quoted(p.error.as_deref().unwrap_or("no answer"));
                        if let Some(err) = p.stderr.as_deref().filter(|s| !js_trim(s).is_empty()) {
                            why += &format!("; its stderr ends: {}", quoted(err));
                        }
                        why
                    }
                };
                out.push(found(
                    "mcp_unreachable",
                    Severity::Critical,
                    "mcp server",
                    "an MCP server whose tools claw-identity owns could not be reached",
                    format!("the tools of server \"{}\" could not be listed ({}): {why}. OpenClaw launches it the same way, so its tools are likely missing in the gateway too, and their schemas are unchecked", shown(&l.server), l.shown()),
                    Some(format!("check {key} (command, args, env and cwd, or url and headers) and that the server starts as the gateway's user; {PROBE_HINT} {} --json shows what OpenClaw gets", shown(&l.server))),
                ));
                continue;
            }
        };
        let mut owned = 0;
        for t in tools {
            let id = tool_id(&l.safe_name, &t.name);
            if !owns(&opts.tool_prefixes, &id.to_lowercase()) {
                continue;
            }
            owned += 1;
            out.extend(tool_findings(&l.server, &id, &t.input_schema, opts));
        }
        if owned == 0 {
            let ids: Vec<String> = tools
                .iter()
                .take(8)
                .map(|t| shown(&tool_id(&l.safe_name, &t.name)))
                .collect();
            out.push(found(
                "mcp_no_owned_tools",
                Severity::Warn,
                "mcp server",
                "an MCP server lists no tool that toolPrefix matches",
                format!(
                    "server \"{}\" lists {} tool{} ({}{}), and toolPrefix matches none of them, so claw-identity injects into none",
                    shown(&l.server),
                    tools.len(),
                    if tools.len() == 1 { "" } else { "s" },
                    if ids.is_empty() { "none".to_owned() } else { ids.join(", ") },
                    if tools.len() > ids.len() { ", …" } else { "" }
                ),
                Some(format!("check toolPrefix against these ids: openclaw config get plugins.entries.{PLUGIN_ID}.config.toolPrefix")),
            ));
        }
    }
    out
}

/// A proxied server's answer: whether its upstream answers, and whether
/// its tools let the credential through where the proxy puts it. What the
/// model sees has neither the credential nor the filled params (the proxy
/// strips them, `crate::proxy::schema`), so a required one is no trap.
fn proxied_findings(
    opts: &Options,
    l: &Launch,
    credential: &crate::proxy::Credential,
    probe: Option<&Probe>,
) -> Vec<Finding> {
    let server = shown(&l.server);
    let tools = match probe {
        Some(Probe { tools: Some(t), .. }) => t,
        _ => {
            let why = quoted(
                probe
                    .and_then(|p| p.error.as_deref())
                    .unwrap_or("it was not asked"),
            );
            // An upstream that refuses a request with no credential answers:
            // the proxy lists with listAs's.
            let status = probe.and_then(|p| p.http_status);
            let list_as = opts
                .proxy
                .servers
                .get(&l.server)
                .and_then(|p| p.list_as.as_deref());
            let (severity, id, title) = if matches!(status, Some(401 | 403)) && list_as.is_some() {
                (Severity::Info, "proxy_upstream_needs_credential", "")
            } else if matches!(status, Some(401 | 403)) {
                (
                    Severity::Fail,
                    "proxy_upstream_needs_list_as",
                    "a proxied server lists nothing without a credential, and no listAs agent is set: OpenClaw gets none of its tools",
                )
            } else {
                (
                    Severity::Fail,
                    "proxy_upstream_unreachable",
                    "a proxied server's upstream does not answer: its calls fail",
                )
            };
            return vec![found(
                id,
                severity,
                "mcp proxy",
                title,
                format!(
                    "the upstream of \"{server}\" ({}) answered no tool list to a request with no credential{}: {why}",
                    l.shown(),
                    status.map(|s| format!(" (HTTP {s})")).unwrap_or_default()
                ),
                match (severity, id) {
                    (Severity::Fail, "proxy_upstream_needs_list_as") => Some(format!("name the agent whose credential lists its tools: openclaw config set plugins.entries.{PLUGIN_ID}.config.proxy.servers.{server}.listAs '\"<agent id>\"' --strict-json")),
                    (Severity::Fail, _) => Some(format!("check proxy.servers[\"{server}\"].upstream, and that the server runs; claw-identity doctor sends it no credential")),
                    _ => None,
                },
            )];
        }
    };
    let mut out = vec![found(
        "proxy_upstream_ok",
        Severity::Pass,
        "mcp proxy",
        "",
        format!("the upstream of \"{server}\" answers ({} tools); the model sees them without {} or the params claw-identity fills", tools.len(), shown(&opts.token_param)),
        None,
    )];
    if *credential == crate::proxy::Credential::Argument {
        for t in tools {
            let id = tool_id(&l.safe_name, &t.name);
            out.extend(
                tool_findings(&l.server, &id, &t.input_schema, opts)
                    .into_iter()
                    .filter(|f| f.id != "mcp_injected_param_required" && f.id != "mcp_tool_ok"),
            );
        }
    }
    out
}

/// What the model sees of each proxied server, as the gateway's proxy
/// lists it (`proxied`, from the `claw-identity.proxy` gateway method): no
/// tool may show the credential param or a param the layer fills.
pub fn seen_through_proxy(
    opts: &Options,
    proxied: Option<&[Probe]>,
    error: Option<&str>,
) -> Vec<Finding> {
    if opts.proxy.servers.is_empty() {
        return Vec::new();
    }
    let Some(proxied) = proxied else {
        return vec![found(
            "proxy_unchecked",
            Severity::Info,
            "mcp proxy",
            "",
            format!(
                "what the model sees through the proxy was not checked: {}",
                error.map(quoted).unwrap_or_else(|| "only a running gateway can use its proxy (openclaw claw-identity doctor --mcp asks it)".into())
            ),
            None,
        )];
    };
    let filled = crate::proxy::schema::filled_params(opts);
    let mut out = Vec::new();
    for name in opts.proxy.servers.keys() {
        let server = shown(name);
        let Some(tools) = proxied
            .iter()
            .find(|p| &p.server == name)
            .and_then(|p| p.tools.as_ref())
        else {
            let why = proxied
                .iter()
                .find(|p| &p.server == name)
                .and_then(|p| p.error.as_deref())
                .unwrap_or("it did not answer");
            out.push(found(
                "proxy_unreachable",
                Severity::Fail,
                "mcp proxy",
                "the gateway's proxy lists no tools for a proxied server: its tools are missing for the model",
                format!("through the gateway's proxy, \"{server}\" listed no tools: {}", quoted(why)),
                Some(format!("check the gateway log for the proxy's start line and proxy.servers[\"{server}\"].upstream")),
            ));
            continue;
        };
        let shown_params: Vec<String> = tools
            .iter()
            .filter(|t| {
                filled
                    .iter()
                    .any(|p| !matches!(param(&t.input_schema, p), Param::Undeclared))
            })
            .map(|t| shown(&t.name))
            .collect();
        out.push(if shown_params.is_empty() {
            found(
                "proxy_schema_ok",
                Severity::Pass,
                "mcp proxy",
                "",
                format!("through the gateway's proxy the model sees {} tools of \"{server}\", none with {} or a param claw-identity fills", tools.len(), shown(&opts.token_param)),
                None,
            )
        } else {
            found(
                "proxy_schema_shows_credential",
                Severity::Critical,
                "mcp proxy",
                "the model sees a credential parameter through the proxy",
                format!("through the gateway's proxy, {} of \"{server}\" still declare {} or a param claw-identity fills (in a part of the schema the proxy does not rewrite): a model invited to fill it can get it wrong", shown_params.join(", "), shown(&opts.token_param)),
                Some("declare the credential in the tool's top-level properties only (the proxy takes it out there), or take the credential in a header: proxy.servers.<name>.credential {\"in\": \"bearer\"}".into()),
            )
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(extra: &str) -> Options {
        Options::from_json(&format!("{{ {extra} }}")).unwrap()
    }

    fn config(servers: &str) -> OpenClawConfig {
        OpenClawConfig::from_text(&format!("{{ mcp: {{ servers: {servers} }} }}"))
    }

    fn listed(server: &str, tools: Value) -> Probe {
        Probe {
            server: server.into(),
            tools: Some(serde_json::from_value(tools).unwrap()),
            error: None,
            stderr: None,
            http_status: None,
        }
    }

    fn ids(f: &[Finding]) -> Vec<(&str, Severity)> {
        f.iter().map(|f| (f.id, f.severity)).collect()
    }

    /// The schema the docs recommend: both params optional, described as internal.
    fn recommended() -> Value {
        json!({ "type": "object", "properties": {
            "auth_token": { "type": "string", "description": INTERNAL_DESCRIPTION },
            "_conversation_id": { "type": "string", "description": INTERNAL_DESCRIPTION },
            "note": { "type": "string" } }, "required": ["note"] })
    }

    #[test]
    fn only_servers_whose_tool_ids_can_match_the_prefix_are_planned() {
        let c = config(
            r#"{ "claw-os": { command: "node", args: ["s.mjs", 7], env: { K: "v", N: 3, O: {} } },
                 other: { command: "x" }, "Claw_OSx": { url: "http://127.0.0.1:9/mcp" } }"#,
        );
        let p = plan(&c, &opts(""));
        let names: Vec<&str> = p.launches.iter().map(|l| l.server.as_str()).collect();
        assert_eq!(names, ["claw-os"]);
        let l = &p.launches[0];
        assert_eq!(
            (l.transport, l.args.clone()),
            ("stdio", vec!["s.mjs".to_owned()])
        );
        assert_eq!(
            l.env,
            BTreeMap::from([("K".into(), "v".into()), ("N".into(), "3".into())])
        );
        assert_eq!(
            (l.connect_timeout_ms, l.request_timeout_ms),
            (30_000, 60_000)
        );
        // A prefix shorter than the server part matches every server it starts.
        let p = plan(&c, &opts(r#""toolPrefix": "claw""#));
        let mut names: Vec<&str> = p.launches.iter().map(|l| l.server.as_str()).collect();
        names.sort();
        assert_eq!(names, ["Claw_OSx", "claw-os"]);
        assert!(p.found.is_empty(), "{:?}", p.found);
    }

    #[test]
    fn urls_headers_transports_and_timeouts_follow_openclaw() {
        let c = config(
            r#"{ "claw-os": { url: " https://u:p@claw.example/mcp?k=1 ", headers: { Authorization: "Bearer x", Bad: [1] },
                              connectionTimeoutMs: 1500.5, requestTimeoutMs: -1 },
                 "claw-os2": { url: "http://127.0.0.1:1/mcp", type: "http" },
                 "claw-os3": { url: "http://127.0.0.1:1/mcp", transport: "websocket" },
                 "claw-os4": { url: "http://127.0.0.1:1/mcp", auth: "oauth" },
                 "claw-os5": { args: ["x"] } }"#,
        );
        let p = plan(&c, &opts(r#""toolPrefix": "claw-os""#));
        let l = &p.launches[0];
        assert_eq!(l.transport, "sse");
        assert_eq!(l.url.as_deref(), Some("https://u:p@claw.example/mcp?k=1"));
        assert_eq!(
            l.headers,
            BTreeMap::from([("Authorization".into(), "Bearer x".into())])
        );
        assert_eq!((l.connect_timeout_ms, l.request_timeout_ms), (1501, 60_000));
        assert_eq!(l.shown(), "sse: https://claw.example/mcp");
        assert_eq!(p.launches[1].transport, "streamable-http");
        assert_eq!(p.launches.len(), 2);
        let details: Vec<&str> = p.found.iter().map(|f| f.detail.as_str()).collect();
        assert!(
            details[0].contains("transport \"websocket\""),
            "{details:?}"
        );
        assert!(details[1].contains("OAuth"), "{details:?}");
        assert!(
            details[2].contains("neither a command nor a url"),
            "{details:?}"
        );
        assert!(p.found.iter().all(|f| f.severity == Severity::Warn));
    }

    #[test]
    fn config_variables_are_substituted_and_a_missing_one_is_named() {
        std::env::set_var("CLAW_MCP_TEST_DIR", "/srv/claw");
        let c = OpenClawConfig::from_text(
            r#"{ env: { vars: { CLAW_MCP_TEST_KEY: "from-config" } },
                 mcp: { servers: { "claw-os": { command: "${CLAW_MCP_TEST_DIR}/bin/server", args: ["$${LITERAL}", "a$b"],
                                                env: { KEY: "${CLAW_MCP_TEST_KEY}" } } } } }"#,
        );
        let l = &plan(&c, &opts("")).launches[0];
        assert_eq!(l.command.as_deref(), Some("/srv/claw/bin/server"));
        assert_eq!(l.args, ["${LITERAL}", "a$b"]);
        assert_eq!(l.env["KEY"], "from-config");
        let c = config(
            r#"{ "claw-os": { command: "node", args: ["${CLAW_MCP_TEST_UNSET}", "${lower}"] } }"#,
        );
        let p = plan(&c, &opts(""));
        assert!(p.launches.is_empty());
        assert_eq!(ids(&p.found), [("mcp_server_unchecked", Severity::Warn)]);
        assert!(
            p.found[0].detail.contains("${CLAW_MCP_TEST_UNSET}"),
            "{}",
            p.found[0].detail
        );
    }

    #[test]
    fn no_servers_no_match_and_colliding_names_are_findings() {
        let p = plan(&OpenClawConfig::from_text("{}"), &opts(""));
        assert_eq!(ids(&p.found), [("mcp_no_servers", Severity::Warn)]);
        let p = plan(&config(r#"{ files: { command: "x" } }"#), &opts(""));
        assert_eq!(ids(&p.found), [("mcp_no_owned_server", Severity::Warn)]);
        assert!(p.found[0].detail.contains("\"files\""));
        let p = plan(
            &config(r#"{ "claw os": { command: "x" }, "claw-os": { command: "y" } }"#),
            &opts(""),
        );
        assert_eq!(
            ids(&p.found),
            [("mcp_server_names_collide", Severity::Warn)]
        );
    }

    #[test]
    fn the_recommended_schema_passes_and_each_trap_is_named_with_its_fix() {
        let c = config(r#"{ "claw-os": { command: "node" } }"#);
        let o = opts("");
        let ok = findings(
            &c,
            &o,
            &[listed(
                "claw-os",
                json!([{ "name": "claw_notes", "inputSchema": recommended() }]),
            )],
        );
        assert_eq!(ids(&ok), [("mcp_tool_ok", Severity::Pass)]);
        assert!(ok[0].detail.starts_with("claw-os__claw_notes (server \"claw-os\") declares auth_token and _conversation_id, optional"), "{}", ok[0].detail);

        let tools = json!([
            { "name": "bare", "inputSchema": { "type": "object", "properties": { "note": {} } } },
            { "name": "strict", "inputSchema": { "type": "object",
                "properties": { "auth_token": { "type": "string" }, "_conversation_id": { "type": "string" } },
                "required": ["auth_token", "_conversation_id"] } },
            { "name": "typed", "inputSchema": { "allOf": [{ "properties": { "auth_token": { "type": "integer" } } },
                                                          { "properties": { "_conversation_id": { "type": ["string", "null"] } } }] } },
            { "name": "no_schema" }
        ]);
        let f = findings(&c, &o, &[listed("claw-os", tools)]);
        assert_eq!(
            ids(&f),
            [
                ("mcp_token_param_undeclared", Severity::Critical),
                ("mcp_conversation_param_undeclared", Severity::Warn),
                ("mcp_injected_param_required", Severity::Warn),
                ("mcp_injected_param_type", Severity::Warn),
                ("mcp_token_param_undeclared", Severity::Critical),
                ("mcp_conversation_param_undeclared", Severity::Warn),
            ]
        );
        assert!(
            f[0].detail
                .starts_with("claw-os__bare (server \"claw-os\") does not declare auth_token"),
            "{}",
            f[0].detail
        );
        assert!(f[0].fix.as_deref().unwrap().contains(INTERNAL_DESCRIPTION));
        assert!(
            f[2].detail
                .contains("lists auth_token and _conversation_id in required"),
            "{}",
            f[2].detail
        );
        assert!(f[2].detail.contains("argument-validation"));
        assert!(
            f[2].fix
                .as_deref()
                .unwrap()
                .starts_with("make them optional"),
            "{:?}",
            f[2].fix
        );
        assert!(
            f[3].detail.contains("auth_token with type \"integer\""),
            "{}",
            f[3].detail
        );
        for x in &f {
            assert!(x.fix.is_some(), "{x:?}");
        }
    }

    #[test]
    fn the_options_decide_which_params_and_tools_are_checked() {
        let c = config(r#"{ "claw-os": { command: "node" } }"#);
        let tools = json!([{ "name": "notes", "inputSchema": { "properties": { "tok": { "type": "string" } } } },
                           { "name": "other", "inputSchema": {} }]);
        let o = opts(
            r#""tokenParam": "tok", "toolPrefix": "claw-os__notes", "rules": { "conversationId": { "enabled": false } }"#,
        );
        let f = findings(&c, &o, &[listed("claw-os", tools.clone())]);
        assert_eq!(ids(&f), [("mcp_tool_ok", Severity::Pass)]);
        let o = opts(r#""toolPrefix": "claw-os__x""#);
        let f = findings(&c, &o, &[listed("claw-os", tools)]);
        assert_eq!(ids(&f), [("mcp_no_owned_tools", Severity::Warn)]);
        assert!(
            f[0].detail.contains("claw-os__notes, claw-os__other"),
            "{}",
            f[0].detail
        );
    }

    #[test]
    fn an_unreachable_server_is_a_finding_that_quotes_its_error_without_secrets() {
        let c =
            config(r#"{ "claw-os": { command: "/opt/claw/server", args: ["--key", "s3cret"] } }"#);
        let secret = "ab".repeat(32);
        let p = Probe {
            server: "claw-os".into(),
            tools: None,
            error: Some("MCP error -32000: Connection closed".into()),
            stderr: Some(format!("boot\nfatal: bad key {secret}\n")),
            http_status: None,
        };
        let f = findings(&c, &opts(""), &[p]);
        assert_eq!(ids(&f), [("mcp_unreachable", Severity::Critical)]);
        let d = &f[0].detail;
        assert!(d.contains("(stdio: /opt/claw/server): MCP error -32000: Connection closed; its stderr ends: boot fatal: bad key"), "{d}");
        assert!(!d.contains(&secret[..16]) && !d.contains("s3cret"), "{d}");
        let f = findings(&c, &opts(""), &[]);
        assert!(f[0].detail.contains("it was not asked"));
    }

    #[test]
    fn a_proxied_server_must_go_through_the_proxy_and_its_upstream_is_what_is_listed() {
        let o = opts(
            r#""proxy": {"port": 4100, "servers": {
                "claw-os": {"upstream": {"url": "http://127.0.0.1:7/mcp"}, "credential": {"in": "argument"}},
                "notes": {"upstream": {"command": "node", "args": ["n.mjs"]}},
                "unused": {"upstream": {"url": "http://127.0.0.1:7/mcp"}}}}"#,
        );
        let c = config(
            r#"{ "claw-os": { url: "http://127.0.0.1:4100/claw-os", transport: "streamable-http" },
                 notes: { url: "http://127.0.0.1:7/mcp", transport: "streamable-http" } }"#,
        );
        let p = plan(&c, &o);
        let routes = proxy_routes(&c, &o);
        let route: Vec<(&str, Severity)> = ids(&routes);
        assert!(
            route.contains(&("proxy_in_path", Severity::Pass)),
            "{route:?}"
        );
        assert!(
            route.contains(&("proxy_not_in_path", Severity::Fail)),
            "{route:?}"
        );
        assert!(
            route.contains(&("proxy_server_unused", Severity::Warn)),
            "{route:?}"
        );
        let fix = routes
            .iter()
            .find(|f| f.id == "proxy_not_in_path")
            .unwrap()
            .fix
            .clone()
            .unwrap();
        assert_eq!(
            fix,
            r#"openclaw mcp set notes '{"transport":"streamable-http","url":"http://127.0.0.1:4100/notes"}'"#
        );
        // The probes go to the upstreams, not to the proxy (which answers the gateway alone).
        let l: Vec<(&str, Option<&str>, Option<&str>)> = p
            .launches
            .iter()
            .map(|l| (l.server.as_str(), l.url.as_deref(), l.command.as_deref()))
            .collect();
        assert_eq!(
            l,
            [
                ("claw-os", Some("http://127.0.0.1:7/mcp"), None),
                ("notes", None, Some("node"))
            ]
        );
    }

    #[test]
    fn what_a_proxied_upstream_lists_is_judged_as_the_model_will_see_it() {
        let o = opts(
            r#""proxy": {"port": 4100, "servers": {
                "claw-os": {"upstream": {"url": "http://127.0.0.1:7/mcp"}, "credential": {"in": "argument"}},
                "notes": {"upstream": {"url": "http://127.0.0.1:8/mcp"}, "listAs": "paco--francis"}}}"#,
        );
        let c = config(
            r#"{ "claw-os": { url: "http://127.0.0.1:4100/claw-os", transport: "streamable-http" },
                 notes: { url: "http://127.0.0.1:4100/notes", transport: "streamable-http" } }"#,
        );
        let required = json!([{ "name": "claw_notes", "inputSchema": { "type": "object",
            "properties": { "auth_token": { "type": "string" }, "_conversation_id": { "type": "string" } },
            "required": ["auth_token"] } }]);
        let bare = json!([{ "name": "claw_notes", "inputSchema": { "type": "object" } }]);
        // Argument mode: a required token is no trap through the proxy; an undeclared one is dropped by the SDK.
        let f = findings(
            &c,
            &o,
            &[listed("claw-os", required), listed("notes", bare.clone())],
        );
        let got = ids(&f);
        assert!(
            !got.iter()
                .any(|(id, _)| *id == "mcp_injected_param_required"),
            "{got:?}"
        );
        assert_eq!(
            got.iter()
                .filter(|(id, _)| *id == "proxy_upstream_ok")
                .count(),
            2,
            "{got:?}"
        );
        assert!(
            !got.iter()
                .any(|(id, _)| *id == "mcp_token_param_undeclared"),
            "a header-mode tool needs no token param: {got:?}"
        );
        let f = findings(
            &c,
            &o,
            &[
                listed("claw-os", bare),
                Probe {
                    server: "notes".into(),
                    tools: None,
                    error: Some(
                        "Streamable HTTP error: Error POSTing to endpoint: unauthorized".into(),
                    ),
                    stderr: None,
                    http_status: Some(401),
                },
            ],
        );
        let got = ids(&f);
        assert!(
            got.contains(&("mcp_token_param_undeclared", Severity::Critical)),
            "{got:?}"
        );
        assert!(
            got.contains(&("proxy_upstream_needs_credential", Severity::Info)),
            "{got:?}"
        );
        // Without listAs, OpenClaw would list nothing: a failure, with its fix.
        let bare = opts(
            r#""proxy": {"port": 4100, "servers": {"notes": {"upstream": {"url": "http://127.0.0.1:8/mcp"}}}}"#,
        );
        let c2 = config(
            r#"{ notes: { url: "http://127.0.0.1:4100/notes", transport: "streamable-http" } }"#,
        );
        let refused = Probe {
            server: "notes".into(),
            tools: None,
            error: Some("unauthorized".into()),
            stderr: None,
            http_status: Some(401),
        };
        let f = findings(&c2, &bare, &[refused]);
        assert_eq!(ids(&f), [("proxy_upstream_needs_list_as", Severity::Fail)]);
        assert!(
            f[0].fix
                .as_deref()
                .unwrap()
                .contains("proxy.servers.notes.listAs"),
            "{:?}",
            f[0].fix
        );
        let f = findings(
            &c,
            &o,
            &[Probe {
                server: "claw-os".into(),
                tools: None,
                error: Some("ECONNREFUSED".into()),
                stderr: None,
                http_status: None,
            }],
        );
        assert!(
            ids(&f).contains(&("proxy_upstream_unreachable", Severity::Fail)),
            "{:?}",
            ids(&f)
        );
    }

    #[test]
    fn what_the_model_sees_through_the_gateways_proxy_shows_no_credential() {
        let o = opts(
            r#""proxy": {"port": 4100, "servers": {"claw-os": {"upstream": {"url": "http://127.0.0.1:7/mcp"}}}}"#,
        );
        let clean = listed(
            "claw-os",
            json!([{ "name": "claw_notes", "inputSchema": { "type": "object", "properties": { "note": {} } } }]),
        );
        assert_eq!(
            ids(&seen_through_proxy(&o, Some(&[clean]), None)),
            [("proxy_schema_ok", Severity::Pass)]
        );
        let nested = listed(
            "claw-os",
            json!([{ "name": "claw_notes", "inputSchema": { "allOf": [{ "properties": { "auth_token": {} } }] } }]),
        );
        assert_eq!(
            ids(&seen_through_proxy(&o, Some(&[nested]), None)),
            [("proxy_schema_shows_credential", Severity::Critical)]
        );
        assert_eq!(
            ids(&seen_through_proxy(&o, Some(&[]), None)),
            [("proxy_unreachable", Severity::Fail)]
        );
        assert_eq!(
            ids(&seen_through_proxy(&o, None, Some("no gateway"))),
            [("proxy_unchecked", Severity::Info)]
        );
        assert!(seen_through_proxy(&opts(""), None, None).is_empty());
    }
}
