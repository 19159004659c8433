import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { signBody, standardWebhookSignatures } from '@ferry/webhooks';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { whsec } from '../helpers/standard-webhooks.js';

const body = JSON.stringify({
  version: 1,
  type: 'track',
  userId: 'u-8',
  messageId: 'm-8',
  timestamp: '2026-01-01T00:00:00.000Z',
  context: {},
  event: 'Paid',
  properties: {},
});
const oldKey = whsec(4);
const newKey = whsec(5);

/** Headers of a request signed by both schemes; `ageS` makes its timestamp that much older than now. */
function signed(key: string, ageS = 0): Record<string, string> {
  // ferry listen is a process of its own on the wall clock: the request is signed at the wall clock's now.
  const at = Math.floor(Date.now() / 1000) - ageS;
  return {
    'content-type': 'application/json',
    'x-signature': signBody(body, 's3cret'),
    'webhook-id': 'm-8',
    'webhook-timestamp': String(at),
    'webhook-signature': standardWebhookSignatures('m-8', at, body, [key]),
  };
}

describe('ferry listen --whsec', () => {
  test('LS01 shows both verdicts per request: X-Signature and Standard Webhooks; refuses a replay and a wrong key', async () => {
    const listener = spawnFerry(['listen', '--port', '0', '--secret', 's3cret', '--whsec', newKey, '--whsec', oldKey]);
    after(() => void listener.child.kill('SIGKILL'));
    const [, url] = await listener.waitForOutput(
      /Listening for webhooks on (http:\/\/\S+) \(verifying X-Signature; verifying Standard Webhooks with 2 secrets\)/,
    );

    assert.equal((await fetch(url!, { method: 'POST', headers: signed(oldKey), body })).status, 200);
    await listener.waitForOutput(/"Paid"\n {2}messageId=m-8 userId=u-8 {2}X-Signature ✓ verified {2}Standard Webhooks ✓ verified \(webhook-id m-8\)/);

    assert.equal((await fetch(url!, { method: 'POST', headers: signed(newKey, 3600), body })).status, 401);
    await listener.waitForOutput(
      /✗ 401 Standard Webhooks ✗ invalid: Standard Webhooks: webhook-timestamp is 360\d s old[^\n]*\n {2}X-Signature ✓ verified {2}Standard Webhooks ✗ timestamp_too_old/,
    );

    assert.equal((await fetch(url!, { method: 'POST', headers: { ...signed(whsec(6)), 'x-signature': 'deadbeef' }, body })).status, 401);
    await listener.waitForOutput(/✗ 401 signature ✗ invalid[^\n]*\n {2}X-Signature ✗ invalid {2}Standard Webhooks ✗ no_matching_signature/);
  });

  test('LS02 a malformed --whsec is refused at start, naming the option, never the secret', async () => {
    const listener = spawnFerry(['listen', '--port', '0', '--whsec', 'whsec_not-base64!']);
    const exit = await listener.waitForExit();
    assert.equal(exit.code, 1);
    assert.match(listener.output(), /ferry: --whsec: a Standard Webhooks secret is "whsec_" followed by standard base64/);
    assert.doesNotMatch(listener.output(), /not-base64!/);
  });

  test('LS03 without --whsec, Standard Webhooks headers are shown as not checked', async () => {
    const listener = spawnFerry(['listen', '--port', '0']);
    after(() => void listener.child.kill('SIGKILL'));
    const [, url] = await listener.waitForOutput(
      /Listening for webhooks on (http:\/\/\S+) \(no --secret: X-Signature is not checked; no --whsec: Standard Webhooks are not checked\)/,
    );
    assert.equal((await fetch(url!, { method: 'POST', headers: signed(newKey), body })).status, 200);
    await listener.waitForOutput(/X-Signature not checked \(no secret given\) {2}Standard Webhooks not checked \(no whsec_ secret given\)/);
  });
});
