//! What doctor and explain read from an OpenClaw config (`openclaw.json`,
//! JSON5): this plugin's options, whether OpenClaw will load the plugin at
//! all, and which agents exist. A config holds other secrets (gateway and
//! provider keys): nothing here prints its content, only key names.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::options::Options;
use crate::redact;

pub const PLUGIN_ID: &str = "claw-identity";

/// Largest config read (a sanity cap: `openclaw.json` is a few KB).
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

pub struct OpenClawConfig {
    pub path: PathBuf,
    root: Map<String, Value>,
}

/// A finding with its fix, in the operator's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub problem: String,
    pub fix: String,
}

fn object(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn describe(v: Option<&Value>) -> String {
    match v {
        None => "not set".into(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Null) => "null".into(),
        Some(Value::String(_)) => "a string".into(),
        Some(Value::Number(_)) => "a number".into(),
        Some(_) => "not a boolean".into(),
    }
}

impl OpenClawConfig {
    /// Reads and parses the config. The error names the file and the problem
    /// (with a position for syntax errors), never content.
    pub fn load(path: &Path) -> Result<OpenClawConfig, String> {
        let shown = path.display();
        let file =
            std::fs::File::open(path).map_err(|e| format!("{shown}: cannot read it: {e}"))?;
        let mut text = String::new();
        file.take(MAX_CONFIG_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| format!("{shown}: cannot read it: {e}"))?;
        let value: Value = json5::from_str(&text)
            .map_err(|e| redact::scrub(&format!("{shown}: not valid JSON5: {e}")))?;
        match value {
            Value::Object(root) => Ok(OpenClawConfig {
                path: path.to_path_buf(),
                root,
            }),
            _ => Err(format!("{shown}: the top level is not an object")),
        }
    }

    #[cfg(test)]
    pub fn from_text(text: &str) -> OpenClawConfig {
        let Value::Object(root) = json5::from_str(text).unwrap() else {
            panic!("not an object")
        };
        OpenClawConfig {
            path: PathBuf::from("/etc/openclaw.json"),
            root,
        }
    }

    fn plugins(&self) -> Option<&Map<String, Value>> {
        object(self.root.get("plugins"))
    }

    fn entry(&self) -> Option<&Map<String, Value>> {
        object(self.plugins()?.get("entries")).and_then(|e| object(e.get(PLUGIN_ID)))
    }

    /// `plugins.entries.claw-identity.config`: the options the plugin gets.
    pub fn plugin_options(&self) -> Option<&Value> {
        self.entry()?.get("config")
    }

    /// Whether `$include` splits this config: its included parts are not read.
    pub fn uses_include(&self) -> bool {
        let has = |m: Option<&Map<String, Value>>| m.is_some_and(|m| m.contains_key("$include"));
        has(Some(&self.root)) || has(self.plugins()) || has(object(self.root.get("agents")))
    }

    /// Everything in this config that keeps OpenClaw from loading the plugin.
    /// OpenClaw says nothing at runtime about any of them.
    pub fn enablement_problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        let plugins = self.plugins();
        let get = |k: &str| plugins.and_then(|p| p.get(k));
        let lists = |k: &str| {
            get(k)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(PLUGIN_ID)))
        };
        if get("enabled") == Some(&Value::Bool(false)) {
            out.push(Problem {
                problem: "plugins.enabled is false: OpenClaw loads no plugin at all".into(),
                fix: "openclaw config set plugins.enabled true --strict-json".into(),
            });
        }
        if lists("deny") {
            out.push(Problem {
                problem: format!("plugins.deny lists {PLUGIN_ID}: OpenClaw never loads it (deny wins over allow and enabled)"),
                fix: format!("remove \"{PLUGIN_ID}\" from plugins.deny"),
            });
        }
        if get("allow")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
            && !lists("allow")
        {
            out.push(Problem {
                problem: format!(
                    "plugins.allow is set and does not list {PLUGIN_ID}: OpenClaw does not load it"
                ),
                fix: format!(
                    "add \"{PLUGIN_ID}\" to plugins.allow (openclaw plugins install does this)"
                ),
            });
        }
        let enabled = self.entry().and_then(|e| e.get("enabled"));
        if enabled != Some(&Value::Bool(true)) {
            out.push(Problem {
                problem: format!(
                    "plugins.entries.{PLUGIN_ID}.enabled is {}, not true: OpenClaw loads only an explicitly enabled plugin (and registers its trusted tool policy only then), and says nothing at runtime",
                    describe(enabled)
                ),
                fix: format!(
                    "openclaw plugins install <{PLUGIN_ID}.tgz> --force --accept-capabilities (it writes the enablement), or: openclaw config set plugins.entries.{PLUGIN_ID}.enabled true --strict-json"
                ),
            });
        }
        out
    }

    /// Agent ids configured under `agents.entries`, as OpenClaw normalises
    /// them (lowercased), sorted; `None` when the config lists no agents.
    pub fn agents(&self) -> Option<Vec<String>> {
        let entries = object(object(self.root.get("agents"))?.get("entries"))?;
        let mut ids: Vec<String> = entries.keys().map(|k| k.to_lowercase()).collect();
        ids.sort();
        ids.dedup();
        Some(ids)
    }
}

