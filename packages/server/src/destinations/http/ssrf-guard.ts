/**
 * The SSRF guard of the webhook sender: decides which IP addresses a webhook may be sent to,
 * and a DNS lookup for `net.connect` that refuses a host name when any of its addresses is
 * refused. Because the guard *is* the lookup, the address net dials is the address that was
 * vetted; a second, different DNS answer (rebinding) never reaches the socket.
 */
import { promises as dns, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** Which destinations the sender may reach besides the public internet. */
export interface NetworkPolicy {
  /**
   * Lets webhooks reach loopback, private (RFC 1918, ULA), CGNAT and other special-purpose
   * ranges; for local development and tests (`FERRY_ALLOW_PRIVATE_NETWORKS=1`). Even then,
   * link-local addresses (home of cloud metadata services such as 169.254.169.254) and
   * addresses that cannot be a unicast destination (0.0.0.0/8, `::`, multicast, 240.0.0.0/4)
   * stay refused unless listed in `allowedNetworks`.
   */
  allowPrivateNetworks: boolean;
  /** CIDRs (or single addresses) that are always allowed, e.g. `10.20.0.0/16`, `fd12::/64`. */
  allowedNetworks: string[];
}

/** `code` of the error the guarded lookup fails with; the sender classifies it as `ssrf`. */
export const SSRF_REFUSED = 'ERR_FERRY_SSRF_REFUSED';

/** A destination address the guard refused. */
export class SsrfRefusedError extends Error {
  readonly code = SSRF_REFUSED;
  constructor(
    readonly hostname: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(hostname === address ? `refused to connect to ${address}: ${reason}` : `refused to connect to ${hostname}: it resolves to ${address} (${reason})`);
    this.name = 'SsrfRefusedError';
  }
}

interface Range {
  network: string;
  prefix: number;
  label: string;
  /** Refused even when private networks are allowed. */
  always?: true;
}

// From the IANA IPv4 and IPv6 special-purpose address registries: every block that is not
// globally reachable. The first match names the reason, so narrower blocks come first.
const IPV4_RANGES: Range[] = [
  { network: '0.0.0.0', prefix: 8, label: '"this network"', always: true },
  { network: '10.0.0.0', prefix: 8, label: 'private network' },
  { network: '100.64.0.0', prefix: 10, label: 'shared address space (CGNAT)' },
  { network: '127.0.0.0', prefix: 8, label: 'loopback' },
  { network: '169.254.0.0', prefix: 16, label: 'link-local (cloud metadata)', always: true },
  { network: '172.16.0.0', prefix: 12, label: 'private network' },
  { network: '192.0.0.0', prefix: 24, label: 'IETF protocol assignments' },
  { network: '192.0.2.0', prefix: 24, label: 'documentation (TEST-NET-1)' },
  { network: '192.88.99.0', prefix: 24, label: 'deprecated 6to4 relay anycast' },
  { network: '192.168.0.0', prefix: 16, label: 'private network' },
  { network: '198.18.0.0', prefix: 15, label: 'benchmarking' },
  { network: '198.51.100.0', prefix: 24, label: 'documentation (TEST-NET-2)' },
  { network: '203.0.113.0', prefix: 24, label: 'documentation (TEST-NET-3)' },
  { network: '224.0.0.0', prefix: 4, label: 'multicast', always: true },
  { network: '240.0.0.0', prefix: 4, label: 'reserved or broadcast', always: true },
];

// IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are judged
// by the IPv4 address they carry, before this table is consulted.
const IPV6_RANGES: Range[] = [
  { network: '::', prefix: 128, label: 'unspecified', always: true },
  { network: '::1', prefix: 128, label: 'loopback' },
  { network: '::', prefix: 96, label: 'deprecated IPv4-compatible' },
  { network: '64:ff9b:1::', prefix: 48, label: 'local-use NAT64' },
  { network: '100::', prefix: 64, label: 'discard-only' },
  { network: '2001:db8::', prefix: 32, label: 'documentation' },
  { network: '2001::', prefix: 23, label: 'IETF protocol assignments (incl. Teredo)' },
  { network: '3fff::', prefix: 20, label: 'documentation' },
  { network: 'fd00:ec2::254', prefix: 128, label: 'cloud metadata', always: true },
  { network: 'fc00::', prefix: 7, label: 'unique local (private network)' },
  { network: 'fe80::', prefix: 10, label: 'link-local', always: true },
  { network: 'fec0::', prefix: 10, label: 'deprecated site-local' },
  { network: 'ff00::', prefix: 8, label: 'multicast', always: true },
];

const compiledV4 = IPV4_RANGES.map((range) => ({ range, list: blockListOf(range, 'ipv4') }));
const compiledV6 = IPV6_RANGES.map((range) => ({ range, list: blockListOf(range, 'ipv6') }));
const globalUnicastV6 = blockListOf({ network: '2000::', prefix: 3, label: '' }, 'ipv6');

function blockListOf(range: Range, type: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  list.addSubnet(range.network, range.prefix, type);
  return list;
}

/**
 * Why `ip` may not be dialled under `policy`, or `undefined` when it may. Never throws for a
 * bad address (an unparseable one is refused); throws only for a malformed `allowedNetworks`
 * entry, which {@link parseAllowedNetworks} reports at start-up.
 */
export function refusalReason(ip: string, policy: NetworkPolicy): string | undefined {
  const address = stripAddress(ip);
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const embedded = family === 6 ? embeddedIPv4(address) : undefined;

  const allowed = allowedList(policy.allowedNetworks);
  if (allowed.check(address, type) || (embedded && allowed.check(embedded.ipv4, 'ipv4'))) return undefined;

  const special = embedded ? prefixed(specialRange(embedded.ipv4, 'ipv4'), `${embedded.kind} ${embedded.ipv4}`) : specialRange(address, type);
  if (!special) return undefined;
  if (policy.allowPrivateNetworks && !special.always) return undefined;
  return special.label;
}

/**
 * Whether the sender may connect to `ip` under `policy`: only globally routable unicast
 * addresses, plus what the policy opens up. IPv4-mapped, NAT64 and 6to4 IPv6 addresses are
 * judged by the IPv4 address they embed.
 *
 * @example
 * ```ts
 * isAddressAllowed('93.184.215.14', { allowPrivateNetworks: false, allowedNetworks: [] }); // true
 * isAddressAllowed('169.254.169.254', { allowPrivateNetworks: false, allowedNetworks: [] }); // false
 * isAddressAllowed('10.1.2.3', { allowPrivateNetworks: false, allowedNetworks: ['10.1.0.0/16'] }); // true
 * ```
 */
export function isAddressAllowed(ip: string, policy: NetworkPolicy): boolean {
  return refusalReason(ip, policy) === undefined;
}

/**
 * Validates `allowedNetworks` entries (`a.b.c.d/n`, `x:y::/n`, or a single address) and
 * returns them as a BlockList; throws a RangeError naming the first bad entry.
 */
export function parseAllowedNetworks(networks: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of networks) {
    const [network = '', prefixText, ...rest] = entry.trim().split('/');
    const family = isIP(network);
    const prefix = prefixText === undefined ? (family === 4 ? 32 : 128) : Number(prefixText);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || rest.length > 0 || !/^\d+$/.test(prefixText ?? '0') || prefix > max) {
      throw new RangeError(`allowedNetworks: "${entry}" is not a CIDR such as 10.0.0.0/8 or fd00::/8`);
    }
    list.addSubnet(network, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

const allowedCache = new WeakMap<readonly string[], BlockList>();

function allowedList(networks: readonly string[]): BlockList {
  let list = allowedCache.get(networks);
  if (!list) {
    list = parseAllowedNetworks(networks);
    allowedCache.set(networks, list);
  }
  return list;
}

function specialRange(address: string, type: 'ipv4' | 'ipv6'): Range | undefined {
  const table = type === 'ipv4' ? compiledV4 : compiledV6;
  const hit = table.find((entry) => entry.list.check(address, type));
  if (hit) return hit.range;
  if (type === 'ipv6' && !globalUnicastV6.check(address, 'ipv6')) {
    return { network: '::', prefix: 0, label: 'outside the global unicast space 2000::/3' };
  }
  return undefined;
}

function prefixed(range: Range | undefined, what: string): Range | undefined {
  return range && { ...range, label: `${what}: ${range.label}` };
}

/** Removes URL brackets and an IPv6 zone id (`fe80::1%eth0`). */
function stripAddress(ip: string): string {
  let address = ip.trim();
  if (address.startsWith('[') && address.endsWith(']')) address = address.slice(1, -1);
  const zone = address.indexOf('%');
  return zone >= 0 ? address.slice(0, zone) : address;
}

interface Embedded {
  kind: 'IPv4-mapped' | 'NAT64' | '6to4';
  ipv4: string;
}

/** The IPv4 address an IPv4-mapped, NAT64 (well-known prefix) or 6to4 address leads to. */
function embeddedIPv4(address: string): Embedded | undefined {
  const bytes = ipv6Bytes(address);
  if (!bytes) return undefined;
  const zeros = (from: number, to: number): boolean => bytes.slice(from, to).every((b) => b === 0);
  const quad = (at: number): string => Array.from(bytes.slice(at, at + 4)).join('.');
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return { kind: 'IPv4-mapped', ipv4: quad(12) };
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12)) {
    return { kind: 'NAT64', ipv4: quad(12) };
  }
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return { kind: '6to4', ipv4: quad(2) };
  return undefined;
}

