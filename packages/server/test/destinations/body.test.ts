import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildAudienceIdentifyBody, buildDeleteBody, buildWebhookBody } from '../../src/destinations/webhooks/body.js';
import type { NormalizedMessage } from '../../src/model/message.js';
import { normalizeMessage } from '../../src/ingest/normalize.js';

const ts = '2024-01-02T03:04:05.678Z';

/** A stored message with every internal field set, so each case shows they are left out. */
function stored(fields: Partial<NormalizedMessage> & Pick<NormalizedMessage, 'type'>): NormalizedMessage {
  return {
    messageId: 'm1',
    context: { ip: '203.0.113.7' },
    integrations: { Webhooks: true },
    timestamp: ts,
    originalTimestamp: '2024-01-02T03:00:00.000Z',
    sentAt: '2024-01-02T03:00:05.000Z',
    receivedAt: '2024-01-02T03:04:10.678Z',
    channel: 'server',
    ...fields,
  };
}

const head = '"messageId":"m1","timestamp":"2024-01-02T03:04:05.678Z","context":{"ip":"203.0.113.7"}';

describe('buildWebhookBody: byte for byte', () => {
  // [case, message, exact body]
  const cases: [string, NormalizedMessage, string][] = [
    [
      'W01 page with name, category and properties',
      stored({
        type: 'page',
        userId: 'u1',
        name: 'Pricing',
        category: 'Docs',
        properties: { path: '/pricing', url: 'https://x.test/pricing', title: 'Pricing', referrer: '', plan: 'pro' },
      }),
      `{"version":1,"type":"page","userId":"u1",${head},"name":"Pricing","category":"Docs","properties":{"path":"/pricing","url":"https://x.test/pricing","title":"Pricing","referrer":"","plan":"pro"}}`,
    ],
    [
      'W02 page without name, category or properties: properties is {}',
      stored({ type: 'page', userId: 'u1' }),
      `{"version":1,"type":"page","userId":"u1",${head},"properties":{}}`,
    ],
    [
      'W03 page traits stay inside Ferry',
      stored({ type: 'page', userId: 'u1', traits: { plan: 'pro' }, properties: { path: '/' } }),
      `{"version":1,"type":"page","userId":"u1",${head},"properties":{"path":"/"}}`,
    ],
    [
      'W04 screen with name, category and properties',
      stored({
        type: 'screen',
        userId: 'u1',
        name: 'Home',
        category: 'Feed',
        properties: { tab: 'feed' },
        context: {
          device: { model: 'Pixel 8', type: 'android' },
          os: { name: 'Android', version: '14' },
          app: { build: '42', name: 'Ferry', version: '1.2.0' },
        },
      }),
      '{"version":1,"type":"screen","userId":"u1","messageId":"m1","timestamp":"2024-01-02T03:04:05.678Z",' +
        '"context":{"device":{"model":"Pixel 8","type":"android"},"os":{"name":"Android","version":"14"},"app":{"build":"42","name":"Ferry","version":"1.2.0"}},' +
        '"name":"Home","category":"Feed","properties":{"tab":"feed"}}',
    ],
    [
      'W05 screen without name, category or properties: none of them',
      stored({ type: 'screen', anonymousId: 'a1' }),
      `{"version":1,"type":"screen","anonymousId":"a1",${head}}`,
    ],
    [
      'W06 identify with traits',
      stored({ type: 'identify', userId: 'u1', traits: { email: 'ada@example.com', plan: 'pro' } }),
      `{"version":1,"type":"identify","userId":"u1",${head},"traits":{"email":"ada@example.com","plan":"pro"}}`,
    ],
    [
      'W07 identify without traits: traits is {}',
      stored({ type: 'identify', userId: 'u1' }),
      `{"version":1,"type":"identify","userId":"u1",${head},"traits":{}}`,
    ],
    [
      'W08 identify with both ids: userId then anonymousId',
      stored({ type: 'identify', anonymousId: 'a1', userId: 'u1' }),
      `{"version":1,"type":"identify","userId":"u1","anonymousId":"a1",${head},"traits":{}}`,
    ],
    [
      'W09 identify with only anonymousId: no userId member',
      stored({ type: 'identify', anonymousId: 'a1' }),
      `{"version":1,"type":"identify","anonymousId":"a1",${head},"traits":{}}`,
    ],
    [
      'W10 track with properties',
      stored({ type: 'track', userId: 'u1', event: 'Order Completed', properties: { total: 9.5, currency: 'EUR' } }),
      `{"version":1,"type":"track","userId":"u1",${head},"event":"Order Completed","properties":{"total":9.5,"currency":"EUR"}}`,
    ],
    [
      'W11 track without properties: properties is {}',
      stored({ type: 'track', userId: 'u1', event: 'Signed Up' }),
      `{"version":1,"type":"track","userId":"u1",${head},"event":"Signed Up","properties":{}}`,
    ],
    [
      'W12 alias: spaced keys, no userId member',
      stored({ type: 'alias', userId: 'u1', previousId: 'a1' }),
      `{"version":1,"type":"alias",${head},"Previous ID":"a1","User ID":"u1"}`,
    ],
    [
      'W13 alias with an anonymousId keeps it',
      stored({ type: 'alias', userId: 'u1', anonymousId: 'a9', previousId: 'a1' }),
      `{"version":1,"type":"alias","anonymousId":"a9",${head},"Previous ID":"a1","User ID":"u1"}`,
    ],
    [
      'W14 group with traits',
      stored({ type: 'group', userId: 'u1', groupId: 'g1', traits: { name: 'Initech', seats: 12 } }),
      `{"version":1,"type":"group","userId":"u1",${head},"groupId":"g1","traits":{"name":"Initech","seats":12}}`,
    ],
    [
      'W15 group without traits: traits is {}',
      stored({ type: 'group', userId: 'u1', groupId: 'g1' }),
      `{"version":1,"type":"group","userId":"u1",${head},"groupId":"g1","traits":{}}`,
    ],
    [
      'W16 members that belong to other types are left out',
      stored({ type: 'track', userId: 'u1', event: 'e', name: 'n', category: 'c', groupId: 'g', previousId: 'p', traits: { t: 1 } }),
      `{"version":1,"type":"track","userId":"u1",${head},"event":"e","properties":{}}`,
    ],
    [
      'W17 unicode and characters JSON escapes',
      stored({ type: 'track', userId: 'ü"1', event: 'Café\n"☕"', properties: { s: '\u2028' } }),
      `{"version":1,"type":"track","userId":"ü\\"1",${head},"event":"Café\\n\\"☕\\"","properties":{"s":"\u2028"}}`,
    ],
  ];
  for (const [name, message, expected] of cases) {
    test(name, () => assert.equal(buildWebhookBody(message), expected));
  }

  test('W18 internal and unknown members never appear', () => {
    for (const [, message] of cases) {
      const body = JSON.parse(buildWebhookBody(message)) as Record<string, unknown>;
      for (const internal of ['receivedAt', 'originalTimestamp', 'sentAt', 'integrations', 'channel', 'writeKey', 'previousId']) {
        assert.equal(internal in body, false, `${internal} in ${message.type} body`);
      }
      assert.equal(body.version, 1);
      assert.equal(body.messageId, 'm1');
    }
  });

  test('W19 end to end: a normalised message with internal fields gives only the body fields', () => {
    const result = normalizeMessage(
      {
        type: 'track',
        userId: 7,
        event: 'Signed Up',
        messageId: 'm1',
        timestamp: '2024-01-01T20:00:00-0700',
        sentAt: '2024-01-01T20:00:05-0700',
        writeKey: 'secret',
        integrations: { Webhooks: true },
        extra: { x: 1 },
      },
      { context: { library: { name: 'analytics-go', version: '2.1.1' } } },
      { receivedAtMs: Date.parse('2024-01-02T03:04:05.678Z'), ip: '203.0.113.7', newMessageId: () => assert.fail('not called') },
    );
    assert.ok(result.ok);
    assert.equal(
      buildWebhookBody(result.message),
      '{"version":1,"type":"track","userId":"7","messageId":"m1","timestamp":"2024-01-02T03:04:00.678Z",' +
        '"context":{"library":{"name":"analytics-go","version":"2.1.1"},"ip":"203.0.113.7"},"event":"Signed Up","properties":{}}',
    );
  });

  // [case, message, missing field]
  const misuse: [string, NormalizedMessage, string][] = [
    ['W20 track without event', stored({ type: 'track', userId: 'u1' }), 'event'],
    ['W21 alias without previousId', stored({ type: 'alias', userId: 'u1' }), 'previousId'],
    ['W22 alias without userId', stored({ type: 'alias', anonymousId: 'a1', previousId: 'p' }), 'userId'],
    ['W23 group without groupId', stored({ type: 'group', userId: 'u1' }), 'groupId'],
    ['W24 unknown type', stored({ type: 'purchase' as 'track', userId: 'u1' }), 'purchase'],
  ];
  for (const [name, message, field] of misuse) {
    test(`${name} is a bug: TypeError`, () => {
      assert.throws(
        () => buildWebhookBody(message),
        (err: unknown) => err instanceof TypeError && err.message.includes(field),
      );
    });
  }
});

