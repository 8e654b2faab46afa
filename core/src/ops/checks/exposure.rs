//! Checks of what the agents' own tools can reach: the posture (is every
//! agent contained?) and the claw-identity sandbox (can it run here?).

use std::path::Path;

use super::Inputs;
use crate::openclaw::config::{OpenClawConfig, PLUGIN_ID};
use crate::ops::finding::{Finding, Severity};
use crate::options::Options;
use crate::options::PostureMode as Mode;
use crate::posture::{display, Containment, Posture};
use crate::redact::{scrub, shown};
use crate::sandbox;

/// Whether the `claw-identity` sandbox can run here, for this config (its
/// protected locations and workspaces, as the plugin would have them), as
/// the user the checks run as.
pub(super) fn sandbox_probe(c: &OpenClawConfig, opts: &Options) -> sandbox::Probe {
    let engine = crate::engine::Engine::new(opts.clone());
    let table = c.agent_fs();
    engine.set_openclaw_facts(table.clone(), &c.files(&table));
    let host = sandbox::LiveHost::new();
    let inputs = sandbox::Inputs {
        workspace_hooks: engine.workspace_hooks(),
        ..sandbox::inputs(
            engine.protected_locations(),
            &engine.workspaces(),
            &opts.sandbox,
            &host,
        )
    };
    sandbox::probe(&host, &opts.sandbox, &inputs, &sandbox::gateway_path())
}

/// The posture of `c`'s agents for a plugin with `opts`, judged by the one
/// posture function the layer uses (`crate::posture::of_config`).
pub(super) fn posture_of(c: &OpenClawConfig, opts: &Options, own_sandbox_here: bool) -> Posture {
    let table = c.agent_fs();
    let protected = crate::protected::locations(&opts.token_map_path, &c.files(&table));
    crate::posture::of_config(
        opts.posture,
        c.root(),
        &table,
        &protected,
        &crate::posture::ConfigTools::new(c.root()),
        own_sandbox_here,
        &opts.tool_prefixes,
    )
}

/// One finding per agent that is not contained (critical under
/// `"enforce"`, which then serves no token; a warning under `"warn"`), or
/// one line that every agent is.
pub(super) fn posture(i: &Inputs<'_>) -> Vec<Finding> {
    let Some(p) = &i.posture else {
        return Vec::new();
    };
    let Some(agents) = &p.agents else {
        return Vec::new();
    };
    let enforce = p.mode == Mode::Enforce;
    let mut out: Vec<Finding> = p
        .exposed()
        .map(|a| {
            let exposures =
                crate::posture::summarize(a.containment.as_ref().err().map_or(&[], |e| e));
            let who = if a.agent_id == crate::posture::UNLISTED {
                format!(
                    "{} (they run with agents.defaults and the global tools) are",
                    display(&a.agent_id)
                )
            } else {
                format!("agent {} is", display(&a.agent_id))
            };
            let (severity, title, consequence) = if enforce {
                (
                    Severity::Critical,
                    "an agent's own tools can reach the token map or OpenClaw's config, so no token is served",
                    "; posture is \"enforce\", so every owned call is refused until every agent is contained",
                )
            } else {
                (
                    Severity::Warn,
                    "an agent's own tools can reach the token map or OpenClaw's config (posture \"warn\": tokens are served anyway)",
                    "",
                )
            };
            Finding::new(
                "posture_exposed",
                severity,
                "posture",
                title,
                scrub(&format!("{who} not contained: {exposures}{consequence}")),
                a.fix.as_ref().map(|f| scrub(f)),
            )
        })
        .collect();
    if out.is_empty() {
        let how: Vec<String> = agents
            .iter()
            .map(|a| {
                format!(
                    "{} ({})",
                    display(&a.agent_id),
                    match a.containment {
                        Ok(Containment::Sandbox) => "sandbox",
                        _ => "host, confined to its workspace",
                    }
                )
            })
            .collect();
        out.push(Finding::new(
            "posture_contained",
            Severity::Pass,
            "posture",
            "every agent is contained",
            scrub(&format!("every agent is contained: {}", how.join(", "))),
            None,
        ));
    }
    out
}

