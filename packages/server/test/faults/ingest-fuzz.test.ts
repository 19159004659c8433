/**
 * Property-based fuzzing of the ingestion API over real HTTP: fast-check generates hostile
 * requests and sends them one at a time, so that the store's counts before and after are
 * attributable to that request.
 *
 * The oracle does not come from the server. Every request is built from parts that carry
 * their own expected outcome: each message starts valid for its type and has at most one
 * thing broken (a field of the wrong type, an id JSON cannot hold exactly, a missing
 * identity, a bad messageId or timestamp, nesting or size past the limits, not an object
 * at all), and the generator records the code that breakage must earn; the envelope, the
 * Authorization header, the Content-Encoding and the body's shape (garbage bytes, raw deep
 * nesting, raw huge numbers, oversize) likewise. {@link expectedOutcome} applies the
 * documented order of checks to those parts, and the test compares the server's answer with
 * it: the status and code of a refused request; for an accepted one, exactly which messages
 * were rejected and with which code. `Content-Type` is drawn at random and never matters.
 *
 * Invariants beside the oracle, per request: never a 5xx; a 4xx stores no event and no
 * delivery; a 200 stores exactly the accepted new messages (nothing half-stored) and counts
 * every rejection. At the end the server still answers /health. 2,000 generated requests by
 * default (plus the ~20 % sent twice), 10,000 with FERRY_FAULTS_LONG=1: 10,000 serial HTTP
 * round trips plus a stats read each take too long for the default `npm test`.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination, writeKey, type TestFerry } from '../helpers/ferry.js';
import { basicAuth, faultSeed, longForm } from './support.js';

const numRuns = longForm ? 10_000 : 2_000;
/**
 * A safety valve for the default form on a crowded runner: stop generating after this long
 * (the count actually run is printed). The long form always runs all 10,000.
 */
const timeLimitMs = longForm ? undefined : 45_000;
const callTypes = ['identify', 'track', 'page', 'screen', 'group', 'alias'] as const;
type CallType = (typeof callTypes)[number];

/** The documented limits the model applies (docs/ingestion-api.md). */
const limits = {
  /** Bytes of a body after decompression. */
  requestBytes: 512_000,
  /** Bytes of a body as sent: the limit plus 1 KB of room for gzip framing. */
  rawRequestBytes: 512_000 + 1024,
  requestDepth: 128,
  messageDepth: 32,
  /** The batch `context` is merged one level below the message. */
  envelopeDepth: 31,
  batchMessages: 2_500,
};
/** Write keys the server knows (the test config's two sources). */
const knownKeys = new Set([writeKey, 'other-write-key']);

/** What the server must make of a message: accept it, or reject it with this code. */
type Verdict = 'ok' | string;

// ---------------------------------------------------------------------------------------------
// Messages: valid for their type, then at most one thing broken, with the code it must earn.

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const smallObject = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const isoTimestamp = fc
  .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .chain((d) =>
    fc.constantFrom(d.toISOString(), d.toISOString().replace(/\.\d{3}Z$/, 'Z'), d.toISOString().replace('Z', '-07:00'), d.toISOString().slice(0, 10)),
  );
/** An optional known field: often absent, sometimes `null` (which counts as absent). */
const optional = <T>(arb: fc.Arbitrary<T>) =>
  fc.option(fc.oneof({ weight: 4, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) }), { nil: undefined, freq: 2 });
/** `levels` nested containers, the outermost an object, mixing objects and arrays inside. */
function nest(levels: number): Record<string, unknown> {
  let v: unknown = 'deep';
  for (let i = 1; i < levels; i++) v = i % 2 ? [v] : { k: v };
  return { k: v };
}

