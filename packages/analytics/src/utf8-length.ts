// Buffer.byteLength is native and much faster than encoding; TextEncoder is the fallback for
// runtimes without Buffer.
const nodeBuffer = (globalThis as { Buffer?: { byteLength(s: string, enc: 'utf8'): number } }).Buffer;
const encoder = new TextEncoder();

/** Size of `s` once encoded as UTF-8, in bytes. */
export const utf8Length: (s: string) => number = nodeBuffer ? (s) => nodeBuffer.byteLength(s, 'utf8') : (s) => encoder.encode(s).length;
