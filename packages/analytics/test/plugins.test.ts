import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { addContext, Analytics, AnalyticsError, type DropEvent, type Logger, type Plugin, type PluginErrorEvent, removeKeys } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { ManualClock } from './support/manual-clock.js';
import { SinkServer } from './support/sink-server.js';

function recordingLogger(lines: string[]): Logger {
  return { debug: () => {}, warn: (m) => lines.push(`warn ${m}`), error: (m, f) => lines.push(`error ${m} ${JSON.stringify(f)}`) };
}

describe('plugins', () => {
  let sink: SinkServer;
  let client: Analytics;
  beforeEach(async () => {
    sink = await SinkServer.start();
    client = new Analytics('wk', { endpoint: sink.url, clock: new ManualClock() });
  });
  afterEach(async () => {
    await client.close({ timeoutMs: 1_000 });
    await sink.close();
  });

  it('runs enrich in registration order, each on the previous result, before the client stamps the message', async () => {
    const seen: string[] = [];
    client.register({ name: 'a', enrich: (m, call) => (seen.push(`a:${call.type}:${String(m['type'])}`), { ...m, properties: { order: ['a'] } }) }).register({
      name: 'b',
      enrich: (m) => {
        const order = (m['properties'] as { order: string[] }).order;
        return { ...m, properties: { order: [...order, 'b'] } };
      },
    });
    client.track({ userId: 'u', event: 'E' });
    await client.flush();
    assert.deepEqual(seen, ['a:track:undefined'], 'plugins see the call before `type` is stamped');
    assert.deepEqual(sink.accepted[0]!['properties'], { order: ['a', 'b'] });
    assert.equal(sink.accepted[0]!['type'], 'track');
  });

  it('drops a call whose plugin returns null: counted, reported with a reason, callback told, nothing sent', async () => {
    const drops: DropEvent[] = [];
    client.on('drop', (e) => drops.push(e));
    client.register({ name: 'no-bots', enrich: (m) => (m['userId'] === 'bot' ? null : m) });
    const results: Array<[string | undefined, string]> = [];
    const id = client.track({ userId: 'bot', event: 'E', messageId: 'm-bot' }, (err, messageId) => results.push([err?.code, messageId]));
    client.track({ userId: 'human', event: 'E' });
    const flushed = await client.flush();
    assert.equal(id, 'm-bot');
    assert.deepEqual(results, [['dropped_by_plugin', 'm-bot']]);
    assert.equal(drops.length, 1);
    assert.equal(drops[0]!.code, 'dropped_by_plugin');
    assert.deepEqual(drops[0]!.messageIds, ['m-bot']);
    assert.match(drops[0]!.reason ?? '', /no-bots/);
    assert.equal(client.stats.dropped, 1);
    assert.equal(flushed.delivered, 1);
    assert.deepEqual(
      sink.accepted.map((m) => m['userId']),
      ['human'],
    );
  });

  it('reports a throwing plugin and still sends the call with the message from before that plugin', async () => {
    const lines: string[] = [];
    client = new Analytics('wk', { endpoint: sink.url, clock: new ManualClock(), logger: recordingLogger(lines) });
    const errors: PluginErrorEvent[] = [];
    client.on('pluginError', (e) => errors.push(e));
    client.register({ name: 'tag', enrich: (m) => ({ ...m, properties: { tagged: true } }) });
    client.register({
      name: 'broken',
      enrich: () => {
        throw new Error('boom');
      },
    });
    client.register({ name: 'forgot-return', enrich: (() => undefined) as unknown as Plugin['enrich'] });
    client.track({ userId: 'u', event: 'E' });
    const result = await client.flush();
    assert.equal(result.delivered, 1);
    assert.deepEqual(sink.accepted[0]!['properties'], { tagged: true });
    assert.deepEqual(
      errors.map((e) => [e.plugin, e.hook, String(e.error)]),
      [
        ['broken', 'enrich', 'Error: boom'],
        ['forgot-return', 'enrich', 'TypeError: enrich returned undefined, not a message object or null'],
      ],
    );
    assert.ok(lines.some((l) => l.startsWith("error plugin 'broken' threw in enrich") && l.includes('boom')));
  });

  it('validates after the plugins: a plugin that removes the identity makes the call fail validation', () => {
    client.register({ name: 'strip', enrich: ({ userId: _drop, ...rest }) => rest });
    assert.throws(
      () => client.track({ userId: 'u', event: 'E' }),
      (e: unknown) => e instanceof AnalyticsError && e.code === 'missing_identity',
    );
  });

  it('calls flush hooks on flush() and close hooks once on close(), reporting a failing hook', async () => {
    const calls: string[] = [];
    const errors: PluginErrorEvent[] = [];
    client.on('pluginError', (e) => errors.push(e));
    client.register({ name: 'p', flush: () => void calls.push('flush'), close: async () => void calls.push('close') });
    client.register({
      name: 'bad',
      close: () => {
        throw new Error('close failed');
      },
    });
    await client.flush();
    const first = client.close();
    const again = client.close();
    assert.equal((await within(first, 'close')).status, 'complete');
    await again;
    assert.deepEqual(calls, ['flush', 'close']);
    assert.deepEqual(
      errors.map((e) => [e.plugin, e.hook]),
      [['bad', 'close']],
    );
  });

  it('holds flush() and close() no longer than their bound when a plugin hook never settles', async () => {
    const clock = new ManualClock();
    const lines: string[] = [];
    client = new Analytics('wk', { endpoint: sink.url, clock, logger: recordingLogger(lines) });
    const never = new Promise<void>(() => {});
    client.register({ name: 'stuck', flush: () => never, close: () => never });
    client.track({ userId: 'u', event: 'E' });
    // The hooks run first and use up the whole bound: the flush gives up waiting at 500 ms,
    // and the message, still queued, is sent all the same.
    const delivered = new Promise((resolve) => client.once('flush', resolve));
    const flushed = client.flush({ timeoutMs: 500 });
    await clock.advanceThrough(500);
    const result = await within(flushed, 'flush');
    assert.equal(result.status, 'timeout');
    assert.equal(result.unconfirmed.length, 1);
    await within(delivered, 'the delivery');
    assert.equal(sink.accepted.length, 1);
    const closed = client.close({ timeoutMs: 800 });
    await clock.advanceThrough(800);
    assert.notEqual((await within(closed, 'close')).status, 'aborted');
    assert.deepEqual(lines, [
      'warn plugin flush hooks did not settle within the bound; not waiting for them',
      'warn plugin close hooks did not settle within the bound; not waiting for them',
    ]);
  });

  it('sends with a flush or close what a plugin sends from its flush or close hook, running hooks in registration order', async () => {
    const order: string[] = [];
    let counted = 0;
    const summary: Plugin = {
      name: 'summary',
      enrich: (m) => {
        if (m['event'] !== 'Summary') counted++;
        return m;
      },
      flush: async () => {
        order.push('summary flush');
        await Promise.resolve();
        client.track({ userId: 'u', event: 'Summary', properties: { counted } });
      },
      close: () => {
        order.push('summary close');
        client.track({ userId: 'u', event: 'Summary', properties: { counted, closing: true } });
      },
    };
    client.register(summary);
    client.register({ name: 'second', flush: () => void order.push('second flush'), close: () => void order.push('second close') });
    client.track({ userId: 'u', event: 'A' });
    client.track({ userId: 'u', event: 'B' });
    const flushed = await within(client.flush(), 'flush');
    assert.equal(flushed.status, 'complete');
    assert.equal(flushed.delivered, 3);
    assert.equal(client.stats.queued, 0);
    const closed = await within(client.close(), 'close');
    assert.equal(closed.delivered, 1);
    assert.deepEqual(order, ['summary flush', 'second flush', 'summary close', 'second close']);
    assert.deepEqual(
      sink.accepted.filter((m) => m['event'] === 'Summary').map((m) => m['properties']),
      [{ counted: 2 }, { counted: 2, closing: true }],
    );
    assert.throws(
      () => client.track({ userId: 'u', event: 'Late' }),
      (e: unknown) => e instanceof AnalyticsError && e.code === 'closed',
    );
  });

  it('survives a plugin that throws a value with no text form, and a logger that throws', async () => {
    client = new Analytics('wk', {
      endpoint: sink.url,
      clock: new ManualClock(),
      logger: {
        debug: () => {},
        warn: () => {},
        error: () => {
          throw new Error('logger down');
        },
      },
    });
    const errors: PluginErrorEvent[] = [];
    client.on('pluginError', (e) => errors.push(e));
    const unprintable: unknown = Object.create(null);
    client.register({
      name: 'odd',
      enrich: () => {
        throw unprintable;
      },
      flush: () => {
        throw unprintable;
      },
    });
    const id = client.track({ userId: 'u', event: 'Kept' });
    const result = await within(client.flush(), 'flush');
    assert.equal(result.delivered, 1);
    assert.equal(sink.accepted[0]!['messageId'], id);
    assert.deepEqual(
      errors.map((e) => [e.plugin, e.hook, e.error === unprintable]),
      [
        ['odd', 'enrich', true],
        ['odd', 'flush', true],
      ],
    );
  });

  it('refuses a bad time bound the same way with plugins as without, before any hook runs', () => {
    let hooks = 0;
    client.register({ name: 'counting', flush: () => void hooks++, close: () => void hooks++ });
    const invalid = (e: unknown) => e instanceof AnalyticsError && e.code === 'invalid_option';
    assert.throws(() => client.flush({ timeoutMs: -1 }), invalid);
    assert.throws(() => client.flush({ timeoutMs: Number.NaN }), invalid);
    assert.throws(() => client.close({ timeout: -5 }), invalid);
    assert.equal(hooks, 0);
  });

  it('refuses what is not a plugin with invalid_plugin, and register after close with closed', async () => {
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return (e as AnalyticsError).code;
      }
      return 'no error';
    };
    assert.equal(
      code(() => client.register(null as unknown as Plugin)),
      'invalid_plugin',
    );
    assert.equal(
      code(() => client.register({ name: '' })),
      'invalid_plugin',
    );
    assert.equal(
      code(() => client.register({ name: 'x', enrich: 'no' } as unknown as Plugin)),
      'invalid_plugin',
    );
    await client.close();
    assert.equal(
      code(() => client.register({ name: 'late' })),
      'closed',
    );
  });
});

