import { once } from 'node:events';
import { get, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { within } from './within.js';

/** An open server-sent event stream: the text so far, and a wait for a pattern in it. */
export interface OpenStream {
  status: number;
  headers: IncomingHttpHeaders;
  text(): string;
  waitFor(pattern: RegExp, what: string): Promise<RegExpMatchArray>;
  /** Settles when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

/**
 * Opens a GET stream on a connection of its own (node:http without an agent: closing it closes
 * that socket, and no pool opens another behind the test's back).
 */
export async function openStream(url: string, token: string): Promise<OpenStream> {
  const req = get(url, { agent: false, headers: { authorization: `Bearer ${token}` } });
  const [res] = (await within(10_000, 'the head of the stream', once(req, 'response'))) as [IncomingMessage];
  let text = '';
  const changed = new Set<() => void>();
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    text += chunk;
    for (const fn of changed) fn();
  });
  const ended = new Promise<void>((resolve) => res.once('close', resolve));
  return {
    status: res.statusCode!,
    headers: res.headers,
    text: () => text,
    ended,
    close: () => req.destroy(),
    waitFor(pattern, what) {
      return within(
        10_000,
        `${what}; the stream so far: ${JSON.stringify(text)}`,
        new Promise<RegExpMatchArray>((resolve) => {
          const check = () => {
            const m = pattern.exec(text);
            if (m) {
              changed.delete(check);
              resolve(m);
            }
          };
          changed.add(check);
          check();
        }),
      );
    },
  };
}

/** The events of a stream's text, in order: `[name, data]`. */
export function eventsOf(text: string): [string, any][] {
  return [...text.matchAll(/^event: (\S+)\ndata: (.*)\n\n/gm)].map((m) => [m[1]!, JSON.parse(m[2]!)]);
}