function validMessage(type: CallType): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .record({
      identity: type === 'alias' ? fc.constantFrom('user', 'both') : fc.constantFrom('user', 'anon', 'both'),
      userId: fc.oneof(
        fc.string({ minLength: 1, maxLength: 12 }),
        fc.integer({ min: -1_000_000, max: 1_000_000 }),
        fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER),
      ),
      anonymousId: fc.string({ minLength: 1, maxLength: 12 }),
      event: fc.string({ minLength: 1, maxLength: 12 }),
      name: optional(fc.string({ maxLength: 12 })),
      category: optional(fc.string({ maxLength: 12 })),
      groupId: fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.integer()),
      previousId: fc.string({ minLength: 1, maxLength: 12 }),
      properties: optional(smallObject),
      traits: optional(smallObject),
      context: optional(smallObject),
      integrations: optional(fc.oneof(fc.constantFrom({}, { All: false }, { Webhooks: false }, { All: false, Webhooks: true }), smallObject)),
      timestamp: optional(isoTimestamp),
      originalTimestamp: optional(isoTimestamp),
      sentAt: optional(isoTimestamp),
      // A small pool, so that duplicates within one batch (and across a resend) occur.
      messageId: fc.option(fc.oneof(fc.uuid(), fc.constantFrom('dup', 'dup-2')), { nil: undefined }),
      extra: optional(fc.jsonValue({ maxDepth: 2 })),
      writeKey: fc.option(fc.constantFrom(writeKey, 'other-write-key', 'nope'), { nil: undefined, freq: 3 }),
    })
    .map(({ identity, userId, anonymousId, event, name, category, groupId, previousId, ...rest }) => {
      const m: Record<string, unknown> = { type };
      if (identity !== 'anon') m['userId'] = userId;
      if (identity !== 'user') m['anonymousId'] = anonymousId;
      if (type === 'track') m['event'] = event;
      if (type === 'page' || type === 'screen') Object.assign(m, name === undefined ? {} : { name }, category === undefined ? {} : { category });
      if (type === 'group') m['groupId'] = groupId;
      if (type === 'alias') m['previousId'] = previousId;
      for (const [k, v] of Object.entries(rest)) if (v !== undefined) m[k] = v;
      return m;
    });
}

/** A copy of `m` with `key` set to `value`, or removed when `value` is undefined. */
function withField(m: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy = { ...m };
  if (value === undefined) delete copy[key];
  else copy[key] = value;
  return copy;
}

/** One message as sent, with the verdict its generator knows it must get. */
interface MessageCase {
  value: unknown;
  verdict: Verdict;
  /** What was broken, for failure messages. */
  broken: string;
}
type Breakage = (m: Record<string, unknown>) => MessageCase;

const absentId = fc.constantFrom(undefined, null, '');
const idField = fc.constantFrom('userId', 'anonymousId', 'groupId', 'previousId');

