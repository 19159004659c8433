import { AbortSwitch } from './abort-switch.js';
import { type Batch, maxSingleMessageBytes, takeBatch } from './batch.js';
import { type BuildContext, type BuiltMessage, buildMessage } from './build-message.js';
import { type Clock, systemClock, type TimerHandle } from './clock.js';
import { type DeliveryContext, type DeliveryOutcome, deliverBatch } from './deliver-batch.js';
import { TypedEmitter } from './emitter.js';
import { AnalyticsError, type ErrorCode } from './errors.js';
import type { FailedMessage, FlushOptions, FlushResult } from './flush-result.js';
import { libraryInfo } from './library-info.js';
import { defaultLogger, type Logger } from './logger.js';
import type { AliasMessage, CallType, GroupMessage, IdentifyMessage, MessageByType, PageMessage, ScreenMessage, TrackMessage } from './messages.js';
import { type AnalyticsOptions, type ResolvedOptions, resolveOptions } from './options.js';
import type { Plugin, PluginMessage } from './plugins/plugin.js';
import { checkPlugin, type PluginFailure, runEnrich, runHook, settleWithin } from './plugins/run-plugins.js';
import { type Callback, MessageQueue, type QueueEntry } from './queue.js';
import type { Runtime } from './runtime.js';
import { webRuntime } from './runtime-web.js';
import type { Spool } from './spool/spool.js';
import { createFetchTransport } from './transport/fetch-transport.js';
import type { Transport } from './transport/transport.js';

/** Payload of the `flush` event: a batch the server accepted. */
export interface FlushEvent {
  messageIds: string[];
  /** Size of the request body before compression. */
  bytes: number;
  attempts: number;
  status: number;
}

/** Payload of the `retry` event: an attempt failed and the batch will be sent again. */
export interface RetryEvent {
  messageIds: string[];
  /** 1 for the first retry. */
  retry: number;
  delayMs: number;
  /** Status of the failed attempt; undefined for a network error or timeout. */
  status: number | undefined;
  reason: string;
}

/** Payload of the `error` event: messages that were sent and will not be delivered. */
export interface ErrorEvent {
  error: AnalyticsError;
  messageIds: string[];
}

/** Payload of the `drop` event: messages given up without the server's answer. */
export interface DropEvent {
  /**
   * `queue_overflow` (oldest evicted), `queue_full` (new call refused), `unconfirmed` (close
   * gave up) or `dropped_by_plugin` (a plugin's `enrich` returned null).
   */
  code: Extract<ErrorCode, 'queue_overflow' | 'queue_full' | 'unconfirmed' | 'dropped_by_plugin'>;
  messageIds: string[];
  /** Why, in words; for `dropped_by_plugin`, names the plugin. */
  reason?: string;
  /** Messages dropped since the client was created, this event included. */
  totalDropped: number;
}

/** The events of {@link Analytics} and their payloads. */
export interface AnalyticsEvents {
  flush: FlushEvent;
  retry: RetryEvent;
  error: ErrorEvent;
  drop: DropEvent;
  pluginError: PluginErrorEvent;
}

/** Payload of the `pluginError` event: a plugin hook threw; the call went on without that step. */
export type PluginErrorEvent = PluginFailure;

/** Counters since the client was created; see {@link Analytics.stats}. */
export interface AnalyticsStats {
  /** Waiting in the queue. */
  queued: number;
  /** In requests being sent or retried. */
  inFlight: number;
  /** Accepted by the server. */
  delivered: number;
  /** Sent and refused, or out of retries. */
  failed: number;
  /** Never confirmed: evicted, refused at the bound, or given up by close(). */
  dropped: number;
}

interface Waiter {
  upTo: number;
  remaining: number;
  delivered: number;
  failed: FailedMessage[];
  finish(status: FlushResult['status']): void;
}

/**
 * A client bound to one write key. Calls are validated and queued synchronously and sent in
 * background batches to `{endpoint}/v1/batch`; call `close()` (or `flush()` in a serverless
 * handler) before the process ends.
 *
 * @example
 * import { Analytics } from '@ferry/analytics';
 * const analytics = new Analytics('WRITE_KEY', { endpoint: 'https://ferry.example.com' });
 * analytics.track({ userId: 'u1', event: 'Signed Up', properties: { plan: 'pro' } });
 * await analytics.close();
 */
