import type { Spool } from './spool/spool.js';
import type { Transport } from './transport/transport.js';

/**
 * What the client takes from the runtime it runs on: the Node entry gives Node's sockets and
 * zlib, the edge entry standard `fetch` and `CompressionStream`. Keeping these behind this
 * seam is what lets the edge entry load with no Node built-in in its import graph.
 */
export interface Runtime {
  /** The transport used when the options give none. */
  createTransport(): Transport;
  /** Gzips a request body; undefined where the runtime cannot, and bodies go uncompressed. */
  gzip: ((body: string) => Promise<Uint8Array>) | undefined;
  /** Opens the durable spool (a file journal); absent where there is no file system, and the `spool` option is refused. */
  openSpool?: typeof Spool.open;
}
