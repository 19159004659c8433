import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { childWaitMs, startWithLines } from './support/child-lines.js';
import { within } from './support/deadline.js';
import { countIds, SinkServer } from './support/sink-server.js';

const writer = fileURLToPath(new URL('./support/spool-writer.ts', import.meta.url));
const kills = 5;
// Small segments (a message is about 250 bytes): kills also land around rolls and the deletion
// of fully acknowledged segments.
const segmentBytes = 2_000;
/** A spool-writer child with its output split into lines as they come. */
function startWriter(endpoint: string, dir: string, calls: number) {
  return startWithLines([writer, endpoint, dir, String(calls), String(segmentBytes)]);
}

const isId = (line: string) => /^[0-9a-f-]{36}$/.test(line);

describe('durable spool under SIGKILL', () => {
  let sink: SinkServer;
  let dir: string;
  before(async () => {
    // Answers after a random few ms, so a kill finds batches queued, in flight and just answered.
    sink = await SinkServer.start(() => ({ after: sleep(Math.floor(Math.random() * 8)) }));
    dir = mkdtempSync(join(tmpdir(), 'ferry-spool-crash-'));
  });
  after(async () => {
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers every call that returned, across kills at random moments and restarts', async (t) => {
    const returned: string[] = [];
    for (let round = 0; round < kills; round++) {
      const w = startWriter(sink.url, dir, 100_000);
      // The first line is `started <recovered>`; kill after a random number of returned calls.
      const killAfter = 1 + Math.floor(Math.random() * 400);
      await w.untilLines(1 + killAfter);
      w.child.kill('SIGKILL');
      await within(w.exited, 'the killed writer to exit');
      const ids = w.lines.filter(isId);
      assert.ok(ids.length >= killAfter);
      returned.push(...ids);
      t.diagnostic(`round ${round + 1}: ${w.lines[0]}, killed after ${ids.length} returned calls`);
    }
    // Each start takes the next segment id, so ids past one per start show that segments rolled.
    const segmentIds = readdirSync(dir)
      .filter((f) => f.endsWith('.log'))
      .map((f) => Number.parseInt(f, 10));
    assert.ok(Math.max(...segmentIds) > kills + 1, `segments rolled during the rounds (${segmentIds.join(', ')})`);
    const last = startWriter(sink.url, dir, 0);
    assert.equal(await within(last.exited, 'the last writer to close', childWaitMs), 0, last.stderr());
    assert.match(last.lines.at(-1) ?? '', /^closed complete \d+$/);

    const seen = countIds(sink.accepted);
    const missing = returned.filter((id) => !seen.has(id));
    const duplicates = [...seen.values()].filter((n) => n > 1).length;
    t.diagnostic(`${returned.length} calls returned, ${seen.size} distinct delivered, ${duplicates} delivered more than once`);
    assert.deepEqual(missing, [], `${missing.length} returned call(s) never delivered`);
    // A kill between a call's append and its print delivers a call that never printed: at most one per kill.
    const unprinted = seen.size - returned.length;
    assert.ok(unprinted >= 0 && unprinted <= kills, `${unprinted} delivered message(s) that no printed call accounts for`);
  });
});