/** The 16 bytes of a valid IPv6 address (already checked with `isIP`). */
function ipv6Bytes(address: string): Uint8Array | undefined {
  let text = address.toLowerCase();
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const restGroups = rest === undefined || rest === '' ? [] : rest.split(':');
  const fill = rest === undefined ? 0 : 8 - headGroups.length - restGroups.length;
  const groups = [...headGroups, ...Array<string>(fill).fill('0'), ...restGroups];
  if (groups.length !== 8) return undefined;
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  return bytes;
}

/** Resolves every address of a host name; injectable so the guard can be tested without DNS. */
export type ResolveAll = (hostname: string, options: LookupOptions) => Promise<LookupAddress[]>;

const systemResolveAll: ResolveAll = (hostname, options) => dns.lookup(hostname, { ...options, all: true });

/**
 * Builds a `lookup` for `net.connect` / `tls.connect` (and so for undici's `connect` option)
 * that resolves every address of the host and fails with {@link SsrfRefusedError} when ANY of
 * them is refused by `policy`: a host that answers with one public and one private address is
 * refused as a whole, so picking an address later cannot reach the private one. Resolution
 * errors (ENOTFOUND, EAI_AGAIN) pass through unchanged.
 *
 * Node does not call `lookup` for an IP literal, so callers must vet those with
 * {@link isAddressAllowed} themselves.
 *
 * @example
 * ```ts
 * const agent = new Agent({ connect: { lookup: createGuardedLookup(policy) } });
 * ```
 */
export function createGuardedLookup(policy: NetworkPolicy, resolveAll: ResolveAll = systemResolveAll): LookupFunction {
  allowedList(policy.allowedNetworks); // malformed CIDRs fail here, at construction
  return (hostname, options, callback) => {
    const { all, ...rest } = options ?? {};
    resolveAll(hostname, rest).then(
      (addresses) => {
        if (addresses.length === 0) {
          const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          error.code = 'ENOTFOUND';
          callback(error, '', undefined);
          return;
        }
        for (const { address } of addresses) {
          const reason = refusalReason(address, policy);
          if (reason !== undefined) {
            callback(new SsrfRefusedError(hostname, address, reason), '', undefined);
            return;
          }
        }
        const [first] = addresses as [LookupAddress, ...LookupAddress[]];
        if (all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', undefined),
    );
  };
}
