import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics, AnalyticsError, libraryInfo } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { ManualClock } from './support/manual-clock.js';
import { SinkServer } from './support/sink-server.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof AnalyticsError, `expected an AnalyticsError, got ${String(e)}`);
    return e.code;
  }
  assert.fail('expected the call to throw');
}

describe('messages', () => {
  let sink: SinkServer;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(() => sink.close());

  it('refuses invalid calls synchronously with a stable code and queues nothing', async () => {
    const client = new Analytics('wk', { endpoint: sink.url });
    const cycle: Record<string, unknown> = {};
    cycle['self'] = cycle;
    const cases: Array<[string, () => unknown]> = [
      ['missing_identity', () => client.track({ event: 'E' } as never)],
      ['missing_identity', () => client.identify({ userId: '', traits: {} } as never)],
      ['missing_identity', () => client.page({ name: 'Home' } as never)],
      ['missing_event', () => client.track({ userId: 'u' } as never)],
      ['missing_event', () => client.track({ userId: 'u', event: '' })],
      ['missing_group_id', () => client.group({ userId: 'u' } as never)],
      ['missing_previous_id', () => client.alias({ userId: 'u' } as never)],
      ['missing_user_id', () => client.alias({ previousId: 'anon' } as never)],
      ['invalid_field', () => client.track({ userId: 'u', event: 'E', properties: 'x' as never })],
      ['invalid_field', () => client.track({ userId: 42 as never, event: 'E' })],
      ['invalid_field', () => client.track({ userId: 'u', event: 'E', integrations: { X: 'yes' as never } })],
      ['invalid_field', () => client.track(null as never)],
      ['invalid_timestamp', () => client.track({ userId: 'u', event: 'E', timestamp: 'yesterday' })],
      ['invalid_timestamp', () => client.track({ userId: 'u', event: 'E', timestamp: new Date(Number.NaN) })],
      ['invalid_message_id', () => client.track({ userId: 'u', event: 'E', messageId: 'x'.repeat(101) })],
      ['not_serializable', () => client.track({ userId: 'u', event: 'E', properties: cycle })],
      ['not_serializable', () => client.identify({ userId: 'u', traits: { n: 10n } })],
    ];
    for (const [code, call] of cases) assert.equal(codeOf(call), code, call.toString());
    assert.equal(client.stats.queued, 0);
    const result = await within(client.close(), 'close');
    assert.equal(result.delivered, 0);
    assert.equal(sink.requests.length, 0);
  });

  it('stamps type, messageId, timestamp and context.library, and sends a Segment batch', async () => {
    const clock = new ManualClock();
    const client = new Analytics({ writeKey: 'secret-key', endpoint: `${sink.url}/base/`, clock });
    const id = client.track({ userId: 'u1', event: 'Signed Up', properties: { plan: 'pro' }, context: { ip: '1.2.3.4' } });
    assert.match(id, UUID);
    const plain = client.track({ userId: 'u2', event: 'Plain' });
    await within(client.close(), 'close');
    assert.equal(sink.requests.length, 1);
    const req = sink.requests[0]!;
    assert.equal(req.method, 'POST');
    assert.equal(req.url, '/base/v1/batch');
    assert.equal(req.headers.authorization, `Basic ${Buffer.from('secret-key:').toString('base64')}`);
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(req.headers.host, new URL(sink.url).host);
    assert.equal(req.headers.connection, 'keep-alive');
    assert.equal(req.headers['content-length'], String(Buffer.byteLength(req.text)));
    assert.equal(req.json.sentAt, new Date(clock.now()).toISOString());
    assert.deepEqual(req.json.batch, [
      {
        userId: 'u1',
        event: 'Signed Up',
        properties: { plan: 'pro' },
        type: 'track',
        messageId: id,
        timestamp: '2024-01-02T03:04:05.678Z',
        context: { library: { name: libraryInfo.name, version: libraryInfo.version }, ip: '1.2.3.4' },
      },
      {
        type: 'track',
        messageId: plain,
        timestamp: '2024-01-02T03:04:05.678Z',
        context: { library: { name: libraryInfo.name, version: libraryInfo.version } },
        userId: 'u2',
        event: 'Plain',
      },
    ]);
  });

  it('builds every call type with the fields of the spec', async () => {
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 100 });
    client.identify({ userId: 'u', traits: { email: 'a@example.com' } });
    client.track({ anonymousId: 'a', event: 'Clicked', properties: { n: 1 } });
    client.page({
      userId: 'u',
      name: 'Pricing',
      category: 'Docs',
      traits: { url: 'https://example.com/p', title: 'P', referrer: 'https://r.example', path: '/p', custom: 1 },
    });
    client.page({ userId: 'u', properties: { path: '/q', title: 'Q' }, traits: { path: '/ignored', extra: true } });
    client.screen({ userId: 'u', name: 'Home', properties: { tab: 2 } });
    client.group({ userId: 'u', groupId: 'g1', traits: { industry: 'retail', employees: 12 } });
    client.alias({ previousId: 'a', userId: 'u' });
    await within(client.close(), 'close');
    const got = sink.accepted;
    assert.deepEqual(
      got.map((m) => m['type']),
      ['identify', 'track', 'page', 'page', 'screen', 'group', 'alias'],
    );
    assert.deepEqual(got[0]!['traits'], { email: 'a@example.com' });
    assert.equal(got[1]!['anonymousId'], 'a');
    assert.equal(got[2]!['name'], 'Pricing');
    assert.equal(got[2]!['category'], 'Docs');
    assert.deepEqual(got[2]!['properties'], {
      url: 'https://example.com/p',
      title: 'P',
      referrer: 'https://r.example',
      path: '/p',
      custom: 1,
    });
    assert.equal(got[2]!['traits'], undefined);
    assert.deepEqual(got[3]!['properties'], { path: '/q', title: 'Q', extra: true });
    assert.deepEqual(got[4]!['properties'], { tab: 2 });
    assert.equal(got[5]!['groupId'], 'g1');
    assert.deepEqual(got[5]!['traits'], { industry: 'retail', employees: 12 });
    assert.equal(got[6]!['previousId'], 'a');
    assert.equal(got[6]!['userId'], 'u');
  });

  it('keeps a historical timestamp, a caller messageId and the integrations map as given', async () => {
    const client = new Analytics('wk', { endpoint: sink.url });
    const integrations = { All: false, Webhooks: true, webhooks: false, Amplitude: { sessionId: 7 } };
    client.track({ userId: 'u', event: 'Old', timestamp: new Date(Date.UTC(2019, 4, 6)), integrations });
    client.track({ userId: 'u', event: 'Offset', timestamp: '2019-05-06T01:02:03-0700', messageId: 'import-1' });
    await within(client.close(), 'close');
    const [a, b] = sink.accepted;
    assert.equal(a!['timestamp'], '2019-05-06T00:00:00.000Z');
    assert.deepEqual(a!['integrations'], integrations);
    assert.equal(b!['timestamp'], '2019-05-06T01:02:03-0700');
    assert.equal(b!['messageId'], 'import-1');
  });

  it('refuses a message over 32 KB at call time and accepts one just under', async () => {
    const client = new Analytics('wk', { endpoint: sink.url });
    // Same keys and value lengths as the client will serialise, so the size is exact.
    const fixed = { messageId: 'm'.repeat(36), timestamp: '2024-01-02T03:04:05.678Z' };
    const shape = { userId: 'u', event: 'E', properties: { pad: '' }, ...fixed, type: 'track', context: { library: libraryInfo } };
    const overhead = Buffer.byteLength(JSON.stringify(shape));
    const fits = 32_000 - overhead;
    client.track({ userId: 'u', event: 'E', properties: { pad: 'x'.repeat(fits) }, ...fixed });
    const over = { userId: 'u', event: 'E', properties: { pad: 'x'.repeat(fits + 1) }, ...fixed };
    assert.equal(
      codeOf(() => client.track(over)),
      'message_too_large',
    );
    // Multi-byte characters count as their UTF-8 size.
    assert.equal(
      codeOf(() => client.track({ userId: 'u', event: 'E', properties: { pad: 'é'.repeat(17_000) } })),
      'message_too_large',
    );
    await within(client.close(), 'close');
    assert.equal(sink.accepted.length, 1);
    assert.equal(Buffer.byteLength(JSON.stringify(sink.accepted.at(-1))), 32_000);
  });
});
