// A Segment-compatible batch endpoint for the benchmark, in its own process so its CPU and
// memory are never charged to a runner. It counts each messageId, records the largest batch,
// and answers GET /wait?n=N once N distinct messages have arrived (or the deadline passes).
//
// It is the measuring instrument and shares the machine's cores with the runner, so a
// request costs it as little as it can: no URL parsing, no JSON parsing, no logging. The
// exactly-once check only needs the messageIds, so the body is scanned for the `"messageId":"`
// key instead of parsed. In JSON without whitespace (every runner serialises with
// JSON.stringify) that byte sequence can only be a key followed by a string value: a quote
// inside a string is escaped. The workload (workload.mjs) has no nested messageId key, so
// each occurrence is exactly one message: a lost message shows as fewer unique ids, a
// resent one as a duplicate.
import { createServer } from 'node:http';
import { gunzipSync } from 'node:zlib';

const ID_KEY = Buffer.from('"messageId":"');
const QUOTE = 0x22;
const OK_BODY = '{"success":true}';
const OK_HEADERS = ['content-type', 'application/json', 'content-length', String(OK_BODY.length)];

let seen = new Set();
let total = 0;
let requests = 0;
let largestBatch = 0;
let waiters = [];
// The sink's own CPU since the last reset, so a run shows what the instrument costs per request.
let cpuAtReset = process.cpuUsage();

function stats() {
  const cpu = process.cpuUsage(cpuAtReset);
  return { unique: seen.size, duplicates: total - seen.size, total, requests, largestBatch, cpuUs: cpu.user + cpu.system };
}

function wake() {
  waiters = waiters.filter((w) => {
    if (seen.size < w.n) return true;
    clearTimeout(w.timer);
    w.res.end(JSON.stringify({ ...stats(), at: performance.timeOrigin + performance.now() }));
    return false;
  });
}

/** Counts the messageIds of one batch body. */
function countBatch(body) {
  let messages = 0;
  for (let at = body.indexOf(ID_KEY); at !== -1; at = body.indexOf(ID_KEY, at)) {
    const start = at + ID_KEY.length;
    const end = body.indexOf(QUOTE, start);
    if (end === -1) break;
    seen.add(body.latin1Slice(start, end));
    messages++;
    at = end;
  }
  requests++;
  total += messages;
  if (messages > largestBatch) largestBatch = messages;
}

function onBatch(req, res) {
  let first;
  let rest;
  req.on('data', (c) => {
    if (first === undefined) first = c;
    else (rest ??= [first]).push(c);
  });
  req.on('end', () => {
    let body = rest === undefined ? first ?? Buffer.alloc(0) : Buffer.concat(rest);
    if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
    countBatch(body);
    res.writeHead(200, OK_HEADERS);
    res.end(OK_BODY);
    if (waiters.length > 0) wake();
  });
}

const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/v1/batch') return onBatch(req, res);
  const url = new URL(req.url, 'http://127.0.0.1');
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
    cpuAtReset = process.cpuUsage();
    return res.end('{}');
  }
  res.writeHead(404).end();
});

server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: server.address().port });
});
process.on('disconnect', () => process.exit(0));
