import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createListener,
  formatEvent,
  formatRejection,
  signBody,
  standardWebhookSignatures,
  type ReceivedWebhook,
  type RejectedWebhook,
  type WebhookListener,
} from '@ferry/webhooks';

const secret = 'listener-secret';
const trackBody = JSON.stringify({
  version: 1,
  type: 'track',
  userId: 'user_42',
  messageId: 'msg_1',
  event: 'Order Completed',
  properties: { total: 12.5 },
  timestamp: '2026-01-02T03:04:05.678Z',
  context: {},
});

/** Longest a test waits for a callback or an answer before it fails instead of hanging. */
const DEADLINE_MS = 10_000;

/** Collects listener callbacks and lets a test await the next one. */
class Inbox<T> {
  readonly items: T[] = [];
  private waiters: Array<(item: T) => void> = [];
  /** Names the callback in the failure when none comes within {@link DEADLINE_MS}. */
  private readonly what: string;
  constructor(what: string) {
    this.what = what;
  }
  push = (item: T): void => {
    this.items.push(item);
    this.waiters.shift()?.(item);
  };
  next(): Promise<T> {
    const ready = this.items[this.items.length - 1];
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const waiter = (item: T) => {
        clearTimeout(timer);
        resolve(item);
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no ${this.what} within ${DEADLINE_MS} ms`));
      }, DEADLINE_MS);
      this.waiters.push(waiter);
    });
  }
  clear(): void {
    this.items.length = 0;
  }
}

async function post(url: string, body: string | Uint8Array, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, signal: AbortSignal.timeout(DEADLINE_MS) });
  return { status: res.status, json: (await res.json()) as { ok: boolean; error?: string; message?: string } };
}

describe('createListener with a secret', () => {
  let listener: WebhookListener;
  const events = new Inbox<ReceivedWebhook>('onEvent call');
  const rejections = new Inbox<RejectedWebhook>('onRejected call');

  before(async () => {
    listener = createListener({ secret, onEvent: events.push, onRejected: rejections.push });
    await listener.start();
  });
  after(() => listener.close());

  const reset = (): void => {
    events.clear();
    rejections.clear();
  };

  it('reports its loopback address and URL once listening', () => {
    assert.equal(listener.address?.address, '127.0.0.1');
    assert.ok((listener.address?.port ?? 0) > 0);
    assert.equal(listener.url, `http://127.0.0.1:${listener.address?.port}/`);
  });

  it('accepts a correctly signed webhook, answers 200 and hands over body, raw bytes and headers', async () => {
    reset();
    const res = await post(`${listener.url}hooks?x=1`, trackBody, {
      'x-signature': signBody(trackBody, secret),
      'x-team': 'growth',
    });
    assert.deepEqual(res, { status: 200, json: { ok: true } });
    const event = await events.next();
    assert.equal(event.verified, true);
    assert.equal(event.method, 'POST');
    assert.equal(event.path, '/hooks?x=1');
    assert.deepEqual(event.body, JSON.parse(trackBody));
    assert.equal(event.rawBody.toString('utf8'), trackBody);
    assert.equal(event.headers['x-team'], 'growth');
    assert.equal(rejections.items.length, 0);
  });

  it('refuses a wrong signature with 401 and never calls onEvent', async () => {
    reset();
    const res = await post(listener.url!, trackBody, { 'x-signature': signBody(trackBody, 'another-secret') });
    assert.equal(res.status, 401);
    assert.equal(res.json.error, 'invalid_signature');
    assert.ok(res.json.message);
    const rejection = await rejections.next();
    assert.equal(rejection.statusCode, 401);
    assert.equal(rejection.rawBody?.toString('utf8'), trackBody);
    assert.equal(events.items.length, 0);
  });

  it('refuses a body changed after signing with 401', async () => {
    reset();
    const tampered = trackBody.replace('12.5', '1250');
    const res = await post(listener.url!, tampered, { 'x-signature': signBody(trackBody, secret) });
    assert.equal(res.status, 401);
    assert.equal(res.json.error, 'invalid_signature');
    assert.equal(events.items.length, 0);
  });

  it('refuses a missing signature with 401', async () => {
    reset();
    const res = await post(listener.url!, trackBody);
    assert.equal(res.status, 401);
    assert.equal(res.json.error, 'missing_signature');
    assert.equal(events.items.length, 0);
  });

