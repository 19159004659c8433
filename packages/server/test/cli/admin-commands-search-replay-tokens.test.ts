/**
 * The admin CLI over the delivery search filters, replay's dry run, bulk filters and jobs,
 * scoped tokens, and the listing of regulations (docs/cli.md, docs/admin-api.md). The real
 * command, spawned, against a real Ferry on loopback.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ferryCli, inTurn } from '../helpers/admin-cli.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';

const hooks = webhooksDestination('hooks', ['http://127.0.0.1:9/unused']);

/** Dead-letters every pending delivery of `hooks` (deleting a destination does) and makes it again, so they can be replayed. */
async function deadLetterEverything(t: TestFerry): Promise<void> {
  assert.equal((await t.admin('DELETE', '/destinations/hooks')).status, 204);
  assert.equal((await t.admin('POST', '/destinations', hooks)).status, 201);
}

describe('deliveries and dead letters searched by user, anonymous id, event, type and time', () => {
  let t: TestFerry;
  const cli = (args: string[]) => ferryCli(t.url, args);
  before(async () => {
    // No worker: every delivery stays pending, and nothing is sent.
    t = await startFerry(testConfig([hooks]), { deliver: false });
    const batch = [
      { type: 'track', userId: 'u1', anonymousId: 'a1', event: 'Signed Up', messageId: 'm-1' },
      { type: 'page', userId: 'u2', name: 'Home', messageId: 'm-2' },
      { type: 'identify', anonymousId: 'a2', traits: {}, messageId: 'm-3' },
      { type: 'track', userId: 'u1', event: 'Paid', messageId: 'm-4' },
    ];
    assert.equal((await t.send('/v1/batch', { batch })).status, 200);
  });
  after(() => t.stop());

  const ids = (stdout: string) => JSON.parse(stdout).deliveries.map((d: any) => d.messageId);

  test('each filter flag narrows the listing as its API parameter does', async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const runs = await inTurn([
      () => cli(['deliveries', 'ls', '--user', 'u1', '--json']),
      () => cli(['deliveries', 'ls', '--event', 'Paid', '--json']),
      () => cli(['deliveries', 'ls', '--type', 'page', '--json']),
      () => cli(['deliveries', 'ls', '--anonymous-id', 'a2', '--json']),
      () => cli(['deliveries', 'ls', '--since', '1h', '--until', future, '--json']),
      () => cli(['deliveries', 'ls', '--since', future, '--json']),
      () => cli(['deliveries', 'ls', '--user', 'u1', '--type', 'track', '--event', 'Signed Up', '--json']),
    ]);
    assert.deepEqual(
      runs.map((run) => ids(run.stdout)),
      [['m-1', 'm-4'], ['m-4'], ['m-2'], ['m-3'], ['m-1', 'm-2', 'm-3', 'm-4'], [], ['m-1']],
    );
    const delivery = JSON.parse(runs[0]!.stdout).deliveries[0];
    assert.equal(delivery.type, 'track');
    assert.equal(delivery.event, 'Signed Up');
    assert.equal(delivery.anonymousId, 'a1');
    assert.match(delivery.receivedAt, /Z$/);
  });

  test('the table shows the call type and event name', async () => {
    const table = await cli(['deliveries', 'ls', '--user', 'u1']);
    assert.equal(table.code, 0, table.output);
    assert.match(table.stdout, /^1\s+pending\s+hooks\s+app\s+track\s+Signed Up\s+u1\s+0\s/m);
    const bad = await cli(['deliveries', 'ls', '--type', 'shout']);
    assert.equal(bad.code, 1);
    assert.match(bad.output, /^ferry: bad_request: /m);
  });

  test('dead-letters ls takes the same filters', async () => {
    await deadLetterEverything(t);
    const run = await cli(['dead-letters', 'ls', '--user', 'u1', '--event', 'Paid', '--json']);
    assert.equal(run.code, 0, run.output);
    assert.deepEqual(ids(run.stdout), ['m-4']);
    // They died of the deletion, an hour ago at most, with no error class of an attempt.
    const runs = await inTurn([
      () => cli(['dead-letters', 'ls', '--dead-since', '1h', '--json']),
      () => cli(['dead-letters', 'ls', '--dead-until', '1h', '--json']),
      () => cli(['dead-letters', 'ls', '--error-class', 'http', '--json']),
    ]);
    assert.deepEqual(
      runs.map((r) => ids(r.stdout)),
      [['m-1', 'm-2', 'm-3', 'm-4'], [], []],
    );
    const bad = await cli(['dead-letters', 'ls', '--error-class', 'shout']);
    assert.equal(bad.code, 1);
    assert.match(bad.output, /^ferry: bad_request: errorClass must be one of /m);
  });
});