/// For each agent whose sandbox is this plugin's: whether it can run here.
/// Where it can't, the agent's turns fail (nothing runs on the host).
pub(super) fn sandbox(i: &Inputs<'_>) -> Vec<Finding> {
    match (i.config(), &i.probe) {
        (Some(c), Some(probe)) => sandbox_findings(c, &i.opts.sandbox, probe),
        _ => Vec::new(),
    }
}

fn sandbox_findings(
    c: &OpenClawConfig,
    opts: &crate::options::SandboxOptions,
    probe: &sandbox::Probe,
) -> Vec<Finding> {
    let ours: Vec<String> = c
        .agent_reach(Path::new("/"))
        .into_iter()
        .filter(|a| a.sandbox_backend == sandbox::BACKEND_ID && a.sandbox_mode != "off")
        .map(|a| shown(&a.agent_id).to_string())
        .collect();
    if ours.is_empty() {
        return Vec::new();
    }
    let one = ours.len() == 1;
    let who = format!(
        "agent{} {}",
        if one { "" } else { "s" },
        ours.iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let (run, select, their) = if one {
        ("runs", "selects", "its")
    } else {
        ("run", "select", "their")
    };
    let uid = crate::sys::euid().unwrap_or(u32::MAX);
    let mut out = vec![match &probe.result {
        Ok(()) => Finding::new(
            "sandbox_runs",
            Severity::Pass,
            "sandbox",
            "",
            format!(
                "{who} {run} {their} commands in the {} sandbox; bubblewrap ({}) works here as uid {uid}",
                sandbox::BACKEND_ID,
                probe.bwrap.as_ref().map(|b| b.display().to_string()).unwrap_or_default()
            ),
            None,
        ),
        Err(r) => Finding::new(
            "sandbox_unavailable",
            Severity::Fail,
            "sandbox",
            "an agent's claw-identity sandbox can't run here, so its turns fail",
            format!(
                "{who} {select} the {} sandbox, which can't run here (as uid {uid}): {} {} turns fail, and nothing runs on the host instead",
                sandbox::BACKEND_ID,
                r.why,
                if one { "Its" } else { "Their" }
            ),
            Some(r.fix.clone()),
        ),
    }];
    if opts.network == crate::options::Network::Host {
        out.push(Finding::new(
            "sandbox_network_host",
            Severity::Warn,
            "sandbox",
            "sandboxed commands share the host's network",
            "sandbox.network is \"host\": sandboxed commands reach the gateway's port and every other local service (they still can't read its token)",
            Some(format!(
                "openclaw config unset plugins.entries.{PLUGIN_ID}.config.sandbox.network, unless the agents need the network"
            )),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn probe(ok: bool) -> sandbox::Probe {
        sandbox::Probe {
            bwrap: ok.then(|| PathBuf::from("/usr/bin/bwrap")),
            result: if ok {
                Ok(())
            } else {
                Err(sandbox::Refusal {
                    why: "bubblewrap (bwrap) is not installed here.".into(),
                    fix: "install bubblewrap".into(),
                })
            },
        }
    }

    #[test]
    fn a_sandbox_that_is_selected_but_cant_run_is_a_problem_with_its_fix() {
        let c = OpenClawConfig::from_text(
            "{ agents: { defaults: { sandbox: { backend: 'Claw-Identity', mode: 'all' } }, entries: { a: {}, b: { sandbox: { mode: 'off' } }, c: { sandbox: { backend: 'docker' } } } } }",
        );
        let opts = crate::options::SandboxOptions::default();
        let bad = sandbox_findings(&c, &opts, &probe(false));
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].severity, Severity::Fail);
        assert!(
            bad[0]
                .detail
                .starts_with("agent \"a\" selects the claw-identity sandbox, which can't run here"),
            "{}",
            bad[0].detail
        );
        assert!(
            bad[0].detail.ends_with("nothing runs on the host instead"),
            "{}",
            bad[0].detail
        );
        assert_eq!(bad[0].fix.as_deref(), Some("install bubblewrap"));
        let good = sandbox_findings(&c, &opts, &probe(true));
        assert_eq!(good[0].severity, Severity::Pass);
        let host = crate::options::SandboxOptions {
            network: crate::options::Network::Host,
            ..Default::default()
        };
        let warned = sandbox_findings(&c, &host, &probe(true));
        assert_eq!(warned[1].severity, Severity::Warn);
        assert!(
            sandbox_findings(&OpenClawConfig::from_text("{}"), &opts, &probe(false)).is_empty()
        );
    }
}
