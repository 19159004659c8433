import type { BuiltMessage } from './build-message.js';
import type { AnalyticsError } from './errors.js';

/** Per-call outcome callback: `error` is undefined once the server has accepted the message. */
export type Callback = (error: AnalyticsError | undefined, messageId: string) => void;

/** One queued message. `seq` orders calls so flush() knows which ones it covers. */
export interface QueueEntry extends BuiltMessage {
  seq: number;
  callback: Callback | undefined;
  /** Spool segment holding the message, when the client has a spool. */
  spoolSegment?: number;
}

/**
 * FIFO of queued messages with running totals, so limits are checked in O(1). An array with a
 * moving head: shift() on a large array is O(n), and a burst can queue 100,000 entries.
 */
export class MessageQueue {
  #items: (QueueEntry | undefined)[] = [];
  #head = 0;
  #bytes = 0;

  /** Messages queued. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  /** Sum of the queued messages' serialised sizes. */
  get bytes(): number {
    return this.#bytes;
  }

  push(entry: QueueEntry): void {
    this.#items.push(entry);
    this.#bytes += entry.bytes;
  }

  peek(): QueueEntry | undefined {
    return this.#items[this.#head];
  }

  shift(): QueueEntry | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const entry = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head++;
    if (entry) this.#bytes -= entry.bytes;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head >= 4096 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return entry;
  }

  /** Every queued entry, oldest first, without removing them. */
  *entries(): IterableIterator<QueueEntry> {
    for (let i = this.#head; i < this.#items.length; i++) {
      const e = this.#items[i];
      if (e) yield e;
    }
  }
}
