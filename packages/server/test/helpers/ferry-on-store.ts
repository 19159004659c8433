import { join } from 'node:path';
import pg from 'pg';
import type { FerryOptions } from '../../src/app.js';
import type { FerryConfig } from '../../src/config/model.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { startFerry, type TestFerry } from './ferry.js';
import { freshSchema } from './postgres.js';
import { inSqliteFile } from './sqlite.js';

/** The two stores a test that concerns the store runs on. */
export const storeKinds = ['sqlite', 'postgres'] as const;
export type StoreKind = (typeof storeKinds)[number];

/** A test server on a store of a kind, with a way to read its tables that does not go through the store. */
export interface FerryOnStore {
  server: TestFerry;
  /** The rows of a query (without parameters) run on a connection of the test's own. */
  rows(sql: string): Promise<Record<string, unknown>[]>;
  /** On PostgreSQL, opens another store on the same schema (a second node); undefined on SQLite. */
  openSameStore: (() => Promise<PgStore>) | undefined;
}

/**
 * Starts a test server ({@link startFerry}) on SQLite (a fresh file) or on PostgreSQL (a fresh
 * schema, dropped by `onCleanup`); the server is stopped by `onCleanup` too, before the schema
 * goes.
 */
export async function startFerryOn(
  kind: StoreKind,
  config: FerryConfig,
  options: Partial<FerryOptions>,
  onCleanup: (fn: () => Promise<void>) => void,
): Promise<FerryOnStore> {
  if (kind === 'sqlite') {
    const server = await startFerry(config, options);
    onCleanup(() => server.stop());
    return {
      server,
      rows: async (sql) => inSqliteFile(join(server.dataDir, 'ferry.db'), (db) => db.prepare(sql).all() as Record<string, unknown>[]),
      openSameStore: undefined,
    };
  }
  const { url, schema } = await freshSchema(onCleanup);
  const openSameStore = () => PgStore.open({ connectionString: url, schema, poolSize: 2 });
  const server = await startFerry(config, { ...options, store: await openSameStore() });
  onCleanup(() => server.stop());
  return {
    server,
    rows: async (sql) => {
      const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
      await client.connect();
      try {
        return (await client.query(sql)).rows as Record<string, unknown>[];
      } finally {
        await client.end();
      }
    },
    openSameStore,
  };
}

/** Calls a server's admin API with a token of the caller's choice (none: no `Authorization`). */
export async function adminCall(base: string, token: string | undefined, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}
