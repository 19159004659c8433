/** One server-sent event. */
export interface SseEvent {
  event: string;
  data: string;
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
