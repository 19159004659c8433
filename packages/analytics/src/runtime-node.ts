import { gzipBody } from './gzip-body.js';
import type { Runtime } from './runtime.js';
import { createDefaultTransport } from './transport/default-transport.js';

/** The runtime of the Node entry: Node's sockets and zlib. */
export const nodeRuntime: Runtime = {
  createTransport: createDefaultTransport,
  gzip: gzipBody,
};