/// The options JSON the plugin runs with: the config's plugin options (or
/// none), with `tokenMapPath` replaced by `map` when one is given.
pub fn options_json(config: Option<&OpenClawConfig>, map: Option<&str>) -> Result<String, String> {
    let mut opts = match config.and_then(OpenClawConfig::plugin_options) {
        None => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err("options must be an object".into()),
    };
    if let Some(map) = map {
        opts.insert("tokenMapPath".into(), Value::String(map.into()));
    }
    Ok(Value::Object(opts).to_string())
}

/// The plugin's options (see [`options_json`]), parsed by the plugin's parser.
pub fn plugin_options(
    config: Option<&OpenClawConfig>,
    map: Option<&str>,
) -> Result<Options, String> {
    Options::from_json(&options_json(config, map)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENABLED: &str = r#"{
        // JSON5, as OpenClaw writes and reads it
        plugins: { entries: { "claw-identity": { enabled: true, config: { onMissingToken: "block" } } } },
        agents: { entries: { "Paco--Francis": {}, "paco--dali": {}, }, },
    }"#;

    #[test]
    fn an_enabled_plugin_has_no_enablement_problem() {
        assert!(OpenClawConfig::from_text(ENABLED)
            .enablement_problems()
            .is_empty());
    }

    #[test]
    fn enabled_must_be_exactly_true() {
        for (entry, found) in [
            ("{}", "not set"),
            ("{ enabled: false }", "false"),
            ("{ enabled: 'true' }", "a string"),
        ] {
            let c = OpenClawConfig::from_text(&format!(
                "{{ plugins: {{ entries: {{ 'claw-identity': {entry} }} }} }}"
            ));
            let p = c.enablement_problems();
            assert_eq!(p.len(), 1, "{entry}");
            assert!(
                p[0].problem.starts_with(&format!(
                    "plugins.entries.claw-identity.enabled is {found}, not true"
                )),
                "{}",
                p[0].problem
            );
            assert!(p[0].fix.contains("--accept-capabilities"));
        }
        let none = OpenClawConfig::from_text("{}").enablement_problems();
        assert_eq!(none.len(), 1);
    }

    #[test]
    fn global_disable_deny_and_allow_are_each_reported() {
        let c = OpenClawConfig::from_text(
            r#"{ plugins: { enabled: false, deny: ["claw-identity"], allow: ["other"],
                 entries: { "claw-identity": { enabled: true } } } }"#,
        );
        let p: Vec<String> = c
            .enablement_problems()
            .into_iter()
            .map(|p| p.problem)
            .collect();
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].starts_with("plugins.enabled is false"));
        assert!(p[1].starts_with("plugins.deny lists claw-identity"));
        assert!(p[2].starts_with("plugins.allow is set and does not list claw-identity"));
        let listed = OpenClawConfig::from_text(
            r#"{ plugins: { allow: ["claw-identity"], entries: { "claw-identity": { enabled: true } } } }"#,
        );
        assert!(listed.enablement_problems().is_empty());
    }

    #[test]
    fn agents_are_lowercased_and_sorted() {
        let c = OpenClawConfig::from_text(ENABLED);
        assert_eq!(c.agents().unwrap(), vec!["paco--dali", "paco--francis"]);
        assert_eq!(OpenClawConfig::from_text("{ agents: {} }").agents(), None);
    }

    #[test]
    fn plugin_options_come_from_the_entry_and_map_overrides_the_path() {
        let c = OpenClawConfig::from_text(ENABLED);
        let o = plugin_options(Some(&c), Some("/srv/m.json")).unwrap();
        assert_eq!(o.token_map_path, PathBuf::from("/srv/m.json"));
        assert_eq!(o.on_missing_token, crate::options::OnMissingToken::Block);
        let bad = OpenClawConfig::from_text(
            "{ plugins: { entries: { 'claw-identity': { config: { tokenMap: 'x' } } } } }",
        );
        assert!(plugin_options(Some(&bad), None)
            .unwrap_err()
            .contains("\"tokenMap\""));
    }

    #[test]
    fn load_errors_name_the_file_and_position_but_not_content() {
        let d = std::env::temp_dir().join(format!("claw-identity-config-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("openclaw.json");
        let secret = "ab".repeat(32);
        std::fs::write(
            &p,
            format!("{{ gateway: {{ auth: {{ token: \"{secret}\" }} }}, x: }}"),
        )
        .unwrap();
        let e = OpenClawConfig::load(&p).err().unwrap();
        assert!(
            e.starts_with(&format!("{}: not valid JSON5", p.display())),
            "{e}"
        );
        assert!(!e.contains(&secret[..16]), "{e}");
        assert!(OpenClawConfig::load(&d.join("missing.json")).is_err());
        std::fs::write(&p, "{ $include: './agents.json5' }").unwrap();
        assert!(OpenClawConfig::load(&p).unwrap().uses_include());
    }
}
