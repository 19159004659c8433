/**
 * Load generator of the benchmarks (TypeScript via tsx; no Ferry code), in its own process.
 * Commands over IPC, each bounded in count and time:
 *
 *   {cmd:'autocannon', url, connections, durationS, maxRequests, prefix, eventsPerBatch}
 *       closed-loop load on /v1/batch with autocannon; every request has fresh messageIds.
 *   {cmd:'fill', url, events, concurrency, prefix, timeoutMs}
 *       sends `events` events in batches of 100 as fast as `concurrency` connections allow.
 *   {cmd:'paced', url, eventsPerSec, durationS, prefix}
 *       open-loop: one batch of 100 every 100/eventsPerSec s; records [batch, sentAt, ackAt] per 200.
 *   {cmd:'raw-post', url, dbPath | (databaseUrl, schema), count, connections, timeoutMs}
 *       the delivery reference: raw undici Pool posting the stored webhook bodies (read from
 *       the SQLite file, or from the PostgreSQL schema with --store postgres); answers with
 *       its own CPU time over the posting loop (cpuMs).
 */
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Pool } from 'undici';
import { basicAuth, eventJson } from './common.js';

const now = () => performance.timeOrigin + performance.now();
const headers = { 'content-type': 'application/json', authorization: basicAuth };

/** Builds unique batch bodies fast: the event text around the messageId is precomputed. */
function bodyMaker(prefix: string, eventsPerBatch: number): (n: number) => string {
  const marker = '\u0000ID\u0000';
  const parts = Array.from({ length: eventsPerBatch }, (_, i) => eventJson(marker, i).split(marker) as [string, string]);
  const sentAt = new Date().toISOString();
  return (n) => {
    let s = '{"batch":[';
    for (let i = 0; i < eventsPerBatch; i++) s += (i ? ',' : '') + parts[i]![0] + `${prefix}-${n}-${i}` + parts[i]![1];
    return s + `],"sentAt":"${sentAt}"}`;
  };
}

async function runAutocannon(m: any) {
  const make = bodyMaker(m.prefix, m.eventsPerBatch ?? 100);
  let n = 0;
  let rejectedBodies = 0;
  const result = await autocannon({
    url: m.url,
    connections: m.connections,
    duration: m.durationS,
    // Bounded by duration (autocannon ignores `duration` when `amount` is set).
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: '/v1/batch',
        headers,
        setupRequest: (req: any) => ({ ...req, body: make(n++) }),
        onResponse: (status: number, body: string) => {
          if (status === 200 && body.includes('rejected')) rejectedBodies++;
        },
      },
    ],
  } as any);
  return {
    requests: result.requests.total,
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationS: result.duration,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, mean: result.latency.mean, max: result.latency.max },
    rejectedBodies,
  };
}

async function fill(m: any) {
  const pool = new Pool(m.url, { connections: m.concurrency, pipelining: 1 });
  const make = bodyMaker(m.prefix, 100);
  const batches = Math.ceil(m.events / 100);
  const deadline = Date.now() + (m.timeoutMs ?? 600_000);
  let next = 0;
  let acked = 0;
  let failed = 0;
  const started = now();
  const worker = async () => {
    while (next < batches && Date.now() < deadline) {
      const n = next++;
      try {
        const res = await pool.request({ path: '/v1/batch', method: 'POST', headers, body: make(n) });
        const text = await res.body.text();
        if (res.statusCode === 200 && !text.includes('rejected')) acked += 100;
        else failed++;
      } catch {
        failed++;
      }
      if (m.progressEvery && n % m.progressEvery === 0) process.send!({ type: 'progress', acked, n });
    }
  };
  await Promise.all(Array.from({ length: m.concurrency }, worker));
  const ms = now() - started;
  await pool.close();
  return { acked, failed, ms };
}