describe('replay: a dry run, the bulk filters, and a job followed to its end', () => {
  let t: TestFerry;
  const cli = (args: string[]) => ferryCli(t.url, args);
  before(async () => {
    t = await startFerry(testConfig([hooks]), { deliver: false });
    // More than the 5000 a replay answers at once: it runs as a job.
    for (let sent = 0; sent < 5001; sent += 2500) {
      const batch = Array.from({ length: Math.min(2500, 5001 - sent) }, (_, i) => ({ type: 'track', userId: `u${sent + i}`, event: 'E' }));
      assert.equal((await t.send('/v1/batch', { batch })).status, 200);
    }
    await deadLetterEverything(t);
  });
  after(() => t.stop());

  test('--dry-run says how many would be replayed and changes nothing', async () => {
    const [text, json, past, errorClass] = await inTurn([
      () => cli(['replay', '--destination', 'hooks', '--dry-run']),
      () => cli(['replay', '--destination', 'hooks', '--since', '1h', '--dry-run', '--json']),
      () => cli(['replay', '--all', '--until', '2000-01-01T00:00:00Z', '--dry-run', '--json']),
      () => cli(['replay', '--destination', 'hooks', '--error-class', 'timeout', '--dry-run', '--json']),
    ]);
    assert.equal(text.code, 0, text.output);
    assert.equal(text.stdout, 'would replay 5001 dead letters (dry run: nothing changed)\n');
    assert.deepEqual(JSON.parse(json.stdout), { dryRun: true, wouldReplay: 5001 });
    assert.deepEqual(JSON.parse(past.stdout), { dryRun: true, wouldReplay: 0 });
    assert.deepEqual(JSON.parse(errorClass.stdout), { dryRun: true, wouldReplay: 0 }, 'these dead letters never had an attempt');
    assert.equal((await t.ferry.store.stats()).deliveries.dead, 5001);
  });

  test('a replay of more than 5000 is a job: progress lines on a stderr that is not a terminal, then its end', async () => {
    const run = await cli(['replay', '--destination', 'hooks', '--poll-ms', '50']);
    assert.equal(run.code, 0, run.output);
    const [, jobId] = /^replay job (\S+): 5001 dead letters to replay; following it/m.exec(run.output) ?? [];
    assert.ok(jobId, run.output);
    assert.match(run.output, new RegExp(`^replay ${jobId}: \\d+ of 5001 replayed$`, 'm'));
    assert.ok(!run.output.includes('\r'), 'no bar redrawn in place when stderr is not a terminal');
    assert.equal(run.stdout, `replay job ${jobId} done: 5001 of 5001 replayed\n`);
    assert.equal((await t.ferry.store.stats()).deliveries.dead, 0);
    const watched = await cli(['replay', '--watch', jobId, '--json']);
    assert.deepEqual(JSON.parse(watched.stdout), (await t.admin('GET', `/replay-jobs/${jobId}`)).json);
    assert.equal(JSON.parse(watched.stdout).status, 'done');
    const unknown = await cli(['replay', '--watch', 'no-such-job']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.output, /^ferry: not_found: /m);
  });
});

