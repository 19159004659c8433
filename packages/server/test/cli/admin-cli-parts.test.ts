/** The pure parts of the admin CLI: the stream reader of `ferry tail`, time flags, tables and the progress bar. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timeFlag } from '../../src/cli/admin-command.js';
import { tailLine } from '../../src/cli/commands/tail.js';
import { progressBar, table } from '../../src/cli/output.js';
import { readServerSentEvents, type ServerSentEvent } from '../../src/cli/server-sent-events.js';

async function read(chunks: string[]): Promise<ServerSentEvent[]> {
  const encoder = new TextEncoder();
  const body = (async function* () {
    for (const chunk of chunks) yield encoder.encode(chunk);
  })();
  const events: ServerSentEvent[] = [];
  for await (const event of readServerSentEvents(body)) events.push(event);
  return events;
}

test('server-sent events: split anywhere, CRLF or LF, comments skipped, data lines joined, an unfinished event dropped', async () => {
  const stream = ': hello\n\nevent: a\ndata: {"x":1}\n\nevent: b\r\ndata: one\r\ndata: two\r\n\r\ndata:plain\n\n: heartbeat\n\nevent: c\ndata: cut';
  const whole = await read([stream]);
  assert.deepEqual(whole, [
    { event: 'a', data: '{"x":1}' },
    { event: 'b', data: 'one\ntwo' },
    { event: 'message', data: 'plain' },
  ]);
  // The same bytes one character at a time: a chunk boundary may fall anywhere, inside a CRLF too.
  assert.deepEqual(await read([...stream]), whole);
});

test('a time flag: ISO 8601 sent as it is, a span back from now turned into the time it names, anything else refused', () => {
  const now = Date.parse('2026-03-01T12:00:00.000Z');
  const cases: [string, string][] = [
    ['2026-03-01T09:00:00Z', '2026-03-01T09:00:00Z'],
    ['90s', '2026-03-01T11:58:30.000Z'],
    ['15m', '2026-03-01T11:45:00.000Z'],
    ['2h', '2026-03-01T10:00:00.000Z'],
    ['7d', '2026-02-22T12:00:00.000Z'],
  ];
  for (const [raw, sent] of cases) assert.equal(timeFlag(raw, '--since', now), sent, raw);
  assert.equal(timeFlag(undefined, '--since', now), undefined);
  for (const bad of ['yesterday', '2h ago', '-1h', '1w']) assert.throws(() => timeFlag(bad, '--since', now), /--since must be an ISO 8601 date-time/, bad);
});

test('a table aligns its columns, cuts long cells but the last, and shows absent values as -', () => {
  const rows = [
    { id: 1, name: 'a-very-long-destination-name', error: null },
    { id: 22, name: 'b', error: 'HTTP 503 from a long, long way away' },
  ];
  const text = table(
    rows,
    [
      { heading: 'ID', value: (r) => r.id },
      { heading: 'NAME', value: (r) => r.name, maxWidth: 10 },
      { heading: 'ERROR', value: (r) => r.error },
    ],
    'none',
  );
  assert.equal(text, ['ID  NAME        ERROR', '1   a-very-lo…  -', '22  b           HTTP 503 from a long, long way away', ''].join('\n'));
  assert.equal(table([], [{ heading: 'ID', value: () => 1 }], 'nothing here'), 'nothing here\n');
});

test('a progress bar and a tail line', () => {
  assert.equal(progressBar(0, 10, 10), '[----------]   0% 0/10');
  assert.equal(progressBar(5, 10, 10), '[#####-----]  50% 5/10');
  assert.equal(progressBar(10, 10, 10), '[##########] 100% 10/10');
  assert.equal(progressBar(0, 0, 10), '[##########] 100% 0/0');
  assert.equal(
    tailLine('delivery:dead', { at: '2026-03-01T10:00:00.000Z', id: 9, destinationId: 'crm', reason: 'non_retryable_response', lastError: 'x -> HTTP 400' }),
    '2026-03-01T10:00:00.000Z  delivery:dead       delivery=9 destination=crm reason=non_retryable_response lastError="x -> HTTP 400"',
  );
});
