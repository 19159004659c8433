import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLoopbackHost, publicDemoKeyProblem } from '../../src/cli/public-listener-guard.js';

test('loopback addresses are told apart from the others', () => {
  const table: [string, boolean][] = [
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['::1', true],
    ['[::1]', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['128.0.0.1', false],
    ['localhost.example.com', false],
    ['::ffff:10.0.0.1', false],
  ];
  for (const [host, loopback] of table) assert.equal(isLoopbackHost(host), loopback, host);
});

test('the demo key is refused beyond loopback only, naming the sources that hold it', () => {
  const sources = [
    { id: 'demo', name: 'Demo', writeKey: 'demo-write-key' },
    { id: 'app', name: 'App', writeKey: 'own-key' },
  ];
  assert.equal(publicDemoKeyProblem('127.0.0.1', sources), undefined);
  assert.equal(publicDemoKeyProblem('0.0.0.0', sources.slice(1)), undefined);
  assert.match(publicDemoKeyProblem('0.0.0.0', sources)!, /^refusing to listen on 0\.0\.0\.0: source "demo" uses the demo configuration's write key/);
  assert.doesNotMatch(publicDemoKeyProblem('0.0.0.0', sources)!, /"app"/);
});
