import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultDeliverySettings, defaultRetrySettings } from '../../src/config/defaults.js';
import { checkCidr, validateConfig, validateDestination, validateSource, type ConfigIssue } from '../../src/config/schema.js';
import { checkWebhookUrl } from '../../src/destinations/webhooks/settings-schema.js';
import { FerryError } from '../../src/errors/error-codes.js';

/** A valid file; each case below changes one thing. */
function base(): Record<string, any> {
  return {
    sources: [{ id: 'backend', name: 'Backend API', writeKey: 'wk-backend-0123456789' }],
    destinations: [
      {
        id: 'crm-hooks',
        type: 'Webhooks',
        sources: ['backend'],
        settings: { webhooks: [{ url: 'https://hooks.example.com/events', headers: { 'X-Team': 'growth' } }] },
      },
    ],
  };
}

function issuesOf(input: unknown): ConfigIssue[] {
  const result = validateConfig(input);
  assert.equal(result.ok, false, 'expected the configuration to be refused');
  return result.ok ? [] : result.issues;
}

function assertRefused(input: unknown, path: string, rule: RegExp): void {
  const issues = issuesOf(input);
  assert.ok(
    issues.some((i) => i.path === path && rule.test(i.message)),
    `expected an issue at ${path} matching ${rule}, got ${JSON.stringify(issues, null, 2)}`,
  );
}

function urls(n: number): { url: string; headers?: Record<string, string> }[] {
  return Array.from({ length: n }, (_, i) => ({ url: `https://hooks.example.com/${i}` }));
}

function headers(n: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, `v${i}`]));
}

const reservedHeaders = [
  'Content-Type',
  'Content-Length',
  'Host',
  'User-Agent',
  'X-Signature',
  'X-Ferry-Source',
  'X-Ferry-Signatures',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
];

