import type { MessageQueue, QueueEntry } from './queue.js';

/** Limits of one request body. */
export interface BatchLimits {
  /** Most messages in one request. */
  flushAt: number;
  /** Largest request body, envelope included. */
  maxBatchBytes: number;
}

// `{"sentAt":"2024-01-02T03:04:05.678Z","batch":[` + `]}`: sentAt is always 24 ASCII chars.
const BODY_HEAD = '{"sentAt":"';
const BODY_MID = '","batch":[';
const BODY_TAIL = ']}';
const ENVELOPE_BYTES = BODY_HEAD.length + 24 + BODY_MID.length + BODY_TAIL.length;

/** Messages taken from the queue to travel in one request. */
export interface Batch {
  entries: QueueEntry[];
  /** The messages joined with commas, built once and reused by every attempt. */
  items: string;
  /** UTF-8 size of the whole request body, envelope included. */
  bodyBytes: number;
}

/**
 * Takes the oldest messages that fit in one request: at most `flushAt`, and a body
 * of at most `maxBatchBytes` including the envelope. Always takes at least one message (a
 * message is refused at call time if it could not fit alone).
 */
export function takeBatch(queue: MessageQueue, limits: BatchLimits): Batch | undefined {
  const entries: QueueEntry[] = [];
  let bodyBytes = ENVELOPE_BYTES;
  for (;;) {
    const next = queue.peek();
    if (!next || entries.length >= limits.flushAt) break;
    const added = next.bytes + (entries.length > 0 ? 1 : 0);
    if (entries.length > 0 && bodyBytes + added > limits.maxBatchBytes) break;
    queue.shift();
    entries.push(next);
    bodyBytes += added;
  }
  if (entries.length === 0) return undefined;
  const items = entries.length === 1 ? entries[0]!.json : entries.map((e) => e.json).join(',');
  return { entries, items, bodyBytes };
}

/** The request body for one attempt; `sentAt` is fresh so the server's skew correction holds. */
export function batchBody(batch: Batch, sentAt: Date): string {
  return BODY_HEAD + sentAt.toISOString() + BODY_MID + batch.items + BODY_TAIL;
}

/** The largest message that fits in a batch of its own. */
export function maxSingleMessageBytes(maxBatchBytes: number): number {
  return maxBatchBytes - ENVELOPE_BYTES;
}
