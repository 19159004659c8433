import { gzipBody } from './gzip-body.js';
import type { Runtime } from './runtime.js';
import { Spool } from './spool/spool.js';
import { createDefaultTransport } from './transport/default-transport.js';

/** The runtime of the Node entry: Node's sockets, zlib and file system (the spool). */
export const nodeRuntime: Runtime = {
  createTransport: createDefaultTransport,
  gzip: gzipBody,
  openSpool: (options, clock, logger) => Spool.open(options, clock, logger),
};
