import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FerryEvents } from '../../src/events/catalogue.js';
import { EventBus } from '../../src/events/event-bus.js';

const accepted: FerryEvents['ingest:accepted'] = { sourceId: 'app', count: 2, duplicates: 1 };

test('listeners hear the events of their name, in the order they subscribed, until they leave', () => {
  const bus = new EventBus();
  const heard: string[] = [];
  const first = (e: FerryEvents['ingest:accepted']) => heard.push(`first ${e.count}`);
  bus.on('ingest:accepted', first);
  bus.on('ingest:accepted', (e) => heard.push(`second ${e.duplicates}`));
  bus.on('store:ready', () => heard.push('ready'));
  bus.emit('ingest:accepted', accepted);
  bus.off('ingest:accepted', first);
  bus.emit('ingest:accepted', accepted);
  assert.deepEqual(heard, ['first 2', 'second 1', 'second 1']);
});

test('a listener that throws is reported, and the listeners after it still run', () => {
  const reported: [unknown, string][] = [];
  const bus = new EventBus((error, name) => reported.push([error, name]));
  const failure = new Error('listener bug');
  let after = 0;
  bus.on('ingest:accepted', () => {
    throw failure;
  });
  bus.on('ingest:accepted', () => after++);
  assert.doesNotThrow(() => bus.emit('ingest:accepted', accepted));
  assert.equal(after, 1);
  assert.deepEqual(reported, [[failure, 'ingest:accepted']]);
});

test('whileListened attaches with the first listener of its event and detaches with the last', () => {
  const bus = new EventBus();
  const log: string[] = [];
  bus.whileListened('delivery:succeeded', () => {
    log.push('attach');
    return () => log.push('detach');
  });
  const a = () => {};
  const b = () => {};
  bus.on('delivery:dead', a);
  assert.deepEqual(log, [], 'another event attaches nothing');
  bus.on('delivery:succeeded', a);
  bus.on('delivery:succeeded', b);
  bus.off('delivery:succeeded', a);
  assert.deepEqual(log, ['attach']);
  bus.off('delivery:succeeded', b);
  bus.on('delivery:succeeded', a);
  assert.deepEqual(log, ['attach', 'detach', 'attach']);
});

test('whileListened attaches at once when its event is already listened to', () => {
  const bus = new EventBus();
  const log: string[] = [];
  const early = () => {};
  // The log subscribes before the worker (and its forwarding) exists.
  bus.on('delivery:succeeded', early);
  bus.whileListened('delivery:succeeded', () => {
    log.push('attach');
    return () => log.push('detach');
  });
  assert.deepEqual(log, ['attach']);
  bus.on('delivery:succeeded', () => {});
  assert.deepEqual(log, ['attach'], 'a second listener attaches nothing more');
});
