/**
 * Stamped into every message as `context.library`. Kept as a constant rather than read from
 * package.json so the same code works from ESM, CommonJS and bundlers; a test checks it
 * matches package.json.
 */
export const libraryInfo = { name: '@ferry/analytics', version: '0.1.0' } as const;
