import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics, defaults, type Logger } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { ManualClock } from './support/manual-clock.js';
import { runModule } from './support/run-child.js';
import { SinkServer } from './support/sink-server.js';

// Sends one message with the default logger, which reads DEBUG when the client is created.
const script = `import { Analytics } from '@ferry/analytics';
const client = new Analytics('wk', { endpoint: process.argv[1] });
client.track({ userId: 'u', event: 'E' });
const result = await client.close();
console.log(JSON.stringify(result));`;

describe('logging', () => {
  let sink: SinkServer;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(() => sink.close());

  it('logs sending and delivery to stderr when DEBUG contains analytics among other names', async () => {
    const child = await runModule(script, [sink.url], { DEBUG: 'express,analytics' });
    assert.equal(child.code, 0, child.stderr);
    assert.equal(JSON.parse(child.stdout).delivered, 1);
    assert.match(child.stderr, /^analytics debug sending batch \{"messages":1,"bytes":\d+\}$/m);
    assert.match(child.stderr, /^analytics debug batch delivered \{"messages":1,"attempts":1\}$/m);
    assert.match(child.stderr, /^analytics debug closed \{"status":"complete","delivered":1\}$/m);
  });

  it('writes nothing to stderr when DEBUG does not contain analytics, while it delivers', async () => {
    const child = await runModule(script, [sink.url], { DEBUG: 'express' });
    assert.equal(child.code, 0, child.stderr);
    assert.equal(child.stderr, '');
    assert.equal(JSON.parse(child.stdout).delivered, 1);
    assert.equal(sink.accepted.length, 1);
  });

  it('sends sending, retry, delivery and close lines to a logger passed as an option', async () => {
    const lines: string[] = [];
    const logger: Logger = {
      debug: (m) => lines.push(`debug ${m}`),
      warn: (m) => lines.push(`warn ${m}`),
      error: (m) => lines.push(`error ${m}`),
    };
    sink.handler = (_r, i) => (i === 0 ? { status: 500 } : {});
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, logger, clock, random: () => 0 });
    client.track({ userId: 'u', event: 'E' });
    const closing = client.close();
    // With random() at 0 the first retry waits half the base delay.
    await clock.advanceThrough(defaults.retryBaseDelayMs / 2);
    await within(closing, 'close');
    assert.deepEqual(lines, ['debug sending batch', 'warn retrying batch', 'debug batch delivered', 'debug closed']);
    assert.equal(sink.requests.length, 2);
  });
});
