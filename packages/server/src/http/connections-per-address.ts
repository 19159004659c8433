import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Logger } from 'pino';

/**
 * The group a client address is counted in: an IPv4 address on its own (an IPv4-mapped IPv6
 * address as the IPv4 address it maps), an IPv6 address by its /64. A single IPv6 host is
 * usually given a whole /64 and can pick any address in it, so counting each address apart
 * would give it billions of fresh caps. An address that cannot be parsed counts on its own.
 */
export function addressGroup(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const prefix = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...prefix, 0, 0, 0, 0]).toRFC5952String()}/64`;
}

/**
 * Caps the open connections of each client address group ({@link addressGroup}): a
 * connection over the cap is destroyed as soon as it is accepted, before a byte of it is
 * read, so one client cannot hold every socket (or the memory behind them) of the server.
 * `max` 0 leaves connections uncapped.
 */
export function limitConnectionsPerAddress(server: Server, max: number, logger: Logger): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  // Ahead of the HTTP server's own listener. That one still runs for a refused socket and
  // attaches its parser, but the socket is destroyed by then: not a byte of it is read, and
  // no request can come from it.
  server.prependListener('connection', (socket: Socket) => {
    const group = addressGroup(socket.remoteAddress ?? '');
    const count = open.get(group) ?? 0;
    if (count >= max) {
      socket.destroy();
      logger.debug({ address: socket.remoteAddress, group, open: count }, 'connection refused: too many open connections from this address');
      return;
    }
    open.set(group, count + 1);
    socket.once('close', () => {
      const left = (open.get(group) ?? 1) - 1;
      if (left === 0) open.delete(group);
      else open.set(group, left);
    });
  });
}
