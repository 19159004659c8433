import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import { timersOf, type Clock } from '../util/clock.js';

/**
 * A few terminals and dashboard views at once. Each stream is a listener on the bus, run
 * synchronously in the stage that emits, so their number is capped.
 */
export const defaultTailMaxClients = 32;
/**
 * 15 s: below the idle timeouts of common proxies and load balancers (often 30 to 60 s), so a
 * quiet stream is not cut, and a client can tell a live stream from a dead one.
 */
export const tailHeartbeatMs = 15_000;
/**
 * A client that reads slower than events come is dropped once this much waits unsent for it,
 * rather than letting the server buffer without bound on its behalf.
 */
const maxBufferedBytes = 1024 * 1024;

/** What one stream does with the bus: subscribes through `write`, and returns how to unsubscribe. */
export type StreamSubscription = (write: (text: string) => void) => () => void;

/**
 * The server-sent event streams of the admin API (`GET /tail`, `GET /sources/{id}/live`),
 * sharing one cap on open streams, since each is listeners on the bus run in the stages that
 * emit. Each stream gets a `: heartbeat` comment every {@link tailHeartbeatMs} on the clock's
 * timers, is dropped when its client reads too slowly, leaves the bus when its client goes,
 * and ends when the server stops (before the listener closes, so that none holds the stop).
 */
export class EventStreams {
  private readonly open = new Set<() => void>();
  private readonly maxClients: number;

  /** @param maxClients Streams open at once at most; further ones are refused 429 `too_many_tail_clients`. */
  constructor(
    private readonly clock: Clock,
    maxClients = defaultTailMaxClients,
  ) {
    this.maxClients = maxClients;
  }

  /** Ends every stream when `app` begins to close. */
  endOnClose(app: FastifyInstance): void {
    // preClose runs before the listener stops accepting and waits for requests in progress: an
    // open stream ended here cannot hold the stop.
    app.addHook('preClose', async () => {
      for (const end of [...this.open]) end();
    });
  }

  /**
   * Answers `reply` with a stream: `greeting` (a comment) at once, so the client knows the
   * stream is open, then what `subscribe` writes, and heartbeats.
   *
   * @throws FerryError `too_many_tail_clients` past the cap.
   */
  send(reply: FastifyReply, greeting: string, subscribe: StreamSubscription): FastifyReply {
    if (this.open.size >= this.maxClients)
      throw new FerryError('too_many_tail_clients', `at most ${this.maxClients} event streams may be open at once; close one and retry`);
    const timers = timersOf(this.clock);
    const stream = new PassThrough();
    let heartbeat: unknown;
    let unsubscribe = () => {};
    const write = (text: string) => {
      if (stream.destroyed || stream.writableEnded) return;
      stream.write(text);
      if (stream.writableLength > maxBufferedBytes) end();
    };
    const beat = () => {
      write(': heartbeat\n\n');
      heartbeat = timers.setTimeout(beat, tailHeartbeatMs);
    };
    const end = () => {
      if (!this.open.delete(end)) return;
      timers.clearTimeout(heartbeat);
      unsubscribe();
      if (!stream.destroyed) stream.end();
    };
    this.open.add(end);
    unsubscribe = subscribe(write);
    stream.on('close', end);
    // The response's close, not the request's: the request closes once read, the response when the client goes.
    reply.raw.on('close', end);
    write(`: ${greeting}\n\n`);
    heartbeat = timers.setTimeout(beat, tailHeartbeatMs);
    return reply
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('x-accel-buffering', 'no')
      .header('connection', 'close')
      .send(stream);
  }
}
