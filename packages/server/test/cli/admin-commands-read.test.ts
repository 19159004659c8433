/**
 * The admin CLI's reads (`ferry deliveries ls|show`, `ferry dead-letters ls`) and its failures
 * as an operator meets them: the real command, spawned, against a real Ferry on loopback.
 * Tables for people, `--json` parsed. Failures are in admin-commands-errors.test.ts; replay,
 * regulations and tail in admin-commands-act.test.ts; the search filters, replay jobs, tokens
 * and regulation listings in admin-commands-search-replay-tokens.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ferryCli, inTurn, startWithTwoDeadLetters } from '../helpers/admin-cli.js';
import type { TestFerry } from '../helpers/ferry.js';

describe('the admin CLI against a running Ferry', () => {
  let t: TestFerry;
  const cli = (args: string[], env?: Record<string, string>) => ferryCli(t.url, args, env);

  let stop: () => Promise<void>;

  before(async () => {
    // The receiver refuses with a 400: both deliveries are dead-lettered at their first attempt.
    ({ t, stop } = await startWithTwoDeadLetters());
  });
  after(() => stop());

  test('deliveries ls: an aligned table for people, the API answer itself with --json', async () => {
    const [table, json] = await inTurn([() => cli(['deliveries', 'ls']), () => cli(['deliveries', 'ls', '--json'])]);
    assert.equal(table.code, 0, table.output);
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+STATUS\s+DESTINATION\s+SOURCE\s+KIND\s+EVENT\s+USER\s+ATTEMPTS\s+CREATED\s+LAST ERROR$/);
    assert.equal(lines.length, 3);
    assert.match(lines[1]!, /^1\s+dead\s+hooks\s+app\s+track\s+Signed Up\s+u1\s+1\s+\S+Z\s+non_retryable_response: http:\/\/127\.0\.0\.1:\d+\/in -> HTTP 400$/);
    assert.match(lines[2]!, /^2\s+dead\s+hooks\s+app\s+identify\s+-\s+u2\s+1\s/);
    // Aligned: every column starts at the same place on every line.
    assert.equal(lines[1]!.indexOf('dead'), lines[0]!.indexOf('STATUS'));
    assert.equal(lines[2]!.indexOf('hooks'), lines[0]!.indexOf('DESTINATION'));
    assert.equal(json.code, 0, json.output);
    assert.deepEqual(JSON.parse(json.stdout), (await t.admin('GET', '/deliveries')).json);
  });

  test('deliveries ls: filters and pages; --all follows `next` to the end', async () => {
    const [filtered, none, page, all] = await inTurn([
      () => cli(['deliveries', 'ls', '--status', 'dead', '--destination', 'hooks', '--source', 'app', '--message-id', 'm-2', '--json']),
      () => cli(['deliveries', 'ls', '--status', 'succeeded']),
      () => cli(['deliveries', 'ls', '--limit', '1']),
      () => cli(['deliveries', 'ls', '--limit', '1', '--all', '--json']),
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
    const [shown, json] = await inTurn([() => cli(['deliveries', 'show', '1']), () => cli(['deliveries', 'show', '1', '--json'])]);
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
    const [table, json, none] = await inTurn([
      () => cli(['dead-letters', 'ls']),
      () => cli(['dead-letters', 'ls', '--destination', 'hooks', '--json']),
      () => cli(['dead-letters', 'ls', '--source', 'other']),
    ]);
    assert.equal(table.code, 0, table.output);
    assert.equal(table.stdout.trimEnd().split('\n').length, 3);
    assert.deepEqual(JSON.parse(json.stdout), (await t.admin('GET', '/dead-letters?destinationId=hooks')).json);
    assert.equal(none.stdout, 'no dead letters match\n');
  });
});
