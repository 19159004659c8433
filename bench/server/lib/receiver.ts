/**
 * Webhook receiver of the benchmarks (TypeScript via tsx; no Ferry code), in its own process.
 * A `node:http` sink on loopback that answers 200 (or, in `hang` mode, never answers), counts
 * arrivals and, when asked, records the arrival time of each messageId (for end-to-end
 * latency). Controlled over IPC:
 *
 *   {cmd:'listen', mode:'ok'|'hang', port?}  -> {port}
 *   {cmd:'close'}                             stop listening and drop connections (receiver "down")
 *   {cmd:'stats'}                             -> {count, signed, standardSigned, firstAt, lastAt, marks}
 *   {cmd:'record', on}                        start/stop recording messageId arrival times
 *   {cmd:'arrivals'}                          -> {arrivals: [messageId, atMs][]}
 *   {cmd:'reset'}
 *
 * Times are `performance.timeOrigin + performance.now()`, comparable across processes.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

const now = () => performance.timeOrigin + performance.now();
let server: Server | undefined;
const sockets = new Set<Socket>();
const hanging = new Set<ServerResponse>();
let count = 0;
let signed = 0;
/** Requests that carried a Standard Webhooks signature. */
let standardSigned = 0;
let firstAt = 0;
let lastAt = 0;
let recording = false;
let arrivals: [string, number][] = [];
/** Arrival time of every {@link MARK_EVERY}th request since the last reset: how the rate moves through a run. */
let marks: number[] = [];
const MARK_EVERY = 10_000;
const okBody = Buffer.from('ok');

function listen(mode: 'ok' | 'hang', port: number): Promise<number> {
  server = createServer({ keepAliveTimeout: 10_000 }, (req, res) => {
    if (mode === 'hang') {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const t = now();
      count++;
      if (count % MARK_EVERY === 0) marks.push(t);
      if (firstAt === 0) firstAt = t;
      lastAt = t;
      if (req.headers['x-signature']) signed++;
      if (req.headers['webhook-signature']) standardSigned++;
      if (recording) {
        const body = Buffer.concat(chunks).toString('utf8');
        const m = /"messageId":"([^"]+)"/.exec(body);
        if (m) arrivals.push([m[1]!, t]);
      }
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': okBody.length });
      res.end(okBody);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((resolve, reject) => {
    server!.once('error', reject);
    server!.listen(port, '127.0.0.1', () => resolve((server!.address() as AddressInfo).port));
  });
}

// A failed command rejects unhandled and ends this child, which fails the benchmark that sent it.
process.on('message', (msg: any) => void answer(msg));

async function answer(msg: any): Promise<void> {
  const reply = (data: Record<string, unknown> = {}) => process.send!({ id: msg.id, ...data });
  switch (msg.cmd) {
    case 'listen':
      return reply({ port: await listen(msg.mode ?? 'ok', msg.port ?? 0) });
    case 'close': {
      const s = server;
      server = undefined;
      for (const r of hanging) r.destroy();
      for (const so of sockets) so.destroy();
      if (s) await new Promise<void>((r) => s.close(() => r()));
      return reply();
    }
    case 'stats':
      return reply({ count, signed, standardSigned, firstAt, lastAt, marks });
    case 'record':
      recording = Boolean(msg.on);
      return reply();
    case 'arrivals': {
      const a = arrivals;
      arrivals = [];
      return reply({ arrivals: a });
    }
    case 'reset':
      count = signed = standardSigned = firstAt = lastAt = 0;
      marks = [];
      arrivals = [];
      return reply();
  }
}
process.on('disconnect', () => process.exit(0));
