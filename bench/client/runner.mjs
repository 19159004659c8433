// One benchmark runner in its own process, so its peak RSS is its own.
// usage: node bench/client/runner.mjs <ferry|ferry-spool|segment|featureless> <sinkUrl> <calls>
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trackMessage } from './workload.mjs';

const [name, sinkUrl, callsArg] = process.argv.slice(2);
const calls = Number(callsArg);
// Below run.mjs's kill timeout, so a slow runner still reports (as incomplete).
const WAIT_TIMEOUT_MS = 75_000;
const controlAgent = new http.Agent({ keepAlive: false });

function get(path) {
  return new Promise((resolve, reject) => {
    http
      .get(`${sinkUrl}${path}`, { agent: controlAgent }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(JSON.parse(text)));
      })
      .on('error', reject);
  });
}

/**
 * The ceiling: no validation, no limits, no retries; batches of 20 posted as they fill, over
 * one keep-alive agent. maxSockets is bounded because an unbounded agent opens a connection
 * per request during a burst, which is slower on this sink.
 */
function featurelessClient(endpoint) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const url = new URL('/v1/batch', endpoint);
  const auth = `Basic ${Buffer.from('bench-key:').toString('base64')}`;
  let batch = [];
  const post = (items) => {
    const body = JSON.stringify({ batch: items, sentAt: new Date().toISOString() });
    const req = http.request(url, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: auth },
    });
    req.on('response', (res) => res.resume());
    req.on('error', () => {});
    req.end(body);
  };
  return {
    track(m) {
      batch.push({
        ...m,
        type: 'track',
        messageId: randomUUID(),
        timestamp: new Date().toISOString(),
        context: { library: { name: 'featureless', version: '0' } },
      });
      if (batch.length === 20) {
        post(batch);
        batch = [];
      }
    },
    async close() {
      agent.destroy();
    },
  };
}

async function makeClient() {
  if (name === 'ferry-spool') {
    // The durable spool with its defaults (fsync every 100 ms) in a fresh directory of the OS's
    // temporary folder; FERRY_BENCH_SPOOL (JSON) tries other spool settings.
    const { Analytics } = await import('@ferry/analytics');
    const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-spool-'));
    const spool = { dir, ...JSON.parse(process.env.FERRY_BENCH_SPOOL || '{}') };
    const client = new Analytics('bench-key', { endpoint: sinkUrl, spool });
    client.on('drop', (e) => console.error(`ferry-spool dropped ${e.messageIds.length}`));
    return {
      track: (m) => client.track(m),
      close: async () => {
        await client.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (name === 'ferry') {
    const { Analytics, createNodeHttpTransport } = await import('@ferry/analytics');
    // FERRY_BENCH_OPTIONS (JSON) tries other settings, and FERRY_BENCH_TRANSPORT=node-http the
    // node:http transport; the table is always run with the defaults.
    const extra = JSON.parse(process.env.FERRY_BENCH_OPTIONS || '{}');
    if (process.env.FERRY_BENCH_TRANSPORT === 'node-http') extra.transport = createNodeHttpTransport();
    const client = new Analytics('bench-key', { endpoint: sinkUrl, ...extra });
    client.on('drop', (e) => console.error(`ferry dropped ${e.messageIds.length}`));
    return { track: (m) => client.track(m), close: () => client.close() };
  }
  if (name === 'segment') {
    const { Analytics } = await import('@segment/analytics-node');
    const client = new Analytics({ writeKey: 'bench-key', host: sinkUrl, path: '/v1/batch', flushAt: 20 });
    return { track: (m) => client.track(m), close: () => client.closeAndFlush({ timeout: 5_000 }) };
  }
  if (name === 'featureless') {
    return featurelessClient(sinkUrl);
  }
  throw new Error(`unknown runner ${name}`);
}

const client = await makeClient();
const rssBefore = process.memoryUsage().rss;
const cpuAtStart = process.cpuUsage();
const start = performance.timeOrigin + performance.now();
for (let i = 0; i < calls; i++) client.track(trackMessage(i));
const enqueued = performance.timeOrigin + performance.now();
const enqueueCpu = process.cpuUsage(cpuAtStart);
const sinkSaw = await get(`/wait?n=${calls}&timeoutMs=${WAIT_TIMEOUT_MS}`);
const e2eCpu = process.cpuUsage(cpuAtStart);
await Promise.race([client.close(), new Promise((r) => setTimeout(r, 10_000).unref())]);
// Late duplicates (retries of answered batches) arrive after the last distinct message.
await new Promise((r) => setTimeout(r, 200));
const final = await get('/stats');
controlAgent.destroy();

const enqueueMs = enqueued - start;
const e2eMs = sinkSaw.at - start;
process.stdout.write(
  `${JSON.stringify({
    runner: name,
    calls,
    enqueueMs,
    e2eMs,
    enqueuePerSec: calls / (enqueueMs / 1000),
    e2ePerSec: sinkSaw.timedOut ? 0 : calls / (e2eMs / 1000),
    complete: !sinkSaw.timedOut && sinkSaw.unique === calls,
    unique: final.unique,
    duplicates: final.duplicates,
    requests: final.requests,
    largestBatch: final.largestBatch,
    // CPU in µs (user + system) from the first call until the sink saw the last message.
    enqueueCpuUs: enqueueCpu.user + enqueueCpu.system,
    clientCpuUs: e2eCpu.user + e2eCpu.system,
    sinkCpuUs: sinkSaw.cpuUs,
    clientCpuUsPerRequest: (e2eCpu.user + e2eCpu.system) / sinkSaw.requests,
    sinkCpuUsPerRequest: sinkSaw.cpuUs / sinkSaw.requests,
    peakRssMB: (process.resourceUsage().maxRSS * 1024) / 1e6,
    baseRssMB: rssBefore / 1e6,
  })}\n`,
);
process.exit(0);
