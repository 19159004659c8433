import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ErrorCode } from '../../src/errors/error-codes.js';
import type { Envelope, IngestMeta } from '../../src/ingest/message.js';
import type { NormalizedMessage } from '../../src/model/message.js';
import { maxBatchMessages, maxMessageBytes, normalizeMessage, readEnvelope } from '../../src/ingest/normalize.js';

const receivedAt = '2024-01-02T03:04:05.678Z';
const receivedAtMs = Date.parse(receivedAt);

/** Meta with a predictable messageId generator that counts its calls; `ip: null` for none. */
function makeMeta(ip: string | null = '203.0.113.7'): IngestMeta & { generated: number } {
  const meta = {
    receivedAtMs,
    generated: 0,
    newMessageId(): string {
      meta.generated++;
      return `gen-${meta.generated}`;
    },
  };
  return ip === null ? meta : Object.assign(meta, { ip });
}

function ok(raw: unknown, envelope: Envelope = {}, meta: IngestMeta = makeMeta()): NormalizedMessage {
  const result = normalizeMessage(raw, envelope, meta);
  if (!result.ok) assert.fail(`expected ok, got ${result.code}: ${result.message}`);
  assert.equal(result.json, JSON.stringify(result.message), 'json is the serialisation of message');
  return result.message;
}

function rejected(raw: unknown, envelope: Envelope = {}): { code: ErrorCode; message: string } {
  const result = normalizeMessage(raw, envelope, makeMeta());
  if (result.ok) assert.fail(`expected a rejection, got ${result.json}`);
  return result;
}

