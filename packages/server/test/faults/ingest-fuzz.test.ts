/**
 * Property-based fuzzing of the ingestion API over real HTTP: fast-check generates hostile
 * requests (bad JSON, wrong types at every known field, huge strings and numbers, deep
 * nesting, odd Unicode and lone surrogates, gzip and bogus encodings, bad Authorization
 * headers, odd content types, batches mixing good and bad messages) and sends them one at a
 * time, so that the store's counts before and after are attributable to that request.
 *
 * Invariants, per request: never a 5xx; a 4xx stores no event and no delivery; a 200 stores
 * exactly the accepted messages (not rejected, not duplicates): nothing half-stored. At the
 * end the server still answers /health. 2,000 generated requests by default (plus the ~20 %
 * sent twice), 10,000 with FERRY_FAULTS_LONG=1: 10,000 serial HTTP round trips plus a stats
 * read each take too long for the default `npm test`.
 */
import assert from 'node:assert/strict';
import { gunzipSync, gzipSync } from 'node:zlib';
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
const paths = ['/v1/batch', '/v1/import', ...callTypes.map((c) => `/v1/${c}`)];

// ---------------------------------------------------------------------------------------------
// Generators

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
/** Strings a hostile client might send: any code unit, lone surrogates, controls, huge ones. */
const oddString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string({ unit: fc.oneof(loneSurrogate, fc.constantFrom('\u0000', '\u202e', '\ufeff', '\ufffd', '"', '\\', '\n')), maxLength: 8 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 40_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 1, arbitrary: fc.constant('') },
);
/** Numbers at the edges of what JSON and JavaScript represent. */
const oddNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER + 2, 2 ** 64),
);
/** Any JSON value, wrong for most fields. */
const wrongValue = fc.oneof(
  oddString,
  oddNumber,
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
  fc.jsonValue({ maxDepth: 3 }),
);
const isoTimestamp = fc
  .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .chain((d) =>
    fc.constantFrom(d.toISOString(), d.toISOString().replace('.000Z', 'Z').replace(/\.\d{3}Z$/, 'Z'), d.toISOString().replace('Z', '-07:00'), d.toISOString().slice(0, 10)),
  );
/** A small pool, so that duplicates within one batch (and ids that differ only in a lone surrogate) occur. */
const messageId = fc.oneof(
  { weight: 3, arbitrary: fc.uuid() },
  { weight: 2, arbitrary: fc.constantFrom('dup', 'dup-2', 'x'.repeat(100), 'x'.repeat(101)) },
  { weight: 1, arbitrary: oddString },
  { weight: 1, arbitrary: wrongValue },
);
/** One field: usually a plausible value, often a wrong one. */
const field = <T>(good: fc.Arbitrary<T>) => fc.oneof({ weight: 3, arbitrary: good }, { weight: 1, arbitrary: wrongValue });
/** An envelope field: wrong now and then, so that most batches are read and their messages judged. */
const rarelyWrong = <T>(good: fc.Arbitrary<T>) => fc.oneof({ weight: 12, arbitrary: good }, { weight: 1, arbitrary: wrongValue });
const nested = fc.integer({ min: 1, max: 40 }).map((d) => {
  let v: unknown = 'deep';
  for (let i = 0; i < d; i++) v = i % 2 ? [v] : { k: v };
  return v;
});
const jsonObject = fc.oneof(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }), nested.map((v) => ({ n: v })));

const message = fc.record(
  {
    type: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...callTypes) }, { weight: 1, arbitrary: wrongValue }),
    userId: field(fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.integer())),
    anonymousId: field(fc.string({ minLength: 1, maxLength: 12 })),
    event: field(fc.string({ maxLength: 12 })),
    name: field(fc.string({ maxLength: 12 })),
    category: field(fc.string({ maxLength: 12 })),
    groupId: field(fc.string({ minLength: 1, maxLength: 12 })),
    previousId: field(fc.string({ minLength: 1, maxLength: 12 })),
    properties: field(jsonObject),
    traits: field(jsonObject),
    context: field(jsonObject),
    integrations: field(fc.oneof(fc.constant({ All: false }), fc.constant({ Webhooks: false }), jsonObject)),
    timestamp: field(isoTimestamp),
    originalTimestamp: field(isoTimestamp),
    sentAt: field(isoTimestamp),
    messageId,
    writeKey: field(fc.constantFrom(writeKey, 'other-write-key', 'nope')),
    extra: wrongValue,
  },
  { requiredKeys: [] },
);
/** A message that is valid, so that batches mix good with bad. */
const goodMessage = fc.record({
  type: fc.constant('track'),
  userId: fc.string({ minLength: 1, maxLength: 12 }),
  event: fc.string({ minLength: 1, maxLength: 12 }),
  messageId: fc.oneof(fc.uuid(), fc.constantFrom('dup', 'dup-2')),
  properties: jsonObject,
});

