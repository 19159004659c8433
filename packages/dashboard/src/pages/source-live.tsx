import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { describeError } from '../lib/api.js';
import { time } from '../lib/format.js';
import { href } from '../lib/router.js';
import { readEventStream } from '../lib/sse.js';
import type { PageProps, Source } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { Field } from '../components/field.js';
import { ErrorNotice, Loading } from '../components/notice.js';

/** One event of `GET /sources/{id}/live`. */
interface LiveEvent {
  /** A local sequence number, the key of the row. */
  seq: number;
  receivedAt: string;
  message: {
    type?: string;
    event?: string;
    name?: string;
    userId?: string | number;
    anonymousId?: string | number;
    messageId?: string;
    [key: string]: unknown;
  };
  routedTo: string[];
  filtered: string[];
}

interface Rejection {
  sourceId: string;
  index: number;
  code: string;
  message: string;
  receivedAt: string;
}

/** The most events kept on the page: older ones drop off, so an open tab does not grow without bound. */
const keep = 500;
const types = ['identify', 'track', 'page', 'screen', 'group', 'alias'] as const;

/** The live debugger of one source (`#/sources/{id}/live`): accepted events as they come, and recent rejections. */
export function SourceLivePage(props: PageProps) {
  const id = props.params[0]!;
  const source = useApi<Source>(`/sources/${encodeURIComponent(id)}`);
  return (
    <>
      <h1>Live debugger: {source.data?.name ?? id}</h1>
      <p>
        <a href={href('sources')}>Back to sources</a>
      </p>
      {source.error !== undefined ? (
        <ErrorNotice error={source.error} />
      ) : (
        <>
          <LiveStream sourceId={id} />
          <Rejections sourceId={id} />
        </>
      )}
    </>
  );
}

