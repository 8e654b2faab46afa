//! Layer options, as given to `configure`/`new IdentityLayer` (minus the JS
//! `logger`, which never crosses into Rust). Parsed strictly: a typo in a
//! security option must be an error, not a silently ignored key.

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub mod proxy;
pub mod rules;

use proxy::ProxyOptions;
use rules::RulesConfig;

pub const DEFAULT_TOKEN_MAP: &str = "~/.config/micelclaw/agent-tokens.json";
pub const DEFAULT_TOOL_PREFIX: &str = "claw-os__";
pub const DEFAULT_TOKEN_PARAM: &str = "auth_token";

/// `protectMap`: how far the layer keeps the map from the agents' tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProtectMap {
    /// No path guard for the map (the result redaction is separate).
    Off,
    /// Block tool calls whose paths reach the map (the default).
    #[default]
    Paths,
    /// `paths`, and block shells for agents not known to run in OpenClaw's
    /// sandbox.
    Strict,
}

/// `posture`: what the layer does while an agent is not contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PostureMode {
    /// Serve no token until every agent is contained.
    #[default]
    Enforce,
    /// Serve tokens, and say what is exposed.
    Warn,
}

impl PostureMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PostureMode::Enforce => "enforce",
            PostureMode::Warn => "warn",
        }
    }
}

/// `sandbox.network`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// A network namespace of its own: only its own loopback. The gateway,
    /// other local services and abstract sockets are out of reach.
    #[default]
    None,
    /// The host's network, the gateway's loopback port included.
    Host,
}