/** How the body bytes are produced. */
type Body =
  | { kind: 'json'; value: unknown }
  | { kind: 'raw'; text: string }
  | { kind: 'bytes'; bytes: Uint8Array };

const batchBody = fc.record(
  {
    batch: fc.oneof(
      { weight: 6, arbitrary: fc.array(fc.oneof({ weight: 1, arbitrary: message }, { weight: 2, arbitrary: goodMessage }), { maxLength: 12 }) },
      { weight: 1, arbitrary: wrongValue },
    ),
    sentAt: rarelyWrong(isoTimestamp),
    context: rarelyWrong(jsonObject),
    integrations: rarelyWrong(jsonObject),
    writeKey: rarelyWrong(fc.constantFrom(writeKey, 'other-write-key', 'nope')),
  },
  { requiredKeys: ['batch'] },
);

const body: fc.Arbitrary<Body> = fc.oneof(
  { weight: 10, arbitrary: batchBody.map((value): Body => ({ kind: 'json', value })) },
  { weight: 4, arbitrary: fc.oneof(message, goodMessage).map((value): Body => ({ kind: 'json', value })) },
  { weight: 1, arbitrary: wrongValue.map((value): Body => ({ kind: 'json', value })) },
  // Bad JSON: a valid body cut short or with a byte flipped, or plain garbage.
  {
    weight: 2,
    arbitrary: fc
      .tuple(batchBody, fc.nat(), fc.constantFrom('cut', 'flip', 'trailing'))
      .map(([value, at, how]): Body => {
        const text = JSON.stringify(value);
        const i = at % Math.max(1, text.length);
        return { kind: 'raw', text: how === 'cut' ? text.slice(0, i) : how === 'flip' ? text.slice(0, i) + '\u0001' + text.slice(i + 1) : text + ' }' };
      }),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((bytes): Body => ({ kind: 'bytes', bytes })) },
  { weight: 1, arbitrary: fc.constantFrom('', 'null', '{}', '[]', '{"batch":null}', '\ufeff{"batch":[]}', 'NaN', '{"batch":[1e999]}').map((text): Body => ({ kind: 'raw', text })) },
  // Deep nesting, far beyond every limit, inside an otherwise valid message.
  {
    weight: 1,
    arbitrary: fc.tuple(fc.integer({ min: 1, max: 5_000 }), fc.constantFrom('{"a":', '[')).map(([d, open]): Body => {
      const close = open === '[' ? ']' : '}';
      return { kind: 'raw', text: `{"batch":[{"type":"track","userId":"u","event":"e","properties":{"p":${open.repeat(d)}1${close.repeat(d)}}}]}` };
    }),
  },
  // Huge numbers and huge strings in raw JSON (digits JSON.parse turns into Infinity or rounds).
  {
    weight: 1,
    arbitrary: fc.tuple(fc.integer({ min: 1, max: 5_000 }), fc.constantFrom('1', '-1', '1e', '0.')).map(([n, lead]): Body => ({
      kind: 'raw',
      text: `{"batch":[{"type":"track","userId":${lead === '1e' ? `1e${n}` : lead + '9'.repeat(n)},"event":"e","properties":{"n":${'9'.repeat(n)}}}]}`,
    })),
  },
  // Over the request limit (500 KB), occasionally.
  { weight: 1, arbitrary: fc.constantFrom(520 * 1024, 499 * 1024).map((n): Body => ({ kind: 'raw', text: `{"batch":[{"type":"track","userId":"u","event":"e","properties":{"pad":"${'z'.repeat(n)}"}}]}` })) },
  // JSON in an encoding other than UTF-8.
  { weight: 1, arbitrary: batchBody.map((v): Body => ({ kind: 'bytes', bytes: Buffer.from('\ufeff' + JSON.stringify(v), 'utf16le') })) },
);

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      ' application/json ',
      'application/json; charset=latin1',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonp',
      'application/json+x',
      '*/*',
      '',
      undefined,
    ),
  },
);
const contentEncoding = fc.oneof(
  { weight: 8, arbitrary: fc.constant<'none' | 'gzip' | string>('none') },
  { weight: 2, arbitrary: fc.constant('gzip') },
  { weight: 1, arbitrary: fc.constantFrom('gzip-garbage', 'x-gzip', ' GZIP ', 'br', 'deflate', 'gzip, gzip', 'identity', 'compress', '') },
);
const authorization = fc.oneof(
  { weight: 8, arbitrary: fc.constant<string | undefined>(basicAuth(writeKey)) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      undefined,
      basicAuth('other-write-key'),
      basicAuth('nope'),
      basicAuth(''),
      'Basic ' + Buffer.from(writeKey).toString('base64'),
      'basic ' + Buffer.from(`${writeKey}:`).toString('base64'),
      'Basic',
      'Basic !!!',
      'Basic ' + 'A'.repeat(8000),
      'Bearer ' + writeKey,
      `Basic ${Buffer.from(`${writeKey}:`).toString('base64')} extra`,
      ' ',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 40 }).map((s) => 'Basic ' + Buffer.from(s).toString('base64')) },
);

