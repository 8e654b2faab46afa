//! Where doctor's and audit's findings are written out: doctor's text and
//! its JSON lines, audit's text and its findings in OpenClaw's
//! `SecurityAuditFinding` shape. The checks only produce [`Finding`]s.

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

use super::checks::Guarded;
use super::finding::{Finding, Severity};
use crate::openclaw::config::{PLUGIN_ID, PROCESS_LOCATIONS};
use crate::redact::shown;

/// doctor's view: its verdict, every check's line, and the map's agents.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// No check failed: nothing found stops token injection.
    pub ok: bool,
    pub problems: usize,
    pub warnings: usize,
    /// The user the checks ran as (the gate's owner rule depends on it).
    pub uid: u32,
    pub map: String,
    pub config: Option<String>,
    pub map_loaded: bool,
    #[serde(serialize_with = "doctor_lines")]
    pub checks: Vec<Finding>,
    pub agents: Vec<AgentRow>,
    /// What rules `map-access` and `layer-controls` keep out of the agents'
    /// tools' reach.
    pub guarded: Vec<Guarded>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRow {
    pub agent_id: String,
    /// sha256 fingerprint of its token; `None` for a configured agent without one.
    pub fingerprint: Option<String>,
    /// Whether `agents.entries` lists it; `None` without a config that lists agents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configured: Option<bool>,
}

impl Report {
    /// The text for a terminal ([`doctor_text`]).
    pub fn render(&self) -> String {
        doctor_text(self)
    }
}

/// The checks whose failure sends a token out rather than stopping injection.
const LEAK_CHECKS: &[&str] = &["otel_captures_tokens"];

fn doctor_word(s: Severity) -> &'static str {
    match s {
        Severity::Pass => "ok",
        Severity::Skip => "skip",
        Severity::Info => "info",
        Severity::Warn => "warn",
        Severity::Fail | Severity::Critical => "FAIL",
    }
}

/// One of doctor's lines, as `--json` shows it.
#[derive(Serialize)]
struct DoctorLine<'a> {
    id: &'a str,
    status: &'static str,
    check: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<&'a str>,
}

/// doctor's lines in its JSON report: `{id, status, check, message, fix?}`.
fn doctor_lines<S: Serializer>(checks: &[Finding], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(checks.len()))?;
    for f in checks {
        seq.serialize_element(&DoctorLine {
            id: f.id,
            status: match f.severity {
                Severity::Fail | Severity::Critical => "fail",
                s => doctor_word(s),
            },
            check: f.label,
            message: &f.detail,
            fix: f.fix.as_deref(),
        })?;
    }
    seq.end()
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// doctor's text: header, one line per check (with its fix), the agents
/// table, what is guarded, and a verdict.
pub fn doctor_text(r: &Report) -> String {
    let mut out = format!("claw-identity doctor (as uid {})\n", r.uid);
    out += &format!("  map     {}\n", r.map);
    if let Some(c) = &r.config {
        out += &format!("  config  {c}\n");
    }
    out.push('\n');
    for c in &r.checks {
        out += &format!("{:<5} {}: {}\n", doctor_word(c.severity), c.label, c.detail);
        if let Some(fix) = &c.fix {
            out += &format!("      fix: {fix}\n");
        }
    }
    out.push('\n');
    if r.agents.is_empty() {
        out += if r.map_loaded {
            "agents: none in the map\n"
        } else {
            "agents: none (no map loaded)\n"
        };
    } else {
        let width = r
            .agents
            .iter()
            .map(|a| a.agent_id.len())
            .max()
            .unwrap_or(0)
            .max(5);
        let with_config = r.agents.iter().any(|a| a.configured.is_some());
        let mut rows = vec![(
            "AGENT".to_owned(),
            "TOKEN SHA256".to_owned(),
            "IN CONFIG".to_owned(),
        )];
        for a in &r.agents {
            rows.push((
                shown(&a.agent_id),
                a.fingerprint.clone().unwrap_or_else(|| "(no token)".into()),
                match a.configured {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => String::new(),
                },
            ));
        }
        for (id, fp, cfg) in rows {
            let line = if with_config {
                format!("{id:<width$}  {fp:<12}  {cfg}")
            } else {
                format!("{id:<width$}  {fp}")
            };
            out += line.trim_end();
            out.push('\n');
        }
    }
    out.push('\n');
    // Listed with a config: the paths of its includes and workspaces are part of it.
    if r.config.is_some() && !r.guarded.is_empty() {
        out += "guarded from the agents' own tools:\n";
        for g in &r.guarded {
            out += &format!(
                "  {:<14} {:<11} {} ({})\n",
                g.rule,
                g.refused,
                g.what,
                shown(&g.path)
            );
        }
        out += &format!("  {PROCESS_LOCATIONS}\n");
        out.push('\n');
    }
    let warnings = if r.warnings > 0 {
        format!(" ({})", plural(r.warnings, "warning", "warnings"))
    } else {
        String::new()
    };
    let leaks = r
        .checks
        .iter()
        .any(|c| c.severity.fails() && LEAK_CHECKS.contains(&c.id));
    let them = if r.problems == 1 { "it" } else { "them" };
    if r.ok {
        out += &format!("healthy{warnings}: nothing found stops token injection\n");
    } else if leaks {
        out += &format!(
            "{} found{warnings}, and a token leaves the gateway; fix {them} and run doctor again\n",
            plural(r.problems, "problem", "problems"),
        );
    } else {
        out += &format!(
            "{} stop{} token injection{warnings}; fix {them} and run doctor again\n",
            plural(r.problems, "problem", "problems"),
            if r.problems == 1 { "s" } else { "" },
        );
    }
    out
}

