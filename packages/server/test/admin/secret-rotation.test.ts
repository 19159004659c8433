import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { signBody, verifySignature, verifySignatureHeaders, verifyStandardWebhook } from '@ferry/webhooks';
import { createFerry } from '../../src/app.js';
import type { Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { adminToken, secret as oldShared, startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { dropSchema, postgresUrl, stopPostgres, uniqueSchema } from '../helpers/postgres.js';
import { startReceiver, type Received, type TestReceiver } from '../helpers/receiver.js';
import { referenceVerifies, whsec } from '../helpers/standard-webhooks.js';

const day = 86_400_000;
const oldWhsec = whsec(7);

/** Each store: none given means SQLite in the Ferry's data directory; `another` opens a second store on the same database. */
const stores: { name: string; open: () => Promise<{ store?: Store; another?: () => Promise<Store>; cleanup: () => Promise<void> }> }[] = [
  { name: 'sqlite', open: async () => ({ cleanup: async () => {} }) },
  {
    name: 'postgres',
    open: async () => {
      const url = await postgresUrl();
      const schema = uniqueSchema();
      const another = () => PgStore.open({ connectionString: url, schema });
      return { store: await another(), another, cleanup: () => dropSchema(url, schema) };
    },
  },
];

after(() => stopPostgres());

for (const { name, open } of stores) {
  describe(`secret rotation through the admin API (${name})`, () => {
    let receiver: TestReceiver;
    let t: TestFerry;
    let clock: ManualClock;
    let cleanup: () => Promise<void>;
    let store: Store | undefined;
    let another: (() => Promise<Store>) | undefined;
    let n = 0;

    /** Sends one track call and returns the request the receiver got for it. */
    async function deliverOne(ferry: TestFerry = t): Promise<Received> {
      const before = receiver.requests.length;
      const messageId = `rot-${name}-${++n}`;
      assert.equal((await ferry.send('/v1/track', { userId: 'u1', event: 'E', messageId })).status, 200);
      await ferry.idle();
      assert.equal(receiver.requests.length, before + 1);
      return receiver.requests.at(-1)!;
    }

    test('setup', async () => {
      receiver = await startReceiver();
      clock = new ManualClock();
      const opened = await open();
      cleanup = opened.cleanup;
      store = opened.store;
      another = opened.another;
      const config = testConfig([webhooksDestination('hooks', [receiver.url], { settings: { standardWebhooks: { secrets: [oldWhsec] } } })]);
      t = await startFerry(config, { clock, deliver: false, ...(store ? { store } : {}) });
    });

    test('RT01 standardWebhooks: the new secret is answered once; both sign until the expiry, then only the new one; GET shows neither', async () => {
      const res = await fetch(`${t.url}/admin/v1/destinations/hooks/secrets/rotate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'standardWebhooks' }),
      });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const answer = (await res.json()) as { kind: string; secret: string; previousExpiresAt: string };
      assert.deepEqual(Object.keys(answer).sort(), ['kind', 'previousExpiresAt', 'secret']);
      assert.equal(answer.kind, 'standardWebhooks');
      assert.match(answer.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(answer.previousExpiresAt, new Date(clock.now() + day).toISOString(), 'the default overlap is 24 hours');
      const fresh = answer.secret;

      const shown = JSON.stringify((await t.admin('GET', '/destinations/hooks')).json);
      const listed = JSON.stringify((await t.admin('GET', '/destinations')).json);
      for (const secret of [fresh, oldWhsec]) {
        assert.ok(!shown.includes(secret.slice(6, 20)) && !listed.includes(secret.slice(6, 20)), 'no admin answer shows a secret');
      }
      assert.deepEqual(JSON.parse(shown).settings.standardWebhooks, { secrets: [{ expiresAt: null }, { expiresAt: answer.previousExpiresAt }] });

      const during = await deliverOne();
      assert.equal(referenceVerifies(fresh, during.body, during.headers, clock.now()), true, 'the new secret signs at once');
      assert.equal(referenceVerifies(oldWhsec, during.body, during.headers, clock.now()), true, 'the old one still signs');

      clock.advance(day - 1);
      const lastMoment = await deliverOne();
      assert.equal(referenceVerifies(oldWhsec, lastMoment.body, lastMoment.headers, clock.now()), true, 'until the expiry');

      clock.advance(1);
      const afterExpiry = await deliverOne();
      assert.equal(referenceVerifies(fresh, afterExpiry.body, afterExpiry.headers, clock.now()), true);
      assert.equal(referenceVerifies(oldWhsec, afterExpiry.body, afterExpiry.headers, clock.now()), false, 'dropped at the expiry, by itself');
      assert.equal(String(afterExpiry.headers['webhook-signature']).split(' ').length, 1);

      // The next write prunes it from the stored settings: a second rotation keeps only the first new secret beside its own.
      const again = await t.admin('POST', '/destinations/hooks/secrets/rotate', { kind: 'standardWebhooks', overlapSeconds: 3600 });
      assert.equal(again.status, 201);
      assert.equal(again.json.previousExpiresAt, new Date(clock.now() + 3_600_000).toISOString());
      const stored = (await t.ferry.store.loadCatalog()).destinations.find((d) => d.id === 'hooks')!.settings as any;
      assert.deepEqual(
        stored.standardWebhooks.secrets.map((s: { secret: string }) => s.secret),
        [again.json.secret, fresh],
        'the expired secret is gone from the store',
      );
      const both = await deliverOne();
      assert.equal(verifyStandardWebhook(both.body, both.headers, fresh, { now: () => clock.now() }).ok, true);
      assert.equal(verifyStandardWebhook(both.body, both.headers, again.json.secret, { now: () => clock.now() }).ok, true);
    });

    test('RT02 sharedSecret: X-Signature keeps the old secret until the expiry, X-Ferry-Signatures carries both, then only the new one signs', async () => {
      const put = await t.admin('PATCH', '/destinations/hooks', { settings: { sharedSecret: oldShared, standardWebhooks: null } });
      assert.equal(put.status, 200);
      const rotated = await t.admin('POST', '/destinations/hooks/secrets/rotate', { kind: 'sharedSecret', overlapSeconds: 600 });
      assert.equal(rotated.status, 201);
      const fresh = rotated.json.secret as string;
      assert.match(fresh, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(rotated.json.previousExpiresAt, new Date(clock.now() + 600_000).toISOString());
      const shown = (await t.admin('GET', '/destinations/hooks')).json.settings;
      assert.deepEqual(shown.previousSharedSecrets, [{ expiresAt: rotated.json.previousExpiresAt }]);
      assert.equal(shown.hasSharedSecret, true);
      assert.ok(!JSON.stringify(shown).includes(fresh) && !JSON.stringify(shown).includes(oldShared));

      const during = await deliverOne();
      assert.equal(during.headers['x-signature'], signBody(during.body, oldShared), 'a receiver that changed nothing keeps verifying');
      assert.equal(during.headers['x-ferry-signatures'], `${signBody(during.body, fresh)} ${signBody(during.body, oldShared)}`, 'newest first');
      assert.equal(verifySignatureHeaders(during.body, during.headers, fresh), true, 'a receiver that switched at once verifies too');
      assert.equal(verifySignature(during.body, during.headers['x-signature'] as string, [fresh, oldShared]), true, 'one that accepts both');
      assert.equal(verifySignatureHeaders(during.body, during.headers, 'neither'), false);

      clock.advance(600_000);
      const afterExpiry = await deliverOne();
      assert.equal(afterExpiry.headers['x-signature'], signBody(afterExpiry.body, fresh));
      assert.equal(afterExpiry.headers['x-ferry-signatures'], undefined);
      assert.equal(verifySignatureHeaders(afterExpiry.body, afterExpiry.headers, oldShared), false);
    });

    test('RT03 refusals: unknown kind, bad overlap, unknown key or destination, secrets in the body; a full list is a conflict', async () => {
      const cases: [unknown, number, string, string][] = [
        [{ kind: 'writeKey' }, 400, 'bad_request', 'kind'],
        [{}, 400, 'bad_request', 'kind'],
        [{ kind: 'sharedSecret', overlapSeconds: -1 }, 400, 'bad_request', 'overlapSeconds'],
        [{ kind: 'sharedSecret', overlapSeconds: 1.5 }, 400, 'bad_request', 'overlapSeconds'],
        [{ kind: 'sharedSecret', overlapSeconds: 31 * 86_400 }, 400, 'bad_request', 'overlapSeconds'],
        [{ kind: 'sharedSecret', secret: 'chosen' }, 400, 'unknown_parameter', 'secret'],
        [['sharedSecret'], 400, 'bad_request', ''],
      ];
      const before = JSON.stringify((await t.ferry.store.loadCatalog()).destinations);
      for (const [body, status, code, path] of cases) {
        const res = await t.admin('POST', '/destinations/hooks/secrets/rotate', body);
        assert.equal(res.status, status, JSON.stringify(body));
        assert.equal(res.json.errors[0].code, code, JSON.stringify(body));
        if (path) assert.equal(res.json.errors[0].path, path, JSON.stringify(body));
      }
      assert.equal((await t.admin('POST', '/destinations/ghost/secrets/rotate', { kind: 'sharedSecret' })).status, 404);
      assert.equal(JSON.stringify((await t.ferry.store.loadCatalog()).destinations), before, 'nothing changed');

      // Four rotations within the overlap keep five Standard Webhooks secrets; a fifth is refused, and overlapSeconds 0 starts afresh.
      const first = await t.admin('POST', '/destinations/hooks/secrets/rotate', { kind: 'standardWebhooks' });
      assert.equal(first.json.previousExpiresAt, null, 'none was there before');
      for (let i = 0; i < 4; i++) assert.equal((await t.admin('POST', '/destinations/hooks/secrets/rotate', { kind: 'standardWebhooks' })).status, 201);
      const full = await t.admin('POST', '/destinations/hooks/secrets/rotate', { kind: 'standardWebhooks' });
      assert.equal(full.status, 409);
      assert.equal(full.json.errors[0].code, 'conflict');
      const hard = await t.admin('POST', '/destinations/hooks/secrets/rotate', { kind: 'standardWebhooks', overlapSeconds: 0 });
      assert.equal(hard.status, 201);
      assert.equal(hard.json.previousExpiresAt, null);
      const req = await deliverOne();
      assert.equal(String(req.headers['webhook-signature']).split(' ').length, 1, 'only the new secret signs');
      assert.equal(referenceVerifies(hard.json.secret, req.body, req.headers, clock.now()), true);
    });

    if (name === 'postgres') {
      test('RT04 a second node honours the overlap from the stored settings, on its own clock', async () => {
        const rotated = await t.admin('POST', '/destinations/hooks/secrets/rotate', { kind: 'standardWebhooks', overlapSeconds: 60 });
        const previous = (await t.ferry.store.loadCatalog()).destinations.find((d) => d.id === 'hooks')!.settings as any;
        const old = previous.standardWebhooks.secrets[1].secret as string;
        // Another node over the same schema, started after the rotation, with its own clock at the same time.
        const otherClock = new ManualClock(clock.now());
        const second = await another!();
        const node = await createFerry({
          config: testConfig([]),
          store: second,
          adminToken,
          logger: pino({ level: 'silent' }),
          clock: otherClock,
          deliver: false,
        });
        const base = await node.start(0, '127.0.0.1');
        try {
          const viaOther: TestFerry = { ...t, ferry: node, url: base, send: sendTo(base), idle: () => node.worker.runUntilIdle() };
          const during = await deliverOne(viaOther);
          assert.equal(referenceVerifies(rotated.json.secret, during.body, during.headers, otherClock.now()), true);
          assert.equal(referenceVerifies(old, during.body, during.headers, otherClock.now()), true);
          otherClock.advance(60_000);
          const later = await deliverOne(viaOther);
          assert.equal(referenceVerifies(old, later.body, later.headers, otherClock.now()), false, 'expired on this node too');
          assert.equal(referenceVerifies(rotated.json.secret, later.body, later.headers, otherClock.now()), true);
        } finally {
          await node.stop();
        }
      });
    }

    test('RT05 rotations at once: every secret answered is one that is stored; a stale compare-and-set changes nothing', async () => {
      const rotations = await Promise.all(
        [1, 2, 3].map(() => t.admin('POST', '/destinations/hooks/secrets/rotate', { kind: 'sharedSecret', overlapSeconds: 60 })),
      );
      const answered = rotations.filter((r) => r.status === 201).map((r) => (r.json as { secret: string }).secret);
      assert.ok(answered.length >= 1, 'one rotation at least goes through');
      for (const r of rotations) if (r.status !== 201) assert.equal(r.status, 409, JSON.stringify(r.json));
      const settings = (await t.ferry.store.loadCatalog()).destinations.find((d) => d.id === 'hooks')!.settings as {
        sharedSecret: string;
        previousSharedSecrets?: { secret: string }[];
      };
      const signing = [settings.sharedSecret, ...(settings.previousSharedSecrets ?? []).map((p) => p.secret)];
      for (const secret of answered) assert.ok(signing.includes(secret), 'an answered secret signs');

      const current = (await t.ferry.store.loadCatalog()).destinations.find((d) => d.id === 'hooks')!;
      const stale = { ...current, name: 'stale copy' };
      assert.equal(await t.ferry.store.replaceDestination({ ...current, name: 'lost update' }, stale), false);
      assert.equal((await t.ferry.store.loadCatalog()).destinations.find((d) => d.id === 'hooks')!.name, current.name);
      assert.equal(await t.ferry.store.replaceDestination({ ...current, name: 'renamed' }, current), true);
      assert.equal((await t.ferry.store.loadCatalog()).destinations.find((d) => d.id === 'hooks')!.name, 'renamed');
      await t.ferry.catalog.reload();
    });

    test('teardown', async () => {
      await t.stop();
      await receiver.close();
      await cleanup();
    });
  });
}

/** `TestFerry.send` against another node's base URL. */
function sendTo(base: string): TestFerry['send'] {
  return async (path, body) => {
    const res = await fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Basic ' + Buffer.from('test-write-key:').toString('base64') },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
}
