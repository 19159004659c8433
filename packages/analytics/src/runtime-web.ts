import { gzipWithCompressionStream, hasCompressionStream } from './gzip-stream.js';
import type { Runtime } from './runtime.js';
import { createFetchTransport } from './transport/fetch-transport.js';

/** The runtime of the edge entry: web-standard APIs only, no Node built-in. */
export const webRuntime: Runtime = {
  createTransport: () => createFetchTransport(),
  gzip: hasCompressionStream() ? gzipWithCompressionStream : undefined,
};
