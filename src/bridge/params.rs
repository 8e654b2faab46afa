//! A tool call's params between JS and the rules: the fields a rule reads are
//! read from the JS object itself, exactly, and a rewrite is a copy of the
//! JS object with the rewritten values defined as own properties.

use napi::Result;
use serde_json::Value;

use super::js::{Js, Kind};
use claw_identity_core::redact::results::Hits;
use claw_identity_core::rules::Params;

/// Nesting deeper than this in a field a rule reads is refused, not guessed at.
pub const MAX_DEPTH: usize = 32;

/// A field a rule needs holds a value that can't be read exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub field: &'static str,
    pub why: &'static str,
}

/// Reads `fields` of `params` (`params[field]`, as the tool reads it) into
/// the JSON the rules take, and `quoted` too (text no rule decides on), read
/// with U+FFFD for broken characters when it can't be read exactly. An
/// absent or `undefined` field is left out.
pub fn read_fields(
    params: Option<Js<'_>>,
    fields: &[&'static str],
    quoted: &[&'static str],
) -> Result<std::result::Result<Params, Unreadable>> {
    let mut out = Params::new();
    let Some(params) = params else {
        return Ok(Ok(out));
    };
    for &field in quoted {
        let v = params.get_str_key(field)?;
        match exact(v, 0)? {
            Ok(Some(value)) => {
                out.insert(field.to_owned(), value);
            }
            // Text only: read it with U+FFFD for broken characters.
            Err(_) => {
                if let Some(text) = v.host_str()? {
                    out.insert(field.to_owned(), Value::String(text));
                }
            }
            Ok(None) => {}
        }
    }
    for &field in fields {
        let v = params.get_str_key(field)?;
        match exact(v, 0)? {
            Ok(Some(value)) => {
                out.insert(field.to_owned(), value);
            }
            Ok(None) => {}
            Err(why) => return Ok(Err(Unreadable { field, why })),
        }
    }
    Ok(Ok(out))
}

/// One value, exactly as JSON can hold it; `None` for `undefined`.
pub fn exact(v: Js<'_>, depth: usize) -> Result<std::result::Result<Option<Value>, &'static str>> {
    if depth > MAX_DEPTH {
        return Ok(Err("nested too deeply"));
    }
    Ok(Ok(Some(match v.deep_kind()? {
        Kind::Undefined => return Ok(Ok(None)),
        Kind::Null => Value::Null,
        Kind::Boolean => Value::Bool(v.bool()?),
        Kind::Number => match json_number(v.number()?) {
            Some(n) => Value::Number(n),
            None => return Ok(Err("a number JSON can't hold")),
        },
        Kind::String => {
            let units = v.utf16()?.unwrap_or_default();
            match String::from_utf16(&units) {
                Ok(s) => Value::String(s),
                Err(_) => return Ok(Err("text with a lone UTF-16 surrogate")),
            }
        }
        Kind::Array => {
            let mut items = Vec::new();
            for i in 0..v.array_len()? {
                match exact(v.get_index(i)?, depth + 1)? {
                    Ok(item) => items.push(item.unwrap_or(Value::Null)),
                    Err(why) => return Ok(Err(why)),
                }
            }
            Value::Array(items)
        }
        Kind::Object => {
            let mut map = serde_json::Map::new();
            for key in v.own_keys(false)? {
                let Some(units) = key.utf16()? else { continue };
                let Ok(name) = String::from_utf16(&units) else {
                    return Ok(Err("a key with a lone UTF-16 surrogate"));
                };
                match exact(v.get_key(key)?, depth + 1)? {
                    Ok(Some(item)) => {
                        map.insert(name, item);
                    }
                    Ok(None) => {}
                    Err(why) => return Ok(Err(why)),
                }
            }
            Value::Object(map)
        }
        Kind::Function | Kind::Other => return Ok(Err("a value JSON can't hold")),
    })))
}

/// `{...params}` with `set` defined: every other own enumerable property
/// (string and symbol keys) copied as is, each value read once, and the
/// rewritten ones defined as own properties (no setter on `Object.prototype`
/// sees them, and `__proto__` stays an own key). A param taken out is set to
/// `undefined`: OpenClaw spreads hook params over the original, so an absent
/// key would let the model's value back in, and JSON drops `undefined`.
pub fn copy_with<'e>(
    env: napi::sys::napi_env,
    params: Option<Js<'e>>,
    set: &[(&str, Js<'e>)],
) -> Result<Js<'e>> {
    let out = Js::object(env)?;
    let mut props: Vec<(Js<'e>, Js<'e>)> = Vec::new();
    if let Some(params) = params {
        for key in params.own_keys(true)? {
            if let Some(name) = key.host_str()? {
                if set.iter().any(|(k, _)| *k == name) {
                    continue;
                }
            }
            props.push((key, params.get_key(key)?));
        }
    }
    for (k, v) in set {
        props.push((Js::string(env, k)?, *v));
    }
    out.define(&props)?;
    Ok(out)
}

/// A JS number as JSON has it: integers as integers (`100`, not `100.0`).
fn json_number(n: f64) -> Option<serde_json::Number> {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        return Some(serde_json::Number::from(n as i64));
    }
    serde_json::Number::from_f64(n)
}

/// Results nested deeper than this are refused (the middleware then throws,
/// and OpenClaw replaces the result with an error): never passed unread.
const MAX_RESULT_DEPTH: usize = 64;

/// A copy of `v` with every token `r` knows replaced in every string (object
/// keys too), or `None` when it holds none. Plain objects and arrays are
/// copied; other objects are kept as they are.
pub fn redact<'e>(
    env: napi::sys::napi_env,
    v: Js<'e>,
    r: &claw_identity_core::redact::results::Redactor,
    depth: usize,
    hits: &mut Hits,
) -> Result<Option<Js<'e>>> {
    if r.is_empty() {
        return Ok(None);
    }
    if depth > MAX_RESULT_DEPTH {
        return Err(napi::Error::from_reason(
            "a tool result nested too deeply to check for tokens",
        ));
    }
    let text = |s: &Js<'e>, hits: &mut Hits| -> Result<Option<Js<'e>>> {
        // Most strings of a result are short: one copy onto the stack, with
        // no length pass and no allocation; a longer one is read whole.
        let mut buf = [0u8; 4096];
        let Some(t) = s.str_in(&mut buf)? else {
            return Ok(None);
        };
        match r.redact_str_noting(&t, hits) {
            std::borrow::Cow::Borrowed(_) => Ok(None),
            std::borrow::Cow::Owned(clean) => Js::string(env, &clean).map(Some),
        }
    };
    match v.deep_kind()? {
        Kind::String => text(&v, hits),
        Kind::Array => {
            let n = v.array_len()?;
            let mut items = Vec::with_capacity(n as usize);
            let mut changed = false;
            for i in 0..n {
                let item = v.get_index(i)?;
                match redact(env, item, r, depth + 1, hits)? {
                    Some(clean) => {
                        changed = true;
                        items.push(clean);
                    }
                    None => items.push(item),
                }
            }
            if !changed {
                return Ok(None);
            }
            let out = Js::array(env, n)?;
            for (i, item) in items.into_iter().enumerate() {
                out.set_index(i as u32, item)?;
            }
            Ok(Some(out))
        }
        Kind::Object => {
            let mut props = Vec::new();
            let mut changed = false;
            for key in v.own_keys(true)? {
                let value = v.get_key(key)?;
                let clean_key = text(&key, hits)?;
                let clean_value = redact(env, value, r, depth + 1, hits)?;
                changed |= clean_key.is_some() || clean_value.is_some();
                props.push((clean_key.unwrap_or(key), clean_value.unwrap_or(value)));
            }
            if !changed {
                return Ok(None);
            }
            let out = Js::object(env)?;
            out.define(&props)?;
            Ok(Some(out))
        }
        _ => Ok(None),
    }
}
