import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { countIds, SinkServer } from './support/sink-server.js';

// Zero retry delays: failed attempts are retried on the next turn of the event loop, with no
// waiting and no injected clock needed.
const immediateRetries = { retryBaseDelayMs: 0, retryMaxDelayMs: 0 };

/** Call index of a message sent by {@link callInterleaved}. */
const callIndexOf = (m: Record<string, unknown>) => (m['properties'] as { call: number }).call;

/**
 * Makes `callers` x `perCaller` track calls from concurrent async callers that yield the way
 * request handlers do (some often, some in bursts). Each message carries its caller, its
 * index for that caller and its index among all calls. Outcomes reported through callbacks
 * are collected, never asserted inside the callback, where the client would swallow a throw.
 */
async function callInterleaved(client: Analytics, callers: number, perCaller: number) {
  const ids: string[] = [];
  const outcomes: Array<string | undefined> = [];
  let call = 0;
  await Promise.all(
    Array.from({ length: callers }, async (_, c) => {
      for (let i = 0; i < perCaller; i++) {
        ids.push(client.track({ userId: `user-${c}`, event: 'Step', properties: { i, call: call++ } }, (err) => outcomes.push(err?.code)));
        if ((i + c) % (1 + (c % 9)) === 0) await new Promise((r) => setImmediate(r));
      }
    }),
  );
  return { ids, outcomes };
}

describe('many concurrent callers', () => {
  let sink: SinkServer;
  let n: number;
  // Every fifth request fails before being stored, so some batches are retried; a batch fails
  // at most once, so it never runs out of retries.
  const failedOnce = new Set<string>();
  beforeEach(async () => {
    n = 0;
    failedOnce.clear();
    sink = await SinkServer.start((req) => {
      const first = String(req.json.batch[0]?.['messageId']);
      if (++n % 5 !== 0 || failedOnce.has(first)) return {};
      failedOnce.add(first);
      return { status: 503 };
    });
  });
  afterEach(() => sink.close());

  it('delivers every message exactly once through bursts, pauses and failed attempts, each batch in call order', async () => {
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 7, maxInFlight: 3, ...immediateRetries });
    const callers = 40;
    const perCaller = 250;
    const total = callers * perCaller;
    const { ids, outcomes } = await callInterleaved(client, callers, perCaller);
    const result = await within(client.close(), 'close');
    assert.equal(result.status, 'complete');
    assert.equal(client.stats.delivered, total);
    assert.equal(outcomes.length, total, 'every callback ran once');
    assert.ok(
      outcomes.every((code) => code === undefined),
      'every callback reported success',
    );
    assert.equal(new Set(ids).size, total);
    const counts = countIds(sink.accepted);
    assert.equal(counts.size, total);
    assert.ok(
      [...counts.values()].every((k) => k === 1),
      'no duplicate among accepted messages',
    );
    for (const id of ids) assert.equal(counts.get(id), 1);
    assert.ok(failedOnce.size > 0, 'some requests failed and were retried');
    for (const r of sink.requests) {
      const calls = r.json.batch.map(callIndexOf);
      assert.ok(r.json.batch.length <= 7, `a batch of ${r.json.batch.length}`);
      assert.deepEqual(
        calls,
        [...calls].sort((a, b) => a - b),
        'a batch holds its messages in call order',
      );
    }
  });

  it('per caller, messages arrive in call order when one request is in flight, retries included', async () => {
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 7, maxInFlight: 1, ...immediateRetries });
    const callers = 10;
    const perCaller = 100;
    const { outcomes } = await callInterleaved(client, callers, perCaller);
    const result = await within(client.close(), 'close');
    assert.equal(result.status, 'complete');
    assert.equal(client.stats.delivered, callers * perCaller);
    assert.ok(outcomes.every((code) => code === undefined));
    assert.ok(failedOnce.size > 0, 'some requests failed and were retried');
    assert.deepEqual(
      sink.accepted.map(callIndexOf),
      Array.from({ length: callers * perCaller }, (_, i) => i),
      'accepted in call order across all callers',
    );
    for (let c = 0; c < callers; c++) {
      const seen = sink.accepted.filter((m) => m['userId'] === `user-${c}`).map((m) => (m['properties'] as { i: number }).i);
      assert.deepEqual(
        seen,
        Array.from({ length: perCaller }, (_, i) => i),
        `user-${c}`,
      );
    }
  });
});
