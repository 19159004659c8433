import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configFromObject } from '../../src/config/load.js';
import { redactConfig, redactDestination, redactSource, redactUrl, writeKeyHint } from '../../src/config/redact.js';

const writeKey = 'wk_live_0123456789abcdefWXYZ';
const sharedSecret = 'shh-this-is-the-shared-secret';
const headerSecret = 'Bearer token-that-must-not-leak';
const querySecret = 'query-token-that-must-not-leak';

const config = configFromObject(
  {
    sources: [
      { id: 'app', name: 'App', writeKey },
      { id: 'short', writeKey: 'tiny-key' },
    ],
    destinations: [
      {
        id: 'hooks',
        type: 'Webhooks',
        sources: ['app'],
        settings: {
          webhooks: [
            { url: 'https://hooks.example.com/events', headers: { Authorization: headerSecret, 'X-Team': 'growth' } },
            { url: `https://other.example.com/in?token=${querySecret}&v=2` },
          ],
          sharedSecret,
        },
      },
      { id: 'unsigned', type: 'Webhooks', sources: [], settings: { webhookUrl: 'http://127.0.0.1:9000/x' } },
    ],
  },
  'test',
);

describe('redaction', () => {
  it('R01 a source shows a hint of its write key, never the key', () => {
    assert.deepEqual(redactSource(config.sources[0]!), { id: 'app', name: 'App', writeKeyHint: '…WXYZ' });
    assert.deepEqual(redactSource(config.sources[1]!), { id: 'short', name: 'short', writeKeyHint: '…' });
    assert.equal(writeKeyHint('0123456789abcdef'), '…cdef');
    assert.equal(writeKeyHint('0123456789abcde'), '…');
  });

  it('R02 a destination shows whether it signs, never the secret, header values or query values', () => {
    const view = redactDestination(config.destinations[0]!);
    assert.deepEqual(view, {
      id: 'hooks',
      type: 'Webhooks',
      name: 'hooks',
      enabled: true,
      sources: ['app'],
      settings: {
        webhooks: [
          { url: 'https://hooks.example.com/events', headers: { Authorization: '[redacted]', 'X-Team': '[redacted]' } },
          { url: 'https://other.example.com/in?token=[redacted]&v=[redacted]', headers: {} },
        ],
        hasSharedSecret: true,
      },
    });
    assert.equal(redactDestination(config.destinations[1]!).settings.hasSharedSecret, false);
    assert.equal(redactDestination(config.destinations[1]!).settings.webhooks[0]?.url, 'http://127.0.0.1:9000/x');
  });

  it('R03 no secret appears anywhere in the redacted configuration', () => {
    const text = JSON.stringify(redactConfig(config));
    for (const secret of [writeKey, 'tiny-key', sharedSecret, headerSecret, querySecret, 'growth']) {
      assert.ok(!text.includes(secret), `leaked ${secret}`);
    }
    assert.doesNotMatch(text, /writeKey"|sharedSecret/);
  });

  it('R04 redaction does not change the configuration', () => {
    redactConfig(config);
    assert.equal(config.sources[0]?.writeKey, writeKey);
    assert.equal(config.destinations[0]?.settings.sharedSecret, sharedSecret);
    assert.equal(config.destinations[0]?.settings.webhooks[0]?.headers.Authorization, headerSecret);
  });

  it('R05 works as an Array.prototype.map callback', () => {
    assert.equal(config.sources.map(redactSource).length, 2);
    assert.equal(config.destinations.map(redactDestination).length, 2);
  });

  it('R06 URLs: unchanged when nothing is secret, credentials and query values hidden', () => {
    assert.equal(redactUrl('https://h.example'), 'https://h.example');
    assert.equal(redactUrl('https://u:p@h.example/x?a=1'), 'https://h.example/x?a=[redacted]');
    assert.equal(redactUrl('not a url'), '[redacted]');
  });
});
