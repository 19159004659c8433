import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { within } from './within.js';

/** One request as a test receiver saw it. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  /** Header names and values as they came over the wire, names in their own case. */
  rawHeaders: string[];
  body: Buffer;
  json: any;
}

/** What the receiver answers: a status (with optional headers and body), or `hang` (never answer). */
export type Reply = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/**
 * A real HTTP receiver on loopback that records every request and answers as told. Tests wait
 * for arrivals through {@link TestReceiver.waitFor}, never by sleeping.
 */
export interface TestReceiver {
  url: string;
  requests: Received[];
  /** Changes the answer for the following requests. */
  reply(r: Reply | ((req: Received) => Reply)): void;
  /**
   * Resolves once at least `n` requests have arrived; rejects after `deadlineMs` (default
   * {@link DEFAULT_WAIT_MS}) saying how many arrived of how many were awaited.
   */
  waitFor(n: number, deadlineMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** How long {@link TestReceiver.waitFor} waits by default. */
const DEFAULT_WAIT_MS = 10_000;

export async function startReceiver(initial: Reply | ((req: Received) => Reply) = { status: 200 }): Promise<TestReceiver> {
  let replyWith = initial;
  const requests: Received[] = [];
  const waiters: { n: number; resolve: (r: Received[]) => void }[] = [];
  const hanging = new Set<import('node:http').ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let json: unknown;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        json = undefined;
      }
      const received: Received = { path: req.url ?? '/', headers: req.headers, rawHeaders: req.rawHeaders, body, json };
      requests.push(received);
      for (const w of [...waiters]) {
        if (requests.length < w.n) continue;
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(requests);
      }
      const r = typeof replyWith === 'function' ? replyWith(received) : replyWith;
      if (r === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      res.writeHead(r.status, r.headers ?? { 'content-type': 'text/plain' });
      res.end(r.body ?? '');
    });
  });
  server.listen(0, '127.0.0.1');
  await within(DEFAULT_WAIT_MS, 'the test receiver to listen', once(server, 'listening'));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reply(r) {
      replyWith = r;
    },
    waitFor(n, deadlineMs = DEFAULT_WAIT_MS) {
      if (requests.length >= n) return Promise.resolve(requests);
      return new Promise((resolve, reject) => {
        const waiter = {
          n,
          resolve: (r: Received[]) => {
            clearTimeout(timer);
            resolve(r);
          },
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`the receiver got ${requests.length} of the ${n} requests awaited within ${deadlineMs} ms`));
        }, deadlineMs);
        waiters.push(waiter);
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await within(DEFAULT_WAIT_MS, 'the test receiver to close', new Promise<void>((r) => server.close(() => r())));
    },
  };
}
