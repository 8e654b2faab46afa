// The JS half of an owned call (a tool that carries the token): OpenClaw's
// hook result `{ params: { ...p, <token param>: token, <conversation param>:
// conversation } }`, and the call's log line, in one call into V8 (the same
// copy made through N-API, and the log line as a second call, cost several
// times more: BENCHMARKS.md). Compiled once per layer by the addon
// (bridge/layer.rs), with TOKEN and CONVERSATION replaced by the layer's
// param names as string literals (constant keys let V8 build the object
// without a runtime call per key), then called with the logger's methods,
// `[info, warn]`, and whether the layer sets the conversation id.
//
// `event` is the call's event when no rule read its params: `event.params`
// is then read here, once, as the addon reads it (an object that is not an
// array, or nothing);
// otherwise `event` is `undefined` and `p` is the params object the rules
// read. `warn` is true for a warning line.
//
// Spread and object-literal keys both define (never set) properties, so no
// setter on Object.prototype runs and an own `__proto__` key stays an own
// key. `token` or `conversation` is `undefined` when the layer takes the
// model's value out: a param the call holds is then defined as `undefined`
// (OpenClaw spreads hook params over the original, so the key must be
// there; JSON drops it), and one it doesn't hold is left out. The result is
// `undefined` when there is nothing to set or take out.
(log, withConversation, hasOwn = Object.hasOwn) => {
  const logLine = (line, warn) => {
    if (line === undefined) return;
    try {
      log[warn === true ? 1 : 0](line);
    } catch {
      // A logger that throws must not fail the tool call.
    }
  };
  const paramsOf = (event, p) => {
    if (event === undefined) return p;
    const q = event.params;
    return typeof q === 'object' && q !== null && !Array.isArray(q) ? q : undefined;
  };
  const has = (p, key) => p !== undefined && hasOwn(p, key);
  if (!withConversation) {
    return function ownedRewrite(event, params, token, _conversation, line, warn) {
      const p = paramsOf(event, params);
      logLine(line, warn);
      if (token === undefined && !has(p, TOKEN_KEY)) return undefined;
      return { params: { ...p, TOKEN: token } };
    };
  }
  return function ownedRewrite(event, params, token, conversation, line, warn) {
    const p = paramsOf(event, params);
    logLine(line, warn);
    const t = token !== undefined || has(p, TOKEN_KEY);
    const c = conversation !== undefined || has(p, CONVERSATION_KEY);
    if (t && c) return { params: { ...p, TOKEN: token, CONVERSATION: conversation } };
    if (t) return { params: { ...p, TOKEN: token } };
    if (c) return { params: { ...p, CONVERSATION: conversation } };
    return undefined;
  };
};
