//! A small safe wrapper over the raw N-API calls the hot path makes: read a
//! property, read a string exactly, list own keys, define own properties.
//! napi-rs's typed values would do each of these too, with an allocation or
//! a conversion more per call (BENCHMARKS.md). Every call's status is
//! checked, and a value is borrowed for the callback it came from: `Js<'e>`
//! can't outlive the `&'e Env` (or the raw callback) it was made in.

use std::marker::PhantomData;
use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;

/// A JS value borrowed for the duration of one N-API callback.
#[derive(Clone, Copy)]
pub struct Js<'e> {
    env: sys::napi_env,
    raw: sys::napi_value,
    _callback: PhantomData<&'e Env>,
}

/// The type of a JS value, as `typeof` says, with arrays told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Undefined,
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
    Function,
    Other,
}

/// A failed call's error. A JS exception it raised (a getter that throws, a
/// Proxy) is cleared, so it cannot fail the tool call, and its message kept.
fn check(env: sys::napi_env, status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        return Ok(());
    }
    // SAFETY: only the env is used, to take the pending exception.
    let thrown = unsafe { Js::from_raw(env, ptr::null_mut()) }.take_exception();
    Err(Error::from_reason(match thrown {
        Some(msg) => msg,
        None => format!("N-API {what} failed"),
    }))
}

/// A value one N-API call makes into `out`.
fn make<'e>(
    env: sys::napi_env,
    what: &str,
    f: impl FnOnce(*mut sys::napi_value) -> sys::napi_status,
) -> Result<Js<'e>> {
    let mut raw = ptr::null_mut();
    check(env, f(&mut raw), what)?;
    // SAFETY: N-API just made `raw` in `env`, within the current callback.
    Ok(unsafe { Js::from_raw(env, raw) })
}