describe('configuration schema: refusals', () => {
  const cases: { name: string; edit: (c: Record<string, any>) => void; path: string; rule: RegExp }[] = [
    {
      name: 'C01 six webhook URLs',
      edit: (c) => (c.destinations[0].settings.webhooks = urls(6)),
      path: 'destinations[0].settings.webhooks',
      rule: /^at most 5 webhook URLs \(got 6\)$/,
    },
    {
      name: 'C02 six headers on one webhook',
      edit: (c) => (c.destinations[0].settings.webhooks[0].headers = headers(6)),
      path: 'destinations[0].settings.webhooks[0].headers',
      rule: /at most 5 headers per webhook \(got 6\)/,
    },
    {
      name: 'C03 ftp:// URL',
      edit: (c) => (c.destinations[0].settings.webhooks[0].url = 'ftp://hooks.example.com/x'),
      path: 'destinations[0].settings.webhooks[0].url',
      rule: /http:\/\/ or https:\/\//,
    },
    {
      name: 'C04 URL without a protocol',
      edit: (c) => (c.destinations[0].settings.webhooks[0].url = 'example.com/x'),
      path: 'destinations[0].settings.webhooks[0].url',
      rule: /full URL including the http:\/\/ or https:\/\/ protocol/,
    },
    {
      name: 'C05 URL with credentials',
      edit: (c) => (c.destinations[0].settings.webhooks[0].url = 'https://user:pw@hooks.example.com/x'),
      path: 'destinations[0].settings.webhooks[0].url',
      rule: /credentials/,
    },
    {
      name: 'C06 header value with CR/LF',
      edit: (c) => (c.destinations[0].settings.webhooks[0].headers = { 'X-Team': 'a\r\nX-Evil: 1' }),
      path: 'destinations[0].settings.webhooks[0].headers.X-Team',
      rule: /CR, LF or NUL/,
    },
    {
      name: 'C07 header value with a bare LF',
      edit: (c) => (c.destinations[0].settings.webhooks[0].headers = { 'X-Team': 'a\nb' }),
      path: 'destinations[0].settings.webhooks[0].headers.X-Team',
      rule: /CR, LF or NUL/,
    },
    {
      name: 'C08 header value with NUL',
      edit: (c) => (c.destinations[0].settings.webhooks[0].headers = { 'X-Team': 'a\0b' }),
      path: 'destinations[0].settings.webhooks[0].headers.X-Team',
      rule: /CR, LF or NUL/,
    },
    {
      name: 'C09 header name that is not a token',
      edit: (c) => (c.destinations[0].settings.webhooks[0].headers = { 'X Team': 'a' }),
      path: 'destinations[0].settings.webhooks[0].headers["X Team"]',
      rule: /not a valid HTTP token/,
    },
    {
      name: 'C10 header value that is a number',
      edit: (c) => (c.destinations[0].settings.webhooks[0].headers = { 'X-Version': 2 }),
      path: 'destinations[0].settings.webhooks[0].headers.X-Version',
      rule: /must be strings/,
    },
    {
      name: 'C11 header names differing only in case',
      edit: (c) => (c.destinations[0].settings.webhooks[0].headers = { 'X-Team': 'a', 'x-team': 'b' }),
      path: 'destinations[0].settings.webhooks[0].headers.x-team',
      rule: /case-insensitive/,
    },
    {
      name: 'C12 hop-by-hop header',
      edit: (c) => (c.destinations[0].settings.webhooks[0].headers = { Connection: 'close' }),
      path: 'destinations[0].settings.webhooks[0].headers.Connection',
      rule: /managed by the HTTP client/,
    },
    {
      name: 'C13 unknown source',
      edit: (c) => (c.destinations[0].sources = ['backend', 'frontend']),
      path: 'destinations[0].sources[1]',
      rule: /^unknown source "frontend" \(known sources: "backend"\)$/,
    },
    {
      name: 'C14 unknown key in a destination',
      edit: (c) => (c.destinations[0].enabeld = false),
      path: 'destinations[0].enabeld',
      rule: /unknown key; allowed keys here: id, type, name, enabled, sources, filter, removeFields, settings, retryStatuses, circuitBreaker, rateLimit, autoDisableAfterMs/,
    },
    {
      name: 'C15 unknown key at the top level',
      edit: (c) => (c.destination = []),
      path: 'destination',
      rule: /unknown key/,
    },
    {
      name: 'C16 unknown key in settings',
      edit: (c) => (c.destinations[0].settings.secret = 'x'),
      path: 'destinations[0].settings.secret',
      rule: /unknown key/,
    },
    {
      name: 'C17 unknown key in delivery.retry',
      edit: (c) => (c.delivery = { retry: { maxAttempts: 3 } }),
      path: 'delivery.retry.maxAttempts',
      rule: /unknown key/,
    },
    {
      name: 'C18 duplicate source id',
      edit: (c) => c.sources.push({ id: 'backend', writeKey: 'another-key' }),
      path: 'sources[1].id',
      rule: /duplicate source id "backend" \(also sources\[0\]\)/,
    },
    {
      name: 'C19 duplicate write key',
      edit: (c) => c.sources.push({ id: 'other', writeKey: 'wk-backend-0123456789' }),
      path: 'sources[1].writeKey',
      rule: /write keys must be unique/,
    },
    {
      name: 'C20 duplicate destination id',
      edit: (c) => c.destinations.push(structuredClone(c.destinations[0])),
      path: 'destinations[1].id',
      rule: /duplicate destination id "crm-hooks"/,
    },
    {
      name: 'C21 type in the wrong case',
      edit: (c) => (c.destinations[0].type = 'webhooks'),
      path: 'destinations[0].type',
      rule: /only type is "Webhooks" \(case-sensitive\)/,
    },
    {
      name: 'C22 id with upper case',
      edit: (c) => (c.sources[0].id = 'Backend'),
      path: 'sources[0].id',
      rule: /\[a-z0-9_-\]\+/,
    },
    {
      name: 'C23 empty write key',
      edit: (c) => (c.sources[0].writeKey = ''),
      path: 'sources[0].writeKey',
      rule: /must not be empty/,
    },
    {
      name: 'C24 write key with a colon',
      edit: (c) => (c.sources[0].writeKey = 'a:b'),
      path: 'sources[0].writeKey',
      rule: /":"/,
    },
    {
      name: 'C25 missing write key',
      edit: (c) => delete c.sources[0].writeKey,
      path: 'sources[0].writeKey',
      rule: /^is required$/,
    },
    {
      name: 'C26 no webhook URL at all',
      edit: (c) => (c.destinations[0].settings = {}),
      path: 'destinations[0].settings',
      rule: /at least one webhook URL/,
    },
    {
      name: 'C27 empty webhooks list',
      edit: (c) => (c.destinations[0].settings = { webhooks: [] }),
      path: 'destinations[0].settings.webhooks',
      rule: /at least one webhook URL/,
    },
    {
      name: 'C28 webhookUrl disagreeing with webhooks[0]',
      edit: (c) => (c.destinations[0].settings.webhookUrl = 'https://other.example.com/'),
      path: 'destinations[0].settings.webhookUrl',
      rule: /same as webhooks\[0\]\.url/,
    },
    {
      name: 'C29 empty shared secret',
      edit: (c) => (c.destinations[0].settings.sharedSecret = ''),
      path: 'destinations[0].settings.sharedSecret',
      rule: /must not be empty/,
    },
    {
      name: 'C30 duplicate webhook URL',
      edit: (c) => (c.destinations[0].settings.webhooks = [{ url: 'https://a.example/' }, { url: 'https://a.example/' }]),
      path: 'destinations[0].settings.webhooks[1].url',
      rule: /duplicate webhook URL/,
    },
    {
      name: 'C31 source listed twice',
      edit: (c) => (c.destinations[0].sources = ['backend', 'backend']),
      path: 'destinations[0].sources[1]',
      rule: /listed twice/,
    },
    {
      name: 'C32 enabled as a string',
      edit: (c) => (c.destinations[0].enabled = 'yes'),
      path: 'destinations[0].enabled',
      rule: /must be true or false/,
    },
    {
      name: 'C33 timeoutMs of 0',
      edit: (c) => (c.delivery = { timeoutMs: 0 }),
      path: 'delivery.timeoutMs',
      rule: /integer from 1 to 60000 \(got 0\)/,
    },
    {
      name: 'C34 jitter above 1',
      edit: (c) => (c.delivery = { retry: { jitter: 1.5 } }),
      path: 'delivery.retry.jitter',
      rule: /from 0 to 1/,
    },
    {
      name: 'C35 fractional concurrency',
      edit: (c) => (c.delivery = { concurrency: 2.5 }),
      path: 'delivery.concurrency',
      rule: /integer/,
    },
    {
      name: 'C36 lease shorter than an attempt can take (2 × timeoutMs + 1000)',
      edit: (c) => (c.delivery = { timeoutMs: 1000, leaseMs: 2999 }),
      path: 'delivery.leaseMs',
      rule: /at least 2 × timeoutMs \+ 1000 \(3000\)/,
    },
    {
      name: 'C36b lease renewals not under half the lease',
      edit: (c) => (c.delivery = { leaseMs: 12_000, leaseRenewIntervalMs: 6000 }),
      path: 'delivery.leaseRenewIntervalMs',
      rule: /less than leaseMs \/ 2 \(6000\)/,
    },
    {
      name: 'C37 maxDelayMs below initialDelayMs',
      edit: (c) => (c.delivery = { retry: { initialDelayMs: 5000, maxDelayMs: 1000 } }),
      path: 'delivery.retry.maxDelayMs',
      rule: /at least retry\.initialDelayMs/,
    },
    {
      name: 'C38 allowedNetworks entry that is not CIDR',
      edit: (c) => (c.network = { allowedNetworks: ['10.0.0.0'] }),
      path: 'network.allowedNetworks[0]',
      rule: /CIDR/,
    },
    {
      name: 'C39 destinations without sources key',
      edit: (c) => delete c.destinations[0].sources,
      path: 'destinations[0].sources',
      rule: /is required/,
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const config = base();
      c.edit(config);
      assertRefused(config, c.path, c.rule);
    });
  }

  for (const name of reservedHeaders) {
    for (const spelling of [name, name.toLowerCase(), name.toUpperCase()]) {
      it(`reserved header ${spelling} is refused`, () => {
        const config = base();
        config.destinations[0].settings.webhooks[0].headers = { [spelling]: 'x' };
        assertRefused(
          config,
          `destinations[0].settings.webhooks[0].headers.${spelling}`,
          /cannot be set: Content-Type, Content-Length, Host, User-Agent, X-Signature, X-Ferry-Source, X-Ferry-Signatures, webhook-id, webhook-timestamp and webhook-signature are set by Ferry/,
        );
      });
    }
  }

  it('a top level that is not a mapping is refused', () => {
    assertRefused([], '', /must be a mapping/);
  });

  it('messages never echo a write key or a secret', () => {
    const config = base();
    config.sources.push({ id: 'other', writeKey: 'wk-backend-0123456789' });
    config.destinations[0].settings.sharedSecret = 'x'.repeat(5000);
    config.destinations[0].settings.webhooks[0].headers = { 'X-Token': 'secret-token\n' };
    const text = JSON.stringify(issuesOf(config));
    assert.doesNotMatch(text, /wk-backend|xxxxx|secret-token/);
  });
});

