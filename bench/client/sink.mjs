// A Segment-compatible batch endpoint for the benchmark, in its own process so its CPU and
// memory are never charged to a runner. It parses every body, counts each messageId, records
// the largest batch, and answers GET /wait?n=N once N distinct messages have arrived (or the
// deadline passes).
import { createServer } from 'node:http';
import { gunzipSync } from 'node:zlib';

let seen = new Set();
let total = 0;
let requests = 0;
let largestBatch = 0;
let waiters = [];

function stats() {
  return { unique: seen.size, duplicates: total - seen.size, total, requests, largestBatch };
}

function wake() {
  waiters = waiters.filter((w) => {
    if (seen.size < w.n) return true;
    clearTimeout(w.timer);
    w.res.end(JSON.stringify({ ...stats(), at: performance.timeOrigin + performance.now() }));
    return false;
  });
}

const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  if (req.method === 'POST' && url.pathname === '/v1/batch') {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      const body = JSON.parse(raw.toString('utf8'));
      requests++;
      largestBatch = Math.max(largestBatch, body.batch.length);
      for (const m of body.batch) {
        total++;
        seen.add(m.messageId);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"success":true}');
      if (waiters.length > 0) wake();
    });
    return;
  }
  if (req.method === 'GET' && url.pathname === '/wait') {
    const n = Number(url.searchParams.get('n'));
    const timeoutMs = Number(url.searchParams.get('timeoutMs') ?? 60_000);
    const w = { n, res, timer: setTimeout(() => {
      waiters = waiters.filter((x) => x !== w);
      res.end(JSON.stringify({ ...stats(), at: performance.timeOrigin + performance.now(), timedOut: true }));
    }, timeoutMs) };
    waiters.push(w);
    wake();
    return;
  }
  if (req.method === 'GET' && url.pathname === '/stats') return res.end(JSON.stringify(stats()));
  if (req.method === 'POST' && url.pathname === '/reset') {
    seen = new Set();
    total = 0;
    requests = 0;
    largestBatch = 0;
    return res.end('{}');
  }
  res.writeHead(404).end();
});

server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: server.address().port });
});
process.on('disconnect', () => process.exit(0));