const hostileRequest = fc.record({
  path: fc.oneof({ weight: 5, arbitrary: fc.constantFrom('/v1/batch') }, { weight: 3, arbitrary: fc.constantFrom(...paths) }),
  body,
  contentType,
  contentEncoding,
  authorization,
  /** Send the same request a second time (a client retrying after a lost answer). */
  repeat: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});
type HostileRequest = typeof hostileRequest extends fc.Arbitrary<infer T> ? T : never;

// ---------------------------------------------------------------------------------------------
// The model: which messages a 200 stored.

/** Makes explicit string messageIds unique to this sample, so that counts never mix samples. */
function scopeIds(value: unknown, scope: string): unknown {
  const scopeOne = (m: unknown) =>
    m !== null && typeof m === 'object' && !Array.isArray(m) && typeof (m as any).messageId === 'string'
      ? { ...(m as object), messageId: `${scope}:${(m as any).messageId}` }
      : m;
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && Array.isArray((value as any).batch))
    return { ...(value as object), batch: ((value as any).batch as unknown[]).map(scopeOne) };
  return scopeOne(value);
}

/**
 * The messages of a request as the client meant them, read back from the bytes sent; or
 * undefined when the bytes are not a JSON body (a 200 for such a request is itself a failure).
 */
function messagesOf(bytes: Buffer, gzipped: boolean, path: string): unknown[] | undefined {
  try {
    const parsed = JSON.parse((gzipped ? gunzipSync(bytes) : bytes).toString('utf8'));
    if (path === '/v1/batch' || path === '/v1/import') return Array.isArray(parsed?.batch) ? parsed.batch : undefined;
    return [parsed];
  } catch {
    return undefined;
  }
}

/**
 * How many events a 200 must have stored: every message not reported as rejected, counted
 * once per messageId (a client-sent id repeats within the batch, or was stored by an earlier
 * send of the same request); messages without an id get a fresh one each time.
 */