describe('configuration schema: acceptances', () => {
  it('A01 the base configuration is valid and gets its defaults', () => {
    const result = validateConfig(base());
    assert.ok(result.ok, JSON.stringify(result));
    const config = result.value;
    assert.equal(config.destinations[0]?.name, 'crm-hooks');
    assert.equal(config.destinations[0]?.enabled, true);
    assert.equal(config.sources[0]?.name, 'Backend API');
    assert.deepEqual(config.delivery, defaultDeliverySettings);
    assert.deepEqual(config.network, { allowPrivateNetworks: false, allowedNetworks: [] });
    assert.deepEqual(config.audiences, { syncIntervalMs: 60_000 });
  });

  it('A02 five URLs with five headers each are accepted', () => {
    const config = base();
    config.destinations[0].settings.webhooks = urls(5).map((w) => ({ ...w, headers: headers(5) }));
    const result = validateConfig(config);
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.value.destinations[0]?.settings.webhooks.length, 5);
    assert.equal(Object.keys(result.value.destinations[0]?.settings.webhooks[4]?.headers ?? {}).length, 5);
  });

  it('A03 webhookUrl alone is folded into webhooks', () => {
    const config = base();
    config.destinations[0].settings = { webhookUrl: 'https://hooks.example.com/one', sharedSecret: 's3cret' };
    const result = validateConfig(config);
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(result.value.destinations[0]?.settings, {
      webhooks: [{ url: 'https://hooks.example.com/one', headers: {} }],
      sharedSecret: 's3cret',
    });
    assert.ok(!('webhookUrl' in (result.value.destinations[0]?.settings ?? {})));
  });

  it('A04 webhookUrl equal to webhooks[0].url is accepted and folded', () => {
    const config = base();
    config.destinations[0].settings.webhookUrl = 'https://hooks.example.com/events';
    const result = validateConfig(config);
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(result.value.destinations[0]?.settings, {
      webhooks: [{ url: 'https://hooks.example.com/events', headers: { 'X-Team': 'growth' } }],
    });
  });

  it('A05 partial delivery overrides are merged over the defaults', () => {
    const config = base();
    config.delivery = { timeoutMs: 100, leaseMs: 1200, retry: { initialDelayMs: 10, windowMs: 500 } };
    const result = validateConfig(config);
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(result.value.delivery, {
      ...defaultDeliverySettings,
      timeoutMs: 100,
      leaseMs: 1200,
      // Not set: a third of the lease, as the defaults (12 s, 4 s).
      leaseRenewIntervalMs: 400,
      retry: { ...defaultRetrySettings, initialDelayMs: 10, windowMs: 500 },
    });
    // The defaults themselves are untouched.
    assert.equal(defaultDeliverySettings.timeoutMs, 5000);
    assert.equal(defaultRetrySettings.initialDelayMs, 2000);
  });

  it('A06 a destination connected to no source is accepted', () => {
    const config = base();
    config.destinations[0].sources = [];
    assert.ok(validateConfig(config).ok);
  });

  it('A07 an empty configuration gets empty lists and every default', () => {
    const result = validateConfig({});
    assert.ok(result.ok);
    assert.deepEqual(result.value.sources, []);
    assert.deepEqual(result.value.destinations, []);
  });

  it('A08 network settings and CIDR ranges', () => {
    const config = base();
    config.network = { allowPrivateNetworks: true, allowedNetworks: ['10.1.2.0/24', 'fd00::/8', '192.168.1.7/32'] };
    const result = validateConfig(config);
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(result.value.network.allowedNetworks, ['10.1.2.0/24', 'fd00::/8', '192.168.1.7/32']);
    assert.equal(checkCidr('10.0.0.0/33') !== undefined, true);
    assert.equal(checkCidr('::1/129') !== undefined, true);
  });

  it('A09 URL forms', () => {
    for (const ok of ['http://127.0.0.1:9000/webhook', 'https://h.example/p?q=1', 'https://[::1]:8443/']) {
      assert.equal(checkWebhookUrl(ok), undefined, ok);
    }
    for (const bad of ['ftp://h/x', 'example.com/x', 'mailto:a@b.c', 'https://', ' https://h/', 'https://h/ x', 'file:///etc/passwd']) {
      assert.notEqual(checkWebhookUrl(bad), undefined, bad);
    }
  });

  it('A10 outputs do not share state with the defaults', () => {
    const a = validateConfig({});
    const b = validateConfig({});
    assert.ok(a.ok && b.ok);
    a.value.network.allowedNetworks.push('10.0.0.0/8');
    a.value.delivery.retry.jitter = 0.5;
    assert.deepEqual(b.value.network.allowedNetworks, []);
    assert.equal(b.value.delivery.retry.jitter, 0.2);
  });
});