/** The things a generator can break in a message of `type`; on a single-call path the URL sets the type. */
function breakages(type: CallType, single: boolean): fc.Arbitrary<Breakage> {
  const broke = (value: unknown, verdict: Verdict, broken: string): MessageCase => ({ value, verdict, broken });
  return fc.oneof(
    { weight: 10, arbitrary: fc.constant<Breakage>((m) => broke(m, 'ok', 'nothing')) },
    {
      weight: 1,
      arbitrary: fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 })).map(
        (v): Breakage =>
          () =>
            broke(v, 'invalid_message', 'not an object'),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.oneof(fc.constantFrom('Track', 'purchase', '', 'identify '), fc.integer(), fc.constant(null), fc.constant(undefined)).map(
        (v): Breakage =>
          (m) =>
            broke(withField(m, 'type', v), single ? 'ok' : 'invalid_type', `type ${JSON.stringify(v)}`),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(idField, fc.oneof(fc.boolean(), fc.array(fc.integer(), { maxLength: 2 }), smallObject)).map(
        ([f, v]): Breakage =>
          (m) =>
            broke(withField(m, f, v), 'invalid_field', `${f} of the wrong type`),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(idField, fc.constantFrom(2 ** 53, -(2 ** 53), 2 ** 53 + 2, 1e21, 2 ** 64, -1e300, 1.5, -0.25, 1e-7)).map(
        ([f, v]): Breakage =>
          (m) =>
            broke(withField(m, f, v), 'unsafe_numeric_id', `${f} ${v}`),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('event', 'name', 'category'), fc.oneof(fc.integer(), fc.boolean(), fc.array(fc.string(), { maxLength: 2 }), smallObject))
        .map(
          ([f, v]): Breakage =>
            (m) =>
              broke(withField(m, f, v), 'invalid_field', `${f} of the wrong type`),
        ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom('properties', 'traits', 'context', 'integrations'),
          fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.array(fc.integer(), { maxLength: 2 })),
        )
        .map(
          ([f, v]): Breakage =>
            (m) =>
              broke(withField(m, f, v), 'invalid_field', `${f} of the wrong type`),
        ),
    },
    {
      weight: 1,
      arbitrary: absentId.map(
        (v): Breakage =>
          (m) =>
            broke(withField(withField(m, 'userId', v), 'anonymousId', v), 'missing_identity', 'no identity'),
      ),
    },
    {
      weight: 1,
      arbitrary: absentId.map((v): Breakage => (m) => {
        if (type === 'track') return broke(withField(m, 'event', v), 'missing_event', 'no event');
        if (type === 'group') return broke(withField(m, 'groupId', v), 'missing_group_id', 'no groupId');
        if (type === 'alias') return broke(withField(m, 'previousId', v), 'missing_previous_id', 'no previousId');
        return broke(m, 'ok', 'nothing (no field of its own)');
      }),
    },
    {
      weight: type === 'alias' ? 1 : 0,
      arbitrary: fc.constant<Breakage>((m) =>
        broke(withField(withField(m, 'userId', undefined), 'anonymousId', 'anon-1'), 'missing_identity', 'alias without userId'),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.constantFrom('', 'x'.repeat(101)),
          fc.integer(),
          loneSurrogate.map((c) => `id-${c}`),
          smallObject,
        )
        .map(
          (v): Breakage =>
            (m) =>
              broke(withField(m, 'messageId', v), 'invalid_message_id', `messageId ${JSON.stringify(v)}`),
        ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom('timestamp', 'originalTimestamp', 'sentAt'),
          fc.oneof(fc.constantFrom('yesterday', '2026-02-30T00:00:00Z', ''), fc.integer(), fc.boolean()),
        )
        .map(
          ([f, v]): Breakage =>
            (m) =>
              broke(withField(m, f, v), 'invalid_timestamp', `${f} ${JSON.stringify(v)}`),
        ),
    },
    {
      // Around the limit: the message is level 1, so `properties` may nest 31 levels.
      weight: 1,
      arbitrary: fc.integer({ min: limits.messageDepth - 4, max: limits.messageDepth + 8 }).map(
        (n): Breakage =>
          (m) =>
            broke(withField(m, 'properties', nest(n)), 1 + n > limits.messageDepth ? 'too_deeply_nested' : 'ok', `properties nested ${n} levels`),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 33_000, max: 40_000 }).map(
        (n): Breakage =>
          (m) =>
            broke(withField(m, 'properties', { pad: 'x'.repeat(n) }), 'message_too_large', `a ${n}-byte property`),
      ),
    },
  );
}

function messageCase(type: CallType, single: boolean): fc.Arbitrary<MessageCase> {
  return fc.tuple(validMessage(type), breakages(type, single)).map(([m, breakIt]) => breakIt(m));
}
const anyMessageCase = fc.constantFrom(...callTypes).chain((type) => messageCase(type, false));

// ---------------------------------------------------------------------------------------------
// Envelopes, bodies, headers: each with what it must cause.

