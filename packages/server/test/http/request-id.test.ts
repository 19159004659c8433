import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capturedLogger } from '../helpers/captured-logger.js';
import { adminToken, startFerry, testConfig, writeKey } from '../helpers/ferry.js';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function requestId(url: string, init: RequestInit = {}): Promise<{ status: number; id: string | null }> {
  const res = await fetch(url, init);
  await res.arrayBuffer();
  return { status: res.status, id: res.headers.get('x-request-id') };
}

test('X-Request-Id: a sane one is kept, a missing one made, an insane one replaced; on every answer', async (t) => {
  const ferry = await startFerry(testConfig([]), { deliver: false });
  t.after(() => ferry.stop());
  const health = `${ferry.url}/health`;
  assert.deepEqual(await requestId(health, { headers: { 'x-request-id': 'lb-7f3a.9:x_Y-1' } }), { status: 200, id: 'lb-7f3a.9:x_Y-1' });
  assert.equal((await requestId(health, { headers: { 'x-request-id': 'a'.repeat(128) } })).id, 'a'.repeat(128));

  const made = await requestId(health);
  assert.match(made.id ?? '', uuid);
  assert.notEqual((await requestId(health)).id, made.id, 'each request gets its own');

  for (const insane of ['a'.repeat(129), 'two words', 'quote"d', 'new\u00e9line', '{"inject":1}']) {
    const answered = await requestId(health, { headers: { 'x-request-id': insane } });
    assert.match(answered.id ?? '', uuid, `replaced: ${insane}`);
  }

  // Refusals carry it too: an unknown path, the admin token's 401, a bad write key, a route's own error.
  assert.deepEqual(await requestId(`${ferry.url}/nowhere`, { headers: { 'x-request-id': 'r-404' } }), { status: 404, id: 'r-404' });
  assert.deepEqual(await requestId(`${ferry.url}/admin/v1/sources`, { headers: { 'x-request-id': 'r-401' } }), { status: 401, id: 'r-401' });
  assert.deepEqual(
    await requestId(`${ferry.url}/v1/batch`, {
      method: 'POST',
      headers: { 'x-request-id': 'r-bad-key', authorization: 'Basic ' + Buffer.from('nope:').toString('base64'), 'content-type': 'application/json' },
      body: '{}',
    }),
    { status: 401, id: 'r-bad-key' },
  );
  assert.deepEqual(
    await requestId(`${ferry.url}/admin/v1/destinations/nope`, { headers: { 'x-request-id': 'r-admin-404', authorization: `Bearer ${adminToken}` } }),
    { status: 404, id: 'r-admin-404' },
  );
});

test('the log lines about a request carry its id', async (t) => {
  const { logger, lines } = capturedLogger();
  const ferry = await startFerry(testConfig([]), { deliver: false, logger });
  t.after(() => ferry.stop());
  const res = await fetch(`${ferry.url}/v1/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Basic ' + Buffer.from(`${writeKey}:`).toString('base64'), 'x-request-id': 'trace-42' },
    body: JSON.stringify({
      batch: [
        { type: 'track', event: 'E', userId: 'u', messageId: 'ok' },
        { type: 'bogus', messageId: 'bad' },
      ],
    }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-request-id'), 'trace-42');
  const rejected = lines.filter((l) => l.msg === 'messages rejected');
  assert.equal(rejected.length, 1);
  assert.equal(rejected[0]!.reqId, 'trace-42');

  // A generated id is the one the answer names.
  const again = await fetch(`${ferry.url}/v1/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Basic ' + Buffer.from(`${writeKey}:`).toString('base64') },
    body: JSON.stringify({
      batch: [
        { type: 'bogus', messageId: 'bad2' },
        { type: 'track', event: 'E', userId: 'u', messageId: 'ok2' },
      ],
    }),
  });
  const made = again.headers.get('x-request-id');
  assert.match(made ?? '', uuid);
  assert.deepEqual(
    lines.filter((l) => l.msg === 'messages rejected').map((l) => l.reqId),
    ['trace-42', made],
  );
});
