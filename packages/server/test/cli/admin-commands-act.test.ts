/**
 * The admin CLI's actions as an operator runs them: `ferry replay`, `ferry regulations
 * create|show` and `ferry tail`, the real command, spawned, against a real Ferry on
 * loopback, over the routes the admin API has today.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually, ferryCli, inTurn, startWithTwoDeadLetters } from '../helpers/admin-cli.js';
import { adminToken, startFerry, testConfig, type TestFerry } from '../helpers/ferry.js';
import type { TestReceiver } from '../helpers/receiver.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { within } from '../helpers/within.js';

describe('the admin CLI against a running Ferry', () => {
  let t: TestFerry;
  let receiver: TestReceiver;
  const cli = (args: string[], env?: Record<string, string>) => ferryCli(t.url, args, env);

  let stop: () => Promise<void>;

  before(async () => {
    // The receiver refuses with a 400: both deliveries are dead-lettered at their first attempt.
    ({ t, receiver, stop } = await startWithTwoDeadLetters());
  });
  after(() => stop());

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

  test('deliveries replay: one delivered delivery sent again; an unknown one is refused', async () => {
    await eventually(t, '/deliveries/1', (d) => d.status === 'succeeded', 'delivery 1 delivered by the replay before');
    const before = receiver.requests.length;
    const again = await cli(['deliveries', 'replay', '1']);
    assert.equal(again.code, 0, again.output);
    assert.equal(again.stdout, 'replayed delivery 1: pending again, with the same body and messageId\n');
    const [resent] = (await receiver.waitFor(before + 1)).slice(before);
    assert.equal(JSON.parse(resent!.body.toString('utf8')).messageId, 'm-1');
    await eventually(t, '/deliveries/1', (d) => d.status === 'succeeded' && d.attempts.length === 3, 'delivery 1 delivered a third time');
    const unknown = await cli(['deliveries', 'replay', '999']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.output, /^ferry: not_found: no delivery 999 of an existing destination$/m);
  });

  test('regulations create and show: a deletion request, followed to done', async () => {
    const created = await cli(['regulations', 'create', '--user', 'u1', '--source', 'app']);
    assert.equal(created.code, 0, created.output);
    const [, id] = /^deletion request (reg_\w+) pending \(1 user\); follow it with: ferry regulations show reg_\w+$/m.exec(created.stdout) ?? [];
    assert.ok(id, created.stdout);
    await t.deletionsDone();
    const [shown, json] = await inTurn([() => cli(['regulations', 'show', id]), () => cli(['regulations', 'show', id, '--json'])]);
    assert.match(shown.stdout, /^status:\s+done$/m);
    assert.match(shown.stdout, /^eventsDeleted:\s+1$/m);
    assert.match(shown.stdout, /^sourceIds:\s+\["app"\]$/m);
    assert.deepEqual(JSON.parse(json.stdout), (await t.admin('GET', `/regulations/${id}`)).json);
    const [noUser, badSource, unknown] = await inTurn([
      () => cli(['regulations', 'create']),
      () => cli(['regulations', 'create', '--user', 'u2', '--source', 'ghost']),
      () => cli(['regulations', 'show', 'reg_nope']),
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