/** A batch envelope (every member but `batch`), with the request-level code it must earn. */
const envelopeCase: fc.Arbitrary<{ envelope: Record<string, unknown>; batch?: unknown; verdict: Verdict }> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .record(
        {
          sentAt: fc.oneof(isoTimestamp, fc.constant(null)),
          context: fc.oneof(smallObject, fc.constant({ library: { name: 'analytics-go', version: '2.1.1' } }), fc.constant(null)),
          integrations: fc.oneof(smallObject, fc.constant({ Webhooks: false })),
          writeKey: fc.constantFrom(writeKey, 'other-write-key', 'nope'),
        },
        { requiredKeys: [] },
      )
      .map((envelope) => ({ envelope, verdict: 'ok' })),
  },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.boolean(), smallObject).map((sentAt) => ({ envelope: { sentAt }, verdict: 'invalid_batch' })) },
  { weight: 1, arbitrary: fc.constantFrom('yesterday', '2026-13-01').map((sentAt) => ({ envelope: { sentAt }, verdict: 'invalid_timestamp' })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('context', 'integrations'), fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.array(fc.integer(), { maxLength: 2 })))
      .map(([f, v]) => ({ envelope: { [f]: v }, verdict: 'invalid_batch' })),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: limits.envelopeDepth - 2, max: limits.envelopeDepth + 4 }).map((n) => ({
      envelope: { context: nest(n) },
      verdict: n > limits.envelopeDepth ? 'too_deeply_nested' : 'ok',
    })),
  },
  { weight: 1, arbitrary: fc.integer().map((k) => ({ envelope: { writeKey: k }, verdict: 'invalid_batch' })) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null), fc.constant(undefined), smallObject)
      .map((batch) => ({ envelope: {}, batch, verdict: 'invalid_batch' })),
  },
);

/** How the body is made, with what its shape must cause. */
type BodyCase =
  | { kind: 'batch'; path: string; envelope: Record<string, unknown>; envelopeVerdict: Verdict; batch: unknown; messages?: MessageCase[] }
  | { kind: 'single'; path: string; message: MessageCase }
  /** Bytes that are not a JSON request; the request must be refused, with whatever 4xx code fits first. */
  | { kind: 'garbage'; path: string; bytes: Buffer }
  /** A raw JSON text that JSON.stringify could not produce; `verdict` of its one message or of the request. */
  | { kind: 'raw'; path: string; text: string; requestVerdict: Verdict; messageVerdict: Verdict };

const batchPath = fc.constantFrom('/v1/batch', '/v1/import');

const batchBody: fc.Arbitrary<BodyCase> = fc
  .tuple(
    batchPath,
    envelopeCase,
    fc.oneof({ weight: 30, arbitrary: fc.array(anyMessageCase, { maxLength: 12 }) }, { weight: 1, arbitrary: fc.constant('too many' as const) }),
  )
  .map(([path, e, messages]) => {
    if (e.verdict !== 'ok' || 'batch' in e)
      return { kind: 'batch', path, envelope: e.envelope, envelopeVerdict: e.verdict, batch: 'batch' in e ? e.batch : [] };
    if (messages === 'too many') {
      const batch = Array.from({ length: limits.batchMessages + 1 }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'E' }));
      return { kind: 'batch', path, envelope: e.envelope, envelopeVerdict: 'too_many_messages', batch };
    }
    return { kind: 'batch', path, envelope: e.envelope, envelopeVerdict: 'ok', batch: messages.map((m) => m.value), messages };
  });

const singleBody: fc.Arbitrary<BodyCase> = fc
  .constantFrom(...callTypes)
  .chain((type) => messageCase(type, true).map((message): BodyCase => ({ kind: 'single', path: `/v1/${type}`, message })));

const garbageBody: fc.Arbitrary<BodyCase> = fc
  .tuple(
    fc.constantFrom('/v1/batch', '/v1/track'),
    fc.oneof(
      // A valid body cut short, with a control character put in, or with a trailing brace.
      fc
        .tuple(fc.constant(JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'e' }] })), fc.nat(), fc.constantFrom('cut', 'flip', 'trailing'))
        .map(([text, at, how]) => {
          const i = at % text.length;
          return Buffer.from(how === 'cut' ? text.slice(0, i) : how === 'flip' ? text.slice(0, i) + '\u0001' + text.slice(i + 1) : text + ' }');
        }),
      fc.constantFrom('', 'NaN', '{"batch":[', '\ufeff{"batch":[]}', "{'batch':[]}", 'batch=1').map((t) => Buffer.from(t)),
      // JSON in UTF-16 (with its byte-order mark) is not UTF-8 JSON.
      fc.constant(Buffer.from('\ufeff{"batch":[]}', 'utf16le')),
      // Bytes that cannot start a JSON value.
      fc.uint8Array({ minLength: 1, maxLength: 200 }).map((b) => Buffer.concat([Buffer.from('\u0001'), b])),
    ),
  )
  .map(([path, bytes]): BodyCase => ({ kind: 'garbage', path, bytes }));

