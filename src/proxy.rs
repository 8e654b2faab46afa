//! The MCP proxy's face to `lib/proxy.js`, over the layer in force: its
//! plan, one call's redemption, a tool list as the model may see it, and
//! whether a connection is the gateway's own. What is forwarded, with
//! which credential, is decided in `claw_identity_core::proxy`.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{json, Value};

use crate::bridge::tiers::ThreadState;
use claw_identity_core::proxy::{self, Credential, Upstream};

fn layer(env: &Env) -> Result<std::rc::Rc<crate::bridge::layer::JsLayer>> {
    ThreadState::of(env)?.current().ok_or_else(|| {
        Error::from_reason(
            "claw-identity: the MCP proxy needs a configured layer (configure() first)",
        )
    })
}

fn credential(c: &Credential) -> Value {
    match c {
        Credential::Bearer => json!({"in": "bearer"}),
        Credential::Header(h) => json!({"in": "header", "name": h}),
        Credential::Argument => json!({"in": "argument"}),
        Credential::Env(e) => json!({"in": "env", "name": e}),
    }
}

/// The servers to proxy, as the layer in force has them: `{ port,
/// handleTtlMs, servers: [{ name, upstream, credential }] }`, or `null`
/// when the `proxy` option names none.
#[napi(catch_unwind, ts_return_type = "ProxyPlan | null")]
pub fn proxy_plan(env: Env) -> Result<Value> {
    let l = layer(&env)?;
    let p = &l.layer.engine().options().proxy;
    if p.servers.is_empty() {
        return Ok(Value::Null);
    }
    let servers: Vec<Value> = p
        .servers
        .iter()
        .map(|(name, s)| {
            let upstream = match &s.upstream {
                Upstream::Url(u) => json!({"url": u.url, "headers": u.headers}),
                Upstream::Stdio(c) => json!({"command": c.command, "args": c.args, "env": c.env, "cwd": c.cwd}),
            };
            json!({"name": name, "upstream": upstream, "credential": credential(&s.credential), "listAs": s.list_as})
        })
        .collect();
    Ok(json!({"port": p.port, "handleTtlMs": p.handle_ttl_ms, "servers": servers}))
}

/// Redeems a `tools/call` of `tool` on `server` (`arguments` as the
/// proxy received them): `{ ok: true, agent, key, arguments, headers?,
/// env? }`, where `key` names the upstream connection to use (`""`: the
/// shared one), or `{ ok: false, reason }`. Logged either way.
#[napi(catch_unwind, ts_return_type = "ProxyRedeemed")]
pub fn proxy_redeem(env: Env, server: String, tool: String, arguments: Value) -> Result<Value> {
    let l = layer(&env)?;
    let redeemed = l.logged(&env, |layer| {
        proxy::redeem(layer, &server, &tool, arguments)
    });
    Ok(redeemed_js(redeemed.map(Some)))
}

/// The identity of `server`'s requests that carry no handle (`listAs`):
/// as `proxyRedeem`'s result, with no `arguments`; `{ ok: true }` alone
/// when they go without one.
#[napi(catch_unwind, ts_return_type = "ProxyRedeemed")]
pub fn proxy_list_identity(env: Env, server: String) -> Result<Value> {
    let l = layer(&env)?;
    Ok(redeemed_js(proxy::list_identity(&l.layer, &server)))
}

fn redeemed_js(r: std::result::Result<Option<proxy::Redeemed>, proxy::Refusal>) -> Value {
    match r {
        Ok(None) => json!({"ok": true, "key": ""}),
        Ok(Some(r)) => {
            let mut out = json!({
                "ok": true,
                "agent": r.agent,
                // The argument mode shares one upstream connection (the
                // token travels in each call); the others have one per
                // agent and token.
                "key": if r.credential.is_none() { String::new() } else { format!("{}\u{0}{}", r.agent, r.fingerprint) },
                "arguments": r.arguments,
            });
            match r.credential {
                Some((Credential::Bearer, t)) => {
                    out["headers"] = json!({"authorization": format!("Bearer {t}")})
                }
                Some((Credential::Header(h), t)) => out["headers"] = json!({h: t}),
                Some((Credential::Env(e), t)) => out["env"] = json!({e: t}),
                Some((Credential::Argument, _)) | None => {}
            }
            out
        }
        Err(proxy::Refusal(reason)) => json!({"ok": false, "reason": reason}),
    }
}

/// A `tools/list` result of `server` as the model may see it: without the
/// credential param and the params the layer fills.
#[napi(catch_unwind)]
pub fn proxy_tools(env: Env, result: Value) -> Result<Value> {
    let l = layer(&env)?;
    let mut result = result;
    proxy::schema::strip(l.layer.engine().options(), &mut result);
    Ok(result)
}

#[cfg(not(target_os = "wasi"))]
pub struct PeerTask(u16, u16);

#[cfg(not(target_os = "wasi"))]
#[napi]
impl Task for PeerTask {
    type Output = Option<bool>;
    type JsValue = Option<bool>;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(proxy::peer::own_connection(self.0, self.1))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// Whether the connection from 127.0.0.1:`clientPort` to the proxy's
/// `serverPort` is one this process opened, read from `/proc` on the
/// libuv thread pool: a promise of `true`/`false`, or `null` where the
/// platform can't tell.
#[cfg(not(target_os = "wasi"))]
#[napi(catch_unwind)]
pub fn proxy_peer(client_port: u32, server_port: u32) -> Result<AsyncTask<PeerTask>> {
    let port =
        |p: u32| u16::try_from(p).map_err(|_| Error::from_reason("claw-identity: not a port"));
    Ok(AsyncTask::new(PeerTask(
        port(client_port)?,
        port(server_port)?,
    )))
}

/// The WebAssembly build can't read `/proc`: `null`, can't tell.
#[cfg(target_os = "wasi")]
#[napi(catch_unwind)]
pub fn proxy_peer(client_port: u32, server_port: u32) -> Option<bool> {
    let _ = (client_port, server_port);
    None
}

/// Live proxy handles in this process (minted, not yet redeemed or swept).
#[napi]
pub fn proxy_handles_live() -> u32 {
    proxy::handles::store().live() as u32
}