impl<'e> Js<'e> {
    /// # Safety
    /// `raw` must be a live value of `env` for the current callback, and
    /// `'e` must not outlive that callback.
    pub unsafe fn from_raw(env: sys::napi_env, raw: sys::napi_value) -> Js<'e> {
        Js {
            env,
            raw,
            _callback: PhantomData,
        }
    }

    /// The `undefined` of the callback `env` is borrowed for.
    pub fn undefined_in(env: &'e Env) -> Result<Js<'e>> {
        Js::undefined(env.raw())
    }

    /// Any napi-rs value (a function, the global object, a reference's
    /// value) as a `Js` of the callback `env` is borrowed for.
    pub fn of<T: ToNapiValue>(env: &'e Env, value: T) -> Result<Js<'e>> {
        // SAFETY: `to_napi_value` makes (or hands back) a value of `env`,
        // live within the current callback.
        unsafe {
            let raw = T::to_napi_value(env.raw(), value)?;
            Ok(Js::from_raw(env.raw(), raw))
        }
    }

    /// `globalThis`.
    pub fn global(env: &'e Env) -> Result<Js<'e>> {
        Js::of(env, env.get_global()?)
    }

    pub fn raw(self) -> sys::napi_value {
        self.raw
    }

    pub fn env(self) -> sys::napi_env {
        self.env
    }

    fn wrap(self, raw: sys::napi_value) -> Js<'e> {
        // SAFETY: a value N-API made from `self`, in the same callback.
        unsafe { Js::from_raw(self.env, raw) }
    }

    pub fn undefined(env: sys::napi_env) -> Result<Js<'e>> {
        // SAFETY: a plain N-API call on the callback's env.
        make(env, "get_undefined", |out| unsafe {
            sys::napi_get_undefined(env, out)
        })
    }

    pub fn boolean(env: sys::napi_env, b: bool) -> Result<Js<'e>> {
        // SAFETY: a plain N-API call on the callback's env.
        make(env, "get_boolean", |out| unsafe {
            sys::napi_get_boolean(env, b, out)
        })
    }

    pub fn object(env: sys::napi_env) -> Result<Js<'e>> {
        // SAFETY: a plain N-API call on the callback's env.
        make(env, "create_object", |out| unsafe {
            sys::napi_create_object(env, out)
        })
    }

    pub fn from_f64(env: sys::napi_env, n: f64) -> Result<Js<'e>> {
        // SAFETY: a plain N-API call on the callback's env.
        make(env, "create_double", |out| unsafe {
            sys::napi_create_double(env, n, out)
        })
    }

    pub fn from_u32(env: sys::napi_env, n: u32) -> Result<Js<'e>> {
        // SAFETY: a plain N-API call on the callback's env.
        make(env, "create_uint32", |out| unsafe {
            sys::napi_create_uint32(env, n, out)
        })
    }

    pub fn array(env: sys::napi_env, len: u32) -> Result<Js<'e>> {
        // SAFETY: a plain N-API call on the callback's env.
        make(env, "create_array", |out| unsafe {
            sys::napi_create_array_with_length(env, len as usize, out)
        })
    }

    pub fn set_index(self, i: u32, v: Js<'_>) -> Result<()> {
        // SAFETY: both values are live.
        check(
            self.env,
            unsafe { sys::napi_set_element(self.env, self.raw, i, v.raw) },
            "set_element",
        )
    }

    /// A JS string; ASCII (every token) is Latin-1, which V8 takes without decoding.
    pub fn string(env: sys::napi_env, s: &str) -> Result<Js<'e>> {
        let mut raw = ptr::null_mut();
        // SAFETY: `s` is valid for `s.len()` bytes.
        // emnapi (the WebAssembly build) makes a Latin-1 string a character
        // at a time, and a UTF-8 one with a TextDecoder: there, UTF-8.
        let status = unsafe {
            if s.is_ascii() && !cfg!(target_os = "wasi") {
                sys::napi_create_string_latin1(env, s.as_ptr().cast(), s.len() as isize, &mut raw)
            } else {
                sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut raw)
            }
        };
        check(env, status, "create_string")?;
        // SAFETY: made in `env`, within the current callback.
        Ok(unsafe { Js::from_raw(env, raw) })
    }

    /// Any JSON value, as napi-rs's serde support makes it.
    pub fn json(env: sys::napi_env, v: &serde_json::Value) -> Result<Js<'e>> {
        if let serde_json::Value::String(s) = v {
            return Js::string(env, s);
        }
        // SAFETY: env is live for this callback.
        let raw = unsafe { serde_json::Value::to_napi_value(env, v.clone())? };
        // SAFETY: made in `env`, within the current callback.
        Ok(unsafe { Js::from_raw(env, raw) })
    }

    pub fn kind(self) -> Result<Kind> {
        let mut t = sys::ValueType::napi_undefined;
        // SAFETY: a plain N-API call on a live value.
        check(
            self.env,
            unsafe { sys::napi_typeof(self.env, self.raw, &mut t) },
            "typeof",
        )?;
        Ok(match t {
            sys::ValueType::napi_undefined => Kind::Undefined,
            sys::ValueType::napi_null => Kind::Null,
            sys::ValueType::napi_boolean => Kind::Boolean,
            sys::ValueType::napi_number => Kind::Number,
            sys::ValueType::napi_string => Kind::String,
            sys::ValueType::napi_function => Kind::Function,
            sys::ValueType::napi_object => {
                let mut array = false;
                // SAFETY: as above.
                check(
                    self.env,
                    unsafe { sys::napi_is_array(self.env, self.raw, &mut array) },
                    "is_array",
                )?;
                if array {
                    Kind::Array
                } else {
                    Kind::Object
                }
            }
            _ => Kind::Other,
        })
    }

    /// `kind`, with binary data and dates (objects, but not plain JSON
    /// objects) as `Other`: for walking a value deeply.
    pub fn deep_kind(self) -> Result<Kind> {
        let kind = self.kind()?;
        if kind != Kind::Object {
            return Ok(kind);
        }
        let (env, raw) = (self.env, self.raw);
        let (mut typed, mut buffer, mut view, mut date) = (false, false, false, false);
        // SAFETY: plain N-API predicates on a live value.
        unsafe {
            check(
                env,
                sys::napi_is_typedarray(env, raw, &mut typed),
                "is_typedarray",
            )?;
            check(
                env,
                sys::napi_is_arraybuffer(env, raw, &mut buffer),
                "is_arraybuffer",
            )?;
            check(
                env,
                sys::napi_is_dataview(env, raw, &mut view),
                "is_dataview",
            )?;
            check(env, sys::napi_is_date(env, raw, &mut date), "is_date")?;
        }
        if typed || buffer || view || date {
            return Ok(Kind::Other);
        }
        Ok(Kind::Object)
    }

    /// Whether the value is an object or a function (has properties to read).
    pub fn is_object(self) -> Result<bool> {
        let mut t = sys::ValueType::napi_undefined;
        // SAFETY: a plain N-API call on a live value.
        check(
            self.env,
            unsafe { sys::napi_typeof(self.env, self.raw, &mut t) },
            "typeof",
        )?;
        Ok(matches!(
            t,
            sys::ValueType::napi_object | sys::ValueType::napi_function
        ))
    }

    /// `value[name]`, prototype chain included, as the tool itself reads it.
    /// `None` for a value that is not an object or a function.
    pub fn get(self, name: &std::ffi::CStr) -> Result<Option<Js<'e>>> {
        if !self.is_object()? {
            return Ok(None);
        }
        self.get_unchecked(name).map(Some)
    }

    /// `value[name]` on a value known to be an object.
    pub fn get_unchecked(self, name: &std::ffi::CStr) -> Result<Js<'e>> {
        let mut raw = ptr::null_mut();
        // SAFETY: `name` is NUL-terminated; the value is live.
        check(
            self.env,
            unsafe { sys::napi_get_named_property(self.env, self.raw, name.as_ptr(), &mut raw) },
            "get_named_property",
        )?;
        Ok(self.wrap(raw))
    }

    /// `value[key]` (prototype chain included), or `None` when the value is
    /// not an object or a function.
    pub fn get_by(self, key: Js<'_>) -> Result<Option<Js<'e>>> {
        if !self.is_object()? {
            return Ok(None);
        }
        self.get_key(key).map(Some)
    }

    /// `value[key]` for a key that is itself a JS value (a string or a symbol).
    pub fn get_key(self, key: Js<'_>) -> Result<Js<'e>> {
        let mut raw = ptr::null_mut();
        // SAFETY: both values are live.
        check(
            self.env,
            unsafe { sys::napi_get_property(self.env, self.raw, key.raw, &mut raw) },
            "get_property",
        )?;
        Ok(self.wrap(raw))
    }

    pub fn get_str_key(self, key: &str) -> Result<Js<'e>> {
        let k = Js::string(self.env, key)?;
        self.get_key(k)
    }

    pub fn get_index(self, i: u32) -> Result<Js<'e>> {
        let mut raw = ptr::null_mut();
        // SAFETY: a plain N-API call on a live value.
        check(
            self.env,
            unsafe { sys::napi_get_element(self.env, self.raw, i, &mut raw) },
            "get_element",
        )?;
        Ok(self.wrap(raw))
    }

    pub fn array_len(self) -> Result<u32> {
        let mut n = 0;
        // SAFETY: as above.
        check(
            self.env,
            unsafe { sys::napi_get_array_length(self.env, self.raw, &mut n) },
            "get_array_length",
        )?;
        Ok(n)
    }

    /// The string's UTF-16 code units, exactly (no replacement of lone
    /// surrogates); `None` if the value is not a string.
    pub fn utf16(self) -> Result<Option<Vec<u16>>> {
        // Ids and names are short: one call into a stack buffer first.
        let mut stack = [0u16; 128];
        let mut written = 0usize;
        // SAFETY: `stack` holds 128 units, room for the terminating NUL.
        let status = unsafe {
            sys::napi_get_value_string_utf16(
                self.env,
                self.raw,
                stack.as_mut_ptr(),
                stack.len(),
                &mut written,
            )
        };
        if status == sys::Status::napi_string_expected {
            return Ok(None);
        }
        check(self.env, status, "get_value_string_utf16")?;
        if written + 1 < stack.len() {
            return Ok(Some(stack[..written].to_vec()));
        }
        let mut len = 0usize;
        // SAFETY: a NULL buffer asks for the length only.
        let status = unsafe {
            sys::napi_get_value_string_utf16(self.env, self.raw, ptr::null_mut(), 0, &mut len)
        };
        if status == sys::Status::napi_string_expected {
            return Ok(None);
        }
        check(self.env, status, "get_value_string_utf16")?;
        let mut buf = vec![0u16; len + 1];
        let mut written = 0usize;
        // SAFETY: `buf` holds `len + 1` units, room for the terminating NUL.
        check(
            self.env,
            unsafe {
                sys::napi_get_value_string_utf16(
                    self.env,
                    self.raw,
                    buf.as_mut_ptr(),
                    len + 1,
                    &mut written,
                )
            },
            "get_value_string_utf16",
        )?;
        buf.truncate(written);
        Ok(Some(buf))
    }

    /// The string as UTF-8 (a lone surrogate becomes U+FFFD, which no id
    /// has), in `buf` when it fits: ids, names and session keys do, so the
    /// hot path reads them without an allocation. `None` if the value is not
    /// a string.
    pub fn str_in<'b>(self, buf: &'b mut [u8]) -> Result<Option<std::borrow::Cow<'b, str>>> {
        if cfg!(target_os = "wasi") {
            return Ok(self.text()?.map(std::borrow::Cow::Owned));
        }
        let mut written = 0usize;
        // SAFETY: `buf` has `buf.len()` bytes, room for the terminating NUL.
        let status = unsafe {
            sys::napi_get_value_string_utf8(
                self.env,
                self.raw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut written,
            )
        };
        if status == sys::Status::napi_string_expected {
            return Ok(None);
        }
        check(self.env, status, "get_value_string_utf8")?;
        if written + 1 < buf.len() {
            // Node writes whole characters, with invalid ones replaced.
            return match std::str::from_utf8(&buf[..written]) {
                Ok(s) => Ok(Some(std::borrow::Cow::Borrowed(s))),
                Err(_) => Ok(self.text()?.map(std::borrow::Cow::Owned)),
            };
        }
        // It may not have fit: read it whole.
        Ok(self.text()?.map(std::borrow::Cow::Owned))
    }

    /// Any string as UTF-8, in one copy (a lone surrogate becomes U+FFFD):
    /// for scanning long text, such as a tool's output.
    pub fn text(self) -> Result<Option<String>> {
        // emnapi's UTF-8 (the WebAssembly build) takes any surrogate for the
        // first of a pair and swallows the unit after it; its UTF-16 is exact.
        if cfg!(target_os = "wasi") {
            return Ok(self.utf16()?.map(|u| String::from_utf16_lossy(&u)));
        }
        let mut len = 0usize;
        // SAFETY: a NULL buffer asks for the length only.
        let status = unsafe {
            sys::napi_get_value_string_utf8(self.env, self.raw, ptr::null_mut(), 0, &mut len)
        };
        if status == sys::Status::napi_string_expected {
            return Ok(None);
        }
        check(self.env, status, "get_value_string_utf8")?;
        let mut buf = vec![0u8; len + 1];
        let mut written = 0usize;
        // SAFETY: `buf` holds `len + 1` bytes, room for the terminating NUL.
        check(
            self.env,
            unsafe {
                sys::napi_get_value_string_utf8(
                    self.env,
                    self.raw,
                    buf.as_mut_ptr().cast(),
                    len + 1,
                    &mut written,
                )
            },
            "get_value_string_utf8",
        )?;
        buf.truncate(written);
        Ok(Some(String::from_utf8(buf).unwrap_or_else(|e| {
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        })))
    }

    /// A string for ids and names the host gives (a tool name, an agent id, a
    /// session key): a lone surrogate becomes U+FFFD, which no valid id has.
    pub fn host_str(self) -> Result<Option<String>> {
        Ok(self.utf16()?.map(|u| {
            // Ids and names are ASCII: narrow them without decoding.
            if u.iter().all(|&c| c < 0x80) {
                let bytes: Vec<u8> = u.iter().map(|&c| c as u8).collect();
                String::from_utf8(bytes).unwrap_or_default()
            } else {
                String::from_utf16_lossy(&u)
            }
        }))
    }

    pub fn number(self) -> Result<f64> {
        let mut n = 0.0;
        // SAFETY: the caller checked the kind.
        check(
            self.env,
            unsafe { sys::napi_get_value_double(self.env, self.raw, &mut n) },
            "get_value_double",
        )?;
        Ok(n)
    }

    pub fn bool(self) -> Result<bool> {
        let mut b = false;
        // SAFETY: the caller checked the kind.
        check(
            self.env,
            unsafe { sys::napi_get_value_bool(self.env, self.raw, &mut b) },
            "get_value_bool",
        )?;
        Ok(b)
    }

    /// Own enumerable keys, strings then symbols, in the order `{...value}`
    /// copies them (symbols only when `symbols`).
    pub fn own_keys(self, symbols: bool) -> Result<Vec<Js<'e>>> {
        let filter = sys::KeyFilter::enumerable
            | if symbols {
                0
            } else {
                sys::KeyFilter::skip_symbols
            };
        let mut arr = ptr::null_mut();
        // SAFETY: a plain N-API call on a live object.
        check(
            self.env,
            unsafe {
                sys::napi_get_all_property_names(
                    self.env,
                    self.raw,
                    sys::KeyCollectionMode::own_only,
                    filter,
                    sys::KeyConversion::numbers_to_strings,
                    &mut arr,
                )
            },
            "get_all_property_names",
        )?;
        let arr = self.wrap(arr);
        (0..arr.array_len()?).map(|i| arr.get_index(i)).collect()
    }

    /// Whether the object has an own property `key`.
    pub fn has_own(self, key: Js<'_>) -> Result<bool> {
        let mut has = false;
        // SAFETY: both values are live.
        check(
            self.env,
            unsafe { sys::napi_has_own_property(self.env, self.raw, key.raw, &mut has) },
            "has_own_property",
        )?;
        Ok(has)
    }

    /// Defines own, enumerable, writable data properties: no setter on
    /// `Object.prototype` sees the value, and a key named `__proto__` stays an
    /// own key, as `{...params}` makes it.
    /// Defines `key` as an own property that can't be written, deleted or
    /// enumerated.
    pub fn define_fixed(self, key: Js<'_>, value: Js<'_>) -> Result<()> {
        let d = sys::napi_property_descriptor {
            utf8name: ptr::null(),
            name: key.raw,
            method: None,
            getter: None,
            setter: None,
            value: value.raw,
            attributes: sys::PropertyAttributes::default,
            data: ptr::null_mut(),
        };
        // SAFETY: the descriptor names live values of this env.
        check(
            self.env,
            unsafe { sys::napi_define_properties(self.env, self.raw, 1, &d) },
            "define_properties",
        )
    }

    pub fn define(self, props: &[(Js<'_>, Js<'_>)]) -> Result<()> {
        let descriptors: Vec<sys::napi_property_descriptor> = props
            .iter()
            .map(|(k, v)| sys::napi_property_descriptor {
                utf8name: ptr::null(),
                name: k.raw,
                method: None,
                getter: None,
                setter: None,
                value: v.raw,
                attributes: sys::PropertyAttributes::writable
                    | sys::PropertyAttributes::enumerable
                    | sys::PropertyAttributes::configurable,
                data: ptr::null_mut(),
            })
            .collect();
        // SAFETY: every descriptor names live values of this env.
        check(
            self.env,
            unsafe {
                sys::napi_define_properties(
                    self.env,
                    self.raw,
                    descriptors.len(),
                    descriptors.as_ptr(),
                )
            },
            "define_properties",
        )
    }

    /// Whether the value is a promise.
    pub fn is_promise(self) -> Result<bool> {
        let mut p = false;
        // SAFETY: a plain N-API call on a live value.
        check(
            self.env,
            unsafe { sys::napi_is_promise(self.env, self.raw, &mut p) },
            "is_promise",
        )?;
        Ok(p)
    }
}