/// One finding in OpenClaw's `SecurityAuditFinding` shape
/// (`{checkId, severity, title, detail, remediation?}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditFinding<'a> {
    pub check_id: String,
    pub severity: &'static str,
    pub title: &'a str,
    pub detail: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remediation: Option<&'a str>,
}

/// audit's findings, in OpenClaw's shape: those `in_audit`, in check order.
pub fn audit_findings(findings: &[Finding]) -> Vec<AuditFinding<'_>> {
    findings
        .iter()
        .filter_map(|f| {
            Some(AuditFinding {
                check_id: format!("{PLUGIN_ID}.{}", f.id),
                severity: f.in_audit()?,
                title: f.title,
                detail: &f.detail,
                remediation: f.fix.as_deref(),
            })
        })
        .collect()
}

/// audit's text for a terminal: one block per finding, most severe first.
/// `config` is the path as the operator gave it.
pub fn audit_text(findings: &[AuditFinding<'_>], config: &str) -> String {
    let mut out = format!("claw-identity audit\n  config  {config}\n\n");
    if findings.is_empty() {
        return out + "no findings\n";
    }
    let rank = |s: &str| match s {
        "critical" => 0,
        "warn" => 1,
        _ => 2,
    };
    let mut ordered: Vec<&AuditFinding<'_>> = findings.iter().collect();
    ordered.sort_by_key(|f| rank(f.severity));
    for f in ordered {
        out += &format!(
            "{:<8}  {}: {}\n",
            f.severity.to_uppercase(),
            f.check_id,
            f.title
        );
        out += &format!("          {}\n", f.detail);
        if let Some(fix) = f.remediation {
            out += &format!("          fix: {fix}\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_text_lists_the_most_severe_first_each_with_its_fix() {
        let findings = [
            Finding::new("a", Severity::Info, "a", "ta", "da", None),
            Finding::doctor("d", Severity::Fail, "d", "only doctor", None),
            Finding::new("b", Severity::Critical, "b", "tb", "db", Some("fb".into())),
            Finding::new("p", Severity::Pass, "p", "", "fine", None),
            Finding::audit("c", Severity::Fail, "tc", "dc", None),
        ];
        let audit = audit_findings(&findings);
        let ids: Vec<(&str, &str)> = audit
            .iter()
            .map(|f| (f.check_id.as_str(), f.severity))
            .collect();
        assert_eq!(
            ids,
            [
                ("claw-identity.a", "info"),
                ("claw-identity.b", "critical"),
                ("claw-identity.c", "warn")
            ]
        );
        assert_eq!(
            audit_text(&audit, "cfg.json"),
            "claw-identity audit\n  config  cfg.json\n\n\
             CRITICAL  claw-identity.b: tb\n          db\n          fix: fb\n\
             WARN      claw-identity.c: tc\n          dc\n\
             INFO      claw-identity.a: ta\n          da\n"
        );
        assert_eq!(
            audit_text(&[], "x"),
            "claw-identity audit\n  config  x\n\nno findings\n"
        );
    }

    #[test]
    fn doctor_json_lines_carry_the_stable_id_and_fail_for_both_fail_and_critical() {
        let lines = |checks: Vec<Finding>| {
            let r = Report {
                ok: false,
                problems: 2,
                warnings: 0,
                uid: 0,
                map: "m".into(),
                config: None,
                map_loaded: false,
                checks,
                agents: Vec::new(),
                guarded: Vec::new(),
            };
            serde_json::to_value(&r).unwrap()["checks"].clone()
        };
        let v = lines(vec![
            Finding::new(
                "posture_exposed",
                Severity::Critical,
                "posture",
                "t",
                "d",
                Some("f".into()),
            ),
            Finding::doctor("map_empty", Severity::Fail, "map content", "e", None),
        ]);
        assert_eq!(
            v,
            serde_json::json!([
                {"id": "posture_exposed", "status": "fail", "check": "posture", "message": "d", "fix": "f"},
                {"id": "map_empty", "status": "fail", "check": "map content", "message": "e"},
            ])
        );
    }
}