function expectedInserted(messages: unknown[], rejected: Set<number>, alreadyStored: Set<string>): { count: number; ids: string[] } {
  const ids = new Set<string>();
  let fresh = 0;
  messages.forEach((m, i) => {
    if (rejected.has(i)) return;
    const id = (m as { messageId?: unknown }).messageId;
    if (typeof id === 'string') {
      if (!alreadyStored.has(id)) ids.add(id);
    } else fresh++;
  });
  return { count: ids.size + fresh, ids: [...ids] };
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

function encode(r: HostileRequest, scope: string): { bytes: Buffer; headers: Record<string, string>; gzipped: boolean } {
  let bytes =
    r.body.kind === 'json'
      ? Buffer.from(JSON.stringify(scopeIds(r.body.value, scope)) ?? 'undefined')
      : r.body.kind === 'raw'
        ? Buffer.from(r.body.text)
        : Buffer.from(r.body.bytes);
  const headers: Record<string, string> = {};
  if (r.contentType !== undefined) headers['content-type'] = r.contentType;
  if (r.authorization !== undefined) headers['authorization'] = r.authorization;
  let gzipped = false;
  if (r.contentEncoding === 'gzip') {
    bytes = gzipSync(bytes);
    headers['content-encoding'] = 'gzip';
    gzipped = true;
  } else if (r.contentEncoding === 'gzip-garbage') {
    headers['content-encoding'] = 'gzip';
  } else if (r.contentEncoding !== 'none') {
    headers['content-encoding'] = r.contentEncoding;
  }
  return { bytes, headers, gzipped };
}

async function post(path: string, bytes: Buffer, headers: Record<string, string>): Promise<{ status: number; json: any }> {
  const res = await fetch(ferry.url + path, { method: 'POST', headers, body: bytes });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

test(`${numRuns} hostile ingestion requests: never a 5xx, never half-stored, the server stays up`, async (t) => {
  const seed = faultSeed() | 0;
  t.diagnostic(`fast-check seed ${seed}, ${numRuns} runs (replay with FERRY_FAULTS_SEED=${seed >>> 0})`);
  const statuses = new Map<number, number>();
  const codes = new Map<string, number>();
  let sample = 0;
  let requests = 0;
  let last = await stats();
  let httpMs = 0;
  const startedAt = Date.now();

  await fc.assert(
    fc.asyncProperty(hostileRequest, async (r) => {
      const scope = `s${sample++}`;
      const { bytes, headers, gzipped } = encode(r, scope);
      const stored = new Set<string>();
      for (let send = 0; send < (r.repeat ? 2 : 1); send++) {
        // Serial and the only writer (no delivery loop): the difference is this request's doing.
        const before = last;
        const t0 = performance.now();
        const res = await post(r.path, bytes, headers);
        const after = (last = await stats());
        httpMs += performance.now() - t0;
        requests++;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const code: string | undefined = res.json?.errors?.[0]?.code;
        if (code) codes.set(code, (codes.get(code) ?? 0) + 1);

        assert.ok(res.status < 500, `a ${res.status} answer: ${JSON.stringify(res.json).slice(0, 300)}`);
        const newEvents = after.events - before.events;
        const newDeliveries = after.deliveries.pending - before.deliveries.pending;
        if (res.status !== 200) {
          assert.ok(res.status >= 400, `status ${res.status}`);
          assert.equal(res.json?.success, false, 'a refusal says success: false');
          assert.equal(typeof code, 'string', 'a refusal carries a stable code');
          assert.equal(newEvents, 0, `a ${res.status} (${code}) stored ${newEvents} events`);
          assert.equal(newDeliveries, 0, `a ${res.status} (${code}) queued ${newDeliveries} deliveries`);
          continue;
        }
        assert.equal(res.json?.success, true);
        const messages = messagesOf(bytes, gzipped, r.path);
        assert.ok(messages, 'a 200 for a body that is not a JSON request');
        const rejected = new Set<number>(((res.json.rejected ?? []) as { index: number }[]).map((x) => x.index));
        assert.ok([...rejected].every((i) => Number.isInteger(i) && i >= 0 && i < messages.length), 'rejected indexes are in range');
        assert.equal(after.rejections - before.rejections, rejected.size, 'every rejection is counted for operators');
        const expected = expectedInserted(messages, rejected, stored);
        assert.equal(newEvents, expected.count, `a 200 stored ${newEvents} events; ${expected.count} were accepted and new`);
        assert.ok(newDeliveries <= newEvents, 'at most one delivery per new event (one destination)');
        expected.ids.forEach((id) => stored.add(id));
      }
    }),
    { numRuns, seed, endOnFailure: true, ...(timeLimitMs ? { interruptAfterTimeLimit: timeLimitMs, markInterruptAsFailure: false } : {}) },
  );
  if (sample < numRuns) t.diagnostic(`time limit reached: ${sample} of ${numRuns} samples ran`);

  const health = await fetch(ferry.url + '/health');
  assert.equal(health.status, 200, 'the server still answers');
  t.diagnostic(`${requests} requests in ${Date.now() - startedAt} ms (${Math.round(httpMs)} ms of it in HTTP round trips)`);
  t.diagnostic(`${requests} requests; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  t.diagnostic(`codes ${JSON.stringify(Object.fromEntries([...codes].sort((a, b) => b[1] - a[1])))}`);
});