export class Analytics extends TypedEmitter<AnalyticsEvents> {
  // Web-standard here, so the edge entry needs nothing from Node; the Node entry's subclass
  // gives Node's sockets and zlib.
  protected static runtime: Runtime = webRuntime;
  readonly #options: ResolvedOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #transport: Transport;
  readonly #delivery: DeliveryContext;
  readonly #queue = new MessageQueue();
  readonly #inFlight = new Set<Batch>();
  readonly #waiters = new Set<Waiter>();
  readonly #stop = new AbortSwitch();
  readonly #build: BuildContext;
  #seq = 0;
  // Messages with seq <= drainUpTo are sent even below flushAt (after the timer, flush, close).
  #drainUpTo = 0;
  // The flush period runs from here (the spec's "time since the last flush"): the last time a
  // batch was taken or the timer flushed, else the client's creation.
  #lastFlushAt: number;
  #timer: TimerHandle | undefined;
  #pumpScheduled = false;
  #closed = false;
  #closing: Promise<FlushResult> | undefined;
  // Runs once the last in-flight request of a closed client returns.
  #afterInFlight: (() => void) | undefined;
  #inFlightMessages = 0;
  #stats = { delivered: 0, failed: 0, dropped: 0 };
  #warnedAboutDrops = false;
  readonly #plugins: Plugin[] = [];
  readonly #spool: Spool | undefined;

