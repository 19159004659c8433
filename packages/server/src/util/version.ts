import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The server package's version, from its package.json (the same file in src and dist layouts). */
export const ferryVersion: string = (require('../../package.json') as { version: string }).version;

/** The User-Agent of every webhook request: a fixed name with a version suffix. */
export const userAgent = `Ferry/${ferryVersion}`;