/** An object nested `levels` deep: nest(1) is `{}`. */
function nest(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

const track = { type: 'track', userId: 'u1', event: 'Signed Up' };

describe('normalizeMessage: rejections', () => {
  // [case, raw message, envelope, code, text the message must contain]
  const cases: [string, unknown, Envelope, ErrorCode, string][] = [
    ['N01 not an object: string', 'hello', {}, 'invalid_message', 'JSON object'],
    ['N02 not an object: array', [track], {}, 'invalid_message', 'JSON object'],
    ['N03 not an object: null', null, {}, 'invalid_message', 'JSON object'],
    ['N04 nested 33 levels', { ...track, properties: nest(32) }, {}, 'too_deeply_nested', '32'],
    ['N05 no type', { userId: 'u1', event: 'x' }, {}, 'invalid_type', 'nothing'],
    ['N06 unknown type', { ...track, type: 'purchase' }, {}, 'invalid_type', 'got a string of 8 characters'],
    ['N07 type in upper case', { ...track, type: 'Track' }, {}, 'invalid_type', 'got a string of 5 characters'],
    ['N08 no userId, no anonymousId', { type: 'identify', traits: {} }, {}, 'missing_identity', 'userId'],
    ['N09 empty userId and anonymousId', { type: 'identify', userId: '', anonymousId: '' }, {}, 'missing_identity', 'userId'],
    ['N10 null ids', { type: 'identify', userId: null, anonymousId: null }, {}, 'missing_identity', 'userId'],
    ['N11 userId an object', { ...track, userId: { id: 1 } }, {}, 'invalid_field', '`userId`'],
    ['N12 anonymousId a boolean', { ...track, anonymousId: true }, {}, 'invalid_field', '`anonymousId`'],
    ['N13 groupId an array', { type: 'group', userId: 'u1', groupId: ['g'] }, {}, 'invalid_field', '`groupId`'],
    ['N14 previousId an object', { type: 'alias', userId: 'u1', previousId: {} }, {}, 'invalid_field', '`previousId`'],
    ['N15 track without event', { type: 'track', userId: 'u1' }, {}, 'missing_event', '`event`'],
    ['N16 track with empty event', { ...track, event: '' }, {}, 'missing_event', '`event`'],
    ['N17 track with null event', { ...track, event: null }, {}, 'missing_event', '`event`'],
    ['N18 event a number', { ...track, event: 42 }, {}, 'invalid_field', '`event`'],
    ['N19 group without groupId', { type: 'group', userId: 'u1', traits: {} }, {}, 'missing_group_id', '`groupId`'],
    ['N20 group with empty groupId', { type: 'group', userId: 'u1', groupId: '' }, {}, 'missing_group_id', '`groupId`'],
    ['N21 alias without previousId', { type: 'alias', userId: 'u1' }, {}, 'missing_previous_id', '`previousId`'],
    ['N22 alias with only an anonymousId', { type: 'alias', anonymousId: 'a1', previousId: 'p1' }, {}, 'missing_identity', 'alias'],
    ['N23 properties an array', { ...track, properties: [1, 2] }, {}, 'invalid_field', '`properties`'],
    ['N24 properties a string', { ...track, properties: 'x' }, {}, 'invalid_field', '`properties`'],
    ['N25 traits an array', { type: 'identify', userId: 'u1', traits: [] }, {}, 'invalid_field', '`traits`'],
    ['N26 context a string', { ...track, context: 'ctx' }, {}, 'invalid_field', '`context`'],
    ['N27 integrations an array', { ...track, integrations: ['Webhooks'] }, {}, 'invalid_field', '`integrations`'],
    ['N28 name a number', { type: 'page', userId: 'u1', name: 1 }, {}, 'invalid_field', '`name`'],
    ['N29 category an object', { type: 'page', userId: 'u1', category: {} }, {}, 'invalid_field', '`category`'],
    ['N30 messageId empty', { ...track, messageId: '' }, {}, 'invalid_message_id', '100'],
    ['N31 messageId of 101 characters', { ...track, messageId: 'm'.repeat(101) }, {}, 'invalid_message_id', '100'],
    ['N32 messageId a number', { ...track, messageId: 123 }, {}, 'invalid_message_id', '100'],
    ['N32b messageId with a lone surrogate', { ...track, messageId: 'm-\ud800' }, {}, 'invalid_message_id', 'well-formed'],
    ['N33 timestamp not ISO', { ...track, timestamp: 'yesterday' }, {}, 'invalid_timestamp', '`timestamp`'],
    ['N34 timestamp a number', { ...track, timestamp: 1704164645678 }, {}, 'invalid_timestamp', '`timestamp`'],
    [
      'N35 timestamp impossible date',
      { ...track, timestamp: '2024-02-30T00:00:00Z' },
      {},
      'invalid_timestamp',
      '`timestamp` is not an ISO 8601 date-time: a string of 20 characters',
    ],
    ['N36 sentAt not ISO', { ...track, sentAt: 'now' }, {}, 'invalid_timestamp', '`sentAt`'],
    ['N37 originalTimestamp not ISO', { ...track, originalTimestamp: '2024-13-01' }, {}, 'invalid_timestamp', '`originalTimestamp`'],
    ['N38 envelope sentAt not ISO', track, { sentAt: 'later' }, 'invalid_timestamp', 'The batch `sentAt`'],
    [
      'N39 skew correction leaves years 0000..9999',
      { ...track, timestamp: '0000-01-01T00:00:00Z', sentAt: '9999-01-01T00:00:00Z' },
      {},
      'invalid_timestamp',
      'clock skew',
    ],
    ['N40 over 32 KB', { ...track, properties: { blob: 'x'.repeat(maxMessageBytes) } }, {}, 'message_too_large', '32768'],
  ];
  for (const [name, raw, envelope, code, text] of cases) {
    test(`${name} -> ${code}`, () => {
      const result = rejected(raw, envelope);
      assert.equal(result.code, code, result.message);
      assert.ok(result.message.includes(text), `message ${JSON.stringify(result.message)} should name ${text}`);
    });
  }

  test('N41 a long bad value is cut short in the message', () => {
    const result = rejected({ ...track, timestamp: 'z'.repeat(10_000) });
    assert.equal(result.code, 'invalid_timestamp');
    assert.ok(result.message.length < 200, result.message);
  });

  test('N41b a refused value is never in the message, which is kept for operators: an email in the wrong field names its field only', () => {
    for (const raw of [
      { ...track, timestamp: 'victim-42@example.com' },
      { ...track, type: 'victim-42@example.com' },
    ]) {
      const result = rejected(raw);
      assert.ok(!result.message.includes('victim'), result.message);
      assert.match(result.message, /`(timestamp|type)`/);
    }
  });

  test('N42 a rejection generates no messageId', () => {
    const meta = makeMeta();
    assert.equal(normalizeMessage({ type: 'track', userId: 'u1' }, {}, meta).ok, false);
    assert.equal(meta.generated, 0);
  });
});

describe('normalizeMessage: accepted calls of every type', () => {
  // [case, raw message, the members it must have]
  const cases: [string, Record<string, unknown>, Partial<NormalizedMessage>][] = [
    ['A01 identify with userId', { type: 'identify', userId: 'u1', traits: { plan: 'pro' } }, { userId: 'u1', traits: { plan: 'pro' } }],
    ['A02 identify with only anonymousId', { type: 'identify', anonymousId: 'a1' }, { anonymousId: 'a1' }],
    ['A03 track', { type: 'track', userId: 'u1', event: 'Signed Up', properties: { plan: 'pro' } }, { event: 'Signed Up', properties: { plan: 'pro' } }],
    ['A04 page with name and category', { type: 'page', userId: 'u1', name: 'Docs', category: 'Help' }, { name: 'Docs', category: 'Help' }],
    ['A05 screen', { type: 'screen', anonymousId: 'a1', name: 'Home' }, { name: 'Home' }],
    ['A06 group', { type: 'group', userId: 'u1', groupId: 'g1', traits: { seats: 3 } }, { groupId: 'g1', traits: { seats: 3 } }],
    ['A07 alias', { type: 'alias', userId: 'u1', previousId: 'a1' }, { userId: 'u1', previousId: 'a1' }],
    ['A08 empty userId next to an anonymousId is dropped', { type: 'identify', userId: '', anonymousId: 'a1' }, { anonymousId: 'a1' }],
    ['A09 whitespace ids are kept as sent', { type: 'identify', userId: ' ' }, { userId: ' ' }],
    ['A10 messageId of 100 characters', { ...track, messageId: 'm'.repeat(100) }, { messageId: 'm'.repeat(100) }],
  ];
  for (const [name, raw, expected] of cases) {
    test(name, () => {
      const message = ok(raw);
      assert.equal(message.type, raw.type);
      for (const [key, value] of Object.entries(expected)) assert.deepEqual(message[key], value, key);
      if (raw.userId === '') assert.equal('userId' in message, false);
    });
  }

  test('A11 null in an optional field counts as absent', () => {
    const message = ok({ ...track, properties: null, context: null, integrations: null, name: null, messageId: null, timestamp: null });
    assert.equal('properties' in message, false);
    assert.equal('name' in message, false);
    assert.equal('originalTimestamp' in message, false);
    assert.deepEqual(message.integrations, {});
    assert.equal(message.messageId, 'gen-1');
  });

  test('A12 page keeps both properties and traits as sent (analytics-go v2 sends properties)', () => {
    const message = ok({
      type: 'page',
      userId: 'u1',
      properties: { url: 'https://x.test/a', title: 'A', referrer: 'https://r.test', path: '/a', section: 'docs' },
      traits: { plan: 'pro' },
    });
    assert.deepEqual(message.properties, { url: 'https://x.test/a', title: 'A', referrer: 'https://r.test', path: '/a', section: 'docs' });
    assert.deepEqual(message.traits, { plan: 'pro' });
  });
});

describe('normalizeMessage: numeric ids become strings', () => {
  const cases: [string, Record<string, unknown>, Partial<NormalizedMessage>][] = [
    ['I01 numeric userId', { type: 'identify', userId: 12345 }, { userId: '12345' }],
    ['I02 numeric anonymousId', { type: 'identify', anonymousId: 0 }, { anonymousId: '0' }],
    ['I03 numeric groupId', { type: 'group', userId: 1, groupId: 42 }, { userId: '1', groupId: '42' }],
    ['I04 numeric previousId', { type: 'alias', userId: 2, previousId: 1 }, { userId: '2', previousId: '1' }],
    [
      'I05 negative ids, and integers written with an exponent or a zero fraction',
      { type: 'identify', userId: -15, anonymousId: JSON.parse('1e2') },
      { userId: '-15', anonymousId: '100' },
    ],
    [
      'I06 the largest safe integers',
      { type: 'group', userId: 9007199254740991, groupId: -9007199254740991 },
      { userId: '9007199254740991', groupId: '-9007199254740991' },
    ],
  ];
  for (const [name, raw, expected] of cases) {
    test(name, () => {
      const message = ok(raw);
      for (const [key, value] of Object.entries(expected)) assert.equal(message[key], value, key);
    });
  }
});

describe('normalizeMessage: a numeric id that is not a safe integer is rejected, not rounded or merged with another', () => {
  // Parsed from the wire: 9007199254740993 and 9007199254740992 both become 2^53.
  const [sent, neighbour] = JSON.parse('[9007199254740993, 9007199254740992]') as number[];
  assert.equal(sent, neighbour, 'the premise: JSON.parse made the two ids one number');
  const cases: [string, Record<string, unknown>, string][] = [
    ['U01 userId 2^53 + 1', { type: 'identify', userId: sent }, '`userId`'],
    ['U02 userId 2^53', { type: 'identify', userId: neighbour }, '`userId`'],
    ['U03 anonymousId below -(2^53 - 1)', { type: 'identify', anonymousId: -(2 ** 53) }, '`anonymousId`'],
    ['U04 groupId 1e21', { type: 'group', userId: 'u1', groupId: JSON.parse('1e21') }, '`groupId`'],
    ['U05 previousId 2^64', { type: 'alias', userId: 'u1', previousId: 2 ** 64 }, '`previousId`'],
    ['U06 userId 1.5', { type: 'identify', userId: JSON.parse('1.5') }, '`userId`'],
    ['U07 userId -0.25', { type: 'identify', userId: JSON.parse('-0.25') }, '`userId`'],
    ['U08 anonymousId 1.25e1, an exponent that leaves a fraction', { type: 'identify', anonymousId: JSON.parse('1.25e1') }, '`anonymousId`'],
    ['U09 groupId 5e-1', { type: 'group', userId: 'u1', groupId: JSON.parse('5e-1') }, '`groupId`'],
    ['U10 previousId 123.456', { type: 'alias', userId: 'u1', previousId: JSON.parse('123.456') }, '`previousId`'],
  ];
  for (const [name, raw, fragment] of cases) {
    test(name, () => {
      const result = rejected(raw);
      assert.equal(result.code, 'unsafe_numeric_id');
      assert.ok(result.message.includes(fragment), result.message);
    });
  }
});

describe('normalizeMessage: timestamps and clock-skew correction', () => {
  // [case, message timestamp fields, envelope sentAt, expected timestamp, originalTimestamp, sentAt]
  type Row = [string, Record<string, string>, string | undefined, string, string | undefined, string | undefined];
  const cases: Row[] = [
    ['T01 no client time: timestamp is receivedAt', {}, undefined, receivedAt, undefined, undefined],
    [
      'T02 timestamp only: used as sent',
      { timestamp: '2024-01-02T03:00:00.000Z' },
      undefined,
      '2024-01-02T03:00:00.000Z',
      '2024-01-02T03:00:00.000Z',
      undefined,
    ],
    [
      'T03 timestamp and sentAt: receivedAt - (sentAt - timestamp)',
      { timestamp: '2024-01-02T03:00:00.000Z', sentAt: '2024-01-02T03:00:10.000Z' },
      undefined,
      '2024-01-02T03:03:55.678Z',
      '2024-01-02T03:00:00.000Z',
      '2024-01-02T03:00:10.000Z',
    ],
    [
      'T04 the envelope sentAt applies when the message has none',
      { timestamp: '2024-01-02T03:00:00.000Z' },
      '2024-01-02T03:00:10.000Z',
      '2024-01-02T03:03:55.678Z',
      '2024-01-02T03:00:00.000Z',
      '2024-01-02T03:00:10.000Z',
    ],
    [
      'T05 the message sentAt wins over the envelope',
      { timestamp: '2024-01-02T03:00:00.000Z', sentAt: '2024-01-02T03:00:01.000Z' },
      '2024-01-02T03:00:10.000Z',
      '2024-01-02T03:04:04.678Z',
      '2024-01-02T03:00:00.000Z',
      '2024-01-02T03:00:01.000Z',
    ],
    [
      'T06 analytics-go v2: -0700 offsets, no milliseconds',
      { timestamp: '2024-01-01T20:00:00-0700' },
      '2024-01-01T20:00:05-0700',
      '2024-01-02T03:04:00.678Z',
      '2024-01-02T03:00:00.000Z',
      '2024-01-02T03:00:05.000Z',
    ],
    [
      'T07 a client clock an hour fast is corrected',
      { timestamp: '2024-01-02T04:04:00.000Z', sentAt: '2024-01-02T04:04:05.000Z' },
      undefined,
      '2024-01-02T03:04:00.678Z',
      '2024-01-02T04:04:00.000Z',
      '2024-01-02T04:04:05.000Z',
    ],
    [
      'T08 a client clock a day slow is corrected',
      { timestamp: '2024-01-01T03:00:00.000Z', sentAt: '2024-01-01T03:00:30.000Z' },
      undefined,
      '2024-01-02T03:03:35.678Z',
      '2024-01-01T03:00:00.000Z',
      '2024-01-01T03:00:30.000Z',
    ],
    [
      'T09 sentAt without a timestamp: timestamp is receivedAt',
      { sentAt: '2024-01-02T03:00:00Z' },
      undefined,
      receivedAt,
      undefined,
      '2024-01-02T03:00:00.000Z',
    ],
    [
      'T10 originalTimestamp alone (RudderStack SDKs) is the client time',
      { originalTimestamp: '2024-01-02T03:00:00.000Z', sentAt: '2024-01-02T03:00:10.000Z' },
      undefined,
      '2024-01-02T03:03:55.678Z',
      '2024-01-02T03:00:00.000Z',
      '2024-01-02T03:00:10.000Z',
    ],
    [
      'T11 timestamp wins over originalTimestamp',
      { timestamp: '2024-01-02T03:00:00.000Z', originalTimestamp: '2020-01-01T00:00:00.000Z' },
      undefined,
      '2024-01-02T03:00:00.000Z',
      '2024-01-02T03:00:00.000Z',
      undefined,
    ],
    [
      'T12 fractional microseconds are truncated before the arithmetic',
      { timestamp: '2024-01-02T03:00:00.123999Z', sentAt: '2024-01-02T03:00:00.223999Z' },
      undefined,
      '2024-01-02T03:04:05.578Z',
      '2024-01-02T03:00:00.123Z',
      '2024-01-02T03:00:00.223Z',
    ],
    [
      'T13 +05:30 with no milliseconds',
      { timestamp: '2024-01-02T08:30:00+05:30' },
      undefined,
      '2024-01-02T03:00:00.000Z',
      '2024-01-02T03:00:00.000Z',
      undefined,
    ],
    [
      'T14 no offset is UTC',
      { timestamp: '2024-01-02T03:00:00', sentAt: '2024-01-02 03:00:02' },
      undefined,
      '2024-01-02T03:04:03.678Z',
      '2024-01-02T03:00:00.000Z',
      '2024-01-02T03:00:02.000Z',
    ],
    ['T15 a client-sent receivedAt is replaced by the server clock', { receivedAt: '1999-01-01T00:00:00Z' }, undefined, receivedAt, undefined, undefined],
  ];
  for (const [name, times, envelopeSentAt, timestamp, originalTimestamp, sentAt] of cases) {
    test(name, () => {
      const envelope: Envelope = envelopeSentAt === undefined ? {} : { sentAt: envelopeSentAt };
      const message = ok({ ...track, ...times }, envelope);
      assert.equal(message.timestamp, timestamp, 'timestamp');
      assert.equal(message.originalTimestamp, originalTimestamp, 'originalTimestamp');
      assert.equal(message.sentAt, sentAt, 'sentAt');
      assert.equal(message.receivedAt, receivedAt, 'receivedAt');
    });
  }

  test('T16 the envelope sentAt of one batch does not leak into the next', () => {
    const first = ok({ ...track, timestamp: '2024-01-02T03:00:00Z' }, { sentAt: '2024-01-02T03:00:10Z' });
    const second = ok({ ...track, timestamp: '2024-01-02T03:00:00Z' }, { sentAt: '2024-01-02T03:00:20Z' });
    const third = ok({ ...track, timestamp: '2024-01-02T03:00:00Z' }, {});
    assert.equal(first.timestamp, '2024-01-02T03:03:55.678Z');
    assert.equal(second.timestamp, '2024-01-02T03:03:45.678Z');
    assert.equal(third.timestamp, '2024-01-02T03:00:00.000Z');
  });
});

describe('normalizeMessage: enrichment', () => {
  test('E01 envelope context and integrations are merged, the message winning at the top level', () => {
    const envelope: Envelope = {
      context: { library: { name: 'analytics-go', version: '2.1.1' }, locale: 'en-US', app: { name: 'a' } },
      integrations: { All: false, Webhooks: true },
    };
    const message = ok({ ...track, context: { locale: 'fr-FR', app: { build: '7' } }, integrations: { Webhooks: false, Other: true } }, envelope);
    assert.deepEqual(message.context, {
      library: { name: 'analytics-go', version: '2.1.1' },
      locale: 'fr-FR',
      // Top-level keys only: the message's app replaces the envelope's, it is not deep-merged.
      app: { build: '7' },
      ip: '203.0.113.7',
    });
    assert.deepEqual(message.integrations, { All: false, Webhooks: false, Other: true });
  });

  test('E02 a message library replaces the envelope library whole', () => {
    const message = ok({ ...track, context: { library: { name: 'custom' } } }, { context: { library: { name: 'analytics-go', version: '2.1.1' } } });
    assert.deepEqual(message.context.library, { name: 'custom' });
  });

  test('E03 neither the envelope nor the raw message is modified', () => {
    const envelope: Envelope = { context: { locale: 'en' }, integrations: { All: true } };
    const raw = { ...track, context: { locale: 'fr' }, integrations: { Webhooks: true } };
    const envelopeBefore = structuredClone(envelope);
    const rawBefore = structuredClone(raw);
    ok(raw, envelope);
    ok(raw, envelope);
    assert.deepEqual(envelope, envelopeBefore);
    assert.deepEqual(raw, rawBefore);
  });

  // [case, message context, meta ip, expected context]
  const ipCases: [string, Record<string, unknown> | undefined, string | null, Record<string, unknown>][] = [
    ['E04 context.ip from the request when absent', undefined, '198.51.100.1', { ip: '198.51.100.1' }],
    ['E05 a client context.ip is kept', { ip: '192.0.2.9' }, '198.51.100.1', { ip: '192.0.2.9' }],
    ['E06 a null context.ip is filled in', { ip: null }, '198.51.100.1', { ip: '198.51.100.1' }],
    ['E07 no request ip: no context.ip', undefined, null, {}],
  ];
  for (const [name, context, ip, expected] of ipCases) {
    test(name, () => {
      const raw = context === undefined ? track : { ...track, context };
      assert.deepEqual(ok(raw, {}, makeMeta(ip)).context, expected);
    });
  }

  test('E08 integrations default to {}', () => {
    assert.deepEqual(ok(track).integrations, {});
  });

  test('E09 messageId: generated when absent, once per message', () => {
    const meta = makeMeta();
    assert.equal(ok(track, {}, meta).messageId, 'gen-1');
    assert.equal(ok(track, {}, meta).messageId, 'gen-2');
    assert.equal(meta.generated, 2);
  });

  test('E10 messageId: a client one is kept and none is generated', () => {
    const meta = makeMeta();
    assert.equal(ok({ ...track, messageId: 'node-next-1-abc' }, {}, meta).messageId, 'node-next-1-abc');
    assert.equal(meta.generated, 0);
  });

  test('E11 unknown top-level members are kept, writeKey is dropped', () => {
    const message = ok({ ...track, channel: 'server', version: 2, nested: { a: [1] }, nothing: null, writeKey: 'secret' });
    assert.equal(message.channel, 'server');
    assert.equal(message.version, 2);
    assert.deepEqual(message.nested, { a: [1] });
    assert.equal(message.nothing, null);
    assert.equal('writeKey' in message, false);
  });

  test('E12 a "__proto__" member is kept as data and does not change the prototype', () => {
    const raw: unknown = JSON.parse('{"type":"track","userId":"u1","event":"e","__proto__":{"polluted":true}}');
    const message = ok(raw);
    assert.equal(Object.getPrototypeOf(message), Object.prototype);
    assert.equal((message as { polluted?: unknown }).polluted, undefined);
    assert.ok(ok(raw) !== message);
    assert.ok(JSON.stringify(message).includes('"__proto__":{"polluted":true}'));
  });

  test('E13 the stored JSON, member by member and in order', () => {
    const result = normalizeMessage(
      {
        extra: 1,
        type: 'track',
        event: 'Order Completed',
        properties: { total: 9.5 },
        userId: 42,
        anonymousId: 'a1',
        timestamp: '2024-01-01T20:00:00-0700',
        messageId: 'm1',
        writeKey: 'secret',
      },
      { sentAt: '2024-01-01T20:00:05-0700', context: { library: { name: 'analytics-go', version: '2.1.1' } }, integrations: { Webhooks: true } },
      makeMeta(),
    );
    assert.ok(result.ok);
    assert.equal(
      result.json,
      '{"type":"track","messageId":"m1","userId":"42","anonymousId":"a1","event":"Order Completed",' +
        '"properties":{"total":9.5},"context":{"library":{"name":"analytics-go","version":"2.1.1"},"ip":"203.0.113.7"},' +
        '"integrations":{"Webhooks":true},"timestamp":"2024-01-02T03:04:00.678Z","originalTimestamp":"2024-01-02T03:00:00.000Z",' +
        '"sentAt":"2024-01-02T03:00:05.000Z","receivedAt":"2024-01-02T03:04:05.678Z","extra":1}',
    );
  });
});

describe('normalizeMessage: the 32 KB limit, measured on the normalised JSON', () => {
  /** Bytes of the normalised message whose `properties.pad` is `pad`. */
  function bytesWith(pad: string): number {
    const result = normalizeMessage({ ...track, messageId: 'm', properties: { pad } }, {}, makeMeta());
    assert.ok(result.ok);
    return Buffer.byteLength(result.json, 'utf8');
  }
  const base = bytesWith('');

  // [case, padding, accepted]
  const cases: [string, string, boolean][] = [
    ['S01 exactly 32,768 bytes of ASCII', 'x'.repeat(maxMessageBytes - base), true],
    ['S02 32,769 bytes of ASCII', 'x'.repeat(maxMessageBytes - base + 1), false],
    // € is 3 bytes in UTF-8 but one UTF-16 unit: a length check alone would let these through.
    ['S03 exactly 32,768 bytes with 3-byte characters', '€'.repeat(10_000) + 'x'.repeat(maxMessageBytes - base - 30_000), true],
    ['S04 32,769 bytes with 3-byte characters', '€'.repeat(10_000) + 'x'.repeat(maxMessageBytes - base - 30_000 + 1), false],
    ['S05 4-byte characters (emoji) count as 4', '😀'.repeat(Math.floor((maxMessageBytes - base) / 4) + 1), false],
  ];
  for (const [name, pad, accepted] of cases) {
    test(name, () => {
      const result = normalizeMessage({ ...track, messageId: 'm', properties: { pad } }, {}, makeMeta());
      assert.equal(result.ok, accepted, result.ok ? `accepted at ${Buffer.byteLength(result.json)} bytes` : result.message);
      if (result.ok) assert.equal(Buffer.byteLength(result.json, 'utf8'), maxMessageBytes);
      else assert.equal(result.code, 'message_too_large');
    });
  }

  test('S06 enrichment counts: a message that fits as sent can be refused once the envelope context is merged', () => {
    const pad = 'x'.repeat(maxMessageBytes - base);
    const raw = { ...track, messageId: 'm', properties: { pad } };
    assert.equal(normalizeMessage(raw, {}, makeMeta()).ok, true);
    const result = normalizeMessage(raw, { context: { library: { name: 'analytics-go' } } }, makeMeta());
    assert.equal(result.ok ? 'ok' : result.code, 'message_too_large');
  });
});

describe('normalizeMessage: depth', () => {
  test('DP1 a message exactly 32 levels deep is accepted', () => {
    // message (1) > properties (2) > 30 more levels
    assert.equal(normalizeMessage({ ...track, properties: nest(31) }, {}, makeMeta()).ok, true);
  });

  test('DP2 33 levels are refused', () => {
    const result = normalizeMessage({ ...track, properties: nest(32) }, {}, makeMeta());
    assert.equal(result.ok ? 'ok' : result.code, 'too_deeply_nested');
  });

  test('DP3 deep arrays count as levels too', () => {
    let deep: unknown = [];
    for (let i = 1; i < 32; i++) deep = [deep];
    const result = normalizeMessage({ ...track, properties: { list: deep } }, {}, makeMeta());
    assert.equal(result.ok ? 'ok' : result.code, 'too_deeply_nested');
  });
});

describe('readEnvelope: /v1/batch', () => {
  test('B01 a batch with every envelope member', () => {
    const m = { ...track };
    const result = readEnvelope(
      { batch: [m], sentAt: '2024-01-02T03:04:05Z', context: { library: { name: 'x' } }, integrations: { All: true }, writeKey: 'wk', messageId: 'ignored' },
      'batch',
    );
    assert.deepEqual(result, {
      ok: true,
      writeKey: 'wk',
      envelope: { sentAt: '2024-01-02T03:04:05Z', context: { library: { name: 'x' } }, integrations: { All: true } },
      messages: [m],
    });
    assert.ok(result.ok && result.messages[0] === m, 'messages are passed through, not copied');
  });

  test('B02 a bare batch: no writeKey member, empty envelope', () => {
    const result = readEnvelope({ batch: [] }, 'batch');
    assert.deepEqual(result, { ok: true, envelope: {}, messages: [] });
    assert.ok(result.ok && !('writeKey' in result));
  });

  test('B03 null envelope members count as absent', () => {
    assert.deepEqual(readEnvelope({ batch: [], sentAt: null, context: null, integrations: null, writeKey: null }, 'batch'), {
      ok: true,
      envelope: {},
      messages: [],
    });
  });

  test(`B04 ${maxBatchMessages} messages are accepted`, () => {
    const result = readEnvelope({ batch: Array.from({ length: maxBatchMessages }, () => track) }, 'batch');
    assert.ok(result.ok && result.messages.length === maxBatchMessages);
  });

  // [case, body, code, text the message must contain]
  const refusals: [string, unknown, ErrorCode, string][] = [
    ['B05 not an object', 'batch', 'invalid_batch', '`batch`'],
    ['B06 an array body', [track], 'invalid_batch', '`batch`'],
    ['B07 null', null, 'invalid_batch', '`batch`'],
    ['B08 no batch member', { messages: [] }, 'invalid_batch', '`batch`'],
    ['B09 batch not an array', { batch: { 0: track } }, 'invalid_batch', '`batch`'],
    ['B10 2,501 messages', { batch: Array.from({ length: maxBatchMessages + 1 }, () => track) }, 'too_many_messages', '2501'],
    ['B11 sentAt a number', { batch: [], sentAt: 1704164645678 }, 'invalid_batch', '`sentAt`'],
    ['B12 sentAt not ISO', { batch: [], sentAt: 'now' }, 'invalid_timestamp', '`sentAt`'],
    ['B13 context an array', { batch: [], context: [] }, 'invalid_batch', '`context`'],
    ['B14 context a string', { batch: [], context: 'ctx' }, 'invalid_batch', '`context`'],
    ['B15 integrations a string', { batch: [], integrations: 'Webhooks' }, 'invalid_batch', '`integrations`'],
    ['B16 writeKey a number', { batch: [], writeKey: 1 }, 'invalid_batch', '`writeKey`'],
    ['B17 context 32 levels deep (33 once inside a message)', { batch: [], context: nest(32) }, 'too_deeply_nested', '`context`'],
    ['B18 integrations 32 levels deep', { batch: [], integrations: nest(32) }, 'too_deeply_nested', '`integrations`'],
  ];
  for (const [name, body, code, text] of refusals) {
    test(`${name} -> ${code}`, () => {
      const result = readEnvelope(body, 'batch');
      assert.ok(!result.ok);
      assert.equal(result.code, code);
      assert.ok(result.message.includes(text), result.message);
    });
  }

  test('B19 an envelope context 31 levels deep fits: every message stays within 32', () => {
    const result = readEnvelope({ batch: [track], context: nest(31) }, 'batch');
    assert.ok(result.ok);
    const normalised = normalizeMessage(result.messages[0], result.envelope, makeMeta());
    assert.equal(normalised.ok, true);
  });

  test("B20 a bad message is not the envelope's business: it is passed on for normalizeMessage to refuse", () => {
    const result = readEnvelope({ batch: [track, 'junk', { userId: 'u1' }, { type: 'track' }] }, 'batch');
    assert.ok(result.ok);
    const outcomes = result.messages.map((m) => {
      const r = normalizeMessage(m, result.envelope, makeMeta());
      return r.ok ? 'ok' : r.code;
    });
    assert.deepEqual(outcomes, ['ok', 'invalid_message', 'invalid_type', 'missing_identity']);
  });
});

describe('readEnvelope: single-call routes', () => {
  test('R01 the body is the message; its type defaults to the route', () => {
    const body = { userId: 'u1', event: 'Signed Up' };
    const result = readEnvelope(body, 'track');
    assert.deepEqual(result, { ok: true, envelope: {}, messages: [{ userId: 'u1', event: 'Signed Up', type: 'track' }] });
    assert.equal('type' in body, false, 'the body is not modified');
  });

  test('R02 the route wins over a conflicting type', () => {
    const body = { type: 'identify', userId: 'u1', event: 'Signed Up' };
    const result = readEnvelope(body, 'track');
    assert.ok(result.ok);
    assert.equal((result.messages[0] as { type: string }).type, 'track');
    assert.equal(body.type, 'identify', 'the body is not modified');
  });

  test('R03 a matching type passes the body through', () => {
    const body = { type: 'page', userId: 'u1' };
    const result = readEnvelope(body, 'page');
    assert.ok(result.ok && result.messages[0] === body);
  });

  test('R04 writeKey is read from the body and dropped from the stored message', () => {
    const result = readEnvelope({ userId: 'u1', traits: {}, writeKey: 'wk' }, 'identify');
    assert.ok(result.ok);
    assert.equal(result.writeKey, 'wk');
    const normalised = normalizeMessage(result.messages[0], result.envelope, makeMeta());
    assert.ok(normalised.ok);
    assert.equal(normalised.json.includes('wk'), false);
  });

  test('R05 sentAt in the body corrects the timestamp', () => {
    const result = readEnvelope({ userId: 'u1', event: 'e', timestamp: '2024-01-02T03:00:00Z', sentAt: '2024-01-02T03:00:10Z' }, 'track');
    assert.ok(result.ok);
    const normalised = normalizeMessage(result.messages[0], result.envelope, makeMeta());
    assert.ok(normalised.ok);
    assert.equal(normalised.message.timestamp, '2024-01-02T03:03:55.678Z');
  });

  // [case, body, code, text]
  const refusals: [string, unknown, ErrorCode, string][] = [
    ['R06 a string body', 'track', 'invalid_message', '/v1/track'],
    ['R07 an array body', [track], 'invalid_message', '/v1/track'],
    ['R08 writeKey a number', { userId: 'u1', event: 'e', writeKey: 7 }, 'invalid_field', '`writeKey`'],
  ];
  for (const [name, body, code, text] of refusals) {
    test(`${name} -> ${code}`, () => {
      const result = readEnvelope(body, 'track');
      assert.ok(!result.ok);
      assert.equal(result.code, code);
      assert.ok(result.message.includes(text), result.message);
    });
  }
});
