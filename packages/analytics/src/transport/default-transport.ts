import { createSocketTransport } from './http1-socket.js';
import { createNodeHttpTransport } from './node-http.js';
import type { Transport } from './transport.js';

/**
 * The client's transport when none is given: {@link createSocketTransport} for `http:`
 * endpoints and {@link createNodeHttpTransport} (`node:https`) for `https:` ones, each made
 * on first use.
 */
export function createDefaultTransport(): Transport {
  let plain: Transport | undefined;
  let secure: Transport | undefined;
  return {
    send(request) {
      if (request.url.startsWith('https:')) return (secure ??= createNodeHttpTransport()).send(request);
      return (plain ??= createSocketTransport()).send(request);
    },
    close() {
      plain?.close?.();
      secure?.close?.();
    },
  };
}
