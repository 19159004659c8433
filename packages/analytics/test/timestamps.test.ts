import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics, AnalyticsError } from '@ferry/analytics';
// The server's own parser: every row below must be judged the same way by both sides, so a
// timestamp the client queues is one the server stores.
import { parseIsoTimestamp as serverParse } from '../../server/src/ingest/timestamps.js';
import { within } from './support/deadline.js';
import { ManualClock } from './support/manual-clock.js';
import { SinkServer } from './support/sink-server.js';

// [timestamp, accepted?, what the row shows]
const table: Array<[string, boolean, string]> = [
  ['2024-01-02T03:04:05.678Z', true, 'milliseconds, Z'],
  ['2024-01-02T03:04:05Z', true, 'no fraction'],
  ['2024-01-02T03:04Z', true, 'no seconds'],
  ['2024-01-02T03:04:05.6Z', true, 'one fraction digit'],
  ['2024-01-02T03:04:05.123456789Z', true, 'nanoseconds'],
  ['2024-01-02T03:04:05,678Z', true, 'comma before the fraction'],
  ['2024-01-02T03:04:05+02:00', true, 'offset ±HH:MM'],
  ['2019-05-06T01:02:03-0700', true, 'offset ±HHMM, as analytics-go v2 writes it'],
  ['2024-01-02T03:04:05+05', true, 'offset ±HH'],
  ['2024-01-02T03:04:05.678-00:00', true, 'negative zero offset'],
  ['2024-01-02T03:04:05', true, 'no offset (read as UTC)'],
  ['2024-01-02', true, 'a date alone'],
  ['2024-01-02 03:04:05Z', true, 'space instead of T'],
  ['2024-01-02t03:04:05z', true, 'lower-case t and z'],
  ['2024-02-29T00:00:00Z', true, 'leap day'],
  ['0000-01-01T00:00:00Z', true, 'earliest year'],
  ['9999-12-31T23:59:59.999Z', true, 'latest instant'],
  ['Jan 2 2024', false, 'a date Date.parse reads'],
  ['Tue, 02 Jan 2024 03:04:05 GMT', false, 'RFC 1123'],
  ['yesterday', false, 'words'],
  ['', false, 'empty'],
  ['1704164645678', false, 'epoch milliseconds as a string'],
  ['2023-02-29T00:00:00Z', false, 'no leap day that year'],
  ['2024-02-30', false, 'impossible date'],
  ['2024-13-01', false, 'month 13'],
  ['2024-01-02T24:00:00Z', false, 'hour 24'],
  ['2024-01-02T03:60:00Z', false, 'minute 60'],
  ['2024-01-02T03:04:60Z', false, 'leap second'],
  ['2024-01-02T03:04:05.Z', false, 'empty fraction'],
  ['2024-01-02T03:04:05+24:00', false, 'offset hour 24'],
  ['2024-01-02T03:04:05+02:', false, 'cut-off offset'],
  ['2024-01-02T03:04:05Z ', false, 'trailing space'],
  [' 2024-01-02T03:04:05Z', false, 'leading space'],
  ['2024-01-02Z', false, 'offset without a time'],
  ['2024-01-02T03', false, 'hour without minutes'],
  ['20240102T030405Z', false, 'basic format'],
  ['2024-W01-2', false, 'week date'],
  ['2024-002', false, 'ordinal date'],
  ['+002024-01-02T03:04:05Z', false, 'expanded year'],
  ['0000-01-01T00:30:00+01:00', false, 'before year 0000 once the offset is applied'],
  ['9999-12-31T23:30:00-01:00', false, 'after year 9999 once the offset is applied'],
];

function accepts(client: Analytics, timestamp: string | Date): boolean {
  try {
    client.track({ userId: 'u', event: 'E', timestamp });
    return true;
  } catch (e) {
    assert.ok(e instanceof AnalyticsError && e.code === 'invalid_timestamp', `unexpected ${String(e)}`);
    return false;
  }
}

describe('timestamps', () => {
  let sink: SinkServer;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(() => sink.close());

  for (const [timestamp, accepted, what] of table) {
    it(`${accepted ? 'queues' : 'refuses with invalid_timestamp'} ${JSON.stringify(timestamp)} (${what}), as the server does`, () => {
      const client = new Analytics('wk', { endpoint: sink.url, clock: new ManualClock() });
      assert.equal(accepts(client, timestamp), accepted);
      assert.equal(client.stats.queued, accepted ? 1 : 0);
      assert.equal(serverParse(timestamp) !== undefined, accepted, 'the server agrees');
    });
  }

  it('refuses a Date that is invalid or outside years 0000..9999', () => {
    const client = new Analytics('wk', { endpoint: sink.url, clock: new ManualClock() });
    assert.equal(accepts(client, new Date(Number.NaN)), false);
    assert.equal(accepts(client, new Date(Date.UTC(10_000, 0, 1))), false);
    assert.equal(accepts(client, new Date(Date.UTC(-1, 11, 31))), false);
    assert.equal(accepts(client, new Date(Date.UTC(2024, 0, 2))), true);
    assert.equal(client.stats.queued, 1);
  });

  it('sends an accepted string as written and a Date as UTC with milliseconds', async () => {
    const client = new Analytics('wk', { endpoint: sink.url, clock: new ManualClock() });
    const written = table.filter(([, accepted]) => accepted).map(([timestamp]) => timestamp);
    for (const timestamp of written) client.track({ userId: 'u', event: 'E', timestamp });
    client.track({ userId: 'u', event: 'E', timestamp: new Date(Date.UTC(2019, 4, 6, 8, 2, 3)) });
    await within(client.close(), 'close');
    assert.deepEqual(
      sink.accepted.map((m) => m['timestamp']),
      [...written, '2019-05-06T08:02:03.000Z'],
    );
  });
});