  it('refuses a correctly signed body that is not JSON with 400', async () => {
    reset();
    const broken = '{"type":"track",';
    const res = await post(listener.url!, broken, { 'x-signature': signBody(broken, secret) });
    assert.equal(res.status, 400);
    assert.equal(res.json.error, 'invalid_json');
    assert.equal((await rejections.next()).code, 'invalid_json');
    assert.equal(events.items.length, 0);
  });

  it('refuses JSON that is not an object with 400', async () => {
    reset();
    const list = '[1,2,3]';
    const res = await post(listener.url!, list, { 'x-signature': signBody(list, secret) });
    assert.equal(res.status, 400);
    assert.equal(res.json.error, 'not_an_object');
  });

  it('refuses a body over 1 MB with 413 (declared length)', async () => {
    reset();
    const big = Buffer.alloc(1024 * 1024 + 1, 0x61);
    const res = await post(listener.url!, big, { 'x-signature': signBody(big, secret) });
    assert.equal(res.status, 413);
    assert.equal(res.json.error, 'payload_too_large');
    const rejection = await rejections.next();
    assert.equal(rejection.rawBody, undefined);
    assert.equal(events.items.length, 0);
  });

  it('refuses a body over 1 MB with 413 (chunked, no declared length)', async () => {
    reset();
    const chunk = new Uint8Array(256 * 1024).fill(0x62);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 5; i++) controller.enqueue(chunk);
        controller.close();
      },
    });
    const res = await fetch(listener.url!, { method: 'POST', body: stream, duplex: 'half', signal: AbortSignal.timeout(DEADLINE_MS) } as RequestInit);
    assert.equal(res.status, 413);
    await res.arrayBuffer();
    assert.equal(events.items.length, 0);
  });

  it('answers other methods with 405', async () => {
    const res = await fetch(listener.url!, { signal: AbortSignal.timeout(DEADLINE_MS) });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
    await res.arrayBuffer();
  });

  it('still accepts a valid webhook on the same listener after refusals', async () => {
    reset();
    const res = await post(listener.url!, trackBody, { 'x-signature': signBody(trackBody, secret) });
    assert.equal(res.status, 200);
    assert.equal((await events.next()).verified, true);
  });
});

describe('createListener without a secret', () => {
  it('accepts unsigned webhooks and marks them unverified', async () => {
    const events = new Inbox<ReceivedWebhook>('onEvent call');
    const listener = createListener({ onEvent: events.push });
    await listener.start();
    try {
      const res = await post(listener.url!, trackBody);
      assert.equal(res.status, 200);
      const event = await events.next();
      assert.equal(event.verified, false);
      assert.match(formatEvent(event), /unsigned/);
    } finally {
      await listener.close();
    }
  });

  it('answers 200 before a slow onEvent finishes and reports its failure to onError', async () => {
    const errors = new Inbox<unknown>('onError call');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const listener = createListener({
      onEvent: async () => {
        await gate;
        throw new Error('handler broke');
      },
      onError: errors.push,
    });
    await listener.start();
    try {
      const res = await post(listener.url!, trackBody);
      assert.equal(res.status, 200);
      release();
      const error = await errors.next();
      assert.equal((error as Error).message, 'handler broke');
    } finally {
      await listener.close();
    }
  });

  it('treats an empty secret as none, as the sender does', async () => {
    const events = new Inbox<ReceivedWebhook>('onEvent call');
    const listener = createListener({ secret: '', onEvent: events.push });
    await listener.start();
    try {
      assert.equal((await post(listener.url!, trackBody)).status, 200);
      assert.equal((await events.next()).verified, false);
    } finally {
      await listener.close();
    }
  });

  it('refuses a non-positive body limit', () => {
    assert.throws(() => createListener({ maxBodyBytes: 0 }), RangeError);
  });
});

