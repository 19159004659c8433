import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Analytics } from '@ferry/analytics';
import { countIds, SinkServer } from './support/sink-server.js';

describe('many concurrent callers', () => {
  it('delivers every message exactly once through bursts, pauses and failed attempts', async () => {
    let n = 0;
    // Every fifth request fails before being stored, so some batches are retried; a batch fails
    // at most once, since three failures in a row (unlucky timing) would exhaust its retries.
    const failedOnce = new Set<string>();
    const sink = await SinkServer.start((req) => {
      const first = String(req.json.batch[0]?.['messageId']);
      if (++n % 5 !== 0 || failedOnce.has(first)) return {};
      failedOnce.add(first);
      return { status: 503 };
    });
    const client = new Analytics('wk', {
      endpoint: sink.url,
      flushAt: 7,
      maxInFlight: 3,
      maxBatchMessages: 50,
      retryBaseDelayMs: 1,
      retryMaxDelayMs: 2,
    });
    const callers = 40;
    const perCaller = 250;
    const ids: string[] = [];
    let callbacks = 0;
    await Promise.all(
      Array.from({ length: callers }, async (_, c) => {
        for (let i = 0; i < perCaller; i++) {
          ids.push(client.track({ userId: `user-${c}`, event: 'Step', properties: { i } }, (err) => {
            assert.equal(err, undefined);
            callbacks++;
          }));
          // Interleave callers the way request handlers do: some yield often, some in bursts.
          if ((i + c) % (1 + (c % 9)) === 0) await new Promise((r) => setImmediate(r));
        }
      }),
    );
    const result = await client.close();
    await sink.close();
    const total = callers * perCaller;
    assert.equal(result.status, 'complete');
    assert.equal(client.stats.delivered, total);
    assert.equal(callbacks, total);
    assert.equal(new Set(ids).size, total);
    const counts = countIds(sink.accepted);
    assert.equal(counts.size, total);
    assert.ok([...counts.values()].every((k) => k === 1), 'no duplicate among accepted messages');
    for (const id of ids) assert.equal(counts.get(id), 1);
    // Per caller, messages arrive in call order (batches are taken oldest first).
    const seen = sink.accepted.filter((m) => m['userId'] === 'user-3').map((m) => (m['properties'] as { i: number }).i);
    assert.equal(seen.length, perCaller);
    assert.ok(failedOnce.size > 0, 'some requests failed and were retried');
  });
});