describe('buildDeleteBody', () => {
  test('X01 exactly type, userId, timestamp', () => {
    assert.equal(buildDeleteBody('u1', Date.parse('2024-01-02T03:04:05.678Z')), '{"type":"delete","userId":"u1","timestamp":"2024-01-02T03:04:05.678Z"}');
  });

  test('X02 milliseconds are always written, the id is escaped', () => {
    assert.equal(buildDeleteBody('a"b', 0), '{"type":"delete","userId":"a\\"b","timestamp":"1970-01-01T00:00:00.000Z"}');
  });
});

describe('buildAudienceIdentifyBody', () => {
  test('Y01 a user joins an audience', () => {
    assert.equal(
      buildAudienceIdentifyBody({ userId: 'u1', messageId: 'aud-1', timestampMs: Date.parse(ts), traits: { power_users: true } }),
      `{"version":1,"type":"identify","userId":"u1","messageId":"aud-1","timestamp":"${ts}","context":{},"traits":{"power_users":true}}`,
    );
  });

  test('Y02 an anonymous visitor leaves, with a context', () => {
    assert.equal(
      buildAudienceIdentifyBody({
        anonymousId: 'a1',
        messageId: 'aud-2',
        timestampMs: Date.parse(ts),
        traits: { high_value_customers_2024: false },
        context: { personas: { computation_key: 'high_value_customers_2024' } },
      }),
      `{"version":1,"type":"identify","anonymousId":"a1","messageId":"aud-2","timestamp":"${ts}",` +
        '"context":{"personas":{"computation_key":"high_value_customers_2024"}},"traits":{"high_value_customers_2024":false}}',
    );
  });

  test('Y03 both ids: userId first', () => {
    const body = buildAudienceIdentifyBody({ anonymousId: 'a1', userId: 'u1', messageId: 'm', timestampMs: 0, traits: {} });
    assert.ok(body.startsWith('{"version":1,"type":"identify","userId":"u1","anonymousId":"a1",'), body);
  });

  test('Y04 no id at all is a bug: TypeError', () => {
    assert.throws(() => buildAudienceIdentifyBody({ messageId: 'm', timestampMs: 0, traits: {} }), TypeError);
  });
});