describe('validateSource / validateDestination (admin API)', () => {
  const existing = [{ id: 'backend', name: 'Backend', writeKey: 'wk-backend-0123456789' }];

  it('returns the source with its name defaulted', () => {
    assert.deepEqual(validateSource({ id: 'web', writeKey: 'wk-web' }, existing), { id: 'web', name: 'web', writeKey: 'wk-web' });
  });

  it('refuses a broken source with invalid_settings and a path', () => {
    assert.throws(
      () => validateSource({ id: 'Web', writeKey: 'k' }, existing),
      (err: unknown) =>
        err instanceof FerryError && err.code === 'invalid_settings' && err.status === 400 && err.path === 'id' && /^id: must match/.test(err.message),
    );
    assert.throws(
      () => validateSource({ id: 'web', writeKey: 'k', extra: 1 }, existing),
      (err: unknown) => err instanceof FerryError && err.code === 'invalid_settings' && err.path === 'extra',
    );
  });

  it('refuses a clashing id or write key with conflict', () => {
    assert.throws(
      () => validateSource({ id: 'backend', writeKey: 'other' }, existing),
      (err: unknown) => err instanceof FerryError && err.code === 'conflict' && err.path === 'id',
    );
    assert.throws(
      () => validateSource({ id: 'web', writeKey: 'wk-backend-0123456789' }, existing),
      (err: unknown) => err instanceof FerryError && err.code === 'conflict' && !err.message.includes('wk-backend'),
    );
  });

  const destination = { id: 'hooks', type: 'Webhooks', sources: ['backend'], settings: { webhookUrl: 'https://h.example/x' } };

  it('returns the destination with defaults and webhookUrl folded', () => {
    assert.deepEqual(validateDestination(destination, ['backend']), {
      id: 'hooks',
      type: 'Webhooks',
      name: 'hooks',
      enabled: true,
      sources: ['backend'],
      settings: { webhooks: [{ url: 'https://h.example/x', headers: {} }] },
    });
  });

  it('refuses an unknown source with invalid_settings', () => {
    assert.throws(
      () => validateDestination(destination, ['web']),
      (err: unknown) =>
        err instanceof FerryError && err.code === 'invalid_settings' && err.path === 'sources[0]' && /unknown source "backend"/.test(err.message),
    );
  });

  it('refuses six URLs with the rule in the message', () => {
    const six = { ...destination, settings: { webhooks: urls(6) } };
    assert.throws(
      () => validateDestination(six, ['backend']),
      (err: unknown) => err instanceof FerryError && err.path === 'settings.webhooks' && err.message === 'settings.webhooks: at most 5 webhook URLs (got 6)',
    );
  });

  it('refuses a taken id with conflict', () => {
    assert.throws(
      () => validateDestination(destination, ['backend'], ['hooks']),
      (err: unknown) => err instanceof FerryError && err.code === 'conflict',
    );
  });

  it('accepts an already validated destination again (PATCH round trip)', () => {
    const once = validateDestination({ ...destination, settings: { ...destination.settings, sharedSecret: 's' } }, ['backend']);
    assert.deepEqual(validateDestination({ ...once, enabled: false }, ['backend']), { ...once, enabled: false });
  });
});
