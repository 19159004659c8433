// A Segment-compatible batch endpoint for the benchmark, in its own process so its CPU and
// memory are never charged to a runner. It counts each messageId, records the largest batch,
// and answers GET /wait?n=N once N distinct messages have arrived (or the deadline passes).
//
// It is the measuring instrument and shares the machine's two cores with the runner, so a
// request costs it as little as it can: HTTP/1.1 read straight off `node:net` (node:http's
// server cost about 80 µs of CPU per batch request, this about 45), no URL or JSON parsing
// on the batch path, no logging. Every runner sends Content-Length bodies; a chunked request
// is answered 411, so a runner that sent one would fail the run rather than be miscounted.
//
// The exactly-once check only needs the messageIds, so the body is scanned for the
// `"messageId":"` key instead of parsed. In JSON without whitespace (every runner serialises
// with JSON.stringify) that byte sequence can only be a key followed by a string value: a
// quote inside a string is escaped. The workload (workload.mjs) has no nested messageId key,
// so each occurrence is exactly one message: a lost message shows as fewer unique ids, a
// resent one as a duplicate. (Checked against a full JSON.parse of every body, for every
// runner, when this scan was introduced.)
import { createServer } from 'node:net';
import { gunzipSync } from 'node:zlib';

const ID_KEY = Buffer.from('"messageId":"');
const QUOTE = 0x22;
const HEAD_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;
const TRANSFER_ENCODING = /\r\ntransfer-encoding:/i;
const GZIP = /\r\ncontent-encoding:[ \t]*gzip/i;
const CLOSE = /\r\nconnection:[ \t]*close/i;

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

function response(status, body, close = false) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const reason = { 200: 'OK', 404: 'Not Found', 411: 'Length Required' }[status];
  return Buffer.from(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${close ? 'connection: close\r\n' : ''}\r\n${text}`,
  );
}
const OK = response(200, '{"success":true}');

function wake() {
  waiters = waiters.filter((w) => {
    if (seen.size < w.n) return true;
    clearTimeout(w.timer);
    w.reply(response(200, { ...stats(), at: performance.timeOrigin + performance.now() }));
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

function onRequest(method, target, head, body, reply) {
  if (method === 'POST' && target === '/v1/batch') {
    countBatch(GZIP.test(head) ? gunzipSync(body) : body);
    reply(OK);
    if (waiters.length > 0) wake();
    return;
  }
  const url = new URL(target, 'http://127.0.0.1');
  if (method === 'GET' && url.pathname === '/wait') {
    const n = Number(url.searchParams.get('n'));
    const timeoutMs = Number(url.searchParams.get('timeoutMs') ?? 60_000);
    const w = {
      n,
      reply,
      timer: setTimeout(() => {
        waiters = waiters.filter((x) => x !== w);
        reply(response(200, { ...stats(), at: performance.timeOrigin + performance.now(), timedOut: true }));
      }, timeoutMs),
    };
    waiters.push(w);
    wake();
    return;
  }
  if (method === 'GET' && url.pathname === '/stats') return reply(response(200, stats()));
  if (method === 'POST' && url.pathname === '/reset') {
    seen = new Set();
    total = 0;
    requests = 0;
    largestBatch = 0;
    cpuAtReset = process.cpuUsage();
    return reply(response(200, '{}'));
  }
  reply(response(404, '{}'));
}

const server = createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('error', () => {});
  let buf;
  socket.on('data', (chunk) => {
    buf = buf === undefined ? chunk : Buffer.concat([buf, chunk]);
    while (buf !== undefined) {
      const headEnd = buf.indexOf(HEAD_END);
      if (headEnd < 0) return;
      const head = buf.latin1Slice(0, headEnd);
      // Every runner sends a Content-Length body; a chunked one is refused, never miscounted.
      if (TRANSFER_ENCODING.test(head)) return void socket.end(response(411, '{}', true));
      const length = Number(CONTENT_LENGTH.exec(head)?.[1] ?? 0);
      const bodyEnd = headEnd + HEAD_END.length + length;
      if (buf.length < bodyEnd) return;
      const body = buf.subarray(headEnd + HEAD_END.length, bodyEnd);
      buf = bodyEnd === buf.length ? undefined : buf.subarray(bodyEnd);
      const lineEnd = head.indexOf('\r\n');
      const [method, target] = head.slice(0, lineEnd < 0 ? head.length : lineEnd).split(' ');
      const close = CLOSE.test(head);
      onRequest(method, target, head, body, (bytes) => (close ? socket.end(bytes) : socket.write(bytes)));
    }
  });
});

server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: server.address().port });
});
process.on('disconnect', () => process.exit(0));
