import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { within } from './deadline.js';

/** One request as the sink saw it. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  /** Body bytes as received (before gunzip). */
  rawBytes: number;
  /** Decoded body text. */
  text: string;
  json: { batch: Array<Record<string, unknown>>; sentAt?: string; [k: string]: unknown };
}

/** What the handler answers; `hold` keeps the response open until the returned promise settles. */
export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Destroy the socket instead of answering (a network error for the client). */
  destroy?: boolean;
  /** Answer only after this promise settles. */
  after?: Promise<unknown>;
}

export type Handler = (req: SeenRequest, index: number) => Answer | undefined;

/**
 * A Segment-compatible batch endpoint on 127.0.0.1 that records every request. Messages are
 * "accepted" only when answered 2xx, like a server that commits before it answers.
 */
export class SinkServer {
  readonly requests: SeenRequest[] = [];
  readonly accepted: Array<Record<string, unknown>> = [];
  handler: Handler = () => undefined;
  // A request the sink cannot read (say, a body that is not gzip) rejects unhandled and fails the run.
  #server = createServer((req, res) => void this.#onRequest(req, res));
  #waiters: Array<{ test: () => boolean; resolve: () => void }> = [];
  url = '';

  static async start(handler?: Handler): Promise<SinkServer> {
    const sink = new SinkServer();
    if (handler) sink.handler = handler;
    await new Promise<void>((resolve) => sink.#server.listen(0, '127.0.0.1', resolve));
    sink.url = `http://127.0.0.1:${(sink.#server.address() as AddressInfo).port}`;
    return sink;
  }

  /**
   * Resolves once `test` holds, checked after every request and answer; rejects naming `what`
   * when it does not hold within the wait limit.
   */
  until(test: () => boolean, what = 'the sink'): Promise<void> {
    if (test()) return Promise.resolve();
    return within(new Promise((resolve) => this.#waiters.push({ test, resolve })), what);
  }

  /** Resolves once `n` messages were accepted. */
  untilAccepted(n: number): Promise<void> {
    return this.until(() => this.accepted.length >= n, `${n} accepted messages (have ${this.accepted.length})`);
  }

  /** Resolves once `n` requests arrived (answered or not). */
  untilRequests(n: number): Promise<void> {
    return this.until(() => this.requests.length >= n, `${n} requests (have ${this.requests.length})`);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #check(): void {
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.test()) return true;
      w.resolve();
      return false;
    });
  }

  async #onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const text = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
    const seen: SeenRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      rawBytes: raw.length,
      text,
      json: JSON.parse(text) as SeenRequest['json'],
    };
    const index = this.requests.push(seen) - 1;
    const answer = this.handler(seen, index) ?? {};
    this.#check();
    if (answer.after) await answer.after.catch(() => undefined);
    if (answer.destroy) {
      req.socket.destroy();
      return;
    }
    const status = answer.status ?? 200;
    if (status >= 200 && status < 300) this.accepted.push(...seen.json.batch);
    res.writeHead(status, { 'content-type': 'application/json', ...answer.headers });
    res.end(answer.body ?? '{"success":true}');
    this.#check();
  }
}

/** Counts of each messageId among `messages`. */
export function countIds(messages: Array<Record<string, unknown>>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of messages) {
    const id = m['messageId'] as string;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}