/** Raw texts: deep nesting far past every limit, numbers past what JSON.parse keeps exactly, oversize bodies. */
const rawBody: fc.Arbitrary<BodyCase> = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 5_000 }), fc.constantFrom('{"a":', '[')).map(([d, open]): BodyCase => {
    const close = open === '[' ? ']' : '}';
    // body 1, batch 2, message 3, properties 4, then d levels: the message is level 1 of its own count.
    return {
      kind: 'raw',
      path: '/v1/batch',
      text: `{"batch":[{"type":"track","userId":"u","event":"e","properties":{"p":${open.repeat(d)}1${close.repeat(d)}}}]}`,
      requestVerdict: 4 + d > limits.requestDepth ? 'too_deeply_nested' : 'ok',
      messageVerdict: 2 + d > limits.messageDepth ? 'too_deeply_nested' : 'ok',
    };
  }),
  fc.tuple(fc.integer({ min: 1, max: 400 }), fc.constantFrom('1', '-1', '1e', '0.')).map(([n, lead]): BodyCase => {
    const token = lead === '1e' ? `1e${n}` : lead + '9'.repeat(n);
    // JSON.parse reads a number token as Number() does; only a safe integer is kept as an id.
    const exact = Number.isSafeInteger(Number(token));
    return {
      kind: 'raw',
      path: '/v1/batch',
      text: `{"batch":[{"type":"track","userId":${token},"event":"e","properties":{"n":${'9'.repeat(n)}}}]}`,
      requestVerdict: 'ok',
      messageVerdict: exact ? 'ok' : 'unsafe_numeric_id',
    };
  }),
  // Over the request limit, or under it with one message far over the message limit.
  fc.constantFrom(520 * 1024, 499 * 1024).map((n): BodyCase => {
    const text = `{"batch":[{"type":"track","userId":"u","event":"e","properties":{"pad":"${'z'.repeat(n)}"}}]}`;
    return {
      kind: 'raw',
      path: '/v1/batch',
      text,
      requestVerdict: text.length > limits.requestBytes ? 'payload_too_large' : 'ok',
      messageVerdict: 'message_too_large',
    };
  }),
);

const body: fc.Arbitrary<BodyCase> = fc.oneof(
  { weight: 10, arbitrary: batchBody },
  { weight: 5, arbitrary: singleBody },
  { weight: 2, arbitrary: garbageBody },
  { weight: 2, arbitrary: rawBody },
);

/** Any label: the body is read as JSON whatever it says. */
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  '*/*',
  '',
  undefined,
);

/** How the body is encoded, and what the encoding alone must cause. */
const contentEncoding = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom(
      { header: undefined, gzip: false, verdict: 'ok' },
      { header: 'identity', gzip: false, verdict: 'ok' },
      { header: '', gzip: false, verdict: 'ok' },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      { header: 'gzip', gzip: true, verdict: 'ok' },
      { header: ' GZIP ', gzip: true, verdict: 'ok' },
      { header: 'x-gzip', gzip: true, verdict: 'ok' },
    ),
  },
  // Labelled gzip, sent plain.
  { weight: 1, arbitrary: fc.constantFrom('gzip', 'x-gzip').map((header) => ({ header, gzip: false, verdict: 'invalid_gzip' })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('br', 'deflate', 'compress', 'gzip, gzip').map((header) => ({ header, gzip: false, verdict: 'unsupported_content_encoding' })),
  },
);

