#!/usr/bin/env node
// Runs a script on a Node of OpenClaw's range, fetched into .cache/ when
// this one is outside it (the package refuses other Nodes):
//   node scripts/with-node.mjs 24 bench/run.mjs --quick
import { spawnSync } from 'node:child_process';

import { ensureNode } from './ensure-openclaw.mjs';

const [major, ...args] = process.argv.slice(2);
const node = await ensureNode(Number(major), { log: (l) => process.stderr.write(`${l}\n`) });
const r = spawnSync(node, args, { stdio: 'inherit' });
process.exit(r.status ?? 1);
