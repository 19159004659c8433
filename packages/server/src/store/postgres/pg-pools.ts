import pg from 'pg';
import { claimPlanner } from './pg-claim.js';
import { completionPlanner } from './pg-complete.js';

// BIGINT columns hold ms timestamps and ids, all far below 2^53: read them as numbers.
const typeParsers = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20 ? (v: string) => Number(v) : (pg.types.getTypeParser(oid, format as 'text') as (v: string) => unknown)) as typeof pg.types.getTypeParser,
};

/** The connection pools of a PostgreSQL store, each with the settings of the statements it runs. */
export interface PgPools {
  /** Everything but claims and completions; durable. */
  main: pg.Pool;
  /**
   * Connections for completions, which commit without waiting for the WAL flush
   * (`synchronous_commit = off`): nobody is answered on them, and a database crash that
   * loses the last of them leaves those jobs leased, so they are sent again once the lease
   * runs out (delivery is at least once). Claims stay fully durable ({@link claim}): a claim
   * undone by a crash while its worker goes on sending would let another node send the same
   * job at the same time.
   */
  completion: pg.Pool;
  /** Connections for claims, with {@link claimPlanner}; durable like {@link main}. */
  claim: pg.Pool;
}

/** Creates the pools; Ferry's tables live in `schema` (search_path). No connection is made yet. */
export function createPools(connectionString: string, schema: string, poolSize: number): PgPools {
  const poolOptions = (max: number, settings = ''): pg.PoolConfig => ({
    connectionString,
    max,
    options: `-c search_path=${schema} ${settings}`.trim(),
    types: typeParsers,
    // A server that is down or unreachable must fail a request (503) rather than hang it.
    connectionTimeoutMillis: 5000,
  });
  const pools: PgPools = {
    main: new pg.Pool(poolOptions(poolSize)),
    completion: new pg.Pool(poolOptions(2, `-c synchronous_commit=off ${completionPlanner}`)),
    // A worker claims one destination at a time; a second connection covers a second worker.
    claim: new pg.Pool(poolOptions(2, claimPlanner)),
  };
  // An idle client's error (e.g. the server restarted) must not crash the process; the next query reconnects.
  for (const p of [pools.main, pools.completion, pools.claim]) p.on('error', () => {});
  return pools;
}

export async function endPools(pools: PgPools): Promise<void> {
  await Promise.all([pools.main.end(), pools.completion.end(), pools.claim.end()]);
}

/**
 * A pooled client for several statements. While checked out it has an error listener of its
 * own: a connection the server ends between two statements (a restart) must fail the work in
 * hand, not crash the process with an unhandled 'error' event.
 */
export async function checkout(pool: pg.Pool): Promise<pg.PoolClient & { done(): void }> {
  const client = await pool.connect();
  let failure: Error | undefined;
  const onError = (error: Error) => (failure = error);
  client.on('error', onError);
  return Object.assign(client, {
    done() {
      client.removeListener('error', onError);
      // A client whose connection failed is discarded rather than returned to the pool.
      client.release(failure);
    },
  });
}

/** Runs `work` in one transaction on one pooled connection; rolls back if it throws. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await checkout(pool);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.done();
  }
}