/** The Authorization header: `valid` names a source; `unknown` names none; `fallback` gives no Basic key, so the body's `writeKey` counts. */
const authorization = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .constantFrom(
        basicAuth(writeKey),
        basicAuth('other-write-key'),
        // No colon, and a lower-case scheme: still a Basic key.
        'Basic ' + Buffer.from(writeKey).toString('base64'),
        'basic ' + Buffer.from(`${writeKey}:`).toString('base64'),
      )
      .map((header) => ({ header, kind: 'valid' as const })),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom(basicAuth('nope'), 'Basic ' + 'A'.repeat(8000)),
        fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 }).map((s) => 'Basic ' + Buffer.from(s).toString('base64')),
      )
      .map((header) => {
        // The key is what comes before the first colon; none (empty) leaves the body's key to count.
        const key = Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8').split(':')[0]!;
        return { header, kind: key === '' ? ('fallback' as const) : knownKeys.has(key) ? ('valid' as const) : ('unknown' as const) };
      }),
  },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(undefined, basicAuth(''), 'Basic', 'Basic !!!', 'Bearer ' + writeKey, `Basic ${Buffer.from(`${writeKey}:`).toString('base64')} extra`, ' ')
      .map((header) => ({ header, kind: 'fallback' as const })),
  },
);

const hostileRequest = fc.record({
  body,
  contentType,
  contentEncoding,
  authorization,
  /** Send the same request a second time (a client retrying after a lost answer). */
  repeat: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});
type HostileRequest = typeof hostileRequest extends fc.Arbitrary<infer T> ? T : never;

// ---------------------------------------------------------------------------------------------
// The model: what the server must answer, from what each part of the request was built to cause.

type Expected =
  /** Refused with exactly this status and code; `counted` rejections recorded (a single call's message). */
  | { kind: 'refused'; status: number; code: string; counted: number }
  /** Refused with some 4xx: garbage bytes, whose first failing check the model does not pin. */
  | { kind: 'refused-somehow' }
  /** 200: the batch's messages each accepted or rejected as their verdicts say. */
  | { kind: 'accepted'; verdicts: Verdict[] };

const statusOf: Record<string, number> = {
  unauthorized: 401,
  payload_too_large: 413,
  unsupported_content_encoding: 415,
};
const refused = (code: string, counted = 0): Expected => ({ kind: 'refused', status: statusOf[code] ?? 400, code, counted });

/**
 * The documented order of checks: a Basic key no source has (on the head); the body as sent
 * over the raw limit; the encoding; the bytes as JSON; the body after decompression over the
 * limit; the nesting of the whole body; the key from the body when no Basic key was given;
 * the envelope; each message.
 */
function expectedOutcome(r: HostileRequest, sentBytes: number): Expected {
  if (r.authorization.kind === 'unknown') return refused('unauthorized');
  if (sentBytes > limits.rawRequestBytes) return refused('payload_too_large');
  if (r.contentEncoding.verdict !== 'ok') return refused(r.contentEncoding.verdict);
  const b = r.body;
  if (b.kind === 'garbage') return { kind: 'refused-somehow' };
  if (b.kind === 'raw' && b.requestVerdict !== 'ok') return refused(b.requestVerdict);

  const bodyKey = b.kind === 'batch' ? b.envelope['writeKey'] : b.kind === 'single' ? (b.message.value as { writeKey?: unknown } | null)?.writeKey : undefined;
  const hasSource = r.authorization.kind === 'valid' || (typeof bodyKey === 'string' && knownKeys.has(bodyKey));
  if (b.kind === 'single') {
    const isObject = typeof b.message.value === 'object' && b.message.value !== null && !Array.isArray(b.message.value);
    if (!hasSource) return refused('unauthorized');
    if (!isObject) return refused('invalid_message');
    return b.message.verdict === 'ok' ? { kind: 'accepted', verdicts: ['ok'] } : refused(b.message.verdict, 1);
  }
  if (!hasSource) return refused('unauthorized');
  if (b.kind === 'raw') return { kind: 'accepted', verdicts: [b.messageVerdict] };
  if (b.envelopeVerdict !== 'ok') return refused(b.envelopeVerdict);
  return { kind: 'accepted', verdicts: b.messages!.map((m) => m.verdict) };
}

