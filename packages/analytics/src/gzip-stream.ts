/** True where the runtime has the standard `CompressionStream` (Node 18+, Deno, Bun, Workers). */
export function hasCompressionStream(): boolean {
  return typeof globalThis.CompressionStream === 'function';
}

/** Gzips a request body through the standard `CompressionStream`, without `node:zlib`. */
export async function gzipWithCompressionStream(body: string): Promise<Uint8Array> {
  const stream = new Blob([body]).stream().pipeThrough(new CompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
