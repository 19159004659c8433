import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createHttpSender } from '../../src/destinations/http/http-sender.js';
import {
  createGuardedLookup,
  isAddressAllowed,
  parseAllowedNetworks,
  refusalReason,
  SSRF_REFUSED,
  type NetworkPolicy,
  type ResolveAll,
} from '../../src/destinations/http/ssrf-guard.js';
import { within } from '../helpers/within.js';

// Every address below is only ever passed to pure functions or to a fake resolver; the only
// requests these tests send go to a receiver on 127.0.0.1.

const strict: NetworkPolicy = { allowPrivateNetworks: false, allowedNetworks: [] };
const permissive: NetworkPolicy = { allowPrivateNetworks: true, allowedNetworks: [] };

describe('isAddressAllowed', () => {
  // [address, allowed with the strict policy, allowed with allowPrivateNetworks]
  const cases: Array<[string, boolean, boolean, string]> = [
    ['93.184.215.14', true, true, 'public IPv4'],
    ['8.8.8.8', true, true, 'public IPv4'],
    ['1.1.1.1', true, true, 'public IPv4'],
    ['2606:4700:4700::1111', true, true, 'public IPv6'],
    ['2a00:1450:4001:80b::200e', true, true, 'public IPv6'],
    ['127.0.0.1', false, true, 'loopback'],
    ['127.255.255.254', false, true, 'loopback, end of range'],
    ['10.0.0.1', false, true, 'private 10/8'],
    ['10.255.255.255', false, true, 'private 10/8, end of range'],
    ['172.16.0.1', false, true, 'private 172.16/12'],
    ['172.31.255.255', false, true, 'private 172.16/12, end of range'],
    ['172.15.255.255', true, true, 'just below 172.16/12'],
    ['172.32.0.0', true, true, 'just above 172.16/12'],
    ['192.168.1.1', false, true, 'private 192.168/16'],
    ['169.254.169.254', false, false, 'cloud metadata'],
    ['169.254.0.1', false, false, 'link-local'],
    ['100.64.0.1', false, true, 'CGNAT'],
    ['100.127.255.255', false, true, 'CGNAT, end of range'],
    ['100.128.0.0', true, true, 'just above CGNAT'],
    ['0.0.0.0', false, false, 'unspecified'],
    ['0.1.2.3', false, false, '"this network" 0/8'],
    ['224.0.0.1', false, false, 'multicast'],
    ['239.255.255.250', false, false, 'multicast (SSDP)'],
    ['240.0.0.1', false, false, 'reserved'],
    ['255.255.255.255', false, false, 'broadcast'],
    ['192.0.0.8', false, true, 'IETF protocol assignments'],
    ['192.0.2.10', false, true, 'TEST-NET-1'],
    ['198.51.100.10', false, true, 'TEST-NET-2'],
    ['203.0.113.10', false, true, 'TEST-NET-3'],
    ['198.18.0.1', false, true, 'benchmarking'],
    ['192.88.99.1', false, true, '6to4 relay anycast'],
    ['::1', false, true, 'IPv6 loopback'],
    ['::', false, false, 'IPv6 unspecified'],
    ['fc00::1', false, true, 'unique local'],
    ['fd12:3456:789a::1', false, true, 'unique local'],
    ['fd00:ec2::254', false, false, 'AWS IPv6 metadata'],
    ['fe80::1', false, false, 'IPv6 link-local'],
    ['fe80::1%eth0', false, false, 'IPv6 link-local with a zone'],
    ['febf::1', false, false, 'IPv6 link-local, end of range'],
    ['fec0::1', false, true, 'deprecated site-local'],
    ['ff02::1', false, false, 'IPv6 multicast'],
    ['::ffff:127.0.0.1', false, true, 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', false, true, 'IPv4-mapped loopback, hex form'],
    ['::ffff:169.254.169.254', false, false, 'IPv4-mapped metadata'],
    ['::ffff:10.0.0.1', false, true, 'IPv4-mapped private'],
    ['::ffff:8.8.8.8', true, true, 'IPv4-mapped public'],
    ['[::ffff:7f00:1]', false, true, 'bracketed, as in a URL'],
    ['64:ff9b::7f00:1', false, true, 'NAT64 of loopback'],
    ['64:ff9b::a9fe:a9fe', false, false, 'NAT64 of metadata'],
    ['64:ff9b::808:808', true, true, 'NAT64 of a public address'],
    ['64:ff9b:1::1', false, true, 'local-use NAT64'],
    ['2002:7f00:1::', false, true, '6to4 of loopback'],
    ['2002:a9fe:a9fe::1', false, false, '6to4 of metadata'],
    ['2002:c0a8:101::1', false, true, '6to4 of 192.168.1.1'],
    ['2002:808:808::1', true, true, '6to4 of a public address'],
    ['::127.0.0.1', false, true, 'deprecated IPv4-compatible'],
    ['2001:db8::1', false, true, 'IPv6 documentation'],
    ['3fff::1', false, true, 'IPv6 documentation (RFC 9637)'],
    ['2001::1', false, true, 'Teredo'],
    ['100::1', false, true, 'discard-only'],
    ['4000::1', false, true, 'outside 2000::/3'],
    ['not-an-ip', false, false, 'garbage'],
    ['', false, false, 'empty'],
    ['999.1.1.1', false, false, 'out-of-range octet'],
  ];

  for (const [address, strictAllowed, permissiveAllowed, what] of cases) {
    it(`${address || '(empty)'} (${what}): strict ${strictAllowed ? 'allows' : 'refuses'}, private-allowed ${permissiveAllowed ? 'allows' : 'refuses'}`, () => {
      assert.equal(isAddressAllowed(address, strict), strictAllowed);
      assert.equal(isAddressAllowed(address, permissive), permissiveAllowed);
    });
  }

  it('allows listed networks even when private networks are refused', () => {
    const policy: NetworkPolicy = {
      allowPrivateNetworks: false,
      allowedNetworks: ['127.0.0.0/8', '10.20.0.0/16', 'fd12::/16', '169.254.170.2'],
    };
    assert.equal(isAddressAllowed('127.0.0.1', policy), true);
    assert.equal(isAddressAllowed('::ffff:127.0.0.1', policy), true);
    assert.equal(isAddressAllowed('10.20.30.40', policy), true);
    assert.equal(isAddressAllowed('10.21.0.1', policy), false);
    assert.equal(isAddressAllowed('fd12:3456::1', policy), true);
    assert.equal(isAddressAllowed('fd13::1', policy), false);
    assert.equal(isAddressAllowed('169.254.170.2', policy), true);
    assert.equal(isAddressAllowed('169.254.169.254', policy), false);
    assert.equal(isAddressAllowed('::1', policy), false);
    assert.equal(isAddressAllowed('192.168.0.1', policy), false);
  });

  it('names the reason of a refusal', () => {
    assert.equal(refusalReason('8.8.8.8', strict), undefined);
    assert.match(refusalReason('127.0.0.1', strict) ?? '', /loopback/);
    assert.match(refusalReason('::ffff:169.254.169.254', strict) ?? '', /IPv4-mapped 169\.254\.169\.254: link-local/);
    assert.match(refusalReason('2002:a00:1::', strict) ?? '', /6to4 10\.0\.0\.1: private/);
  });
});

describe('parseAllowedNetworks', () => {
  it('accepts IPv4 and IPv6 CIDRs and single addresses', () => {
    const list = parseAllowedNetworks(['10.0.0.0/8', ' 192.168.1.5 ', 'fd00::/8', '::1']);
    assert.equal(list.check('10.9.9.9', 'ipv4'), true);
    assert.equal(list.check('192.168.1.5', 'ipv4'), true);
    assert.equal(list.check('192.168.1.6', 'ipv4'), false);
    assert.equal(list.check('fd00::5', 'ipv6'), true);
    assert.equal(list.check('::1', 'ipv6'), true);
  });

  for (const bad of ['10.0.0.0/33', 'fd00::/129', 'intranet', '10.0.0.0/8/8', '10.0.0.0/', '10.0.0.0/x', '']) {
    it(`refuses ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseAllowedNetworks([bad]), RangeError);
    });
  }
});

describe('createGuardedLookup', () => {
  /** A resolver that answers from a table instead of DNS; nothing is ever dialled. */
  const fakeResolver =
    (table: Record<string, LookupAddress[]>): ResolveAll =>
    async (hostname) => {
      const addresses = table[hostname];
      if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return addresses;
    };
  const resolver = fakeResolver({
    'public.test': [
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ],
    'rebind.test': [
      { address: '93.184.215.14', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ],
    'metadata.test': [{ address: '169.254.169.254', family: 4 }],
    'mapped.test': [{ address: '::ffff:10.0.0.1', family: 6 }],
    'empty.test': [],
  });

  type Outcome = { error: NodeJS.ErrnoException | null; address: unknown; family?: number | undefined };
  const lookup = (policy: NetworkPolicy, hostname: string, all: boolean): Promise<Outcome> =>
    new Promise((resolve) => {
      createGuardedLookup(policy, resolver)(hostname, { all }, (error, address, family) => resolve({ error, address, family }));
    });

  it('passes every address through when all are public (all: true)', async () => {
    const outcome = await lookup(strict, 'public.test', true);
    assert.equal(outcome.error, null);
    assert.deepEqual(outcome.address, [
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
  });

  it('answers with the first address when a single one is asked for', async () => {
    const outcome = await lookup(strict, 'public.test', false);
    assert.equal(outcome.error, null);
    assert.equal(outcome.address, '93.184.215.14');
    assert.equal(outcome.family, 4);
  });

  it('refuses a host when ANY of its addresses is refused (DNS rebinding)', async () => {
    for (const all of [true, false]) {
      const outcome = await lookup(strict, 'rebind.test', all);
      assert.equal(outcome.error?.code, SSRF_REFUSED);
      assert.match(outcome.error?.message ?? '', /rebind\.test.*127\.0\.0\.1.*loopback/);
    }
  });

  it('refuses metadata and IPv4-mapped private answers', async () => {
    assert.equal((await lookup(strict, 'metadata.test', true)).error?.code, SSRF_REFUSED);
    assert.equal((await lookup(permissive, 'metadata.test', true)).error?.code, SSRF_REFUSED);
    assert.equal((await lookup(strict, 'mapped.test', true)).error?.code, SSRF_REFUSED);
    assert.equal((await lookup(permissive, 'mapped.test', true)).error, null);
  });

  it('passes resolution errors through and treats an empty answer as not found', async () => {
    assert.equal((await lookup(strict, 'missing.test', true)).error?.code, 'ENOTFOUND');
    assert.equal((await lookup(strict, 'empty.test', true)).error?.code, 'ENOTFOUND');
  });
});

describe('the HTTP sender behind the guard, against a loopback receiver', () => {
  let port = 0;
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  before(async () => {
    await within(10_000, 'the test server to listen', new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
    port = (server.address() as AddressInfo).port;
  });
  after(() =>
    within(
      10_000,
      'the test server to close',
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    ),
  );

  const send = (policy: NetworkPolicy, url: string) => {
    const sender = createHttpSender(policy);
    return sender.send({ url, headers: { 'content-type': 'application/json' }, body: Buffer.from('{}'), timeoutMs: 5000 }).finally(() => sender.close());
  };

  const urls = (): string[] => [
    `http://127.0.0.1:${port}/`,
    `http://localhost:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    // WHATWG URL parsing turns these into 127.0.0.1 before the guard sees them.
    `http://2130706433:${port}/`,
    `http://0x7f.1:${port}/`,
  ];

  it('refuses loopback targets with ssrf, and the receiver gets nothing', async () => {
    hits = 0;
    for (const url of [...urls(), `http://[::1]:${port}/`, `http://0.0.0.0:${port}/`]) {
      const result = await send(strict, url);
      assert.equal(result.errorClass, 'ssrf', url);
      assert.equal(result.statusCode, undefined, url);
    }
    assert.equal(hits, 0);
  });

  it('lets them through when 127.0.0.0/8 is an allowed network', async () => {
    hits = 0;
    // localhost may also resolve to ::1 on some machines, and a host is refused when any of
    // its addresses is, so ::1 is listed too.
    const policy: NetworkPolicy = { allowPrivateNetworks: false, allowedNetworks: ['127.0.0.0/8', '::1/128'] };
    for (const url of urls()) {
      const result = await send(policy, url);
      assert.equal(result.statusCode, 200, url);
      assert.equal(result.errorClass, undefined, url);
    }
    assert.equal(hits, urls().length);
  });

  it('lets them through when private networks are allowed', async () => {
    const result = await send(permissive, `http://localhost:${port}/`);
    assert.equal(result.statusCode, 200);
  });
});
