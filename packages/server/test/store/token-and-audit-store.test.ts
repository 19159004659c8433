import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { NewAuditEntry, Store } from '../../src/store/store.js';
import { openFreshPgStore, stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

const backends: { name: string; open: () => Promise<{ store: Store; cleanup: () => Promise<void> }> }[] = [
  {
    name: 'sqlite',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-tokens-'));
      return { store: new SqliteStore({ path: join(dir, 'ferry.db') }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  { name: 'postgres', open: () => openFreshPgStore(2) },
];

for (const backend of backends) {
  describe(`tokens and the audit log in the store (${backend.name})`, () => {
    test('a token is found by its hash; a revocation keeps its first time; a use never moves back', async (t) => {
      const { store, cleanup } = await backend.open();
      t.after(async () => {
        await store.close();
        await cleanup();
      });
      await store.tokens.create({ id: 'tok_a', name: 'a', scope: 'read', createdAtMs: 1000, sha256Hex: 'aa'.repeat(32) });
      await store.tokens.create({ id: 'tok_b', name: 'b', scope: 'admin', createdAtMs: 2000, sha256Hex: 'bb'.repeat(32) });
      await assert.rejects(
        store.tokens.create({ id: 'tok_c', name: 'c', scope: 'read', createdAtMs: 3000, sha256Hex: 'aa'.repeat(32) }),
        'one hash, one token',
      );
      assert.equal(await store.tokens.findByHash('cc'.repeat(32)), null);
      assert.deepEqual(await store.tokens.findByHash('aa'.repeat(32)), {
        id: 'tok_a',
        name: 'a',
        scope: 'read',
        createdAtMs: 1000,
        lastUsedAtMs: null,
        revokedAtMs: null,
      });

      assert.equal(await store.tokens.revoke('tok_a', 5000), true);
      assert.equal(await store.tokens.revoke('tok_a', 6000), true);
      assert.equal(await store.tokens.revoke('tok_none', 6000), false);
      await store.tokens.touch('tok_b', 9000);
      await store.tokens.touch('tok_b', 8000);
      assert.deepEqual(
        (await store.tokens.list()).map((t) => [t.id, t.revokedAtMs, t.lastUsedAtMs]),
        [
          ['tok_a', 5000, null],
          ['tok_b', null, 9000],
        ],
      );
    });

    test('audit entries come back as appended, newest first, paged by id', async (t) => {
      const { store, cleanup } = await backend.open();
      t.after(async () => {
        await store.close();
        await cleanup();
      });
      const entry = (i: number): NewAuditEntry => ({
        atMs: 1000 + i,
        tokenId: 'bootstrap',
        method: 'PATCH',
        path: `/admin/v1/destinations/d${i}`,
        action: 'destination.update',
        object: i % 2 === 0 ? { kind: 'destination', id: `d${i}` } : null,
        status: 200,
        error: null,
        before: i === 0 ? null : { enabled: true, n: i },
        after: { enabled: false, nested: { list: [i, 'x'] } },
      });
      for (let i = 0; i < 5; i++) await store.audit.append(entry(i));
      const all = await store.audit.list({ limit: 10 });
      assert.deepEqual(
        all.map(({ id: _id, ...rest }) => rest),
        [4, 3, 2, 1, 0].map(entry),
      );
      const page = await store.audit.list({ beforeId: all[1]!.id, limit: 2 });
      assert.deepEqual(
        page.map((e) => e.path),
        ['/admin/v1/destinations/d2', '/admin/v1/destinations/d1'],
      );
    });
  });
}
