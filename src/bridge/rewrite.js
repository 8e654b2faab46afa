// The JS half of an owned call (a tool that carries the token): OpenClaw's
// hook result `{ params: { ...p, <token param>: token, <conversation param>:
// conversation } }`, and the call's log line, in one call into V8 (the same
// copy made through N-API, and the log line as a second call, cost several
// times more: BENCHMARKS.md). Compiled once per layer by the addon
// (bridge/layer.rs), with TOKEN and CONVERSATION replaced by the layer's
// param names as string literals (constant keys let V8 build the object
// without a runtime call per key), then called with the logger's methods,
// `[info, warn]` in the order of the addon's `LineLevel`, and whether the
// layer sets the conversation id.
//
// Spread and object-literal keys both define (never set) properties, so no
// setter on Object.prototype runs and an own `__proto__` key stays an own
// key. `token` or `conversation` is `undefined` when the layer takes the
// model's value out: a param the call holds is then defined as `undefined`
// (OpenClaw spreads hook params over the original, so the key must be
// there; JSON drops it), and one it doesn't hold is left out. The result is
// `undefined` when there is nothing to set or take out.
(log, withConversation, hasOwn = Object.hasOwn) => {
  const logLine = (line, level) => {
    if (line === undefined) return;
    try {
      log[level](line);
    } catch {
      // A logger that throws must not fail the tool call.
    }
  };
  const has = (p, key) => p != null && hasOwn(p, key);
  if (!withConversation) {
    return function ownedRewrite(p, token, _conversation, line, level) {
      logLine(line, level);
      if (token === undefined && !has(p, TOKEN_KEY)) return undefined;
      return { params: { ...p, TOKEN: token } };
    };
  }
  return function ownedRewrite(p, token, conversation, line, level) {
    logLine(line, level);
    const t = token !== undefined || has(p, TOKEN_KEY);
    const c = conversation !== undefined || has(p, CONVERSATION_KEY);
    if (t && c) return { params: { ...p, TOKEN: token, CONVERSATION: conversation } };
    if (t) return { params: { ...p, TOKEN: token } };
    if (c) return { params: { ...p, CONVERSATION: conversation } };
    return undefined;
  };
};
