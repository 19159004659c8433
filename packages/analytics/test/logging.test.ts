import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Analytics, type Logger } from '@ferry/analytics';
import { runModule } from './support/run-child.js';
import { SinkServer } from './support/sink-server.js';

const script = `import { Analytics } from '@ferry/analytics';
const client = new Analytics('wk', { endpoint: process.argv[1] });
client.track({ userId: 'u', event: 'E' });
await client.close();`;

describe('logging', () => {
  let sink: SinkServer;
  before(async () => {
    sink = await SinkServer.start();
  });
  after(() => sink.close());

  it('logs to stderr when DEBUG contains analytics', async () => {
    const child = await runModule(script, [sink.url], { DEBUG: 'express,analytics' });
    assert.equal(child.code, 0);
    assert.match(child.stderr, /analytics debug sending batch \{"messages":1/);
    assert.match(child.stderr, /analytics debug batch delivered/);
  });

  it('is silent without it', async () => {
    const child = await runModule(script, [sink.url], { DEBUG: 'express' });
    assert.equal(child.code, 0);
    assert.equal(child.stderr, '');
    assert.equal(sink.accepted.length, 2, 'both children delivered');
  });

  it('uses a custom logger when one is passed', async () => {
    const lines: string[] = [];
    const logger: Logger = {
      debug: (m) => lines.push(`debug ${m}`),
      warn: (m) => lines.push(`warn ${m}`),
      error: (m) => lines.push(`error ${m}`),
    };
    sink.handler = (_r, i) => (i === 2 ? { status: 500 } : {});
    const client = new Analytics('wk', { endpoint: sink.url, logger, retryBaseDelayMs: 1 });
    client.track({ userId: 'u', event: 'E' });
    await client.close();
    assert.deepEqual(lines, ['debug sending batch', 'warn retrying batch', 'debug batch delivered', 'debug closed']);
  });
});
