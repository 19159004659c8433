import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, beforeEach, describe, test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination, writeKey, type TestFerry } from '../helpers/ferry.js';
import { basicAuth } from '../faults/support.js';

const track = (i: number, extra: Record<string, unknown> = {}) => ({ type: 'track', userId: `u${i}`, event: 'E', ...extra });

describe('ingestion API', () => {
  let ferry: TestFerry;
  const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));

  before(async () => {
    ferry = await startFerry(
      testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused']), webhooksDestination('off', ['http://127.0.0.1:9/unused'], { enabled: false })]),
      { clock, deliver: false },
    );
  });
  after(() => ferry.stop());

  async function stored() {
    return (await ferry.admin('GET', '/stats')).json;
  }
  /** The webhook body queued for a message. */
  async function bodyOf(messageId: string) {
    const [d] = (await ferry.admin('GET', `/deliveries?messageId=${messageId}`)).json.deliveries as any[];
    return JSON.parse((await ferry.admin('GET', `/deliveries/${d.id}`)).json.body);
  }
  let baseline: any;
  beforeEach(async () => {
    baseline = await stored();
  });
  async function assertNothingStored() {
    assert.deepEqual((await stored()).events, baseline.events);
    assert.deepEqual((await stored()).deliveries, baseline.deliveries);
  }

  test('a missing or unknown write key is refused with 401 and nothing is stored', async () => {
    const none = await ferry.send('/v1/batch', { batch: [track(1)] }, { writeKey: null });
    assert.equal(none.status, 401);
    assert.equal(none.json.success, false);
    assert.equal(none.json.errors[0].code, 'unauthorized');
    const wrong = await ferry.send('/v1/batch', { batch: [track(1)] }, { writeKey: 'nope' });
    assert.equal(wrong.status, 401);
    await assertNothingStored();
  });

  test('an unknown Basic key is refused before the body is read', async () => {
    const res = await ferry.send('/v1/batch', undefined, { writeKey: 'nope', raw: 'not json at all', headers: { 'content-encoding': 'gzip' } });
    assert.equal(res.status, 401);
    assert.equal(res.json.errors[0].code, 'unauthorized');
  });

  test('the write key is also accepted in the body', async () => {
    const res = await ferry.send('/v1/batch', { writeKey, batch: [track(1)] }, { writeKey: null });
    assert.equal(res.status, 200);
    assert.equal((await stored()).events, baseline.events + 1);
  });

  for (const [name, raw, headers, code, status] of [
    ['not JSON', '{"batch": [', {}, 'invalid_json', 400],
    ['not JSON labelled text/plain', 'batch=1', { 'content-type': 'text/plain' }, 'invalid_json', 400],
    ['an unknown content encoding', '{"batch":[]}', { 'content-encoding': 'br' }, 'unsupported_content_encoding', 415],
    ['gzip that is not gzip', 'plain text', { 'content-encoding': 'gzip' }, 'invalid_gzip', 400],
    ['a batch that is not a list', '{"batch": {"a": 1}}', {}, 'invalid_batch', 400],
    ['a JSON array body', '[1,2]', {}, 'invalid_batch', 400],
  ] as const) {
    test(`${name} is refused with ${status} ${code} and nothing is stored`, async () => {
      const res = await ferry.send('/v1/batch', undefined, { raw: raw, headers: headers as Record<string, string> });
      assert.equal(res.status, status);
      assert.equal(res.json.errors[0].code, code);
      await assertNothingStored();
    });
  }

  test('the body is read as JSON whatever its Content-Type says', async () => {
    const labels = [
      // RudderStack's Node SDK: gzipped JSON labelled as a form.
      { 'content-type': 'application/x-www-form-urlencoded', gzip: true },
      // Browsers' sendBeacon.
      { 'content-type': 'text/plain;charset=UTF-8', gzip: false },
      { 'content-type': 'multipart/form-data; boundary=x', gzip: false },
      // Labels that are not media types at all.
      { 'content-type': '', gzip: false },
      { 'content-type': 'json', gzip: true },
      { 'content-type': undefined, gzip: false },
    ];
    for (const [i, { gzip, ...label }] of labels.entries()) {
      const headers = Object.fromEntries(Object.entries(label).filter(([, v]) => v !== undefined)) as Record<string, string>;
      const res = await rawPost('/v1/batch', JSON.stringify({ batch: [track(i, { messageId: `ct-${i}` })] }), headers, gzip);
      assert.equal(res.status, 200, `Content-Type ${label['content-type']}: ${JSON.stringify(res.json)}`);
      assert.equal((await ferry.admin('GET', `/deliveries?messageId=ct-${i}`)).json.deliveries.length, 1, `ct-${i} stored and routed`);
    }
  });

  /** A POST whose headers are exactly the given ones (fetch would add a Content-Type for a string body). */
  async function rawPost(path: string, text: string, headers: Record<string, string>, gzip: boolean) {
    const body = gzip ? gzipSync(text) : Buffer.from(text);
    const res = await fetch(ferry.url + path, {
      method: 'POST',
      headers: { authorization: basicAuth(writeKey), ...(gzip ? { 'content-encoding': 'gzip' } : {}), ...headers },
      body: new Blob([body]),
    });
    return { status: res.status, json: await res.json() };
  }

  test('a body over 500 KB is refused with 413', async () => {
    const big = { batch: [track(1, { properties: { pad: 'x'.repeat(600 * 1024) } })] };
    const res = await ferry.send('/v1/batch', big);
    assert.equal(res.status, 413);
    assert.equal(res.json.errors[0].code, 'payload_too_large');
    await assertNothingStored();
  });

  test('a gzip body is accepted; a decompression bomb is refused with 413', async () => {
    const ok = await ferry.send('/v1/batch', { batch: [track(1), track(2)] }, { gzip: true });
    assert.equal(ok.status, 200);
    assert.equal((await stored()).events, baseline.events + 2);
    const bomb = gzipSync(Buffer.from(JSON.stringify({ batch: [track(1, { properties: { pad: ' '.repeat(50 * 1024 * 1024) } })] })));
    assert.ok(bomb.length < 500 * 1024, 'the compressed bomb is small');
    const res = await ferry.send('/v1/batch', undefined, { raw: bomb, headers: { 'content-encoding': 'gzip' } });
    assert.equal(res.status, 413);
  });

  test('more than 2,500 messages is refused; 2,500 is accepted', async () => {
    const over = await ferry.send('/v1/batch', { batch: Array.from({ length: 2501 }, (_, i) => ({ type: 'track', userId: `${i}`, event: 'e' })) });
    assert.equal(over.status, 400);
    assert.equal(over.json.errors[0].code, 'too_many_messages');
    const atLimit = await ferry.send('/v1/batch', { batch: Array.from({ length: 2500 }, (_, i) => ({ type: 'track', userId: `${i}`, event: 'e' })) });
    assert.equal(atLimit.status, 200);
  });

  test('deeply nested JSON is refused without harm', async () => {
    const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    const res = await ferry.send('/v1/batch', undefined, { raw: `{"batch":[{"type":"track","userId":"u","event":"e","properties":${deep}}]}` });
    assert.ok(res.status === 400 || res.status === 413, `status ${res.status}`);
    assert.equal(res.json.success, false);
    const health = await fetch(ferry.url + '/health');
    assert.equal(health.status, 200);
  });

  test('each message stands alone: bad ones are reported by index, good ones stored and routed', async () => {
    const batch = [
      track(1, { messageId: 'good-1' }),
      { type: 'track', event: 'no identity' },
      { type: 'track', userId: 'u' },
      { type: 'group', userId: 'u' },
      { type: 'alias', userId: 'u' },
      { type: 'track', userId: 'u', event: 'E', properties: 'not an object' },
      track(2, { properties: { big: 'x'.repeat(33 * 1024) } }),
      { type: 'nope', userId: 'u' },
      track(3, { messageId: 'good-2' }),
    ];
    const res = await ferry.send('/v1/batch', { batch });
    assert.equal(res.status, 200);
    assert.equal(res.json.success, true);
    assert.deepEqual(
      res.json.rejected.map((r: any) => [r.index, r.code]),
      [
        [1, 'missing_identity'],
        [2, 'missing_event'],
        [3, 'missing_group_id'],
        [4, 'missing_previous_id'],
        [5, 'invalid_field'],
        [6, 'message_too_large'],
        [7, 'invalid_type'],
      ],
    );
    assert.equal((await stored()).events, baseline.events + 2);
    const rejections = await ferry.admin('GET', '/rejections?sourceId=app&limit=7');
    assert.equal(rejections.json.recent.length, 7);
    assert.ok(rejections.json.counts.some((c: any) => c.code === 'missing_identity' && c.count >= 1));
  });

  test('numeric ids that are not safe integers (past 2^53 - 1, fractions) are rejected per message, so two users are never merged into one', async () => {
    // Raw text: 9007199254740993 and 9007199254740992 are one number once parsed; 1.50 and 1.5 would print alike.
    const raw = `{"batch":[
      {"type":"identify","userId":9007199254740993,"messageId":"big-1"},
      {"type":"identify","userId":9007199254740992,"messageId":"big-2"},
      {"type":"identify","userId":9007199254740991,"messageId":"big-safe"},
      {"type":"identify","userId":1.50,"messageId":"fraction"},
      {"type":"group","userId":"u","groupId":2.5e-1,"messageId":"exponent-fraction"},
      {"type":"identify","userId":1e2,"messageId":"exponent-integer"}]}`;
    const res = await ferry.send('/v1/batch', undefined, { raw });
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.json.rejected.map((r: any) => [r.index, r.code]),
      [
        [0, 'unsafe_numeric_id'],
        [1, 'unsafe_numeric_id'],
        [3, 'unsafe_numeric_id'],
        [4, 'unsafe_numeric_id'],
      ],
    );
    assert.equal((await bodyOf('big-safe')).userId, '9007199254740991');
    assert.equal((await bodyOf('exponent-integer')).userId, '100', 'an exponent that names an integer is that integer');
    assert.equal((await stored()).events, baseline.events + 2);
  });

  test('a single-call path answers 400 for an invalid message and stores nothing', async () => {
    const res = await ferry.send('/v1/track', { userId: 'u' });
    assert.equal(res.status, 400);
    assert.equal(res.json.errors[0].code, 'missing_event');
    await assertNothingStored();
    for (const path of ['identify', 'track', 'page', 'screen', 'group', 'alias']) {
      const ok = await ferry.send(`/v1/${path}`, { userId: 'u', event: 'E', groupId: 'g', previousId: 'p' });
      assert.equal(ok.status, 200, path);
    }
  });

  test('the same messageId sent twice is stored and routed once', async () => {
    const body = { batch: [track(1, { messageId: 'dup-1' }), track(1, { messageId: 'dup-1' })] };
    assert.equal((await ferry.send('/v1/batch', body)).status, 200);
    assert.equal((await ferry.send('/v1/batch', body)).status, 200);
    assert.equal((await stored()).events, baseline.events + 1);
    const list = await ferry.admin('GET', '/deliveries?messageId=dup-1');
    assert.equal(list.json.deliveries.length, 1);
  });

  test('enrichment: skew-corrected timestamp, batch context and integrations merged, context.ip', async () => {
    const now = clock.now();
    // The client clock runs 10 s fast: sentAt is 10 s ahead of the server, the event happened 5 s before sending.
    const sentAt = new Date(now + 10_000).toISOString();
    const original = '2026-03-01T12:00:05-0000';
    const res = await ferry.send('/v1/batch', {
      sentAt,
      context: { library: { name: 'analytics-go', version: '2.1.1' } },
      batch: [track(1, { messageId: 'enrich-1', timestamp: original, context: { page: { path: '/x' } } })],
    });
    assert.equal(res.status, 200);
    const body = await bodyOf('enrich-1');
    assert.equal(body.timestamp, new Date(now - 5_000).toISOString());
    assert.deepEqual(body.context.library, { name: 'analytics-go', version: '2.1.1' });
    assert.deepEqual(body.context.page, { path: '/x' });
    assert.equal(body.context.ip, '127.0.0.1');
  });

  test('routing follows the integrations map; a disabled destination receives nothing', async () => {
    const res = await ferry.send('/v1/batch', {
      batch: [
        track(1, { messageId: 'r-default' }),
        track(1, { messageId: 'r-all-false', integrations: { All: false } }),
        track(1, { messageId: 'r-only-webhooks', integrations: { All: false, Webhooks: true } }),
        track(1, { messageId: 'r-skip', integrations: { Webhooks: false } }),
        track(1, { messageId: 'r-case', integrations: { webhooks: false } }),
      ],
    });
    assert.equal(res.status, 200);
    const routed = new Map<string, string[]>();
    for (const id of ['r-default', 'r-all-false', 'r-only-webhooks', 'r-skip', 'r-case']) {
      const list = (await ferry.admin('GET', `/deliveries?messageId=${id}`)).json.deliveries as any[];
      if (list.length > 0)
        routed.set(
          id,
          list.map((d) => d.destinationId),
        );
    }
    assert.deepEqual(routed.get('r-default'), ['hooks']);
    assert.equal(routed.get('r-all-false'), undefined);
    assert.deepEqual(routed.get('r-only-webhooks'), ['hooks']);
    assert.equal(routed.get('r-skip'), undefined);
    assert.deepEqual(routed.get('r-case'), ['hooks'], 'names are case-sensitive');
  });

  test('a destination receives only calls that arrive while it is enabled', async () => {
    await ferry.send('/v1/track', { userId: 'u', event: 'E', messageId: 'before-on' });
    const on = await ferry.admin('PATCH', '/destinations/off', { enabled: true });
    assert.equal(on.status, 200);
    await ferry.send('/v1/track', { userId: 'u', event: 'E', messageId: 'after-on' });
    await ferry.admin('PATCH', '/destinations/off', { enabled: false });
    await ferry.send('/v1/track', { userId: 'u', event: 'E', messageId: 'after-off' });
    const forOff = (await ferry.admin('GET', '/deliveries?destinationId=off&limit=1000')).json.deliveries.map((d: any) => d.messageId);
    assert.deepEqual(forOff, ['after-on']);
  });

  test('timestamps in any ISO 8601 form are stored as UTC with milliseconds', async () => {
    const res = await ferry.send('/v1/batch', {
      batch: [
        track(1, { messageId: 'ts-1', timestamp: '2026-02-01T10:00:00-0700' }),
        track(1, { messageId: 'ts-2', timestamp: '2026-02-01T10:00:00.123456+05:30' }),
        track(1, { messageId: 'ts-bad', timestamp: 'yesterday' }),
      ],
    });
    assert.deepEqual(
      res.json.rejected.map((r: any) => r.code),
      ['invalid_timestamp'],
    );
    assert.equal((await bodyOf('ts-1')).timestamp, '2026-02-01T17:00:00.000Z');
    assert.equal((await bodyOf('ts-2')).timestamp, '2026-02-01T04:30:00.123Z');
  });

  test('unknown routes answer 404 in the error format', async () => {
    const res = await ferry.send('/v1/nothing', {});
    assert.equal(res.status, 404);
    assert.equal(res.json.errors[0].code, 'not_found');
  });
});