async function paced(m: any) {
  const pool = new Pool(m.url, { connections: 64, pipelining: 1 });
  const make = bodyMaker(m.prefix, 100);
  const intervalMs = (100 / m.eventsPerSec) * 1000;
  const total = Math.floor((m.durationS * 1000) / intervalMs);
  const acks: [number, number, number][] = [];
  let failed = 0;
  const inflight = new Set<Promise<void>>();
  const start = now();
  for (let n = 0; n < total; n++) {
    const due = start + n * intervalMs;
    const wait = due - now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const p = (async () => {
      const sentAt = now();
      try {
        const res = await pool.request({ path: '/v1/batch', method: 'POST', headers, body: make(n) });
        await res.body.text();
        if (res.statusCode === 200) acks.push([n, sentAt, now()]);
        else failed++;
      } catch {
        failed++;
      }
    })();
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
    if (inflight.size > 2000) break; // the server has fallen far behind: stop offering load
  }
  await Promise.race([Promise.all(inflight), new Promise((r) => setTimeout(r, 60_000))]);
  await pool.close();
  return { acks, failed, sentBatches: total, offeredMs: now() - start };
}

async function rawPost(m: any) {
  let stored: string[];
  if (m.databaseUrl) {
    const c = new pg.Client({ connectionString: m.databaseUrl, connectionTimeoutMillis: 5000, options: `-c search_path=${m.schema}` });
    await c.connect();
    try {
      stored = (await c.query<{ body: string }>(`SELECT body FROM deliveries ORDER BY id LIMIT $1`, [m.count])).rows.map((r) => r.body);
    } finally {
      await c.end();
    }
  } else {
    const db = new Database(m.dbPath, { readonly: true });
    stored = db.prepare(`SELECT body FROM deliveries ORDER BY id LIMIT ?`).pluck().all(m.count) as string[];
    db.close();
  }
  const bodies = stored.map((b) => Buffer.from(b));
  const url = new URL(m.url);
  const pool = new Pool(url.origin, { connections: m.connections, pipelining: 1 });
  const deadline = Date.now() + (m.timeoutMs ?? 300_000);
  let next = 0;
  let ok = 0;
  let failed = 0;
  const started = now();
  // The client's own CPU over the posting loop only (not the read of the stored bodies above):
  // the per-CPU reference of the delivery goal, which shared cores cannot distort as they do a rate.
  const cpu0 = process.cpuUsage();
  const worker = async () => {
    while (next < bodies.length && Date.now() < deadline) {
      const body = bodies[next++]!;
      try {
        const res = await pool.request({ path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) ok++;
        else failed++;
      } catch {
        failed++;
      }
      if (ok + failed === steadyFrom) atMark = process.cpuUsage(cpu0);
    }
  };
  // From the 10,000th answer on, warmed up: the steady CPU per request beside the whole loop's.
  const steadyFrom = 10_000;
  let atMark: NodeJS.CpuUsage | undefined;
  await Promise.all(Array.from({ length: m.connections }, worker));
  const ms = now() - started;
  const cpu = process.cpuUsage(cpu0);
  await pool.close();
  const steady =
    atMark === undefined ? {} : { steadyCpuMs: (cpu.user + cpu.system - atMark.user - atMark.system) / 1000, steadyRequests: ok + failed - steadyFrom };
  return { ok, failed, ms, cpuMs: (cpu.user + cpu.system) / 1000, systemCpuMs: cpu.system / 1000, ...steady };
}

// answer() reports its own failure to the parent, so nothing waits on it here.
process.on('message', (m: any) => void answer(m));

async function answer(m: any): Promise<void> {
  const handlers: Record<string, (m: any) => Promise<unknown>> = { autocannon: runAutocannon, fill, paced, 'raw-post': rawPost };
  try {
    process.send!({ id: m.id, ...((await handlers[m.cmd]!(m)) as object) });
  } catch (error) {
    process.send!({ id: m.id, error: String((error as Error).stack ?? error) });
  }
}
process.on('disconnect', () => process.exit(0));
