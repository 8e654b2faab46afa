// The design claw-identity replaces, written out as the benchmark baseline:
// plain JS that stats the map file on every call, re-reads it when the mtime
// changed, and spreads the token into a copy of the params.
import fs from 'node:fs';

/** `loadTokenMap(path)`: a lookup function that is current as of its call. */
export function loadTokenMap(file) {
  let mtimeMs = -1;
  let map = {};
  return (agentId) => {
    const m = fs.statSync(file).mtimeMs;
    if (m !== mtimeMs) {
      map = JSON.parse(fs.readFileSync(file, 'utf8'));
      mtimeMs = m;
    }
    return typeof agentId === 'string' && Object.hasOwn(map, agentId) ? map[agentId] : undefined;
  };
}

/** The plain-JS `before_tool_call` hook. */
export function plainHook(file, prefix = 'claw-os__') {
  const tokenFor = loadTokenMap(file);
  return (event, ctx) => {
    if (!event.toolName.startsWith(prefix)) return undefined;
    const auth_token = tokenFor(ctx?.agentId);
    if (auth_token === undefined) return undefined;
    return { params: { ...event.params, auth_token } };
  };
}