/// The plugin's `sandbox` options.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SandboxOptions {
    pub network: Network,
    /// Where bwrap is; else the first `bwrap` on the gateway's `PATH`.
    pub bwrap: Option<PathBuf>,
    /// More host paths to show empty inside.
    pub hide: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnMissingToken {
    #[default]
    Pass,
    Block,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WatchMode {
    /// File-system events on the map's directories (inotify on the native
    /// build, Node's `fs.watch` on the WebAssembly build), falling back to
    /// polling when they can't be set up.
    #[default]
    Auto,
    /// Content-comparing polling only (network file systems deliver no events).
    Poll,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawOptions {
    token_map_path: Option<String>,
    tool_prefix: Option<OneOrMany>,
    token_param: Option<String>,
    on_missing_token: Option<OnMissingToken>,
    allow_group_readable: Option<bool>,
    max_stale_seconds: Option<f64>,
    watcher: Option<WatchMode>,
    poll_interval_ms: Option<u64>,
    protect_map: Option<ProtectMap>,
    posture: Option<PostureMode>,
    #[serde(default)]
    rules: RulesConfig,
    #[serde(default)]
    sandbox: SandboxOptions,
    proxy: Option<proxy::RawProxy>,
}

/// Every option the layer accepts, in the spelling users write.
pub const KNOWN_OPTIONS: &[&str] = &[
    "tokenMapPath",
    "toolPrefix",
    "tokenParam",
    "onMissingToken",
    "allowGroupReadable",
    "maxStaleSeconds",
    "watcher",
    "pollIntervalMs",
    "protectMap",
    "posture",
    "rules",
    "sandbox",
    "proxy",
    "logger",
];

#[derive(Debug, Clone)]
pub struct Options {
    pub token_map_path: PathBuf,
    pub tool_prefixes: Vec<String>,
    pub token_param: String,
    pub on_missing_token: OnMissingToken,
    pub allow_group_readable: bool,
    pub max_stale_seconds: Option<f64>,
    pub watcher: WatchMode,
    pub poll_interval_ms: u64,
    /// How far the agents' own tools are kept from the map (rule `map-access`).
    pub protect_map: ProtectMap,
    /// What the layer does while an agent is not contained (`crate::posture`).
    pub posture: PostureMode,
    pub rules: RulesConfig,
    /// The `claw-identity` sandbox backend (`crate::sandbox`).
    pub sandbox: SandboxOptions,
    /// The loopback MCP proxy (`crate::proxy`).
    pub proxy: ProxyOptions,
}

/// `~` onto `HOME` (on Windows, where `HOME` is seldom set, the OS home as
/// OpenClaw's file tools take it: `HOME`, `USERPROFILE`, `os.homedir()`);
/// the path as the host names it.
fn expand_home(path: &str) -> Result<PathBuf, String> {
    let windows = crate::paths::windows();
    if path == "~" || path.starts_with("~/") || (windows && path.starts_with("~\\")) {
        let home = if windows {
            crate::openclaw::paths::os_home()
        } else {
            crate::sys::env_var("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
        };
        let home = home.ok_or_else(|| {
            format!(
                "tokenMapPath \"{path}\" starts with ~ but HOME is not set; give an absolute path"
            )
        })?;
        return Ok(crate::paths::resolve(
            &home,
            Path::new(path[1..].trim_start_matches(['/', '\\'])),
        ));
    }
    Ok(crate::paths::host_path(path))
}

impl Options {
    /// The permission gate these options ask for. The plugin, `doctor` and
    /// `explain` all read the map through this, so they refuse the same files.
    pub fn gate(&self) -> crate::token_map::GateOptions {
        crate::token_map::GateOptions {
            allow_group_readable: self.allow_group_readable,
            max_bytes: crate::token_map::DEFAULT_MAX_MAP_BYTES,
        }
    }

    /// Parses options from JSON text. Errors are one line, in the caller's
    /// terms, and quote no token: a value pasted into the wrong option
    /// (and echoed by serde, or by a check below) is shown by fingerprint.
    pub fn from_json(json: &str) -> Result<Options, String> {
        Options::parse(json).map_err(|e| crate::redact::scrub(&e))
    }

    fn parse(json: &str) -> Result<Options, String> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("options are not valid JSON: {e}"))?;
        let obj = match &value {
            serde_json::Value::Object(o) => o,
            serde_json::Value::Null => return Options::from_json("{}"),
            _ => return Err("options must be an object".into()),
        };
        let unknown: Vec<String> = obj
            .keys()
            .filter(|k| !KNOWN_OPTIONS.contains(&k.as_str()))
            .map(|k| format!("\"{k}\""))
            .collect();
        if !unknown.is_empty() {
            return Err(format!(
                "unknown option{} {}; known options are {}",
                if unknown.len() > 1 { "s" } else { "" },
                unknown.join(", "),
                KNOWN_OPTIONS.join(", ")
            ));
        }
        let mut obj = obj.clone();
        obj.remove("logger");
        let raw: RawOptions = serde_path_to_error::deserialize(serde_json::Value::Object(obj))
            .map_err(|e| format!("invalid options: {}: {}", e.path(), e.inner()))?;

        let path = raw
            .token_map_path
            .unwrap_or_else(|| DEFAULT_TOKEN_MAP.into());
        if path.is_empty() {
            return Err("tokenMapPath must not be empty".into());
        }
        let token_map_path = expand_home(&path)?;
        let token_map_path = if token_map_path.is_absolute() {
            token_map_path
        } else {
            std::env::current_dir()
                .map_err(|e| format!("cannot resolve relative tokenMapPath: {e}"))?
                .join(token_map_path)
        };

        let tool_prefixes = match raw.tool_prefix {
            None => vec![DEFAULT_TOOL_PREFIX.to_owned()],
            Some(OneOrMany::One(p)) => vec![p],
            Some(OneOrMany::Many(v)) => v,
        };
        if tool_prefixes.is_empty() || tool_prefixes.iter().any(|p| p.is_empty()) {
            return Err("toolPrefix must be a non-empty string or a non-empty list of non-empty strings (an empty prefix would inject tokens into every tool)".into());
        }
        // Compared as OpenClaw hands tool names to the hook (trimmed, lowercased).
        let mut tool_prefixes = tool_prefixes
            .iter()
            .map(|p| crate::openclaw::tool_names::tool_prefix(p))
            .collect::<Result<Vec<_>, _>>()?;
        let proxy = match raw.proxy {
            Some(p) => p.resolve()?,
            None => ProxyOptions::default(),
        };
        // A proxied server's tools are owned: the proxy serves no call
        // without the handle the owned-tool rule writes.
        for server in proxy.servers.values() {
            if !tool_prefixes.contains(&server.tool_prefix) {
                tool_prefixes.push(server.tool_prefix.clone());
            }
        }

        let token_param = raw
            .token_param
            .unwrap_or_else(|| DEFAULT_TOKEN_PARAM.into());
        if token_param.is_empty() || token_param == "__proto__" {
            return Err(format!(
                "tokenParam \"{token_param}\" is not a usable parameter name"
            ));
        }

        if let Some(s) = raw.max_stale_seconds {
            if !(s.is_finite() && s > 0.0) {
                return Err("maxStaleSeconds must be a positive number of seconds".into());
            }
        }
        let poll_interval_ms = raw.poll_interval_ms.unwrap_or(1000);
        if poll_interval_ms == 0 {
            return Err("pollIntervalMs must be at least 1".into());
        }
        if let Some(b) = raw.sandbox.bwrap.as_ref().filter(|b| !b.is_absolute()) {
            return Err(format!(
                "sandbox.bwrap must be an absolute path, not \"{}\"",
                b.display()
            ));
        }
        if let Some(h) = raw.sandbox.hide.iter().find(|h| !h.is_absolute()) {
            return Err(format!(
                "sandbox.hide holds \"{}\", which is not an absolute path",
                h.display()
            ));
        }
        raw.rules.validate()?;
        raw.rules.validate_with(&token_param)?;

        Ok(Options {
            token_map_path,
            tool_prefixes,
            token_param,
            on_missing_token: raw.on_missing_token.unwrap_or_default(),
            allow_group_readable: raw.allow_group_readable.unwrap_or(false),
            max_stale_seconds: raw.max_stale_seconds,
            watcher: raw.watcher.unwrap_or_default(),
            poll_interval_ms,
            protect_map: raw.protect_map.unwrap_or_default(),
            posture: raw.posture.unwrap_or_default(),
            rules: raw.rules,
            sandbox: raw.sandbox,
            proxy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        std::env::set_var("HOME", "/home/u");
        let o = Options::from_json("{}").unwrap();
        assert_eq!(
            o.token_map_path,
            PathBuf::from("/home/u/.config/micelclaw/agent-tokens.json")
        );
        assert_eq!(o.tool_prefixes, vec!["claw-os__"]);
        assert_eq!(o.token_param, "auth_token");
        assert_eq!(o.on_missing_token, OnMissingToken::Pass);
    }

    #[test]
    fn unknown_options_are_all_named() {
        let e = Options::from_json(r#"{"tokenMap": "x", "prefix": "y"}"#).unwrap_err();
        assert!(e.starts_with("unknown options "), "{e}");
        assert!(
            e.contains("\"tokenMap\"") && e.contains("\"prefix\""),
            "{e}"
        );
    }

    #[test]
    fn a_type_error_names_its_option() {
        let e = Options::from_json(r#"{"tokenParam": 5}"#).unwrap_err();
        assert_eq!(
            e,
            "invalid options: tokenParam: invalid type: integer `5`, expected a string"
        );
        let e =
            Options::from_json(r#"{"rules": {"crossUserSend": {"enabled": "no"}}}"#).unwrap_err();
        assert!(
            e.starts_with("invalid options: rules.crossUserSend.enabled: "),
            "{e}"
        );
    }

    #[test]
    fn prefix_may_be_a_list_but_never_empty() {
        let o = Options::from_json(r#"{"toolPrefix": ["a__", "b__"]}"#).unwrap();
        assert_eq!(o.tool_prefixes, vec!["a__", "b__"]);
        assert!(Options::from_json(r#"{"toolPrefix": ""}"#).is_err());
        assert!(Options::from_json(r#"{"toolPrefix": []}"#).is_err());
    }

    #[test]
    fn prefixes_are_normalized_and_one_that_can_never_match_is_refused() {
        let o = Options::from_json(r#"{"toolPrefix": ["Claw-OS__", " b__"]}"#).unwrap();
        assert_eq!(o.tool_prefixes, vec!["claw-os__", "b__"]);
        let e = Options::from_json(r#"{"toolPrefix": ["claw-os__", "claw os__"]}"#).unwrap_err();
        assert!(e.starts_with("toolPrefix \"claw os__\""), "{e}");
    }

    #[test]
    fn bad_values_are_errors() {
        assert!(Options::from_json(r#"{"onMissingToken": "deny"}"#).is_err());
        assert!(Options::from_json(r#"{"tokenParam": ""}"#).is_err());
        assert!(Options::from_json(r#"{"maxStaleSeconds": -1}"#).is_err());
        assert!(Options::from_json(r#"[]"#).is_err());
        assert!(Options::from_json(r#"{"protectMap": true}"#).is_err());
        assert!(Options::from_json(r#"{"protectMap": "on"}"#).is_err());
    }

    #[test]
    fn posture_is_enforced_by_default_and_warn_is_the_only_other_value() {
        use PostureMode as Mode;
        assert_eq!(Options::from_json("{}").unwrap().posture, Mode::Enforce);
        let warn = Options::from_json(r#"{"posture": "warn"}"#).unwrap();
        assert_eq!(warn.posture, Mode::Warn);
        for bad in [
            r#"{"posture": "off"}"#,
            r#"{"posture": false}"#,
            r#"{"posture": "Enforce"}"#,
        ] {
            let e = Options::from_json(bad).unwrap_err();
            assert!(e.starts_with("invalid options: posture: "), "{e}");
        }
    }

    #[test]
    fn protect_map_guards_paths_by_default() {
        assert_eq!(
            Options::from_json("{}").unwrap().protect_map,
            ProtectMap::Paths
        );
        for (v, want) in [("off", ProtectMap::Off), ("strict", ProtectMap::Strict)] {
            let o = Options::from_json(&format!(r#"{{"protectMap": "{v}"}}"#)).unwrap();
            assert_eq!(o.protect_map, want);
        }
    }
}
