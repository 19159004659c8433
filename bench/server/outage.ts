/**
 * A receiver down during a steady load, with the circuit breaker on beside off (TypeScript via
 * tsx; the server under test is the built `packages/server/dist`, in this process: run
 * `npm run build` first). What it measures: the requests sent to the receiver during its
 * outage (goal: with the breaker, under 1 % of those without), the time from its recovery to
 * the last event delivered, and that nothing is lost (every event arrives with a 2xx, none is
 * dead-lettered).
 *
 * The case is a 10-minute outage under 1,000 events/s. Ten real minutes twice is too
 * long here, so time is scaled: the outage lasts `600 / --scale` seconds (30 s at the default
 * scale of 20), and every delay of the retry schedule and of the breaker is divided by the
 * same factor (first retry 100 ms instead of 2 s, backoff cap 15 s instead of 5 min, first
 * cool-down 1.5 s instead of 30 s, cap 15 s instead of 5 min, ramp steps 50 ms). The load
 * stays 1,000 events/s in real time. Each event so makes the same attempts, at the same points
 * of the outage, as in the real case, and the breaker the same probes: the requests per event
 * without the breaker and the breaker's count are what a real 10-minute outage gives, over
 * `20×` fewer events; docs/performance.md shows how the figures scale.
 *
 * The receiver answers 503 during the outage (so every request is counted where it arrives)
 * and 200 otherwise; Ferry runs on a fresh SQLite file per mode.
 *
 *   npx tsx bench/server/outage.ts [--scale 20] [--rate 1000] [--before-s 3] [--after-s 3] [--drain-timeout-s 300]
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { createFerry } from '../../packages/server/dist/app.js';
import { configFromObject } from '../../packages/server/dist/config/load.js';
import { adminToken, basicAuth, eventJson, log, main, numFlag, printTable, removeDir, round, tempDir, writeKey, writeResults } from './lib/common.js';

/** The receiver: down (503) or up (200); counts requests by phase and the distinct events answered 2xx. */
async function startOutageReceiver() {
  const state = { down: false, duringOutage: 0, total: 0, delivered: new Set<string>(), lastDeliveryAt: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      state.total++;
      if (state.down) {
        state.duringOutage++;
        res.writeHead(503).end();
        return;
      }
      const id = /"messageId":"([^"]+)"/.exec(Buffer.concat(chunks).toString('utf8'))?.[1];
      if (id) state.delivered.add(id);
      state.lastDeliveryAt = Date.now();
      res.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

interface ModeResult {
  breaker: boolean;
  events: number;
  outageS: number;
  requestsDuringOutage: number;
  requestsPerOutageEvent: number;
  drainAfterRecoveryS: number;
  delivered: number;
  lost: number;
  dead: number;
}

