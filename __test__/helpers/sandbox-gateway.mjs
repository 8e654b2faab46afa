// A stand-in for the OpenClaw gateway, for the sandbox escape suite: a
// loopback HTTP server that wants the gateway's token, an abstract unix
// socket and a unix socket in each directory given, all recording every
// connection in the file given. It runs as the user the sandbox runs as, so
// a `kill` from inside would reach it but for the sandbox. Prints
// `{pid, port, abstract, sockets}` when it listens.
//
//   node sandbox-gateway.mjs <record-file> <token-file> [socket-dir...]
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

const [record, tokenFile, ...socketDirs] = process.argv.slice(2);
const token = fs.readFileSync(tokenFile, 'utf8').trim();
const note = (what) => fs.appendFileSync(record, `${JSON.stringify(what)}\n`);

const server = http.createServer((req, res) => {
  const authorized = req.headers.authorization === `Bearer ${token}`;
  note({ kind: 'http', authorized });
  res.writeHead(authorized ? 200 : 401).end(authorized ? 'operator' : 'no');
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));

const abstract = `\0claw-sandbox-test-${process.pid}`;
const listen = (where) =>
  new Promise((resolve, reject) => {
    const s = net.createServer((c) => {
      note({ kind: 'socket', where: where.startsWith('\0') ? 'abstract' : where });
      c.end('hello');
    });
    s.once('error', reject);
    s.listen(where, () => resolve(s));
  });
await listen(abstract);
const sockets = [];
for (const dir of socketDirs) {
  const p = path.join(dir, 'control.sock');
  fs.rmSync(p, { force: true });
  await listen(p);
  sockets.push(p);
}
process.stdout.write(`${JSON.stringify({ pid: process.pid, port: server.address().port, abstract: abstract.slice(1), sockets })}\n`);
process.on('SIGTERM', () => process.exit(0));
