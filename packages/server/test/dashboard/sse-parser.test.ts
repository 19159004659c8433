import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SseParser, type SseEvent } from '../../../dashboard/src/lib/sse-parser.js';

function parse(chunks: string[]): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = new SseParser((e) => events.push(e));
  for (const chunk of chunks) parser.push(chunk);
  return events;
}

test("the dashboard's event-stream parser: events split anywhere across chunks, every line ending, comments and multi-line data", () => {
  const stream = ': heartbeat\n\nevent: message\ndata: {"a":1}\n\r\nevent: message\r\ndata: line one\r\ndata:line two\r\rdata: no name\n\n';
  const expected = [
    { event: 'message', data: '{"a":1}' },
    { event: 'message', data: 'line one\nline two' },
    { event: 'message', data: 'no name' },
  ];
  assert.deepEqual(parse([stream]), expected);
  // Cut at every position, including between the \r and \n of one line ending.
  for (let i = 1; i < stream.length; i++) assert.deepEqual(parse([stream.slice(0, i), stream.slice(i)]), expected, `cut at ${i}`);
  assert.deepEqual(parse([...stream]), expected, 'one character at a time');
});

test('an event without data, or not ended by a blank line, is not dispatched', () => {
  assert.deepEqual(parse(['event: message\n\n', 'data: half']), []);
});