async function runMode(breaker: boolean, o: { scale: number; rate: number; beforeS: number; afterS: number; drainTimeoutS: number }): Promise<ModeResult> {
  const receiver = await startOutageReceiver();
  const dataDir = tempDir('ferry-bench-outage-');
  const s = o.scale;
  const config = configFromObject(
    {
      sources: [{ id: 'bench', name: 'Bench', writeKey }],
      destinations: [
        {
          id: 'hooks',
          type: 'Webhooks',
          name: 'hooks',
          sources: ['bench'],
          settings: { webhooks: [{ url: receiver.url }] },
          circuitBreaker: breaker
            ? { cooldownMs: Math.round(30_000 / s), maxCooldownMs: Math.round(300_000 / s), rampStepMs: Math.round(1000 / s) }
            : { enabled: false },
        },
      ],
      delivery: { retry: { initialDelayMs: Math.round(2000 / s), maxDelayMs: Math.round(300_000 / s), windowMs: Math.round(14_400_000 / s) } },
      network: { allowPrivateNetworks: true },
    },
    'outage benchmark',
  );
  const ferry = await createFerry({ config, dataDir, adminToken, logger: pino({ level: 'silent' }), metrics: false });
  const url = await ferry.start(0, '127.0.0.1');
  const outageMs = (600_000 / s) | 0;
  let sent = 0;
  const batchEvery = 50;
  const perBatch = Math.max(1, Math.round((o.rate * batchEvery) / 1000));
  const loadMs = (o.beforeS + o.afterS) * 1000 + outageMs;
  const startedAt = Date.now();
  let recoveredAt = 0;
  // A fixed schedule of batches (not one after each answer), so the rate holds while Ferry is busy.
  const posts: Promise<unknown>[] = [];
  for (let tick = 0; tick * batchEvery < loadMs; tick++) {
    const due = startedAt + tick * batchEvery;
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    const elapsed = Date.now() - startedAt;
    if (!receiver.state.down && elapsed >= o.beforeS * 1000 && elapsed < o.beforeS * 1000 + outageMs && recoveredAt === 0) receiver.state.down = true;
    if (receiver.state.down && elapsed >= o.beforeS * 1000 + outageMs) {
      receiver.state.down = false;
      recoveredAt = Date.now();
    }
    const parts: string[] = [];
    for (let i = 0; i < perBatch; i++) parts.push(eventJson(`e-${sent + i}`, sent + i));
    sent += perBatch;
    posts.push(
      fetch(`${url}/v1/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuth },
        body: `{"batch":[${parts.join(',')}]}`,
      }).then((r) => {
        if (r.status !== 200) throw new Error(`ingestion answered ${r.status}`);
        return r.arrayBuffer();
      }),
    );
  }
  await Promise.all(posts);
  if (recoveredAt === 0) {
    receiver.state.down = false;
    recoveredAt = Date.now();
  }
  const deadline = Date.now() + o.drainTimeoutS * 1000;
  while (receiver.state.delivered.size < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const dead = (await ferry.store.backlog()).reduce((n, b) => n + b.dead, 0);
  const result: ModeResult = {
    breaker,
    events: sent,
    outageS: outageMs / 1000,
    requestsDuringOutage: receiver.state.duringOutage,
    requestsPerOutageEvent: round(receiver.state.duringOutage / ((o.rate * outageMs) / 1000), 3),
    drainAfterRecoveryS: round((receiver.state.lastDeliveryAt - recoveredAt) / 1000, 2),
    delivered: receiver.state.delivered.size,
    lost: sent - receiver.state.delivered.size,
    dead,
  };
  await ferry.stop();
  await receiver.close();
  await removeDir(dataDir);
  return result;
}

/** Both modes, breaker first; the summary of run-all.ts and the README table. */
export async function runOutage(o: { scale: number; rate: number; beforeS: number; afterS: number; drainTimeoutS: number }) {
  const modes: ModeResult[] = [];
  for (const breaker of [true, false]) {
    log(`outage: breaker ${breaker ? 'on' : 'off'}, ${600 / o.scale} s outage at ${o.rate} events/s (time scaled 1/${o.scale})`);
    modes.push(await runMode(breaker, o));
  }
  const [on, off] = modes as [ModeResult, ModeResult];
  const ratio = off.requestsDuringOutage === 0 ? NaN : on.requestsDuringOutage / off.requestsDuringOutage;
  const summary = {
    scale: o.scale,
    rate: o.rate,
    outageS: on.outageS,
    on,
    off,
    requestRatio: round(ratio, 5),
    goalMet: ratio < 0.01 && on.lost === 0 && off.lost === 0 && on.dead === 0 && off.dead === 0,
  };
  printTable(
    `A receiver down ${on.outageS} s (10 min scaled 1/${o.scale}) under ${o.rate} events/s`,
    ['breaker', 'events', 'requests during the outage', 'per event of the outage', 'drain after recovery', 'lost', 'dead'],
    modes.map((m) => [m.breaker ? 'on' : 'off', m.events, m.requestsDuringOutage, m.requestsPerOutageEvent, `${m.drainAfterRecoveryS} s`, m.lost, m.dead]),
  );
  console.log(`with the breaker: ${round(ratio * 100, 3)} % of the requests without it (goal < 1 %): ${summary.goalMet ? 'met' : 'NOT met'}`);
  writeResults('outage', summary);
  return summary;
}

if (import.meta.url === `file://${process.argv[1]}`)
  await main(() =>
    runOutage({
      scale: numFlag('scale', 20),
      rate: numFlag('rate', 1000),
      beforeS: numFlag('before-s', 3),
      afterS: numFlag('after-s', 3),
      drainTimeoutS: numFlag('drain-timeout-s', 300),
    }),
  );
