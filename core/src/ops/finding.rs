//! The one result type of the operator checks. doctor and audit are two
//! views over the same list of findings (`ops::checks::all`); `ops::render`
//! is where each view is written out. This module imports nothing of ops, so
//! every check can produce findings without a module circle.

use serde::Serialize;

/// How bad a finding is, on one scale for both views.
///
/// doctor prints `ok`, `skip`, `info`, `warn` and `FAIL` (for both `Fail`
/// and `Critical`). OpenClaw's own finding types, in the pinned
/// `openclaw@2026.9.6` package:
/// - `SecurityAuditFinding` (`dist/index-DUVQdPAn.d.ts`, region
///   `src/security/audit.types.d.ts`): `"info" | "warn" | "critical"`.
///   Audit reports `Info` as info, `Warn` and `Fail` as warn, `Critical` as
///   critical, and leaves `Pass` and `Skip` out ([`Severity::audit`]).
/// - `HealthFinding` (`dist/plugin-sdk/health.d.ts`, region
///   `src/flows/health-checks.d.ts`): `"info" | "warning" | "error"`, which
///   would be `Info`, `Warn`, and `Fail` or `Critical`. claw-identity
///   registers no health check (see `lib/surfaces.js`), so nothing maps onto
///   it yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The check passed (doctor's `ok` line).
    Pass,
    /// Not checked, because an earlier check failed.
    Skip,
    /// Worth knowing, changes nothing by itself.
    Info,
    Warn,
    /// Stops token injection for some or all agents, and nothing leaks: the
    /// layer fails closed (an unreadable map, a sandbox that can't run).
    Fail,
    /// Weakens the identity layer itself: a token can leave the gateway or
    /// reach an agent's own tools, or no identity rule holds.
    Critical,
}

impl Severity {
    /// Stops token injection or weakens the layer: doctor fails on it.
    pub fn fails(self) -> bool {
        self >= Severity::Fail
    }

    /// As OpenClaw's `SecurityAuditSeverity`; `None` for what audit leaves out.
    pub fn audit(self) -> Option<&'static str> {
        match self {
            Severity::Pass | Severity::Skip => None,
            Severity::Info => Some("info"),
            Severity::Warn | Severity::Fail => Some("warn"),
            Severity::Critical => Some("critical"),
        }
    }
}

/// Which views show a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Both,
    /// Whether the plugin can serve tokens (the map's content, the agents
    /// without a token): doctor's question only.
    Doctor,
    /// A setting that widens what an agent can reach: audit's question only.
    Audit,
}

/// One result of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable id (`posture_exposed`); audit reports it as `claw-identity.<id>`.
    pub id: &'static str,
    pub severity: Severity,
    /// doctor's label for the line (`posture`); several ids share one.
    pub label: &'static str,
    /// audit's one-line title; empty for a finding only doctor shows.
    pub title: &'static str,
    /// What was found. Never a token (fingerprints at most).
    pub detail: String,
    pub fix: Option<String>,
    pub scope: Scope,
}

impl Finding {
    /// A finding both views show.
    pub fn new(
        id: &'static str,
        severity: Severity,
        label: &'static str,
        title: &'static str,
        detail: impl Into<String>,
        fix: Option<String>,
    ) -> Self {
        Self {
            id,
            severity,
            label,
            title,
            detail: detail.into(),
            fix,
            scope: Scope::Both,
        }
    }

    /// A line only doctor prints.
    pub fn doctor(
        id: &'static str,
        severity: Severity,
        label: &'static str,
        detail: impl Into<String>,
        fix: Option<String>,
    ) -> Self {
        Self {
            scope: Scope::Doctor,
            ..Self::new(id, severity, label, "", detail, fix)
        }
    }

    /// A finding only audit reports.
    pub fn audit(
        id: &'static str,
        severity: Severity,
        title: &'static str,
        detail: impl Into<String>,
        fix: Option<String>,
    ) -> Self {
        Self {
            scope: Scope::Audit,
            ..Self::new(id, severity, "", title, detail, fix)
        }
    }

    pub fn in_doctor(&self) -> bool {
        self.scope != Scope::Audit
    }

    /// In audit, with its severity there.
    pub fn in_audit(&self) -> Option<&'static str> {
        if self.scope == Scope::Doctor {
            return None;
        }
        self.severity.audit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_severity_maps_onto_openclaws_audit_scale_and_only_problems_fail_doctor() {
        let all = [
            Severity::Pass,
            Severity::Skip,
            Severity::Info,
            Severity::Warn,
            Severity::Fail,
            Severity::Critical,
        ];
        let audit: Vec<_> = all.iter().map(|s| s.audit()).collect();
        assert_eq!(
            audit,
            [
                None,
                None,
                Some("info"),
                Some("warn"),
                Some("warn"),
                Some("critical")
            ]
        );
        let fails: Vec<_> = all.iter().map(|s| s.fails()).collect();
        assert_eq!(fails, [false, false, false, false, true, true]);
    }

    #[test]
    fn a_scope_keeps_a_finding_out_of_the_other_view() {
        let d = Finding::doctor("x", Severity::Fail, "x", "d", None);
        assert!(d.in_doctor() && d.in_audit().is_none());
        let a = Finding::audit("x", Severity::Warn, "t", "d", None);
        assert!(!a.in_doctor() && a.in_audit() == Some("warn"));
        let b = Finding::new("x", Severity::Pass, "x", "t", "d", None);
        assert!(b.in_doctor() && b.in_audit().is_none());
    }
}