describe('ready plugins', () => {
  let sink: SinkServer;
  let client: Analytics;
  beforeEach(async () => {
    sink = await SinkServer.start();
    client = new Analytics('wk', { endpoint: sink.url, clock: new ManualClock() });
  });
  afterEach(async () => {
    await client.close({ timeoutMs: 1_000 });
    await sink.close();
  });

  it('removeKeys takes listed keys out of properties, traits and context.traits before anything is sent, without touching the caller objects', async () => {
    client.register(removeKeys({ properties: ['card'], traits: ['email'] }));
    const properties = { card: '4111', plan: 'pro' };
    const context = { traits: { email: 'a@b.c', name: 'A' } };
    const traits = { email: 'a@b.c', name: 'A' };
    client.track({ userId: 'u', event: 'Paid', properties, context });
    client.identify({ userId: 'u', traits });
    client.page({ userId: 'u', name: 'Home', traits: { card: '4111', path: '/' } } as never);
    await client.flush();
    const [track, identify, page] = sink.accepted;
    assert.deepEqual(track!['properties'], { plan: 'pro' });
    assert.deepEqual((track!['context'] as { traits: unknown }).traits, { name: 'A' });
    assert.deepEqual(identify!['traits'], { name: 'A' });
    assert.deepEqual(page!['properties'], { path: '/' });
    assert.ok(!sink.requests.some((r) => r.text.includes('4111') || r.text.includes('a@b.c')));
    assert.deepEqual(properties, { card: '4111', plan: 'pro' });
    assert.deepEqual(context, { traits: { email: 'a@b.c', name: 'A' } });
    assert.deepEqual(traits, { email: 'a@b.c', name: 'A' });
  });

  it('addContext adds fixed context fields; a field the call sets wins, and context.library stays', async () => {
    client.register(addContext({ app: { name: 'checkout' }, region: 'eu' }));
    client.track({ userId: 'u', event: 'A' });
    client.track({ userId: 'u', event: 'B', context: { region: 'us', ip: '10.0.0.1' } });
    await client.flush();
    const [a, b] = sink.accepted.map((m) => m['context'] as Record<string, unknown>);
    assert.deepEqual(a!['app'], { name: 'checkout' });
    assert.equal(a!['region'], 'eu');
    assert.equal((a!['library'] as { name: string }).name, '@ferry/analytics');
    assert.equal(b!['region'], 'us');
    assert.equal(b!['ip'], '10.0.0.1');
    assert.deepEqual(b!['app'], { name: 'checkout' });
  });

  it('refuses bad settings of the ready plugins with invalid_option', () => {
    assert.throws(() => removeKeys({ properties: 'email' as never }), { code: 'invalid_option' });
    assert.throws(() => addContext(null as never), { code: 'invalid_option' });
  });
});
