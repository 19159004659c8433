/**
 * The admin CLI (`ferry deliveries|dead-letters|replay|regulations|tail`) as an operator runs
 * it: the real command, spawned, against a real Ferry on loopback, over the routes the admin
 * API has today. Tables for people, `--json` parsed, exit codes and the server's errors.
 * The routes of the search, replay jobs, tokens and regulation listings are tested in
 * admin-commands-pending.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { adminToken, startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { within } from '../helpers/within.js';

/** Runs one admin command to its end against `url`: its exit code, stdout alone, and everything it printed. */
async function ferryCli(url: string, args: string[], env: Record<string, string> = {}) {
  const run = spawnFerry(args, { FERRY_URL: url, FERRY_ADMIN_TOKEN: adminToken, ...env });
  const { code } = await run.waitForExit();
  return { code, stdout: run.stdout(), output: run.output() };
}

/** Asks the admin API until `check` holds of its answer; fails after 10 s. */
async function eventually(t: TestFerry, path: string, check: (json: any) => boolean, what: string): Promise<any> {
  return within(
    10_000,
    what,
    (async () => {
      for (;;) {
        const { json } = await t.admin('GET', path);
        if (check(json)) return json;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })(),
  );
}

/** A loopback port nothing listens on: taken, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// Each spawned command adds an exit listener to this process (spawn-ferry.ts); a test runs a dozen at once.
process.setMaxListeners(32);

describe('the admin CLI against a running Ferry', () => {
  let t: TestFerry;
  let receiver: TestReceiver;
  const dir = mkdtempSync(join(tmpdir(), 'ferry-cli-admin-'));
  const cli = (args: string[], env?: Record<string, string>) => ferryCli(t.url, args, env);

  before(async () => {
    // The receiver refuses with a 400: both deliveries are dead-lettered at their first attempt.
    receiver = await startReceiver({ status: 400, body: 'bad payload' });
    t = await startFerry(testConfig([webhooksDestination('hooks', [`${receiver.url}/in`])]));
    assert.equal((await t.send('/v1/track', { userId: 'u1', event: 'Signed Up', messageId: 'm-1' })).status, 200);
    assert.equal((await t.send('/v1/identify', { userId: 'u2', traits: { plan: 'pro' }, messageId: 'm-2' })).status, 200);
    await eventually(t, '/dead-letters', (json) => json.deliveries.length === 2, 'both deliveries dead-lettered');
  });
  after(async () => {
    await t.stop();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('deliveries ls: an aligned table for people, the API answer itself with --json', async () => {
    const [table, json] = await Promise.all([cli(['deliveries', 'ls']), cli(['deliveries', 'ls', '--json'])]);
    assert.equal(table.code, 0, table.output);
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+STATUS\s+DESTINATION\s+SOURCE\s+KIND\s+EVENT\s+USER\s+ATTEMPTS\s+CREATED\s+LAST ERROR$/);
    assert.equal(lines.length, 3);
    assert.match(lines[1]!, /^1\s+dead\s+hooks\s+app\s+event\s+-\s+u1\s+1\s+\S+Z\s+non_retryable_response: http:\/\/127\.0\.0\.1:\d+\/in -> HTTP 400$/);
    assert.match(lines[2]!, /^2\s+dead\s+hooks\s+app\s+event\s+-\s+u2\s+1\s/);
    // Aligned: every column starts at the same place on every line.
    assert.equal(lines[1]!.indexOf('dead'), lines[0]!.indexOf('STATUS'));
    assert.equal(lines[2]!.indexOf('hooks'), lines[0]!.indexOf('DESTINATION'));
    assert.equal(json.code, 0, json.output);
    assert.deepEqual(JSON.parse(json.stdout), (await t.admin('GET', '/deliveries')).json);
  });

  test('deliveries ls: filters and pages; --all follows `next` to the end', async () => {
    const [filtered, none, page, all] = await Promise.all([
      cli(['deliveries', 'ls', '--status', 'dead', '--destination', 'hooks', '--source', 'app', '--message-id', 'm-2', '--json']),
      cli(['deliveries', 'ls', '--status', 'succeeded']),
      cli(['deliveries', 'ls', '--limit', '1']),
      cli(['deliveries', 'ls', '--limit', '1', '--all', '--json']),
    ]);
    assert.deepEqual(
      JSON.parse(filtered.stdout).deliveries.map((d: any) => d.id),
      [2],
    );
    assert.equal(none.code, 0);
    assert.equal(none.stdout, 'no deliveries match\n');
    assert.equal(page.stdout.trimEnd().split('\n').length, 3, 'a heading, one row and where the next page starts');
    assert.match(page.stdout, /^more: --after 1 \(or --all\)$/m);
    const everything = JSON.parse(all.stdout);
    assert.deepEqual(
      everything.deliveries.map((d: any) => d.id),
      [1, 2],
    );
    assert.equal(everything.next, null);
  });

  test('deliveries show: the fields, the body as sent, and the attempts table', async () => {
    const [shown, json] = await Promise.all([cli(['deliveries', 'show', '1']), cli(['deliveries', 'show', '1', '--json'])]);
    assert.equal(shown.code, 0, shown.output);
    assert.match(shown.stdout, /^status:\s+dead$/m);
    assert.match(shown.stdout, /^messageId:\s+m-1$/m);
    assert.match(shown.stdout, /^deadReason:\s+non_retryable_response$/m);
    assert.match(shown.stdout, /^body:\n\{\n {2}"version": 1,[^]*"event": "Signed Up"/m);
    assert.match(shown.stdout, /^STARTED\s+TRIGGER\s+STATUS\s+LATENCY\s+ERROR\s+URL\s+RESPONSE$/m);
    assert.match(shown.stdout, /^\S+Z\s+scheduled\s+400\s+\d+ms\s+http: HTTP 400\s+http:\/\/127\.0\.0\.1:\d+\/in\s+bad payload$/m);
    assert.deepEqual(JSON.parse(json.stdout), (await t.admin('GET', '/deliveries/1')).json);
  });

  test('dead-letters ls lists the dead letters, with the same filters', async () => {
    const [table, json, none] = await Promise.all([
      cli(['dead-letters', 'ls']),
      cli(['dead-letters', 'ls', '--destination', 'hooks', '--json']),
      cli(['dead-letters', 'ls', '--source', 'other']),
    ]);
    assert.equal(table.code, 0, table.output);
    assert.equal(table.stdout.trimEnd().split('\n').length, 3);
    assert.deepEqual(JSON.parse(json.stdout), (await t.admin('GET', '/dead-letters?destinationId=hooks')).json);
    assert.equal(none.stdout, 'no dead letters match\n');
  });

  test("a failure exits non-zero with the server's code and message, or says what is wrong with the command or the connection", async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${adminToken}\n`);
    const port = await closedPort();
    const runs = await Promise.all([
      cli(['deliveries', 'show', '99']),
      cli(['dead-letters', 'ls', '--destination', 'ghost']),
      cli(['deliveries', 'ls', '--status', 'lost']),
      cli(['deliveries', 'ls'], { FERRY_ADMIN_TOKEN: 'a-wrong-token-that-is-long-enough-1234' }),
      cli(['deliveries', 'ls'], { FERRY_ADMIN_TOKEN: '' }),
      cli(['deliveries', 'ls', '--token-file', tokenFile, '--json'], { FERRY_ADMIN_TOKEN: '' }),
      cli(['deliveries', 'ls', '--token-file', join(dir, 'missing')]),
      ferryCli(`http://127.0.0.1:${port}`, ['deliveries', 'ls']),
      cli(['deliveries', 'ls', '--url', 'ftp://127.0.0.1:1']),
      cli(['deliveries', 'ls', '--bogus']),
      cli(['deliveries', 'show', 'abc']),
      cli(['deliveries', 'ls', '--limit', '5000']),
      cli(['deliveries', 'ls', '--since', 'yesterday']),
    ]);
    const expected: [number, RegExp][] = [
      [1, /^ferry: not_found: no delivery 99$/m],
      [1, /^ferry: not_found: no destination ghost$/m],
      [1, /^ferry: bad_request: status must be one of pending, succeeded, dead$/m],
      [1, /^ferry: admin_unauthorized: /m],
      [2, /^ferry: no admin token: set FERRY_ADMIN_TOKEN, or pass --token-file/m],
      [0, /"deliveries"/],
      [2, /^ferry: cannot read the token file \S+missing: ENOENT$/m],
      [
        3,
        new RegExp(
          `^ferry: cannot reach Ferry at http://127\\.0\\.0\\.1:${port}: connection refused \\(is \`ferry serve\` running there\\? set --url or FERRY_URL\\)$`,
          'm',
        ),
      ],
      [2, /^ferry: --url \(FERRY_URL\) must be an http:\/\/ or https:\/\/ URL \(got ftp:\/\/127\.0\.0\.1:1\)$/m],
      [2, /unknown option '--bogus'/],
      [2, /^ferry: a delivery id is a positive integer \(got abc\)$/m],
      [2, /^ferry: --limit must be an integer from 1 to 1000 \(got 5000\)$/m],
      [2, /^ferry: --since must be an ISO 8601 date-time/m],
    ];
    runs.forEach((run, i) => {
      assert.equal(run.code, expected[i]![0], `run ${i}: ${run.output}`);
      assert.match(run.output, expected[i]![1], `run ${i}`);
    });
    assert.ok(!runs[3]!.output.includes('a-wrong-token'), 'the token is never printed');
  });

  test('replay: dead letters by id, then by destination; replaying everything must be asked for by name', async () => {
    const refused = await cli(['replay']);
    assert.equal(refused.code, 2);
    assert.match(refused.output, /^ferry: name what to replay: delivery ids, --destination, --since, --until or --error-class; or --all/m);
    receiver.reply({ status: 200 });
    const one = await cli(['replay', '1']);
    assert.equal(one.code, 0, one.output);
    assert.equal(one.stdout, 'replayed 1 dead letter\n');
    await eventually(t, '/deliveries/1', (d) => d.status === 'succeeded', 'delivery 1 delivered after its replay');
    const notDead = await cli(['replay', '1']);
    assert.equal(notDead.code, 0);
    assert.equal(notDead.stdout, 'replayed 0 dead letters\n', 'a delivery that is not dead is not replayed');
    const byDestination = await cli(['replay', '--destination', 'hooks', '--json']);
    assert.deepEqual(JSON.parse(byDestination.stdout), { replayed: 1 });
    await eventually(t, '/deliveries/2', (d) => d.status === 'succeeded', 'delivery 2 delivered after its replay');
    const ghost = await cli(['replay', '--destination', 'ghost']);
    assert.equal(ghost.code, 1);
    assert.match(ghost.output, /^ferry: not_found: no destination ghost$/m);
  });

  test('regulations create and show: a deletion request, followed to done', async () => {
    const created = await cli(['regulations', 'create', '--user', 'u1', '--source', 'app']);
    assert.equal(created.code, 0, created.output);
    const [, id] = /^deletion request (reg_\w+) pending \(1 user\); follow it with: ferry regulations show reg_\w+$/m.exec(created.stdout) ?? [];
    assert.ok(id, created.stdout);
    await t.deletionsDone();
    const [shown, json] = await Promise.all([cli(['regulations', 'show', id]), cli(['regulations', 'show', id, '--json'])]);
    assert.match(shown.stdout, /^status:\s+done$/m);
    assert.match(shown.stdout, /^eventsDeleted:\s+1$/m);
    assert.match(shown.stdout, /^sourceIds:\s+\["app"\]$/m);
    assert.deepEqual(JSON.parse(json.stdout), (await t.admin('GET', `/regulations/${id}`)).json);
    const [noUser, badSource, unknown] = await Promise.all([
      cli(['regulations', 'create']),
      cli(['regulations', 'create', '--user', 'u2', '--source', 'ghost']),
      cli(['regulations', 'show', 'reg_nope']),
    ]);
    assert.equal(noUser.code, 2);
    assert.match(noUser.output, /^ferry: name at least one user: --user <userId>$/m);
    assert.equal(badSource.code, 1);
    assert.match(badSource.output, /^ferry: invalid_settings: unknown source ghost$/m);
    assert.equal(unknown.code, 1);
    assert.match(unknown.output, /^ferry: not_found: no regulation reg_nope$/m);
  });

  test('tail: one line per accepted event and delivery outcome as it happens; --json one document per line; Ctrl-C ends it with 0', async () => {
    receiver.reply({ status: 200 });
    const env = { FERRY_URL: t.url, FERRY_ADMIN_TOKEN: adminToken };
    const tail = spawnFerry(['tail'], env);
    const json = spawnFerry(['tail', '--events', 'delivery:succeeded', '--json'], env);
    after(() => [tail, json].forEach((p) => p.child.kill('SIGKILL')));
    await tail.waitForOutput(/^ferry: tailing http:\/\/127\.0\.0\.1:\d+\/admin\/v1\/tail \(Ctrl-C to stop\)$/m);
    await json.waitForOutput(/^ferry: tailing \S+\?events=delivery%3Asucceeded /m);
    assert.equal((await t.send('/v1/track', { userId: 'u3', event: 'Tailed', messageId: 'm-3' })).status, 200);
    await tail.waitForOutput(/^\S+Z {2}ingest:accepted {5}source=app count=1 duplicates=0$/m);
    const [, id] = await tail.waitForOutput(/^\S+Z {2}delivery:succeeded {2}delivery=(\d+) destination=hooks attempts=1$/m);
    assert.match(
      tail.stdout(),
      new RegExp(
        `^\\S+Z {2}delivery:attempted {2}delivery=${id} destination=hooks url=http://127\\.0\\.0\\.1:\\d+/in statusCode=200 errorClass=- latencyMs=\\d+ outcome=succeeded$`,
        'm',
      ),
    );
    await json.waitForOutput(/"event":"delivery:succeeded"/);
    const line = JSON.parse(json.stdout().trim().split('\n')[0]!);
    assert.deepEqual(
      { ...line, data: { ...line.data, at: undefined } },
      { event: 'delivery:succeeded', data: { at: undefined, id: Number(id), destinationId: 'hooks', attempts: 1 } },
    );
    assert.ok(!tail.output().includes('m-3') && !tail.output().includes('u3'), 'no message id or user id on the tail');
    for (const p of [tail, json]) p.child.kill('SIGINT');
    for (const p of [tail, json]) assert.deepEqual(await p.waitForExit(), { code: 0, signal: null }, p.output());
  });
});

test('tail ends with 0 when the server stops, and does not hold the stop', async (t) => {
  const ferry = await startFerry(testConfig([]), { deliver: false });
  const tail = spawnFerry(['tail', '--events', 'ingest:accepted,lifecycle:draining'], { FERRY_URL: ferry.url, FERRY_ADMIN_TOKEN: adminToken });
  t.after(() => void tail.child.kill('SIGKILL'));
  await tail.waitForOutput(/^ferry: tailing /m);
  await within(10_000, 'the stop with a tail open', ferry.stop());
  assert.deepEqual(await tail.waitForExit(), { code: 0, signal: null }, tail.output());
  assert.match(tail.stdout(), /^\S+Z {2}lifecycle:draining {2}drainMs=0$/m);
  assert.match(tail.output(), /^ferry: the server ended the stream \(it is stopping\)$/m);
});
