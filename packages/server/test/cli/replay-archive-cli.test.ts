/**
 * `ferry replay archive` and `ferry replay jobs ls|show|cancel` (docs/cli.md): the real command,
 * spawned, against a real Ferry on loopback sending to a real receiver.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ferryCli, inTurn } from '../helpers/admin-cli.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';

describe('ferry replay archive and ferry replay jobs', () => {
  let t: TestFerry;
  let receiver: TestReceiver;
  const cli = (args: string[]) => ferryCli(t.url, args);
  before(async () => {
    receiver = await startReceiver({ status: 200 });
    // A short poll: the worker sends each batch, and the job looks again soon after.
    t = await startFerry(testConfig([]), { replay: { archiveBatchSize: 2, archivePollMs: 20 } });
    const batch = [1, 2, 3, 4, 5].map((n) => ({ type: 'track', userId: `u${n}`, event: 'E', messageId: `k${n}` }));
    assert.equal((await t.send('/v1/batch', { batch })).status, 200);
    assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
  });
  after(async () => {
    await t.stop();
    await receiver.close();
  });

  test('a dry run counts; a replay is followed with progress lines to its end, and the receiver gets each event once', async () => {
    const [text, json] = await inTurn([
      () => cli(['replay', 'archive', '--destination', 'late', '--since', '1h', '--dry-run']),
      () => cli(['replay', 'archive', '--destination', 'late', '--source', 'app', '--since', '1h', '--dry-run', '--json']),
    ]);
    assert.equal(text.code, 0, text.output);
    assert.equal(text.stdout, 'would send 5 events to late (dry run: nothing changed)\n');
    assert.deepEqual(JSON.parse(json.stdout), { dryRun: true, wouldReplay: 5 });

    const run = await cli(['replay', 'archive', '--destination', 'late', '--since', '1h', '--poll-ms', '20']);
    assert.equal(run.code, 0, run.output);
    const [, jobId] = /^replay job (\S+): 5 events to replay; following it/m.exec(run.output) ?? [];
    assert.ok(jobId, run.output);
    assert.match(run.output, new RegExp(`^replay ${jobId}: \\d of 5 replayed, 0 skipped$`, 'm'));
    assert.equal(run.stdout, `replay job ${jobId} done: 5 of 5 replayed, 0 skipped\n`);
    await receiver.waitFor(5);
    assert.deepEqual(receiver.requests.map((r) => r.json.messageId).sort(), ['k1', 'k2', 'k3', 'k4', 'k5']);

    const [table, listed, shown] = await inTurn([
      () => cli(['replay', 'jobs', 'ls']),
      () => cli(['replay', 'jobs', 'ls', '--json']),
      () => cli(['replay', 'jobs', 'show', jobId!]),
    ]);
    assert.match(table.stdout, /^ID\s+KIND\s+STATUS\s+REPLAYED\s+SKIPPED\s+TOTAL\s+DESTINATION\s+CREATED\s+FINISHED$/m);
    assert.match(table.stdout, new RegExp(`^${jobId}\\s+archive\\s+done\\s+5\\s+0\\s+5\\s+late\\s`, 'm'));
    assert.deepEqual(JSON.parse(listed.stdout), (await t.admin('GET', '/replay-jobs')).json);
    assert.match(shown.stdout, /^kind:\s+archive$/m);
    assert.match(shown.stdout, /^sourceIds:\s+\["app"\]$/m);
    assert.match(shown.stdout, /^cursor:\s+\{"receivedAt":"[^"]+Z","eventId":5\}$/m);
  });

  test('cancel stops a running job and says so; again it changes nothing; an unknown job is not_found', async () => {
    assert.equal((await t.admin('POST', '/destinations', webhooksDestination('slow', [receiver.url]))).status, 201);
    // One event per thousand seconds: after its first event the job waits, running.
    const started = await t.admin('POST', '/replays', { destinationId: 'slow', since: new Date(Date.now() - 3_600_000).toISOString(), ratePerSecond: 0.001 });
    assert.equal(started.status, 202);
    const id = started.json.job.id;
    const [first, second, unknown] = await inTurn([
      () => cli(['replay', 'jobs', 'cancel', id]),
      () => cli(['replay', 'jobs', 'cancel', id, '--json']),
      () => cli(['replay', 'jobs', 'cancel', 'rpl_nope']),
    ]);
    assert.equal(first.code, 0, first.output);
    assert.match(first.stdout, new RegExp(`^replay job ${id} cancelled: [01] of 5 replayed, 0 skipped\\n$`));
    assert.equal(JSON.parse(second.stdout).status, 'cancelled');
    assert.equal(unknown.code, 1);
    assert.match(unknown.output, /^ferry: not_found: /m);
    const watched = await cli(['replay', '--watch', id]);
    assert.equal(watched.code, 1, 'a cancelled job did not finish');
    assert.match(watched.stdout, new RegExp(`^replay job ${id} cancelled: `));
  });

  test('usage errors exit 2 before asking; refusals of the server exit 1 with their code', async () => {
    const before = (await t.admin('GET', '/replay-jobs')).json.jobs.length;
    const [noSince, badRate, badTime, unknown] = await inTurn([
      () => cli(['replay', 'archive', '--destination', 'late']),
      () => cli(['replay', 'archive', '--destination', 'late', '--since', '1h', '--rate', 'fast']),
      () => cli(['replay', 'archive', '--destination', 'late', '--since', 'yesterday']),
      () => cli(['replay', 'archive', '--destination', 'nope', '--since', '1h']),
    ]);
    assert.equal(noSince.code, 2);
    assert.match(noSince.output, /--since/);
    assert.equal(badRate.code, 2);
    assert.match(badRate.output, /--rate/);
    assert.equal(badTime.code, 2);
    assert.match(badTime.output, /--since/);
    assert.equal((await t.admin('GET', '/replay-jobs')).json.jobs.length, before, 'no job was made by a usage error');
    assert.equal(unknown.code, 1);
    assert.match(unknown.output, /^ferry: not_found: /m);
  });

  test('a bad --poll-ms exits 2 before any job is made, for the archive and for dead letters', async () => {
    const before = (await t.admin('GET', '/replay-jobs')).json.jobs.length;
    const [archive, deadLetters] = await inTurn([
      () => cli(['replay', 'archive', '--destination', 'late', '--since', '1h', '--poll-ms', '5']),
      () => cli(['replay', '--all', '--poll-ms', 'often']),
    ]);
    assert.equal(archive.code, 2, archive.output);
    assert.match(archive.output, /--poll-ms/);
    assert.equal(deadLetters.code, 2, deadLetters.output);
    assert.match(deadLetters.output, /--poll-ms/);
    assert.equal((await t.admin('GET', '/replay-jobs')).json.jobs.length, before, 'no job was made');
  });
});