  /**
   * @param writeKey The source's write key, or an options object that holds it.
   * @param options Settings; see {@link AnalyticsOptions} for every one and its default.
   * @throws AnalyticsError `invalid_option` for an unknown key or a bad value; with a spool,
   * `spool_locked` or `spool_io_failed`.
   */
  constructor(writeKey: string | AnalyticsOptions, options: AnalyticsOptions = {}) {
    super();
    const o = resolveOptions(typeof writeKey === 'string' ? { ...options, writeKey } : writeKey);
    this.#options = o;
    this.#clock = o.clock ?? systemClock;
    this.#logger = o.logger ?? defaultLogger(globalThis.process?.env?.['DEBUG']);
    this.#lastFlushAt = this.#clock.now();
    const runtime = (this.constructor as typeof Analytics).runtime;
    this.#transport = o.transport === 'fetch' ? createFetchTransport() : (o.transport ?? runtime.createTransport());
    const compress = o.gzip ? runtime.gzip : undefined;
    if (o.gzip && !compress) this.#logger.warn('gzip is not available in this runtime (no CompressionStream); bodies are sent uncompressed');
    const maxMessageBytes = Math.min(o.maxMessageBytes, maxSingleMessageBytes(o.maxBatchBytes));
    const clock = this.#clock;
    this.#build = { now: () => clock.now(), newMessageId: () => crypto.randomUUID(), maxMessageBytes };
    const headers: Record<string, string> = {
      authorization: `Basic ${btoa(String.fromCharCode(...new TextEncoder().encode(`${o.writeKey}:`)))}`,
      'content-type': 'application/json',
      'user-agent': `${libraryInfo.name}/${libraryInfo.version}`,
    };
    if (compress) headers['content-encoding'] = 'gzip';
    this.#delivery = {
      url: o.batchUrl,
      headers,
      transport: this.#transport,
      clock: this.#clock,
      random: o.random ?? Math.random,
      retry: o,
      requestTimeoutMs: o.requestTimeoutMs,
      compress,
    };
    if (o.spool) this.#spool = this.#openSpool(o.spool, runtime);
  }

  /**
   * Ties a user to their traits.
   * @returns the messageId. @throws AnalyticsError when the message is invalid or refused.
   */
  identify(message: IdentifyMessage, callback?: Callback): string {
    return this.#enqueue('identify', message, callback);
  }

  /**
   * Records an action. `event` is required.
   * @returns the messageId. @throws AnalyticsError when the message is invalid or refused.
   */
  track(message: TrackMessage, callback?: Callback): string {
    return this.#enqueue('track', message, callback);
  }

  /**
   * Records a page view; `properties` (or the spec's `traits`) keeps url, title, referrer, path.
   * @returns the messageId. @throws AnalyticsError when the message is invalid or refused.
   */
  page(message: PageMessage, callback?: Callback): string {
    return this.#enqueue('page', message, callback);
  }

  /**
   * Records a mobile screen view.
   * @returns the messageId. @throws AnalyticsError when the message is invalid or refused.
   */
  screen(message: ScreenMessage, callback?: Callback): string {
    return this.#enqueue('screen', message, callback);
  }

  /**
   * Associates a user with a group. `groupId` is required.
   * @returns the messageId. @throws AnalyticsError when the message is invalid or refused.
   */
  group(message: GroupMessage, callback?: Callback): string {
    return this.#enqueue('group', message, callback);
  }

  /**
   * Links `previousId` to `userId`; both are required.
   * @returns the messageId. @throws AnalyticsError when the message is invalid or refused.
   */
  alias(message: AliasMessage, callback?: Callback): string {
    return this.#enqueue('alias', message, callback);
  }

  /**
   * Adds a plugin; plugins run in registration order on every later call, before
   * validation. See {@link Plugin}.
   * @returns this client, for chaining. @throws AnalyticsError `invalid_plugin`, or `closed`.
   */
  register(plugin: Plugin): this {
    if (this.#closed) throw new AnalyticsError('closed', 'register() was called after close().');
    checkPlugin(plugin);
    this.#plugins.push(plugin);
    return this;
  }

  /** Counters of what happened to the messages of this client so far. */
  get stats(): AnalyticsStats {
    return {
      queued: this.#queue.length,
      inFlight: this.#inFlightMessages,
      ...this.#stats,
    };
  }

  /**
   * Sends everything queued now, without waiting for `flushAt` or the timer, and resolves when
   * each of those messages is delivered or has failed for good, or when the timeout or signal
   * ends the wait. Never rejects; the client stays open.
   */
  flush(options: FlushOptions = {}): Promise<FlushResult> {
    checkBound(options);
    if (this.#plugins.length === 0) return this.#flushNow(options);
    // The plugins' flush hooks go first, so what a plugin sends from its hook is part of this flush.
    const startedAt = this.#clock.now();
    return this.#runHooks('flush', options, startedAt).then(() => this.#flushNow(this.#remaining(options, startedAt)));
  }

  /**
   * Refuses new calls, stops the timer, sends everything queued and resolves when it is all
   * settled. With a timeout or signal, what is still unconfirmed when the bound is reached is
   * given up: listed in the result, reported through the `drop` event and callbacks with code
   * `unconfirmed`. Calling it again returns the same promise. Plugins' `close` hooks run
   * first, while calls are still accepted, so a plugin can send what it holds.
   */
  close(options: FlushOptions = {}): Promise<FlushResult> {
    if (this.#closing) return this.#closing;
    checkBound(options);
    if (this.#plugins.length === 0) return (this.#closing = this.#closeNow(options));
    const startedAt = this.#clock.now();
    this.#closing = this.#runHooks('close', options, startedAt).then(() => this.#closeNow(this.#remaining(options, startedAt)));
    return this.#closing;
  }

  #flushNow(options: FlushOptions): Promise<FlushResult> {
    this.#drainUpTo = this.#seq;
    this.#pump();
    return this.#wait(options, false);
  }

  #closeNow(options: FlushOptions): Promise<FlushResult> {
    this.#closed = true;
    this.#clearTimer();
    this.#drainUpTo = this.#seq;
    this.#pump();
    return this.#wait(options, true).then((result) => {
      // Idle keep-alive sockets go now; in-flight requests were aborted if the bound ran out.
      // What is still unconfirmed stays in the spool for the next start.
      this.#spool?.close();
      if (this.#inFlight.size === 0) this.#transport.close?.();
      else this.#afterInFlight = () => this.#transport.close?.();
      this.#logger.debug('closed', { status: result.status, delivered: result.delivered });
      return result;
    });
  }

  // The caller's time bound less what the plugins' hooks used of it: one bound for the whole call.
  #remaining(options: FlushOptions, startedAt: number): FlushOptions {
    const timeoutMs = options.timeoutMs ?? options.timeout;
    if (timeoutMs === undefined) return options;
    return { signal: options.signal, timeoutMs: Math.max(0, startedAt + timeoutMs - this.#clock.now()) };
  }

  /** Segment's name for {@link Analytics.close}, so a switch from `@segment/analytics-node` needs no rename. */
  closeAndFlush(options: FlushOptions = {}): Promise<FlushResult> {
    return this.close(options);
  }

  protected override onListenerError(event: keyof AnalyticsEvents, error: unknown): void {
    this.#logger.error(`a '${String(event)}' listener threw`, { error: String(error) });
  }

  #enqueue<T extends CallType>(type: T, message: MessageByType[T], callback: Callback | undefined): string {
    if (this.#closed) throw new AnalyticsError('closed', `${type}() was called after close().`);
    if (callback !== undefined && typeof callback !== 'function') {
      throw new AnalyticsError('invalid_field', 'The callback must be a function.');
    }
    let input: unknown = message;
    // A call that is not an object skips the plugins and fails validation below.
    if (this.#plugins.length > 0 && message !== null && typeof message === 'object') {
      const outcome = runEnrich(this.#plugins, message as unknown as PluginMessage, { type }, this.#onPluginFailure);
      if (outcome.kind === 'drop') return this.#dropByPlugin(message, outcome.plugin, callback);
      input = outcome.message;
    }
    const built: BuiltMessage = buildMessage(type, input, this.#build);
    this.#makeRoom(built);
    const entry: QueueEntry = {
      seq: this.#seq + 1,
      messageId: built.messageId,
      json: built.json,
      bytes: built.bytes,
      callback,
    };
    if (this.#spool) entry.spoolSegment = this.#spool.append(built.messageId, built.json, built.bytes);
    this.#seq++;
    this.#queue.push(entry);
    if (this.#queue.length >= this.#options.flushAt) this.#schedulePump();
    else if (this.#timer === undefined) this.#armTimer();
    return entry.messageId;
  }

  #makeRoom(incoming: BuiltMessage): void {
    const { maxQueueMessages, maxQueueBytes, overflow } = this.#options;
    const q = this.#queue;
    const spool = this.#spool;
    const spoolMax = this.#options.spool?.maxBytes ?? Infinity;
    const fits = () =>
      q.length + 1 <= maxQueueMessages && q.bytes + incoming.bytes <= maxQueueBytes && (!spool || spool.liveBytes + incoming.bytes <= spoolMax);
    if (fits()) return;
    // Messages in flight stay in the spool until answered: evicting every queued one may not be enough.
    const cannotFit = incoming.bytes > maxQueueBytes || (spool !== undefined && spool.liveBytes - q.bytes + incoming.bytes > spoolMax);
    if (overflow === 'reject' || cannotFit) {
      this.#reportDrop('queue_full', [incoming.messageId]);
      const spoolBound = spool !== undefined && spool.liveBytes + incoming.bytes > spoolMax;
      throw new AnalyticsError(
        'queue_full',
        spoolBound
          ? `The spool holds ${spool.liveBytes} bytes of unconfirmed messages; the bound (spool.maxBytes) is ${spoolMax} bytes.`
          : `The queue holds ${q.length} messages (${q.bytes} bytes); the bound is ${maxQueueMessages} messages or ${maxQueueBytes} bytes.`,
      );
    }
    const evicted: QueueEntry[] = [];
    while (!fits()) {
      const oldest = q.shift();
      if (!oldest) break;
      evicted.push(oldest);
    }
    const error = new AnalyticsError('queue_overflow');
    this.#spool?.confirm(evicted);
    for (const e of evicted) this.#settle(e, error);
    this.#reportDrop(
      'queue_overflow',
      evicted.map((e) => e.messageId),
    );
  }

  // Queues what an earlier process left unconfirmed, to be sent at once.
  #openSpool(options: NonNullable<ResolvedOptions['spool']>, runtime: Runtime): Spool {
    if (!runtime.openSpool) throw new AnalyticsError('invalid_option', '`spool` needs a file system, which this runtime (the edge entry) does not have.');
    const { spool, recovered, damage } = runtime.openSpool(options, this.#clock, this.#logger);
    let error: AnalyticsError | undefined;
    try {
      for (const m of recovered) {
        this.#queue.push({ seq: ++this.#seq, messageId: m.messageId, json: m.json, bytes: m.bytes, callback: undefined, spoolSegment: m.segment });
      }
      if (recovered.length > 0) this.#logger.debug('spool: sending again what was not confirmed', { messages: recovered.length });
      if (damage.length > 0) {
        const skipped = damage.reduce((n, d) => n + d.badRecords, 0);
        const torn = damage.reduce((n, d) => n + d.tornBytes, 0);
        error = new AnalyticsError('spool_damaged', `The spool held ${skipped} corrupt record(s) and ${torn} byte(s) of torn tail; they were skipped.`);
        this.#logger.error(error.message, { files: damage.length });
      }
    } catch (cause) {
      // The constructor throws (a user's logger did): no client is left to release the lock.
      spool.close();
      throw cause;
    }
    if (recovered.length > 0) {
      this.#drainUpTo = this.#seq;
      this.#schedulePump();
    }
    if (error) {
      const damaged = error;
      // After the constructor returns, so a listener attached right after construction hears it.
      queueMicrotask(() => this.emit('error', { error: damaged, messageIds: [] }));
    }
    return spool;
  }

  // Reporting a plugin's failure must not fail in turn: a thrown value may not turn into text,
  // and a user's logger may throw.
  readonly #onPluginFailure = (failure: PluginFailure): void => {
    let text: string;
    try {
      text = String(failure.error);
    } catch {
      text = 'a value that cannot be shown as text';
    }
    try {
      this.#logger.error(`plugin '${failure.plugin}' threw in ${failure.hook}`, { error: text });
    } catch {
      // The pluginError event below still reports it.
    }
    this.emit('pluginError', failure);
  };

  // The hooks share the caller's bound, counted from `startedAt`: a hook that hangs is given up.
  async #runHooks(hook: 'flush' | 'close', options: FlushOptions, startedAt: number): Promise<void> {
    const timeoutMs = options.timeoutMs ?? options.timeout;
    const clock = this.#clock;
    const settled = await settleWithin(runHook(this.#plugins, hook, this.#onPluginFailure), {
      after(fn, ms) {
        const timer = clock.setTimeout(fn, ms);
        return () => clock.clearTimeout(timer);
      },
      remainingMs: timeoutMs === undefined ? undefined : Math.max(0, startedAt + timeoutMs - clock.now()),
      signal: options.signal,
    });
    if (!settled) this.#logger.warn(`plugin ${hook} hooks did not settle within the bound; not waiting for them`);
  }

  // Dropping is the plugin's choice, not a failure: the call returns normally, and its callback
  // hears of it later, as callbacks always do.
  #dropByPlugin(message: unknown, plugin: string, callback: Callback | undefined): string {
    const own = (message as Record<string, unknown> | null)?.['messageId'];
    const messageId = typeof own === 'string' && own.length > 0 ? own : crypto.randomUUID();
    this.#reportDrop('dropped_by_plugin', [messageId], `plugin '${plugin}' dropped the call`);
    if (callback) {
      const error = new AnalyticsError('dropped_by_plugin', `Plugin '${plugin}' dropped the call.`);
      queueMicrotask(() => {
        try {
          callback(error, messageId);
        } catch (cause) {
          this.#logger.error('a call callback threw', { error: String(cause) });
        }
      });
    }
    return messageId;
  }

  #reportDrop(code: DropEvent['code'], messageIds: string[], reason?: string): void {
    if (messageIds.length === 0) return;
    this.#stats.dropped += messageIds.length;
    const chosen = code === 'dropped_by_plugin';
    this.#logger[chosen ? 'debug' : 'warn'](`dropped ${messageIds.length} message(s)`, { code, totalDropped: this.#stats.dropped });
    if (!chosen && this.listenerCount('drop') === 0 && !this.#warnedAboutDrops) {
      // Never silent: without a listener, say it once the Node way.
      this.#warnedAboutDrops = true;
      globalThis.process?.emitWarning?.(
        `@ferry/analytics dropped ${messageIds.length} message(s) (${code}); listen to the 'drop' event to handle this.`,
        'AnalyticsDropWarning',
      );
    }
    this.emit(
      'drop',
      reason === undefined ? { code, messageIds, totalDropped: this.#stats.dropped } : { code, messageIds, totalDropped: this.#stats.dropped, reason },
    );
  }

  // Armed only while messages wait beyond any pending drain, so an idle client sets no timer.
  #armTimer(): void {
    if (this.#closed) return;
    const delayMs = Math.max(0, this.#lastFlushAt + this.#options.flushAfterMs - this.#clock.now());
    this.#timer = this.#clock.setTimeout(() => this.#onTimer(), delayMs);
  }

  #onTimer(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    // A batch sent since this timer was set started a new period: wait for its end instead.
    if (now < this.#lastFlushAt + this.#options.flushAfterMs) return this.#armTimer();
    this.#lastFlushAt = now;
    this.#drainUpTo = this.#seq;
    this.#pump();
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  // Deferred to a microtask so the caller whose call fills a batch does not build and send the
  // request inside that call.
  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    const o = this.#options;
    while (this.#inFlight.size < o.maxInFlight) {
      const head = this.#queue.peek();
      if (!head) break;
      if (head.seq > this.#drainUpTo && this.#queue.length < o.flushAt) break;
      const batch = takeBatch(this.#queue, o);
      if (!batch) break;
      this.#lastFlushAt = this.#clock.now();
      this.#spool?.beforeSend();
      void this.#send(batch);
    }
    // The newest queued message has seq === this.#seq; a pending drain sends it without a timer.
    if (this.#queue.length === 0 || this.#seq <= this.#drainUpTo) this.#clearTimer();
    else if (this.#timer === undefined) this.#armTimer();
  }

  async #send(batch: Batch): Promise<void> {
    this.#inFlight.add(batch);
    this.#inFlightMessages += batch.entries.length;
    this.#logger.debug('sending batch', { messages: batch.entries.length, bytes: batch.bodyBytes });
    let outcome: DeliveryOutcome;
    try {
      outcome = await deliverBatch(this.#delivery, batch, this.#stop, (notice) => {
        this.#logger.warn('retrying batch', { ...notice, messages: batch.entries.length });
        this.emit('retry', { messageIds: batch.entries.map((e) => e.messageId), ...notice });
      });
    } catch (cause) {
      // deliverBatch returns values; reaching this is a bug (or a throwing transport close()).
      outcome = { kind: 'failed', attempts: 0, error: new AnalyticsError('retries_exhausted', String(cause), { cause }) };
    }
    this.#inFlight.delete(batch);
    this.#inFlightMessages -= batch.entries.length;
    this.#settleBatch(batch, outcome);
    if (this.#inFlight.size === 0 && this.#afterInFlight) {
      this.#afterInFlight();
      this.#afterInFlight = undefined;
    }
    this.#pump();
  }

  #settleBatch(batch: Batch, outcome: DeliveryOutcome): void {
    const ids = () => batch.entries.map((e) => e.messageId);
    // Only what the server answered is done: accepted, or refused with a status that will never
    // succeed. A batch that ran out of retries (an outage) or failed in the client stays in the
    // journal for the next start; it only stops counting against maxBytes in this process.
    if (outcome.kind === 'delivered' || (outcome.kind === 'failed' && outcome.error.code === 'rejected_by_server')) {
      this.#spool?.confirm(batch.entries);
    } else if (outcome.kind === 'failed') {
      this.#spool?.releaseBudget(batch.entries);
    }
    if (outcome.kind === 'delivered') {
      const refused = new Map(outcome.rejected.map((r) => [r.index, r]));
      const refusedIds: string[] = [];
      for (let i = 0; i < batch.entries.length; i++) {
        const entry = batch.entries[i]!;
        const r = refused.get(i);
        if (r === undefined) {
          this.#settle(entry, undefined);
        } else {
          refusedIds.push(entry.messageId);
          this.#settle(entry, new AnalyticsError('message_rejected', `The server refused the message: ${r.code}: ${r.message}`));
        }
      }
      this.#logger.debug('batch delivered', { messages: batch.entries.length, attempts: outcome.attempts });
      this.emit('flush', { messageIds: ids(), bytes: batch.bodyBytes, attempts: outcome.attempts, status: outcome.status });
      if (refusedIds.length > 0) {
        const error = new AnalyticsError('message_rejected', `The server refused ${refusedIds.length} message(s) of the batch.`);
        this.#logger.error(error.message, { messageIds: refusedIds });
        this.emit('error', { error, messageIds: refusedIds });
      }
    } else if (outcome.kind === 'failed') {
      for (const entry of batch.entries) this.#settle(entry, outcome.error);
      this.#logger.error(outcome.error.message, { code: outcome.error.code, messages: batch.entries.length });
      this.emit('error', { error: outcome.error, messageIds: ids() });
    } else {
      const error = new AnalyticsError('unconfirmed');
      for (const entry of batch.entries) this.#settle(entry, error);
      this.#reportDrop('unconfirmed', ids());
    }
  }

  #settle(entry: QueueEntry, error: AnalyticsError | undefined): void {
    if (error === undefined) this.#stats.delivered++;
    else if (error.code === 'rejected_by_server' || error.code === 'retries_exhausted' || error.code === 'message_rejected') {
      this.#stats.failed++;
    }
    for (const w of this.#waiters) {
      if (entry.seq > w.upTo) continue;
      if (error === undefined) w.delivered++;
      else w.failed.push({ messageId: entry.messageId, code: error.code });
      if (--w.remaining === 0) w.finish('complete');
    }
    if (entry.callback) {
      try {
        entry.callback(error, entry.messageId);
      } catch (cause) {
        this.#logger.error('a call callback threw', { error: String(cause) });
      }
    }
  }

  #unsettledUpTo(upTo: number): QueueEntry[] {
    const out: QueueEntry[] = [];
    for (const b of this.#inFlight) for (const e of b.entries) if (e.seq <= upTo) out.push(e);
    for (const e of this.#queue.entries()) if (e.seq <= upTo) out.push(e);
    return out;
  }

  #wait(options: FlushOptions, giveUp: boolean): Promise<FlushResult> {
    const timeoutMs = options.timeoutMs ?? options.timeout;
    return new Promise<FlushResult>((resolve) => {
      let timer: TimerHandle | undefined;
      let done = false;
      const onAbort = () => waiter.finish('aborted');
      const waiter: Waiter = {
        upTo: this.#seq,
        remaining: this.#queue.length + this.#inFlightMessages,
        delivered: 0,
        failed: [],
        finish: (status) => {
          if (done) return;
          done = true;
          this.#waiters.delete(waiter);
          if (timer !== undefined) this.#clock.clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
          const unconfirmed = status === 'complete' ? [] : this.#unsettledUpTo(waiter.upTo).map((e) => e.messageId);
          if (status !== 'complete' && giveUp) this.#giveUp();
          resolve({ status, delivered: waiter.delivered, failed: waiter.failed, unconfirmed });
        },
      };
      if (waiter.remaining === 0) return waiter.finish('complete');
      if (options.signal?.aborted) return waiter.finish('aborted');
      // No time left (say, plugin hooks used all of it): no timer, which a clock might only fire later.
      if (timeoutMs === 0) return waiter.finish('timeout');
      this.#waiters.add(waiter);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) timer = this.#clock.setTimeout(() => waiter.finish('timeout'), timeoutMs);
    });
  }

  // close() ran out of time: nothing more will be attempted. Queued messages are settled here;
  // in-flight ones settle as `unconfirmed` once their aborted requests return.
  #giveUp(): void {
    this.#stop.abort();
    const abandoned: QueueEntry[] = [];
    for (let e = this.#queue.shift(); e; e = this.#queue.shift()) abandoned.push(e);
    const error = new AnalyticsError('unconfirmed');
    for (const e of abandoned) this.#settle(e, error);
    this.#reportDrop(
      'unconfirmed',
      abandoned.map((e) => e.messageId),
    );
  }
}

// Checked before any plugin hook runs, so a bad bound is refused the same way with or without plugins.
function checkBound(options: FlushOptions): void {
  const timeoutMs = options.timeoutMs ?? options.timeout;
  if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs < 0)) {
    throw new AnalyticsError('invalid_option', '`timeoutMs` must be a number >= 0.');
  }
}