describe('tokens create, ls and revoke', () => {
  let t: TestFerry;
  const cli = (args: string[], env?: Record<string, string>) => ferryCli(t.url, args, env);
  before(async () => {
    t = await startFerry(testConfig([hooks]), { deliver: false });
  });
  after(() => t.stop());

  test('a read token is printed once, reads, cannot change anything, and stops working once revoked', async () => {
    const created = await cli(['tokens', 'create', '--name', 'ci reader', '--scope', 'read']);
    assert.equal(created.code, 0, created.output);
    const [, id] = /^created token (\S+) "ci reader" \(scope read\)$/m.exec(created.stdout) ?? [];
    assert.ok(id, created.stdout);
    const token = created.stdout.trimEnd().split('\n')[1]!;
    assert.ok(token.length >= 32, 'the token itself, on a line of its own');
    assert.match(created.output, /only time the token is shown/);

    const listed = await cli(['tokens', 'ls']);
    assert.match(listed.stdout, /^ID\s+NAME\s+SCOPE\s+CREATED\s+LAST USED\s+REVOKED$/m);
    assert.match(listed.stdout, new RegExp(`^${id}\\s+ci reader\\s+read\\s+\\S+Z\\s`, 'm'));
    assert.ok(!listed.stdout.includes(token), 'a listing never shows a token');
    const listedJson = JSON.parse((await cli(['tokens', 'ls', '--json'])).stdout);
    assert.deepEqual(listedJson, (await t.admin('GET', '/tokens')).json);

    const asReader = { FERRY_ADMIN_TOKEN: token };
    const [reads, writes] = await inTurn([() => cli(['deliveries', 'ls'], asReader), () => cli(['replay', '--all'], asReader)]);
    assert.equal(reads.code, 0, reads.output);
    assert.equal(writes.code, 1);
    assert.match(writes.output, /^ferry: admin_forbidden: /m);

    const revoked = await cli(['tokens', 'revoke', id]);
    assert.equal(revoked.code, 0, revoked.output);
    assert.equal(revoked.stdout, `revoked token ${id}\n`);
    const after = await cli(['deliveries', 'ls'], asReader);
    assert.equal(after.code, 1);
    assert.match(after.output, /^ferry: admin_unauthorized: /m);
    const entry = JSON.parse((await cli(['tokens', 'ls', '--json'])).stdout).tokens.find((x: any) => x.id === id);
    assert.match(entry.revokedAt, /Z$/);
  });

  test('--json gives the created token; a scope other than admin or read is a usage error; an unknown id is not_found', async () => {
    const [json, badScope, noName, unknown] = await inTurn([
      () => cli(['tokens', 'create', '--name', 'deploy', '--scope', 'admin', '--json']),
      () => cli(['tokens', 'create', '--name', 'x', '--scope', 'root']),
      () => cli(['tokens', 'create', '--scope', 'read']),
      () => cli(['tokens', 'revoke', 'tok_nope']),
    ]);
    const created = JSON.parse(json.stdout);
    assert.equal(created.name, 'deploy');
    assert.equal(created.scope, 'admin');
    assert.equal(typeof created.token, 'string');
    assert.equal(badScope.code, 2);
    assert.match(badScope.output, /--scope/);
    assert.equal(noName.code, 2);
    assert.match(noName.output, /--name/);
    assert.equal(unknown.code, 1);
    assert.match(unknown.output, /^ferry: not_found: /m);
  });
});

describe('regulations ls', () => {
  let t: TestFerry;
  const cli = (args: string[]) => ferryCli(t.url, args);
  before(async () => {
    t = await startFerry(testConfig([hooks]), { deliver: false });
  });
  after(() => t.stop());

  test('lists deletion requests with their status, filtered and paged', async () => {
    const first = await cli(['regulations', 'create', '--user', 'u1']);
    const second = await cli(['regulations', 'create', '--user', 'u2', '--user', 'u3']);
    const ids = [first, second].map((run) => /^deletion request (\S+) /m.exec(run.stdout)?.[1]);
    assert.ok(ids.every(Boolean), first.output + second.output);
    await t.deletionsDone();
    const [table, done, all] = await inTurn([
      () => cli(['regulations', 'ls']),
      () => cli(['regulations', 'ls', '--status', 'done', '--json']),
      () => cli(['regulations', 'ls', '--limit', '1', '--all', '--json']),
    ]);
    assert.equal(table.code, 0, table.output);
    assert.match(table.stdout, /^ID\s+STATUS\s+USERS\s+SOURCES\s+CREATED\s+FINISHED\s+EVENTS DELETED\s+DELIVERIES DELETED\s+NOTICES$/m);
    assert.match(table.stdout, new RegExp(`^${ids[1]}\\s+done\\s+2\\s+all\\s`, 'm'));
    assert.deepEqual(
      JSON.parse(done.stdout)
        .regulations.map((r: any) => r.id)
        .sort(),
      [...ids].sort(),
    );
    const everything = JSON.parse(all.stdout);
    assert.equal(everything.regulations.length, 2);
    assert.equal(everything.next, null);
  });
});
