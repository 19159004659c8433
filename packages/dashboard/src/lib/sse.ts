import { apiBase, ApiError, authHeaders, errorDetail } from './api.js';
import { SseParser, type SseEvent } from './sse-parser.js';

/**
 * Reads a server-sent event stream of the admin API with `fetch`, so the token goes in the
 * Authorization header: `EventSource` cannot send one, and a token in the URL would land in
 * logs and history. Calls `onOpen` once the server answered, then `onEvent` for each event until `signal` aborts or the stream ends.
 */
export async function readEventStream(path: string, onEvent: (event: SseEvent) => void, signal: AbortSignal, onOpen?: () => void): Promise<void> {
  const response = await fetch(apiBase + path, { headers: { ...authHeaders(), accept: 'text/event-stream' }, signal, cache: 'no-store' });
  if (!response.ok || response.body === null) {
    const detail = errorDetail(await response.json().catch(() => undefined));
    throw new ApiError(response.status, detail?.code ?? `http_${response.status}`, detail?.message ?? `The server answered ${response.status}.`);
  }
  onOpen?.();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser(onEvent);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.push(value);
    }
  } finally {
    reader.releaseLock();
  }
}
