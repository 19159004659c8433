/**
 * Ceiling of the ingestion benchmark (TypeScript via tsx; no Ferry code): a bare `node:http`
 * server that reads each body, parses it as JSON and answers 200 `{"success":true}` without
 * storing anything. Reports its port over IPC.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const ok = Buffer.from('{"success":true}');
let parsed = 0;
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { batch: unknown[] };
    parsed += body.batch.length;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': ok.length });
    res.end(ok);
  });
});
server.listen(0, '127.0.0.1', () => process.send!({ type: 'ready', port: (server.address() as AddressInfo).port }));
process.on('message', (msg: any) => {
  if (msg.cmd === 'stats') process.send!({ id: msg.id, parsed });
});
process.on('disconnect', () => process.exit(0));
