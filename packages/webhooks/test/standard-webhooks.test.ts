import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it, mock } from 'node:test';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import {
  generateStandardWebhookSecret,
  parseStandardWebhookSecret,
  signStandardWebhook,
  standardWebhookSignatures,
  verifyStandardWebhook,
  type StandardWebhookFailure,
} from '@ferry/webhooks';

const secretA = 'whsec_' + Buffer.alloc(32, 0xa1).toString('base64');
const secretB = 'whsec_' + Buffer.alloc(24, 0xb2).toString('base64');
const body = JSON.stringify({ version: 1, type: 'track', event: 'Café Visited', messageId: 'msg_1' });
const t0 = 1_767_225_600; // 2026-01-01T00:00:00Z, seconds

/** The reference package's verdict, its clock (Date.now) set to `nowMs`. */
function reference(secret: string, payload: string, headers: Record<string, string>, nowMs: number): boolean {
  mock.timers.enable({ apis: ['Date'], now: nowMs });
  try {
    // jsonParse off: the reference would otherwise throw for a body that verifies but is not JSON.
    new Webhook(secret).verify(payload, headers, { jsonParse: false });
    return true;
  } catch {
    return false;
  } finally {
    mock.timers.reset();
  }
}

/** Headers as the reference package would sign them. */
function referenceHeaders(secret: string, id: string, seconds: number, payload: string): Record<string, string> {
  return { 'webhook-id': id, 'webhook-timestamp': String(seconds), 'webhook-signature': new Webhook(secret).sign(id, new Date(seconds * 1000), payload) };
}

describe('signing', () => {
  it('signStandardWebhook is what the reference package signs, and an independent HMAC-SHA256', () => {
    const expected = new Webhook(secretA).sign('msg_1', new Date(t0 * 1000), body);
    assert.equal(signStandardWebhook('msg_1', t0, body, secretA), expected);
    assert.equal(signStandardWebhook('msg_1', t0, Buffer.from(body), secretA), expected, 'bytes and strings alike');
    const key = parseStandardWebhookSecret(secretA);
    assert.equal(expected, `v1,${createHmac('sha256', key).update(`msg_1.${t0}.${body}`).digest('base64')}`);
  });

  it('standardWebhookSignatures: one v1 entry per secret, space-separated, in order', () => {
    const header = standardWebhookSignatures('msg_1', t0, body, [secretA, secretB]);
    assert.equal(header, `${signStandardWebhook('msg_1', t0, body, secretA)} ${signStandardWebhook('msg_1', t0, body, secretB)}`);
    for (const secret of [secretA, secretB])
      assert.equal(reference(secret, body, { 'webhook-id': 'msg_1', 'webhook-timestamp': String(t0), 'webhook-signature': header }, t0 * 1000), true);
  });

  it('generated secrets are whsec_ and 32 random bytes, accepted by the reference package', () => {
    const a = generateStandardWebhookSecret();
    assert.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.notEqual(a, generateStandardWebhookSecret());
    assert.equal(reference(a, body, referenceHeaders(a, 'm', t0, body), t0 * 1000), true);
    assert.throws(() => generateStandardWebhookSecret(16), RangeError);
  });

  it('a malformed secret throws a TypeError that does not repeat it', () => {
    for (const bad of ['', 'whsec_', 'whsec_not base64', 'whsec_abc', 'whsec_QUJD=']) {
      assert.throws(
        () => parseStandardWebhookSecret(bad),
        (e: Error) => e instanceof TypeError && (bad.length < 7 || !e.message.includes(bad.slice(6))),
      );
      assert.throws(() => verifyStandardWebhook(body, {}, bad), TypeError);
    }
    assert.deepEqual(parseStandardWebhookSecret('QUJD'), Buffer.from('ABC'), 'the prefix is optional, as in the reference');
  });
});