function LiveStream(props: { sourceId: string }) {
  const [events, setEvents] = useState<LiveEvent[]>([]);
  const [held, setHeld] = useState<LiveEvent[]>([]);
  const [paused, setPaused] = useState(false);
  const [status, setStatus] = useState<'connecting' | 'live' | 'closed'>('connecting');
  const [error, setError] = useState<string | undefined>();
  const [attempt, setAttempt] = useState(0);
  const [type, setType] = useState('');
  const [name, setName] = useState('');
  const [user, setUser] = useState('');
  const [open, setOpen] = useState<number | null>(null);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const seq = useRef(0);

  useEffect(() => {
    const abort = new AbortController();
    setStatus('connecting');
    readEventStream(
      `/sources/${encodeURIComponent(props.sourceId)}/live`,
      (sse) => {
        if (sse.event !== 'message') return;
        let data: Omit<LiveEvent, 'seq'>;
        try {
          data = JSON.parse(sse.data) as Omit<LiveEvent, 'seq'>;
        } catch {
          return;
        }
        const item = { ...data, seq: ++seq.current };
        // Paused, events are held rather than dropped, and shown on resume.
        if (pausedRef.current) setHeld((h) => [item, ...h].slice(0, keep));
        else setEvents((e) => [item, ...e].slice(0, keep));
      },
      abort.signal,
      () => setStatus('live'),
    ).then(
      () => !abort.signal.aborted && setStatus('closed'),
      (e: unknown) => {
        if (abort.signal.aborted) return;
        setStatus('closed');
        setError(describeError(e));
      },
    );
    return () => {
      abort.abort();
    };
  }, [props.sourceId, attempt]);

  const resume = () => {
    setEvents((e) => [...held, ...e].slice(0, keep));
    setHeld([]);
    setPaused(false);
  };

  const shown = useMemo(
    () =>
      events.filter(
        (e) =>
          (type === '' || e.message.type === type) &&
          (name === '' ||
            String(e.message.event ?? e.message.name ?? '')
              .toLowerCase()
              .includes(name.toLowerCase())) &&
          (user === '' || String(e.message.userId ?? e.message.anonymousId ?? '').includes(user)),
      ),
    [events, type, name, user],
  );
  const selected = open === null ? undefined : events.find((e) => e.seq === open);

  return (
    <section class="panel" aria-labelledby="stream-title">
      <div class="panel-head">
        <h2 id="stream-title">Events as they are accepted</h2>
        <div class="actions">
          <span class={`badge ${status === 'live' && !paused ? 'badge-ok' : 'badge-off'}`} role="status">
            {status === 'closed' ? 'Disconnected' : paused ? `Paused (${held.length} waiting)` : status === 'live' ? 'Live' : 'Connecting…'}
          </span>
          {status === 'closed' ? (
            <button type="button" onClick={() => (setError(undefined), setAttempt((n) => n + 1))}>
              Reconnect
            </button>
          ) : paused ? (
            <button type="button" onClick={resume}>
              Resume
            </button>
          ) : (
            <button type="button" onClick={() => setPaused(true)}>
              Pause
            </button>
          )}
          <button type="button" onClick={() => (setEvents([]), setHeld([]), setOpen(null))}>
            Clear
          </button>
        </div>
      </div>
      {error !== undefined && <ErrorNotice error={new Error(error)} />}
      <div class="toolbar" role="search" aria-label="Filter events">
        <Field id="live-type" label="Type">
          {(c) => (
            <select {...c} value={type} onChange={(e) => setType(e.currentTarget.value)}>
              <option value="">All types</option>
              {types.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field id="live-name" label="Event or page name">
          {(c) => <input {...c} type="search" value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <Field id="live-user" label="User id">
          {(c) => <input {...c} type="search" value={user} onInput={(e) => setUser(e.currentTarget.value)} />}
        </Field>
      </div>
      {shown.length === 0 ? (
        <p class="muted">{events.length === 0 ? 'Waiting for events… send one with this source’s write key.' : 'No event matches the filters.'}</p>
      ) : (
        <div class="table-wrap" role="region" aria-label="Live events" tabIndex={0}>
          <table class="stack">
            <thead>
              <tr>
                <th scope="col">Received</th>
                <th scope="col">Type</th>
                <th scope="col">Event</th>
                <th scope="col">User</th>
                <th scope="col">Routed to</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((e) => (
                <tr key={e.seq} class={open === e.seq ? 'row-selected' : undefined}>
                  <td data-label="Received">
                    <button
                      type="button"
                      class="link-button"
                      aria-expanded={open === e.seq}
                      aria-controls="live-detail"
                      onClick={() => setOpen(open === e.seq ? null : e.seq)}
                    >
                      {time(e.receivedAt)}
                    </button>
                  </td>
                  <td data-label="Type">{e.message.type}</td>
                  <td data-label="Event">{String(e.message.event ?? e.message.name ?? '')}</td>
                  <td data-label="User">{String(e.message.userId ?? e.message.anonymousId ?? '')}</td>
                  <td data-label="Routed to">{e.routedTo.length === 0 ? <span class="muted">none</span> : e.routedTo.join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {selected && (
        <section id="live-detail" class="detail" aria-label="Selected event">
          <h3>
            {selected.message.type} {String(selected.message.event ?? selected.message.name ?? '')}
          </h3>
          <dl class="pairs">
            <dt>Routed to</dt>
            <dd>{selected.routedTo.length === 0 ? 'no destination' : selected.routedTo.join(', ')}</dd>
            <dt>Dropped by a filter</dt>
            <dd>{selected.filtered.length === 0 ? 'none' : selected.filtered.join(', ')}</dd>
          </dl>
          <pre tabIndex={0} aria-label="Normalised message">
            {JSON.stringify(selected.message, null, 2)}
          </pre>
        </section>
      )}
    </section>
  );
}

function Rejections(props: { sourceId: string }) {
  const rejections = useApi<{ recent: Rejection[] }>(`/rejections?sourceId=${encodeURIComponent(props.sourceId)}&limit=20`, 10_000);
  return (
    <section class="panel" aria-labelledby="rejections-title">
      <div class="panel-head">
        <h2 id="rejections-title">Recent rejections</h2>
        <button type="button" onClick={rejections.reload}>
          Refresh
        </button>
      </div>
      {rejections.error !== undefined && <ErrorNotice error={rejections.error} />}
      {!rejections.data && rejections.error === undefined && <Loading />}
      {rejections.data && rejections.data.recent.length === 0 && <p class="muted">No message of this source was refused.</p>}
      {rejections.data && rejections.data.recent.length > 0 && (
        <div class="table-wrap" role="region" aria-label="Rejected messages" tabIndex={0}>
          <table class="stack">
            <thead>
              <tr>
                <th scope="col">Received</th>
                <th scope="col">Code</th>
                <th scope="col">Why</th>
                <th scope="col" class="num">
                  Position
                </th>
              </tr>
            </thead>
            <tbody>
              {rejections.data.recent.map((r, i) => (
                <tr key={i}>
                  <td data-label="Received">{time(r.receivedAt)}</td>
                  <td data-label="Code">
                    <code>{r.code}</code>
                  </td>
                  <td data-label="Why">{r.message}</td>
                  <td data-label="Position" class="num">
                    {r.index}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
