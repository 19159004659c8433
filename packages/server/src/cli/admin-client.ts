import { readFileSync } from 'node:fs';

/**
 * How an admin command ends, for scripts: 0 done; 1 the server refused (its error code and
 * message are printed) or a replay job failed; 2 the command line is wrong (a flag, a value,
 * no token); 3 the server could not be reached or did not answer as Ferry does.
 */
export const exitCodes = Object.freeze({ ok: 0, refused: 1, usage: 2, unreachable: 3 });

/** A failure of a CLI command, with the exit code it ends the process with; its message is printed as `ferry: <message>`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** An error answer of the admin API: `code: message` as the server said it. */
export class AdminApiError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(`${code}: ${detail}`, exitCodes.refused);
    this.name = 'AdminApiError';
  }
}

/** Where the admin API is and the token it takes. */
export interface AdminConnection {
  /** The server's base URL, without a trailing slash (`http://127.0.0.1:8080`). */
  baseUrl: string;
  token: string;
}

/** The flags every admin command takes to find its server. */
export interface ConnectionFlags {
  url?: string;
  tokenFile?: string;
}

/** Where `--url` and `FERRY_URL` point when neither is set: a `ferry serve` on this machine's default port. */
export const defaultAdminUrl = 'http://127.0.0.1:8080';

/**
 * Reads the server's URL (`--url`, `FERRY_URL`, else {@link defaultAdminUrl}) and the token
 * (`--token-file`, else `FERRY_ADMIN_TOKEN`). The token is never a flag's value, which
 * anyone on the machine could read in the process list.
 *
 * @throws CliError (usage) for a URL that is not http(s), an unreadable or empty token file, or no token at all.
 */
export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv): AdminConnection {
  const raw = flags.url ?? (env['FERRY_URL'] || defaultAdminUrl);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError(`--url (FERRY_URL) must be an http:// or https:// URL (got ${raw})`, exitCodes.usage);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CliError(`--url (FERRY_URL) must be an http:// or https:// URL (got ${raw})`, exitCodes.usage);
  let token: string | undefined;
  if (flags.tokenFile !== undefined) {
    try {
      token = readFileSync(flags.tokenFile, 'utf8').trim();
    } catch (error) {
      throw new CliError(`cannot read the token file ${flags.tokenFile}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, exitCodes.usage);
    }
    if (token === '') throw new CliError(`the token file ${flags.tokenFile} is empty`, exitCodes.usage);
  } else {
    token = env['FERRY_ADMIN_TOKEN']?.trim() || undefined;
  }
  if (token === undefined) throw new CliError('no admin token: set FERRY_ADMIN_TOKEN, or pass --token-file with a file that holds it', exitCodes.usage);
  return { baseUrl: url.href.replace(/\/+$/, ''), token };
}

/** Query parameters; those `undefined` are left out. */
export type Query = Record<string, string | number | undefined>;

/** An answer of the admin API: its status and its JSON (`undefined` for 204). */
export interface AdminAnswer<T> {
  status: number;
  body: T;
}

/** Longest an admin request (not a stream) may take before the command gives up. */
const requestDeadlineMs = 30_000;

/**
 * A client of `/admin/v1` for the CLI, on Node's fetch. Every failure becomes a
 * {@link CliError} with the exit code of {@link exitCodes}: the server's own error
 * (`not_found: no delivery 9`), or an explanation of why it could not be reached.
 */
export class AdminClient {
  constructor(private readonly connection: AdminConnection) {}

  /** The URL of an admin path (`/deliveries`) with its query. */
  url(path: string, query: Query = {}): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
    const search = params.toString();
    return `${this.connection.baseUrl}/admin/v1${path}${search ? `?${search}` : ''}`;
  }

  /** GET, answering the JSON body. */
  async get<T>(path: string, query: Query = {}): Promise<T> {
    return (await this.request<T>('GET', path, query)).body;
  }

  /** Sends a request with an optional JSON body; answers the status and JSON. */
  async request<T>(method: string, path: string, query: Query = {}, body?: unknown): Promise<AdminAnswer<T>> {
    const url = this.url(path, query);
    const res = await this.fetch(url, {
      method,
      headers: { ...this.headers(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(requestDeadlineMs),
    });
    let text: string;
    try {
      text = await res.text();
    } catch (error) {
      throw this.unreachable(error);
    }
    const json = parseJson(text);
    if (!res.ok) throw errorOf(res.status, json, url);
    if (res.status === 204) return { status: res.status, body: undefined as T };
    if (json === undefined)
      throw new CliError(`${url} answered HTTP ${res.status} with a body that is not JSON: is this a Ferry server?`, exitCodes.unreachable);
    return { status: res.status, body: json as T };
  }

  /**
   * Opens a stream of server-sent events (`GET /tail`); answers the response once its head
   * is in and says 2xx. `signal` ends it.
   */
  async stream(path: string, query: Query, signal: AbortSignal): Promise<Response> {
    const url = this.url(path, query);
    const res = await this.fetch(url, { headers: { ...this.headers(), accept: 'text/event-stream' }, signal });
    if (!res.ok) throw errorOf(res.status, parseJson(await res.text().catch(() => '')), url);
    return res;
  }

  /** Why a connection failed, in words, as a CliError (unreachable). */
  unreachable(error: unknown): CliError {
    return new CliError(`cannot reach Ferry at ${this.connection.baseUrl}: ${networkReason(error)}`, exitCodes.unreachable);
  }

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.connection.token}` };
  }

  private async fetch(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, init);
    } catch (error) {
      throw this.unreachable(error);
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function errorOf(status: number, json: unknown, url: string): CliError {
  const first = (json as { errors?: { code?: unknown; message?: unknown }[] } | undefined)?.errors?.[0];
  if (first && typeof first.code === 'string') return new AdminApiError(status, first.code, typeof first.message === 'string' ? first.message : '');
  return new CliError(`${url} answered HTTP ${status} without a Ferry error: is this a Ferry server?`, exitCodes.unreachable);
}

/** What went wrong with a connection, as an operator can act on it. */
function networkReason(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return `no answer within ${requestDeadlineMs / 1000} s`;
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  switch (cause?.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is `ferry serve` running there? set --url or FERRY_URL)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found (check --url or FERRY_URL)';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed by the server';
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return 'the server stopped answering';
    default:
      return cause?.message ?? (error instanceof Error ? error.message : String(error));
  }
}
