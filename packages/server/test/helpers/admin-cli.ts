import { createServer } from 'node:net';
import assert from 'node:assert/strict';
import { adminToken, startFerry, testConfig, webhooksDestination, type TestFerry } from './ferry.js';
import { startReceiver, type TestReceiver } from './receiver.js';
import { spawnFerry } from './spawn-ferry.js';
import { within } from './within.js';

/** How long one admin command may take to start, ask and exit: a start from the sources on a busy machine. */
const COMMAND_DEADLINE_MS = 60_000;

/** What an admin command did: its exit code, its stdout alone, and everything it printed. */
export interface CliRun {
  code: number | null;
  stdout: string;
  output: string;
}

/**
 * Runs one admin command (`ferry deliveries ls ...`) as its own process to its end, against
 * the server at `url`, with the test admin token unless `env` says otherwise.
 */
export async function ferryCli(url: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const run = spawnFerry(args, { FERRY_URL: url, FERRY_ADMIN_TOKEN: adminToken, ...env });
  const { code } = await run.waitForExit(COMMAND_DEADLINE_MS);
  return { code, stdout: run.stdout(), output: run.output() };
}

/**
 * Runs commands one after the other: each is a process that loads the sources, and a dozen
 * at once on a busy machine would each take the time of all.
 */
export async function inTurn<const T extends readonly (() => Promise<CliRun>)[]>(runs: T): Promise<{ -readonly [K in keyof T]: CliRun }> {
  const done: CliRun[] = [];
  for (const run of runs) done.push(await run());
  return done as { -readonly [K in keyof T]: CliRun };
}

/** Asks the admin API until `check` holds of its answer; fails after 10 s. */
export async function eventually(t: TestFerry, path: string, check: (json: any) => boolean, what: string): Promise<any> {
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
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A Ferry whose receiver refuses with a 400, holding two dead letters (a track call of u1,
 * an identify of u2), for the admin CLI to read and act on; `stop` ends both.
 */
export async function startWithTwoDeadLetters(): Promise<{ t: TestFerry; receiver: TestReceiver; stop: () => Promise<void> }> {
  const receiver = await startReceiver({ status: 400, body: 'bad payload' });
  const t = await startFerry(testConfig([webhooksDestination('hooks', [`${receiver.url}/in`])]));
  assert.equal((await t.send('/v1/track', { userId: 'u1', event: 'Signed Up', messageId: 'm-1' })).status, 200);
  assert.equal((await t.send('/v1/identify', { userId: 'u2', traits: { plan: 'pro' }, messageId: 'm-2' })).status, 200);
  await eventually(t, '/dead-letters', (json) => json.deliveries.length === 2, 'both deliveries dead-lettered');
  return {
    t,
    receiver,
    stop: async () => {
      await t.stop();
      await receiver.close();
    },
  };
}
