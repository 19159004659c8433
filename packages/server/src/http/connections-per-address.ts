import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

/**
 * Caps the open connections of each client address: a connection over the cap is closed as
 * soon as it is accepted, before a byte of it is read, so one address cannot hold every
 * socket (or the memory behind them) of the server. `max` 0 leaves connections uncapped.
 */
export function limitConnectionsPerAddress(server: Server, max: number, logger: Logger): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  // Ahead of the HTTP server's own listener, so a refused socket never reaches the HTTP parser.
  server.prependListener('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = open.get(address) ?? 0;
    if (count >= max) {
      socket.destroy();
      logger.debug({ address, open: count }, 'connection refused: too many open connections from this address');
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