/** Makes explicit string messageIds of accepted messages unique to this sample, so that counts never mix samples. */
function scoped(b: BodyCase, scope: string): BodyCase {
  const scopeOne = (m: MessageCase): MessageCase => {
    const v = m.value as { messageId?: unknown } | null;
    if (m.verdict !== 'ok' || typeof v !== 'object' || v === null || typeof v.messageId !== 'string') return m;
    return { ...m, value: { ...v, messageId: `${scope}:${v.messageId}` } };
  };
  if (b.kind === 'single') return { ...b, message: scopeOne(b.message) };
  if (b.kind === 'batch' && b.messages) {
    const messages = b.messages.map(scopeOne);
    return { ...b, messages, batch: messages.map((m) => m.value) };
  }
  return b;
}

function encode(r: HostileRequest): { path: string; bytes: Buffer; headers: Record<string, string> } {
  const b = r.body;
  let bytes =
    b.kind === 'batch'
      ? Buffer.from(JSON.stringify({ ...b.envelope, batch: b.batch }))
      : b.kind === 'single'
        ? Buffer.from(JSON.stringify(b.message.value))
        : b.kind === 'raw'
          ? Buffer.from(b.text)
          : b.bytes;
  if (r.contentEncoding.gzip) bytes = gzipSync(bytes);
  const headers: Record<string, string> = {};
  if (r.contentType !== undefined) headers['content-type'] = r.contentType;
  if (r.authorization.header !== undefined) headers['authorization'] = r.authorization.header;
  if (r.contentEncoding.header !== undefined) headers['content-encoding'] = r.contentEncoding.header;
  return { path: b.path, bytes, headers };
}

/** The messages a 200 must have stored: accepted ones, once per messageId not stored before; those without an id are new each time. */
function expectedInserted(messages: unknown[], verdicts: Verdict[], alreadyStored: Set<string>): { count: number; ids: string[] } {
  const ids = new Set<string>();
  let fresh = 0;
  messages.forEach((m, i) => {
    if (verdicts[i] !== 'ok') return;
    const id = (m as { messageId?: unknown }).messageId;
    if (typeof id === 'string') {
      if (!alreadyStored.has(id)) ids.add(id);
    } else fresh++;
  });
  return { count: ids.size + fresh, ids: [...ids] };
}

function messagesOf(b: BodyCase): unknown[] {
  if (b.kind === 'single') return [b.message.value];
  if (b.kind === 'batch') return b.messages?.map((m) => m.value) ?? [];
  // The raw bodies' one message has no messageId.
  return [{}];
}

// ---------------------------------------------------------------------------------------------

let ferry: TestFerry;
before(async () => {
  ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), {
    clock: new ManualClock(Date.parse('2026-03-01T12:00:00.000Z')),
    deliver: false,
  });
});
after(() => ferry.stop());

async function stats(): Promise<{ events: number; deliveries: { pending: number }; rejections: number }> {
  return (await ferry.admin('GET', '/stats')).json;
}

