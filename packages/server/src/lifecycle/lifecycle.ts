import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { EventBus } from '../events/event-bus.js';

/** How a server stops; see {@link Lifecycle.stop}. */
export interface StopOptions {
  /**
   * The least time, in ms, the listener stays open after the stop begins, answering new
   * requests 503 `shutting_down` (with `Connection: close`) while readiness fails, so that a
   * load balancer notices and clients get an answer they retry rather than a refused
   * connection. Default 0 (the listener closes once the work in flight is done).
   */
  drainMs?: number;
}

/** What a stop shuts down, in this order. */
export interface LifecycleParts {
  app: FastifyInstance;
  /** The admin listener, when it is a server of its own: it drains and closes with `app`. */
  adminApp?: FastifyInstance;
  /** Stops claiming, lets attempts in flight finish (bounded), hands back what it holds. */
  worker: { stop(): Promise<void> };
  /** Stops the audience sync loop. */
  audiences: { stop(): Promise<void> };
  /** Deletion requests: the one running stops at its next batch boundary, the others stay pending. */
  regulations: { stop(): Promise<void> };
  /** Replay jobs: the one running stops after its batch and stays running, carried on at the next start. */
  replayJobs?: { stop(): Promise<void> };
  /** The retention's pruner: the run under way stops after its batch. */
  pruner?: { stop(): Promise<void> };
  /** The activity series: what it counted and has not written yet is written, the current minute's too. */
  activity?: { stop(): Promise<void> };
  sender: { close(): Promise<void> };
  store: { close(): Promise<void> };
  /** Stops timers of the server's own (say, catalog reloads) as the stop begins. */
  onStopping?: () => void;
  /** Told when the drain begins (`lifecycle:draining`) and when every step has run (`lifecycle:stopped`, failed steps too). */
  events: EventBus;
}

/** Paths that answer during the drain: the load balancer must see readiness fail, and liveness hold. */
const healthPaths = /^\/health(\/ready)?(\?|$)/;

/**
 * The drain and stop of a server: from the first moment of a stop, readiness fails and new
 * requests are refused with 503 on an open listener; attempts and requests in flight finish;
 * then the listener, the worker's connections and the store close.
 */
export class Lifecycle {
  private stopping: Promise<void> | undefined;
  private drainStarted = false;

  constructor(private readonly parts: LifecycleParts) {}

  /** True from the first moment of a stop. */
  get draining(): boolean {
    return this.drainStarted;
  }

  /** An `onRequest` hook to register before any other: refuses new requests during the drain, the health checks excepted. */
  readonly refuseWhileDraining = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (!this.drainStarted || healthPaths.test(request.url)) return;
    return reply.code(503).header('connection', 'close').send(new FerryError('shutting_down').toBody());
  };

  /**
   * Drains, then stops: new requests get 503 at once; the listener stays open until every
   * attempt in flight has finished (the worker gives them up to 10 s, then hands their jobs
   * back) and at least `drainMs` has passed; then it closes, finishing the requests in
   * progress; then the deletion request running stops at its next batch boundary (it and
   * those queued behind it stay pending and resume at the next start), and the webhook
   * sender and the store close. Every step runs
   * even if one before it failed, so connections are always closed; the first error is
   * rethrown. Calling it again returns the same stop.
   */
  stop(options: StopOptions = {}): Promise<void> {
    this.stopping ??= this.run(options.drainMs ?? 0);
    return this.stopping;
  }

  private async run(drainMs: number): Promise<void> {
    this.drainStarted = true;
    this.parts.events.emit('lifecycle:draining', { drainMs });
    this.parts.onStopping?.();
    const errors: unknown[] = [];
    const step = async (fn: () => Promise<unknown> | undefined) => {
      try {
        await fn();
      } catch (error) {
        errors.push(error);
      }
    };
    await Promise.all([step(() => this.parts.audiences.stop()), step(() => this.parts.worker.stop()), drainMs > 0 ? delay(drainMs) : undefined]);
    await Promise.all([step(() => this.parts.app.close()), step(() => this.parts.adminApp?.close())]);
    await step(() => this.parts.regulations.stop());
    await step(() => this.parts.replayJobs?.stop());
    await step(() => this.parts.pruner?.stop());
    await step(() => this.parts.activity?.stop());
    await step(() => this.parts.sender.close());
    await step(() => this.parts.store.close());
    this.parts.events.emit('lifecycle:stopped', {});
    if (errors.length > 0) throw errors[0];
  }
}
