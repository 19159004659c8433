/**
 * Field removal and routing: what a destination's `removeFields` takes out of a call, that
 * the stored call keeps every field, and that bodies are still rendered once per type for the
 * destinations without removals (and once per set of removals for the others).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validateConfig } from '../../src/config/schema.js';
import { builtInDestinationTypes, createDestinationRegistry } from '../../src/destinations/registry.js';
import type { DestinationType } from '../../src/destinations/destination-type.js';
import type { NormalizedMessage } from '../../src/model/message.js';
import { compileRemoval } from '../../src/routing/remove-fields.js';
import { routeTargetOf } from '../../src/routing/route-target.js';
import { routeMessage } from '../../src/routing/route.js';

function identify(): NormalizedMessage {
  return {
    type: 'identify',
    messageId: 'm-1',
    userId: 'u-1',
    traits: { email: 'a@example.com', phone: '+100', name: 'Ada', address: { city: 'Paris', street: 'Rue 1' } },
    context: { ip: '203.0.113.9', traits: { email: 'a@example.com' }, app: { version: '1' } },
    integrations: {},
    timestamp: '2024-01-02T03:04:05.678Z',
    receivedAt: '2024-01-02T03:04:05.678Z',
  };
}

/** [case, removals, what the call keeps of traits and context] */
const table: [string, string[], { traits: unknown; context: unknown }][] = [
  ['R01 one trait', ['traits.email'], { traits: { phone: '+100', name: 'Ada', address: { city: 'Paris', street: 'Rue 1' } }, context: identify().context }],
  ['R02 two traits', ['traits.email', 'traits.phone'], { traits: { name: 'Ada', address: { city: 'Paris', street: 'Rue 1' } }, context: identify().context }],
  [
    'R03 a nested key',
    ['traits.address.street'],
    { traits: { email: 'a@example.com', phone: '+100', name: 'Ada', address: { city: 'Paris' } }, context: identify().context },
  ],
  [
    'R04 a key and one inside it',
    ['traits.address.street', 'traits.address'],
    { traits: { email: 'a@example.com', phone: '+100', name: 'Ada' }, context: identify().context },
  ],
  [
    'R05 a key inside a removed one',
    ['traits.address', 'traits.address.city'],
    { traits: { email: 'a@example.com', phone: '+100', name: 'Ada' }, context: identify().context },
  ],
  ['R06 context keys', ['context.ip', 'context.traits.email'], { traits: identify().traits, context: { traits: {}, app: { version: '1' } } }],
  ['R07 a key the call does not have', ['properties.email', 'traits.fax', 'context.app.build'], { traits: identify().traits, context: identify().context }],
  ['R08 a path through a scalar', ['traits.name.first'], { traits: identify().traits, context: identify().context }],
];

describe('removeFields takes fields out of the call its body is made from', () => {
  for (const [name, removals, kept] of table) {
    test(name, () => {
      const original = identify();
      const stripped = compileRemoval(removals)(original);
      assert.deepEqual({ traits: stripped.traits, context: stripped.context }, kept);
      assert.deepEqual(original, identify(), 'the stored call is left as it was');
      assert.equal(stripped.userId, 'u-1');
    });
  }

  test('removal trees reach no built-in object, whatever the paths (validation refuses such paths too)', () => {
    const strip = compileRemoval(['properties.constructor.prototype.polluted', 'properties.toString.x', 'properties.constructor.name']);
    const original = { type: 'track', properties: { constructor: { name: 'kept' }, toString: 'plain' } } as never;
    strip(original);
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined, 'Object.prototype untouched');
    assert.equal((Object.prototype.toString as unknown as Record<string, unknown>)['x'], undefined);
  });

  test('a call with nothing to remove is the call itself, not a copy', () => {
    const original = identify();
    assert.equal(compileRemoval(['properties.email'])(original), original);
    const stripped = compileRemoval(['traits.email'])(original);
    assert.notEqual(stripped, original);
    assert.equal(stripped.context, original.context, 'an object with nothing removed is shared, not copied');
  });
});

describe('routing renders each body once per type and set of removals', () => {
  const config = validateConfig({
    sources: [{ id: 'app', writeKey: 'wk-app-0123456789' }],
    destinations: [
      { id: 'a', type: 'Webhooks', sources: ['app'], settings: { webhookUrl: 'https://a.example.com' } },
      { id: 'b', type: 'Webhooks', sources: ['app'], settings: { webhookUrl: 'https://b.example.com' } },
      { id: 'c', type: 'Webhooks', sources: ['app'], removeFields: ['traits.email', 'context.ip'], settings: { webhookUrl: 'https://c.example.com' } },
      { id: 'd', type: 'Webhooks', sources: ['app'], removeFields: ['context.ip', 'traits.email'], settings: { webhookUrl: 'https://d.example.com' } },
      { id: 'e', type: 'Webhooks', sources: ['app'], filter: { drop: { type: 'identify' } }, settings: { webhookUrl: 'https://e.example.com' } },
    ],
  });
  assert.ok(config.ok);
  const webhooks = builtInDestinationTypes.get('Webhooks')! as DestinationType;
  let renders = 0;
  const counting = createDestinationRegistry([]);
  // The same type, counting its renders: routing must ask it as few times as it can.
  const types = {
    ...counting,
    get: (name: string) =>
      name === 'Webhooks'
        ? {
            ...webhooks,
            renderMessage: (m: NormalizedMessage) => {
              renders += 1;
              return webhooks.renderMessage(m);
            },
          }
        : counting.get(name),
  } as typeof counting;

  test('two renders for five destinations: one plain, one for the same removals in any order; the filtered one gets none', () => {
    const filtered = new Map<string, number>();
    const routed = routeMessage(identify(), config.value.destinations.map(routeTargetOf), types, filtered);
    assert.equal(renders, 2);
    assert.deepEqual(
      routed.map((r) => r.destinationId),
      ['a', 'b', 'c', 'd'],
    );
    const [a, b, c, d] = routed.map((r) => JSON.parse(r.body));
    assert.deepEqual(a, b);
    assert.deepEqual(c, d);
    assert.equal(a.traits.email, 'a@example.com');
    assert.equal(a.context.ip, '203.0.113.9');
    assert.equal(Object.hasOwn(c.traits, 'email'), false);
    assert.equal(Object.hasOwn(c.context, 'ip'), false);
    assert.equal(c.traits.phone, '+100');
    assert.deepEqual([...filtered], [['e', 1]]);
  });

  test('a call that no filter drops leaves the counts empty', () => {
    const filtered = new Map<string, number>();
    const track: NormalizedMessage = { ...identify(), type: 'track', event: 'A', traits: undefined };
    const routed = routeMessage(track, config.value.destinations.map(routeTargetOf), types, filtered);
    assert.equal(routed.length, 5);
    assert.equal(filtered.size, 0);
  });
});