impl ToNapiValue for Js<'_> {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        Ok(val.raw)
    }
}

impl FromNapiValue for Js<'_> {
    unsafe fn from_napi_value(env: sys::napi_env, raw: sys::napi_value) -> Result<Self> {
        // SAFETY: napi-rs hands an argument of the current callback.
        Ok(unsafe { Js::from_raw(env, raw) })
    }
}

impl TypeName for Js<'_> {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ValidateNapiValue for Js<'_> {}

impl<'e> Js<'e> {
    /// Calls `self` as a function with `this` and `args`. A JS exception is
    /// cleared (it must not fail the tool call) and returned as the error,
    /// with the exception's `message` when it has one.
    pub fn call(self, this: Js<'_>, args: &[Js<'_>]) -> std::result::Result<Js<'e>, String> {
        // On the stack for the calls the hot path makes (no allocation).
        let mut stack = [ptr::null_mut(); 8];
        let heap: Vec<sys::napi_value>;
        let raw_args: &[sys::napi_value] = if args.len() <= stack.len() {
            for (slot, a) in stack.iter_mut().zip(args) {
                *slot = a.raw;
            }
            &stack[..args.len()]
        } else {
            heap = args.iter().map(|a| a.raw).collect();
            &heap
        };
        let mut out = ptr::null_mut();
        // SAFETY: every value is live for this callback.
        let status = unsafe {
            sys::napi_call_function(
                self.env,
                this.raw,
                self.raw,
                raw_args.len(),
                raw_args.as_ptr(),
                &mut out,
            )
        };
        if status == sys::Status::napi_ok {
            return Ok(self.wrap(out));
        }
        Err(self
            .take_exception()
            .unwrap_or_else(|| "the call failed".to_owned()))
    }

    /// Clears a pending JS exception; its message, if it has one.
    fn take_exception(self) -> Option<String> {
        let mut pending = false;
        // SAFETY: plain N-API calls on the callback's env.
        unsafe {
            if sys::napi_is_exception_pending(self.env, &mut pending) != sys::Status::napi_ok
                || !pending
            {
                return None;
            }
            let mut e = ptr::null_mut();
            if sys::napi_get_and_clear_last_exception(self.env, &mut e) != sys::Status::napi_ok {
                return None;
            }
            Some(self.wrap(e).thrown_message())
        }
    }

    /// What a thrown value says: a string, or an error's `message`.
    pub fn thrown_message(self) -> String {
        let msg = match self.kind() {
            Ok(Kind::String) => Ok(self),
            Ok(Kind::Object | Kind::Function) => self.get_unchecked(c"message"),
            _ => return "a non-error value was thrown".to_owned(),
        };
        msg.and_then(|m| m.host_str())
            .ok()
            .flatten()
            .unwrap_or_else(|| "an error without a message was thrown".to_owned())
    }

    /// `self.bind(undefined, ...args)`: a function that calls `self` with
    /// `args` first (how a native callback gets its data without a handle).
    pub fn bind_args(self, args: &[Js<'_>]) -> Result<Js<'e>> {
        let bind = self.get_unchecked(c"bind")?;
        let mut all = vec![Js::undefined(self.env)?];
        all.extend_from_slice(args);
        bind.call(self, &all)
            .map_err(|e| Error::from_reason(format!("claw-identity: bind failed: {e}")))
    }

    /// `self.bind(this)`.
    pub fn bind_this(self, this: Js<'_>) -> Result<Js<'e>> {
        let bind = self.get_unchecked(c"bind")?;
        bind.call(self, &[this])
            .map_err(|e| Error::from_reason(format!("claw-identity: bind failed: {e}")))
    }
}

/// Property names a layer reads on every call, made once as internalized
/// keys (Node-API 10's `node_api_create_property_key_latin1`: a key made
/// anew per call is hashed into V8's string table each time) and kept alive
/// by napi-rs references, released with the layer on its JS thread.
///
/// In the WebAssembly build every Node-API call crosses into emnapi's JS and
/// costs about as much as a property read itself, so there `read` reads by
/// name in one call instead of two.
pub struct Keys<const N: usize> {
    env: Env,
    names: [&'static std::ffi::CStr; N],
    refs: Vec<napi::UnknownRef<false>>,
}

impl<const N: usize> Keys<N> {
    pub fn new(env: &Env, names: [&'static std::ffi::CStr; N]) -> Result<Keys<N>> {
        let mut refs = Vec::with_capacity(N);
        for name in names {
            let name = name.to_bytes();
            let mut raw = ptr::null_mut();
            // SAFETY: `name` is valid for `name.len()` bytes; ASCII is Latin-1.
            check(
                env.raw(),
                unsafe {
                    sys::node_api_create_property_key_latin1(
                        env.raw(),
                        name.as_ptr().cast(),
                        name.len() as isize,
                        &mut raw,
                    )
                },
                "create_property_key_latin1",
            )?;
            // SAFETY: a live string of this env; Node-API 10 references any value.
            refs.push(unsafe { napi::UnknownRef::<false>::from_napi_value(env.raw(), raw)? });
        }
        Ok(Keys {
            env: *env,
            names,
            refs,
        })
    }

    /// `object[key i]` (prototype chain included), on a value known to be
    /// an object.
    pub fn read<'e>(&self, env: &'e Env, object: Js<'e>, i: usize) -> Result<Js<'e>> {
        if cfg!(target_os = "wasi") {
            return object.get_unchecked(self.names[i]);
        }
        object.get_key(self.get(env, i)?)
    }

    /// Key `i`, for the callback `env` is borrowed for.
    pub fn get<'e>(&self, env: &'e Env, i: usize) -> Result<Js<'e>> {
        Js::of(env, self.refs[i].get_value(env)?)
    }
}

impl<const N: usize> Drop for Keys<N> {
    fn drop(&mut self) {
        // A layer is dropped on its JS thread (by a finalizer or the env's
        // teardown), where its env is still valid.
        for r in self.refs.drain(..) {
            let _ = r.unref(&self.env);
        }
    }
}