describe('formatEvent and formatRejection', () => {
  const base = { headers: {}, method: 'POST', path: '/hooks', receivedAtMs: Date.parse('2026-01-02T03:04:05.678Z') };

  it('shows type, event name, the dedup key, userId and a verified signature', () => {
    const text = formatEvent({
      ...base,
      headers: { 'x-ferry-source': 'backend' },
      body: JSON.parse(trackBody),
      rawBody: Buffer.from(trackBody),
      verified: true,
    });
    assert.equal(text, '2026-01-02T03:04:05.678Z POST /hooks  track "Order Completed"\n' + '  key=backend/msg_1 userId=user_42  X-Signature ✓ verified');
  });

  it('shows the messageId instead of a key when the request names no source', () => {
    const text = formatEvent({ ...base, body: JSON.parse(trackBody), rawBody: Buffer.from(trackBody), verified: true });
    assert.match(text, /\n {2}messageId=msg_1 userId=user_42 {2}X-Signature/);
  });

  it('shows alias identifiers and copes with bodies missing fields', () => {
    const alias = formatEvent({
      ...base,
      body: { type: 'alias', 'Previous ID': 'anon_1', 'User ID': 'user_1' } as never,
      rawBody: Buffer.alloc(0),
      verified: false,
    });
    assert.match(alias, /alias anon_1 → user_1/);
    const odd = formatEvent({ ...base, body: {} as never, rawBody: Buffer.alloc(0), verified: false });
    assert.match(odd, /\(no type\)/);
  });

  it('marks an invalid signature', () => {
    const text = formatRejection({
      ...base,
      statusCode: 401,
      code: 'invalid_signature',
      message: 'X-Signature does not match the body for the configured secret',
    });
    assert.match(text, /✗ 401 signature ✗ invalid/);
  });
});

describe('createListener with Standard Webhooks secrets', () => {
  const whsecOld = 'whsec_' + Buffer.alloc(32, 1).toString('base64');
  const whsecNew = 'whsec_' + Buffer.alloc(32, 2).toString('base64');
  const nowMs = Date.parse('2026-01-02T03:04:05.000Z');
  const signed = (secrets: string[], atS = nowMs / 1000, id = 'msg_1') => ({
    'webhook-id': id,
    'webhook-timestamp': String(atS),
    'webhook-signature': standardWebhookSignatures(id, atS, trackBody, secrets),
  });
  let listener: WebhookListener;
  const events = new Inbox<ReceivedWebhook>('onEvent call');
  const rejections = new Inbox<RejectedWebhook>('onRejected call');
  before(async () => {
    listener = createListener({
      secret: ['new-shared', secret],
      standardWebhooksSecrets: [whsecNew, whsecOld],
      now: () => nowMs,
      onEvent: events.push,
      onRejected: rejections.push,
    });
    await listener.start();
  });
  after(() => listener.close());

  it('SL01 accepts a request signed by either secret of both schemes, and shows both verdicts', async () => {
    events.clear();
    const res = await post(listener.url!, trackBody, { 'x-signature': signBody(trackBody, secret), 'x-ferry-source': 'backend', ...signed([whsecOld]) });
    assert.equal(res.status, 200);
    const event = await events.next();
    assert.deepEqual(event.verdicts, { xSignature: 'verified', standardWebhooks: { ok: true, id: 'msg_1', timestampSeconds: nowMs / 1000 } });
    assert.match(formatEvent(event), /X-Signature ✓ verified {2}Standard Webhooks ✓ verified \(webhook-id msg_1\)$/);
  });

  it('SL02 refuses a replayed request (timestamp past the tolerance) with 401, both verdicts in the line', async () => {
    rejections.clear();
    const res = await post(listener.url!, trackBody, { 'x-signature': signBody(trackBody, secret), ...signed([whsecNew], nowMs / 1000 - 301) });
    assert.equal(res.status, 401);
    assert.equal(res.json.error, 'invalid_standard_webhook');
    const rejection = await rejections.next();
    assert.equal(rejection.verdicts?.xSignature, 'verified');
    assert.equal(rejection.verdicts?.standardWebhooks?.ok, false);
    const text = formatRejection(rejection);
    assert.match(text, /✗ 401 Standard Webhooks ✗ invalid: Standard Webhooks: webhook-timestamp is 301 s old/);
    assert.match(text, /\n {2}X-Signature ✓ verified {2}Standard Webhooks ✗ timestamp_too_old/);
  });

  it('SL03 refuses a request without the Standard Webhooks headers, and one signed with another secret', async () => {
    const bare = await post(listener.url!, trackBody, { 'x-signature': signBody(trackBody, secret) });
    assert.equal(bare.status, 401);
    assert.match(bare.json.message!, /missing webhook-id, webhook-timestamp, webhook-signature/);
    const other = await post(listener.url!, trackBody, {
      'x-signature': signBody(trackBody, secret),
      ...signed(['whsec_' + Buffer.alloc(32, 3).toString('base64')]),
    });
    assert.equal(other.status, 401);
    assert.match(other.json.message!, /no v1 signature/);
  });

  it('SL04 a malformed whsec secret is refused when the listener is made', () => {
    assert.throws(() => createListener({ standardWebhooksSecrets: ['whsec_nope!'] }), TypeError);
  });
});
