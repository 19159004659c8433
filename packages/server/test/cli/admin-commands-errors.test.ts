/**
 * How the admin CLI fails: the server's error code and message with exit 1, a wrong command
 * line with exit 2, an unreachable server with exit 3; the real command, spawned, against a
 * real Ferry on loopback.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { closedPort, ferryCli, inTurn } from '../helpers/admin-cli.js';
import { adminToken, startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';

describe('the admin CLI when something is wrong', () => {
  let t: TestFerry;
  const dir = mkdtempSync(join(tmpdir(), 'ferry-cli-errors-'));
  const cli = (args: string[], env?: Record<string, string>) => ferryCli(t.url, args, env);

  before(async () => {
    t = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), { deliver: false });
  });
  after(async () => {
    await t.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a failure exits non-zero with the server's code and message, or says what is wrong with the command or the connection", async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${adminToken}\n`);
    const port = await closedPort();
    const runs = await inTurn([
      () => cli(['deliveries', 'show', '99']),
      () => cli(['dead-letters', 'ls', '--destination', 'ghost']),
      () => cli(['deliveries', 'ls', '--status', 'lost']),
      () => cli(['deliveries', 'ls'], { FERRY_ADMIN_TOKEN: 'a-wrong-token-that-is-long-enough-1234' }),
      () => cli(['deliveries', 'ls'], { FERRY_ADMIN_TOKEN: '' }),
      () => cli(['deliveries', 'ls', '--token-file', tokenFile, '--json'], { FERRY_ADMIN_TOKEN: '' }),
      () => cli(['deliveries', 'ls', '--token-file', join(dir, 'missing')]),
      () => ferryCli(`http://127.0.0.1:${port}`, ['deliveries', 'ls']),
      () => cli(['deliveries', 'ls', '--url', 'ftp://127.0.0.1:1']),
      () => cli(['deliveries', 'ls', '--bogus']),
      () => cli(['deliveries', 'show', 'abc']),
      () => cli(['deliveries', 'ls', '--limit', '5000']),
      () => cli(['deliveries', 'ls', '--since', 'yesterday']),
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
});
