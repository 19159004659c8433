// A child process for the spool's crash test: makes `calls` track calls through a spooled
// client and prints each messageId once the call has returned, then closes. The test kills it
// with SIGKILL at random moments. Usage: spool-writer.ts <endpoint> <dir> <calls> [segmentBytes]
import { writeSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Analytics } from '@ferry/analytics';

const [endpoint = '', dir = '', callsArg = '0', segmentBytesArg] = process.argv.slice(2);
const calls = Number(callsArg);
const spool = segmentBytesArg === undefined ? { dir } : { dir, segmentBytes: Number(segmentBytesArg) };
const client = new Analytics('wk', { endpoint, flushAt: 10, flushAfterMs: 20, spool });
client.on('drop', (e) => writeSync(2, `drop ${e.code} ${e.messageIds.length}\n`));
writeSync(1, `started ${client.stats.queued}\n`);
for (let i = 0; i < calls; i++) {
  const id = client.track({ userId: 'u', event: 'Crash Test', properties: { i } });
  // Synchronous, so a printed id is one whose call returned, and nothing printed is lost at the kill.
  writeSync(1, `${id}\n`);
  if (i % 5 === 4) await nextTurn();
}
const result = await client.close();
writeSync(1, `closed ${result.status} ${result.delivered}\n`);
