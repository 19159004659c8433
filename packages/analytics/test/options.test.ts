import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Analytics, AnalyticsError, errorCodes, libraryInfo, type Transport, createNodeHttpTransport } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { SinkServer } from './support/sink-server.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string; version: string };

describe('options', () => {
  const bad: Array<[string, object]> = [
    ['unknown key', { flushInterval: 10 }],
    ['empty write key', { writeKey: '' }],
    ['zero flushAt', { flushAt: 0 }],
    ['flushAt over the 2,500 messages the API takes in one request', { flushAt: 2_501 }],
    ['maxBatchMessages, which flushAt replaces', { maxBatchMessages: 100 }],
    ['fractional flushAfter', { flushAfter: 1.5 }],
    ['size and flushAt disagree', { size: 10, flushAt: 20 }],
    ['host and endpoint disagree', { host: 'http://127.0.0.1:1', endpoint: 'http://127.0.0.1:2' }],
    ['endpoint not a URL', { endpoint: 'localhost' }],
    ['ftp endpoint', { endpoint: 'ftp://127.0.0.1' }],
    ['unknown overflow policy', { overflow: 'block' }],
    ['message limit over the batch limit', { maxMessageBytes: 600_000 }],
  ];
  for (const [name, options] of bad) {
    it(`refuses ${name} with invalid_option`, () => {
      assert.throws(
        () => new Analytics({ writeKey: 'wk', ...options } as never),
        (e: unknown) => {
          return e instanceof AnalyticsError && e.code === 'invalid_option';
        },
      );
    });
  }

  it("takes the write key first or inside the options, and Segment's host as the endpoint", async () => {
    const sink = await SinkServer.start();
    const a = new Analytics('key-a', { endpoint: sink.url });
    const b = new Analytics({ writeKey: 'key-b', host: sink.url });
    a.track({ userId: 'u', event: 'E' });
    b.track({ userId: 'u', event: 'E' });
    await within(Promise.all([a.close(), b.closeAndFlush()]), 'both closes');
    await sink.close();
    const users = sink.requests.map((r) => Buffer.from(r.headers.authorization!.slice(6), 'base64').toString()).sort();
    assert.deepEqual(users, ['key-a:', 'key-b:']);
  });

  it('sends through an injected transport', async () => {
    const sink = await SinkServer.start();
    const inner = createNodeHttpTransport();
    const seen: string[] = [];
    let closed = 0;
    const transport: Transport = {
      send(req) {
        seen.push(req.url);
        return inner.send(req);
      },
      close() {
        closed++;
        inner.close?.();
      },
    };
    const client = new Analytics('wk', { endpoint: sink.url, transport });
    client.track({ userId: 'u', event: 'E' });
    await within(client.close(), 'close');
    await sink.close();
    assert.deepEqual(seen, [`${sink.url}/v1/batch`]);
    assert.equal(sink.accepted.length, 1);
    assert.equal(closed, 1);
  });

  it('aborts a request of the built-in transport when the AbortSignal it was given aborts', async () => {
    const sink = await SinkServer.start(() => ({ after: new Promise(() => {}) }));
    const transport = createNodeHttpTransport();
    const controller = new AbortController();
    const sent = transport.send({ url: `${sink.url}/v1/batch`, method: 'POST', headers: {}, body: '{"batch":[]}', signal: controller.signal });
    await sink.untilRequests(1);
    controller.abort();
    await assert.rejects(within(sent, 'the aborted request'), /aborted/);
    await assert.rejects(
      within(
        transport.send({ url: `${sink.url}/v1/batch`, method: 'POST', headers: {}, body: '{"batch":[]}', signal: AbortSignal.abort() }),
        'a request aborted before it was sent',
      ),
      /aborted/,
    );
    transport.close?.();
    await sink.close();
    assert.equal(sink.requests.length, 1, 'the request aborted beforehand never reached the sink');
  });

  it('stamps the package version as context.library', () => {
    assert.deepEqual(libraryInfo, { name: pkg.name, version: pkg.version });
  });

  it('documents every error code in the README', () => {
    for (const code of Object.keys(errorCodes)) assert.ok(readme.includes(`\`${code}\``), `README lacks ${code}`);
  });
});
