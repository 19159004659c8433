import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { signBody, verifySignature, verifyStandardWebhook } from '@ferry/webhooks';
import { validateDestination } from '../../src/config/schema.js';
import { webhookIdFor } from '../../src/destinations/webhooks/webhook-id.js';
import { ManualClock } from '../../src/util/clock.js';
import { secret as sharedSecret, startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { referenceVerifies, whsec } from '../helpers/standard-webhooks.js';

const minute = 60_000;
// The first retry a minute after the first attempt, so the two timestamps differ by 60 s.
const delivery = { retry: { initialDelayMs: minute, multiplier: 2, maxDelayMs: 10 * minute, jitter: 0 } };
const first = whsec(1);
const second = whsec(2, 24);

describe('Standard Webhooks headers on delivered requests', () => {
  let receiver: TestReceiver;
  let ferry: TestFerry | undefined;
  before(async () => {
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await ferry?.stop();
    ferry = undefined;
    receiver.requests.length = 0;
    receiver.reply({ status: 200 });
  });
  after(() => receiver.close());

  test('SW01 webhook-id is the messageId on every retry, webhook-timestamp is each attempt, both secrets verify with the reference package', async () => {
    const clock = new ManualClock();
    const config = testConfig([webhooksDestination('hooks', [receiver.url], { settings: { standardWebhooks: { secrets: [first, second] } } })], { delivery });
    ferry = await startFerry(config, { clock, deliver: false });
    receiver.reply({ status: 503 });
    assert.equal((await ferry.send('/v1/track', { userId: 'u1', event: 'Signed Up', messageId: 'msg-1' })).status, 200);
    await ferry.idle();
    const t0 = clock.now();
    receiver.reply({ status: 200 });
    clock.advance(minute);
    await ferry.idle();
    assert.equal(receiver.requests.length, 2);

    const [a, b] = receiver.requests as [(typeof receiver.requests)[0], (typeof receiver.requests)[0]];
    assert.equal(a.headers['webhook-id'], 'msg-1');
    assert.equal(b.headers['webhook-id'], 'msg-1', 'a retry keeps the id');
    assert.equal(a.headers['webhook-timestamp'], String(t0 / 1000));
    assert.equal(b.headers['webhook-timestamp'], String((t0 + minute) / 1000), 'a retry is signed at its own time');
    assert.notEqual(a.headers['webhook-signature'], b.headers['webhook-signature']);
    assert.equal(String(b.headers['webhook-signature']).split(' ').length, 2, 'one v1 signature per secret');
    assert.ok(a.body.equals(b.body), 'the same bytes on every attempt');
    for (const [req, at] of [
      [a, t0],
      [b, t0 + minute],
    ] as const) {
      for (const key of [first, second]) {
        assert.equal(referenceVerifies(key, req.body, req.headers, at), true, 'the standardwebhooks package accepts it');
        const ours = verifyStandardWebhook(req.body, req.headers, key, { now: () => at });
        assert.equal(ours.ok, true, "and so does Ferry's own verifier");
      }
      assert.equal(referenceVerifies(whsec(3), req.body, req.headers, at), false, 'another secret does not verify');
      // X-Signature stays as the spec has it, beside.
      assert.equal(req.headers['x-signature'], signBody(req.body, sharedSecret));
    }
    // Ten minutes later, a replay of the first request is refused: the timestamp is what a captured request cannot change.
    assert.equal(referenceVerifies(first, a.body, a.headers, t0 + 10 * minute), false);
    assert.equal(verifyStandardWebhook(a.body, a.headers, first, { now: () => t0 + 10 * minute }).ok, false);
  });

  test('SW02 a destination without standardWebhooks sends no webhook-* header; an expired secret signs nothing', async () => {
    const clock = new ManualClock();
    const past = new Date(clock.now() - 1).toISOString();
    const config = testConfig(
      [
        webhooksDestination('plain', [receiver.url + '/plain']),
        webhooksDestination('rotated', [receiver.url + '/rotated'], {
          settings: { standardWebhooks: { secrets: [first, { secret: second, expiresAt: past }] } },
        }),
      ],
      { delivery },
    );
    ferry = await startFerry(config, { clock, deliver: false });
    await ferry.send('/v1/track', { userId: 'u1', event: 'E', messageId: 'msg-2' });
    await ferry.idle();
    const plain = receiver.requests.find((r) => r.path === '/plain')!;
    const rotated = receiver.requests.find((r) => r.path === '/rotated')!;
    assert.deepEqual(
      Object.keys(plain.headers).filter((h) => h.startsWith('webhook-')),
      [],
    );
    assert.equal(String(rotated.headers['webhook-signature']).split(' ').length, 1);
    assert.equal(referenceVerifies(first, rotated.body, rotated.headers, clock.now()), true);
    assert.equal(referenceVerifies(second, rotated.body, rotated.headers, clock.now()), false, 'the expired secret no longer signs');
  });

  test('SW03 deletion notices and audience identifies get a stable webhook-id, verified by the reference package', async () => {
    const clock = new ManualClock();
    const config = testConfig([webhooksDestination('hooks', [receiver.url], { settings: { standardWebhooks: { secrets: [first] } } })], { delivery });
    ferry = await startFerry(config, { clock, deliver: false });
    await ferry.send('/v1/identify', { userId: 'gone', traits: {}, messageId: 'msg-3' });
    await ferry.idle();
    receiver.requests.length = 0;
    receiver.reply({ status: 500 });
    assert.equal((await ferry.admin('POST', '/regulations', { userIds: ['gone'] })).status, 202);
    await ferry.deletionsDone();
    await ferry.idle();
    receiver.reply({ status: 200 });
    clock.advance(minute);
    await ferry.idle();
    const notices = receiver.requests.filter((r) => r.json?.type === 'delete');
    assert.equal(notices.length, 2, 'a notice, then its retry');
    const id = notices[0]!.headers['webhook-id'] as string;
    assert.match(id, /^ferry_[A-Za-z0-9_-]{24}$/);
    assert.equal(notices[1]!.headers['webhook-id'], id, 'the same id on the retry');
    assert.equal(referenceVerifies(first, notices[1]!.body, notices[1]!.headers, clock.now()), true);
  });
});

describe('webhookIdFor', () => {
  const job = { kind: 'event' as const, messageId: 'm-1', sourceId: 'app', body: '{}' };
  // [case, job, expected id or pattern]
  const cases: [string, Parameters<typeof webhookIdFor>[0], string | RegExp][] = [
    ['ID01 an event: its messageId', job, 'm-1'],
    ['ID02 an audience identify: its messageId', { ...job, kind: 'audience', sourceId: null, messageId: 'aud_1f' }, 'aud_1f'],
    ['ID03 a messageId with a space cannot travel in a header: a digest of it', { ...job, messageId: 'order 42' }, /^ferry_[A-Za-z0-9_-]{24}$/],
    ['ID04 a non-ASCII messageId: a digest of it', { ...job, messageId: 'commande-é' }, /^ferry_[A-Za-z0-9_-]{24}$/],
    ['ID05 a deletion notice: a digest of its source and body', { kind: 'delete', messageId: null, sourceId: 'app', body: '{"type":"delete"}' }, /^ferry_/],
  ];
  for (const [name, input, expected] of cases)
    test(name, () => {
      const id = webhookIdFor(input);
      if (typeof expected === 'string') assert.equal(id, expected);
      else assert.match(id, expected);
      assert.equal(webhookIdFor({ ...input }), id, 'the same on every attempt');
    });
  test('ID06 two notices of other sources or bodies, and two digested messageIds, have different ids', () => {
    const notice = { kind: 'delete' as const, messageId: null, sourceId: 'app', body: '{"type":"delete","userId":"a"}' };
    assert.notEqual(webhookIdFor(notice), webhookIdFor({ ...notice, sourceId: 'other' }));
    assert.notEqual(webhookIdFor(notice), webhookIdFor({ ...notice, body: '{"type":"delete","userId":"b"}' }));
    assert.notEqual(webhookIdFor({ ...job, messageId: 'a b' }), webhookIdFor({ ...job, messageId: 'a c' }));
  });
});

describe('standardWebhooks settings', () => {
  const destination = (settings: Record<string, unknown>) => ({
    id: 'd',
    type: 'Webhooks',
    sources: [],
    settings: { webhooks: [{ url: 'https://hooks.example.com/' }], ...settings },
  });
  // [case, settings, path of the first broken rule, message pattern]
  const refused: [string, Record<string, unknown>, string, RegExp][] = [
    [
      'CF01 no whsec_ prefix',
      { standardWebhooks: { secrets: ['c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0'] } },
      'settings.standardWebhooks.secrets[0]',
      /must start with whsec_/,
    ],
    ['CF02 not base64', { standardWebhooks: { secrets: ['whsec_not base64!'] } }, 'settings.standardWebhooks.secrets[0]', /standard base64/],
    ['CF03 a key of 23 bytes', { standardWebhooks: { secrets: [whsec(1, 23)] } }, 'settings.standardWebhooks.secrets[0]', /24 to 64 bytes \(got 23\)/],
    ['CF04 a key of 65 bytes', { standardWebhooks: { secrets: [first, whsec(2, 65)] } }, 'settings.standardWebhooks.secrets[1]', /24 to 64 bytes \(got 65\)/],
    ['CF05 no secret', { standardWebhooks: { secrets: [] } }, 'settings.standardWebhooks.secrets', /1 to 5 secrets \(got 0\)/],
    [
      'CF06 six secrets',
      { standardWebhooks: { secrets: [1, 2, 3, 4, 5, 6].map((i) => whsec(i)) } },
      'settings.standardWebhooks.secrets',
      /1 to 5 secrets \(got 6\)/,
    ],
    ['CF07 the same secret twice', { standardWebhooks: { secrets: [first, first] } }, 'settings.standardWebhooks.secrets[1]', /repeats the secret of entry 0/],
    [
      'CF08 an expiry that is no date',
      { standardWebhooks: { secrets: [{ secret: first, expiresAt: 'tomorrow' }] } },
      'settings.standardWebhooks.secrets[0].expiresAt',
      /ISO 8601/,
    ],
    [
      'CF08b every secret expiring (nothing would sign once the last has)',
      { standardWebhooks: { secrets: [{ secret: first, expiresAt: '2030-01-01T00:00:00.000Z' }] } },
      'settings.standardWebhooks.secrets',
      /at least one secret must have no expiresAt/,
    ],
    ['CF09 an unknown key', { standardWebhooks: { secrets: [first], tolerance: 5 } }, 'settings.standardWebhooks.tolerance', /unknown key/],
    ['CF10 a number for a secret', { standardWebhooks: { secrets: [42] } }, 'settings.standardWebhooks.secrets[0]', /got a number/],
    [
      'CF11 previous shared secrets without a shared secret',
      { previousSharedSecrets: [{ secret: 'old', expiresAt: '2026-01-01T00:00:00.000Z' }] },
      'settings.previousSharedSecrets',
      /only beside a sharedSecret/,
    ],
    [
      'CF12 a static header named webhook-signature',
      { webhooks: [{ url: 'https://hooks.example.com/', headers: { 'Webhook-Signature': 'x' } }] },
      'settings.webhooks[0].headers.Webhook-Signature',
      /set by Ferry/,
    ],
    [
      'CF13 a static header named X-Ferry-Signatures',
      { webhooks: [{ url: 'https://hooks.example.com/', headers: { 'x-ferry-signatures': 'x' } }] },
      'settings.webhooks[0].headers.x-ferry-signatures',
      /set by Ferry/,
    ],
  ];
  for (const [name, settings, path, message] of refused)
    test(`${name} is refused with its path, never quoting the secret`, () => {
      assert.throws(
        () => validateDestination(destination(settings), []),
        (error: any) => {
          assert.equal(error.code, 'invalid_settings');
          assert.equal(error.path, path);
          assert.match(error.message, message);
          assert.doesNotMatch(error.message, /AQEBAQEB|c2VjcmV0/);
          return true;
        },
      );
    });

  test('CF14 strings and { secret, expiresAt } entries are accepted, and the output passes again unchanged', () => {
    const once = validateDestination(destination({ standardWebhooks: { secrets: [first, { secret: second, expiresAt: '2026-03-01T00:00:00Z' }] } }), []);
    assert.deepEqual(once.settings, {
      webhooks: [{ url: 'https://hooks.example.com/', headers: {} }],
      standardWebhooks: { secrets: [{ secret: first }, { secret: second, expiresAt: '2026-03-01T00:00:00.000Z' }] },
    });
    assert.deepEqual(validateDestination({ ...once }, []).settings, once.settings);
  });

  test('CF15 X-Signature verification is unchanged for a destination without rotation', () => {
    const body = '{"type":"track"}';
    assert.equal(verifySignature(body, signBody(body, 's'), ['other', 's']), true, 'any secret of a list');
    assert.equal(verifySignature(body, signBody(body, 's'), ['other']), false);
  });
});