describe('verifyStandardWebhook against the reference package on the same inputs', () => {
  const good = referenceHeaders(secretA, 'msg_1', t0, body);
  const at = t0 * 1000;
  // [case, secrets, body, headers, now (ms), our reason or ok]
  const table: [string, string[], string, Record<string, string>, number, StandardWebhookFailure | 'ok'][] = [
    ['V01 signed by the secret, now', [secretA], body, good, at, 'ok'],
    ['V02 one of two secrets', [secretB, secretA], body, good, at, 'ok'],
    ['V03 several signatures, one matching', [secretA], body, { ...good, 'webhook-signature': `v1,${'A'.repeat(44)} ${good['webhook-signature']}` }, at, 'ok'],
    ['V04 5 minutes old, the tolerance', [secretA], body, good, at + 300_000, 'ok'],
    ['V05 5 minutes ahead, the tolerance', [secretA], body, good, at - 300_000, 'ok'],
    ['V06 one second past the tolerance: a replay', [secretA], body, good, at + 301_000, 'timestamp_too_old'],
    ['V07 one second too far ahead', [secretA], body, good, at - 301_000, 'timestamp_too_new'],
    ['V08 a wrong secret', [secretB], body, good, at, 'no_matching_signature'],
    ['V09 a tampered body', [secretA], body.replace('Café', 'Cafe'), good, at, 'no_matching_signature'],
    ['V10 another id', [secretA], body, { ...good, 'webhook-id': 'msg_2' }, at, 'no_matching_signature'],
    ['V11 a timestamp moved by a second', [secretA], body, { ...good, 'webhook-timestamp': String(t0 + 1) }, at, 'no_matching_signature'],
    [
      'V12 a v2 signature of the right bytes',
      [secretA],
      body,
      { ...good, 'webhook-signature': good['webhook-signature']!.replace('v1,', 'v2,') },
      at,
      'no_matching_signature',
    ],
    ['V13 no webhook-signature', [secretA], body, { 'webhook-id': 'msg_1', 'webhook-timestamp': String(t0) }, at, 'missing_headers'],
    ['V14 no webhook-id', [secretA], body, { 'webhook-timestamp': String(t0), 'webhook-signature': good['webhook-signature']! }, at, 'missing_headers'],
    ['V15 a timestamp that is no number', [secretA], body, { ...good, 'webhook-timestamp': 'yesterday' }, at, 'invalid_timestamp'],
    ['V16 headers in another case', [secretA], body, Object.fromEntries(Object.entries(good).map(([k, v]) => [k.toUpperCase(), v])), at, 'ok'],
    ['V17 a truncated signature', [secretA], body, { ...good, 'webhook-signature': good['webhook-signature']!.slice(0, -2) }, at, 'no_matching_signature'],
    ['V18 an empty body signed as empty', [secretA], '', referenceHeaders(secretA, 'e', t0, ''), at, 'ok'],
  ];
  for (const [name, secrets, payload, headers, now, expected] of table) {
    it(name, () => {
      const ours = verifyStandardWebhook(payload, headers, secrets, { now: () => now });
      if (expected === 'ok') assert.deepEqual(ours, { ok: true, id: headers['webhook-id'] ?? headers['WEBHOOK-ID'], timestampSeconds: t0 });
      else {
        assert.equal(ours.ok, false);
        assert.equal(!ours.ok && ours.reason, expected);
        assert.ok(!ours.ok && ours.message.length > 0);
      }
      const referenceAccepts = secrets.some((s) => reference(s, payload, headers, now));
      assert.equal(ours.ok, referenceAccepts, 'the same verdict as the standardwebhooks package');
    });
  }

  it('V19 property: for any id, body, time offset, secret pair and signer, both verifiers agree', () => {
    const secrets = [secretA, secretB, 'whsec_' + Buffer.alloc(64, 7).toString('base64')];
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
        fc.string({ maxLength: 200 }),
        fc.integer({ min: -400, max: 400 }),
        fc.integer({ min: 0, max: 2 }),
        fc.subarray([0, 1, 2], { minLength: 1 }),
        fc.boolean(),
        (id, payload, offsetS, signer, verifierIdx, tamper) => {
          const headers = referenceHeaders(secrets[signer]!, id, t0, payload);
          const received = tamper ? payload + ' ' : payload;
          const now = (t0 + offsetS) * 1000;
          const verifiers = verifierIdx.map((i) => secrets[i]!);
          const ours = verifyStandardWebhook(received, headers, verifiers, { now: () => now }).ok;
          const theirs = verifiers.some((s) => reference(s, received, headers, now));
          assert.equal(ours, theirs);
          // The expected verdict, stated independently of both.
          assert.equal(ours, !tamper && verifierIdx.includes(signer) && Math.abs(offsetS) <= 300);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('V20 Ferry signs what the reference verifies, for any id, body and secret', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
        fc.string({ maxLength: 300 }),
        fc.uint8Array({ minLength: 24, maxLength: 64 }),
        (id, payload, key) => {
          const secret = 'whsec_' + Buffer.from(key).toString('base64');
          const headers = { 'webhook-id': id, 'webhook-timestamp': String(t0), 'webhook-signature': standardWebhookSignatures(id, t0, payload, [secret]) };
          assert.equal(reference(secret, payload, headers, t0 * 1000), true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('V22 the one deliberate difference: a timestamp with trailing characters is invalid here, where the reference reads its digits', () => {
    const trailing = { ...good, 'webhook-timestamp': `${t0}abc` };
    assert.equal(reference(secretA, body, trailing, at), true);
    const ours = verifyStandardWebhook(body, trailing, secretA, { now: () => at });
    assert.equal(!ours.ok && ours.reason, 'invalid_timestamp');
  });

  it('V21 the clock is injected: the same request passes or not with the time given, never the real one', () => {
    assert.equal(verifyStandardWebhook(body, good, secretA, { now: () => at + 60_000 }).ok, true);
    assert.equal(verifyStandardWebhook(body, good, secretA, { now: () => at + 60_000, toleranceSeconds: 30 }).ok, false, 'a tolerance of its own');
    // 2026 is long gone for the real clock of whoever reads this in 2030: only the injected one counts.
    assert.equal(verifyStandardWebhook(body, good, secretA).ok, Math.abs(Date.now() - at) <= 300_000);
  });
});
