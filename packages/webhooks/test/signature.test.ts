import { createHmac } from 'node:crypto';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { signBody, verifySignature } from '@ferry/webhooks';

const secret = 'test-shared-secret';
const body = JSON.stringify({ version: 1, type: 'track', event: 'Café Visited', messageId: 'm1' });
const independent = (data: string | Uint8Array, key: string): string => createHmac('sha1', key).update(data).digest('hex');

describe('signBody', () => {
  it('matches the RFC 2202 HMAC-SHA1 test vector', () => {
    assert.equal(signBody('what do ya want for nothing?', 'Jefe'), 'effcdf6ae5eb2fa2d27416d5f184df9c259a7c79');
  });

  it('keys each signature with its own secret, across many secrets, empty and non-ASCII ones included', () => {
    // More secrets than the prepared keys kept, twice over, so the keys are prepared again too.
    const secrets = ['', 'clé-secrète-ü', ...Array.from({ length: 150 }, (_, i) => `secret-${i}`)];
    for (let round = 0; round < 2; round++)
      for (const s of secrets) {
        assert.equal(signBody(body, s), independent(body, s), JSON.stringify(s));
        assert.equal(verifySignature(body, independent(body, s), s), true, JSON.stringify(s));
      }
  });

  it('is the hex HMAC-SHA1 of the UTF-8 bytes, for strings and byte arrays alike', () => {
    const bytes = new TextEncoder().encode(body);
    assert.equal(signBody(body, secret), independent(Buffer.from(body, 'utf8'), secret));
    assert.equal(signBody(bytes, secret), signBody(body, secret));
    assert.match(signBody(body, secret), /^[0-9a-f]{40}$/);
  });
});

describe('verifySignature', () => {
  const good = independent(body, secret);

  it('accepts the signature an independent HMAC produced', () => {
    assert.equal(verifySignature(body, good, secret), true);
    assert.equal(verifySignature(Buffer.from(body), good, secret), true);
  });

  it('accepts upper-case hex and surrounding whitespace', () => {
    assert.equal(verifySignature(body, ` ${good.toUpperCase()}\t`, secret), true);
  });

  const refused: Array<[string, string | Uint8Array, string | null | undefined, string]> = [
    ['a tampered body', body.replace('Café', 'Cafe'), good, secret],
    ['one extra byte of body', `${body} `, good, secret],
    ['a wrong secret', body, good, 'other-secret'],
    ['a missing header (undefined)', body, undefined, secret],
    ['a missing header (null)', body, null, secret],
    ['an empty header', body, '', secret],
    ['a garbage header of the right length', body, 'z'.repeat(40), secret],
    ['a header with one non-hex digit', body, `${good.slice(0, 39)}g`, secret],
    ['a truncated header', body, good.slice(0, 38), secret],
    ['a header with a prefix', body, `sha1=${good}`, secret],
    ['a SHA-256 signature', body, createHmac('sha256', secret).update(body).digest('hex'), secret],
    ['a base64 signature', body, createHmac('sha1', secret).update(body).digest('base64'), secret],
  ];
  for (const [name, data, header, key] of refused) {
    it(`refuses ${name}`, () => {
      assert.equal(verifySignature(data, header, key), false);
    });
  }

  it('returns false instead of throwing for values of the wrong type', () => {
    assert.equal(verifySignature(body, 42 as unknown as string, secret), false);
    assert.equal(verifySignature(body, [good] as unknown as string, secret), false);
    assert.equal(verifySignature(null as unknown as string, good, secret), false);
  });
});
