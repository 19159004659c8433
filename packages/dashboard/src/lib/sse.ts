import { apiBase, ApiError, authHeaders, errorDetail } from './api.js';

/** One server-sent event. */
export interface SseEvent {
  event: string;
  data: string;
}

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

/** The text/event-stream format (WHATWG HTML, "Parsing an event stream"), fed in arbitrary chunks. */
export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];

  constructor(private readonly onEvent: (event: SseEvent) => void) {}

  push(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
      if (end < 0 || (this.buffer[end] === '\r' && end === this.buffer.length - 1)) return;
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + (this.buffer.startsWith('\r\n', end) ? 2 : 1));
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0) this.onEvent({ event: this.event || 'message', data: this.data.join('\n') });
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
  }
}