async function post(path: string, bytes: Buffer, headers: Record<string, string>): Promise<{ status: number; json: any }> {
  const res = await fetch(ferry.url + path, { method: 'POST', headers, body: new Blob([bytes]) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

test(`${numRuns} hostile ingestion requests: each answered as its parts require, never a 5xx, never half-stored, the server stays up`, async (t) => {
  const seed = faultSeed() | 0;
  t.diagnostic(`fast-check seed ${seed}, ${numRuns} runs (replay with FERRY_FAULTS_SEED=${seed >>> 0})`);
  const statuses = new Map<number, number>();
  const codes = new Map<string, number>();
  let sample = 0;
  let requests = 0;
  let last = await stats();
  let httpMs = 0;
  const startedAt = Date.now();

  // The time limit races the sample under way and moves on without it; that sample is awaited
  // below, so its requests end and its checks count before the server is checked and stopped.
  let current: Promise<void> | undefined;
  await fc.assert(
    fc.asyncProperty(
      hostileRequest,
      (generated) =>
        (current = (async () => {
          const r = { ...generated, body: scoped(generated.body, `s${sample++}`) };
          const { path, bytes, headers } = encode(r);
          const expected = expectedOutcome(r, bytes.length);
          const described = () =>
            `${path} ${JSON.stringify(expected).slice(0, 300)}; broken: ${r.body.kind === 'batch' ? JSON.stringify(r.body.messages?.map((m) => m.broken)) : r.body.kind === 'single' ? r.body.message.broken : r.body.kind}`;
          const stored = new Set<string>();
          for (let send = 0; send < (r.repeat ? 2 : 1); send++) {
            // Serial and the only writer (no delivery loop): the difference is this request's doing.
            const before = last;
            const t0 = performance.now();
            const res = await post(path, bytes, headers);
            const after = (last = await stats());
            httpMs += performance.now() - t0;
            requests++;
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            const code: string | undefined = res.json?.errors?.[0]?.code;
            if (code) codes.set(code, (codes.get(code) ?? 0) + 1);
            for (const x of (res.json?.rejected ?? []) as { code: string }[]) codes.set(`rejected ${x.code}`, (codes.get(`rejected ${x.code}`) ?? 0) + 1);

            assert.ok(res.status < 500, `a ${res.status} answer: ${JSON.stringify(res.json).slice(0, 300)}`);
            const newEvents = after.events - before.events;
            const newDeliveries = after.deliveries.pending - before.deliveries.pending;
            const answer = `answered ${res.status} ${JSON.stringify(res.json).slice(0, 300)}; expected ${described()}`;
            if (expected.kind !== 'accepted') {
              if (expected.kind === 'refused') {
                assert.equal(res.status, expected.status, answer);
                assert.equal(code, expected.code, answer);
                assert.equal(after.rejections - before.rejections, expected.counted, `rejections counted; ${answer}`);
              } else {
                assert.ok(res.status >= 400 && res.status < 500, answer);
                assert.equal(typeof code, 'string', `a refusal carries a stable code; ${answer}`);
              }
              assert.equal(res.json?.success, false, 'a refusal says success: false');
              assert.equal(newEvents, 0, `a ${res.status} (${code}) stored ${newEvents} events`);
              assert.equal(newDeliveries, 0, `a ${res.status} (${code}) queued ${newDeliveries} deliveries`);
              continue;
            }
            assert.equal(res.status, 200, answer);
            assert.equal(res.json?.success, true);
            const rejected = ((res.json.rejected ?? []) as { index: number; code: string }[]).map((x) => [x.index, x.code]);
            const expectedRejected = expected.verdicts.flatMap((v, i) => (v === 'ok' ? [] : [[i, v]]));
            assert.deepEqual(rejected, expectedRejected, answer);
            assert.equal(after.rejections - before.rejections, expectedRejected.length, 'every rejection is counted for operators');
            const inserted = expectedInserted(messagesOf(r.body), expected.verdicts, stored);
            assert.equal(newEvents, inserted.count, `a 200 stored ${newEvents} events; ${inserted.count} were accepted and new`);
            assert.ok(newDeliveries <= newEvents, 'at most one delivery per new event (one destination)');
            inserted.ids.forEach((id) => stored.add(id));
          }
        })()),
    ),
    {
      numRuns,
      seed,
      endOnFailure: true,
      includeErrorInReport: true,
      ...(timeLimitMs ? { interruptAfterTimeLimit: timeLimitMs, markInterruptAsFailure: false } : {}),
    },
  );
  await current;
  if (sample < numRuns) t.diagnostic(`time limit reached: ${sample} of ${numRuns} samples ran`);

  const health = await fetch(ferry.url + '/health');
  assert.equal(health.status, 200, 'the server still answers');
  t.diagnostic(`${requests} requests in ${Date.now() - startedAt} ms (${Math.round(httpMs)} ms of it in HTTP round trips)`);
  t.diagnostic(`${requests} requests; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  t.diagnostic(`codes ${JSON.stringify(Object.fromEntries([...codes].sort((a, b) => b[1] - a[1])))}`);
});
