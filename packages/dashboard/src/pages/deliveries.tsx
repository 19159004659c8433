import '../records.css';
import { useState } from 'preact/hooks';
import { withQuery } from '../lib/api.js';
import { time } from '../lib/format.js';
import type { Delivery, DeliveryPage } from '../lib/records.js';
import { href } from '../lib/router.js';
import { isoFromLocal } from '../lib/time-input.js';
import type { Destination, PageProps } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { Field } from '../components/field.js';
import { ErrorNotice, Loading } from '../components/notice.js';
import { Pager, useCursor } from '../components/pager.js';
import { DeliveryPage as DeliveryView } from './delivery.js';

const pageSize = 50;

/** What the search form holds, as typed. */
interface Search {
  messageId: string;
  userId: string;
  event: string;
  status: string;
  destinationId: string;
  receivedAfter: string;
  receivedBefore: string;
}

const empty: Search = { messageId: '', userId: '', event: '', status: '', destinationId: '', receivedAfter: '', receivedBefore: '' };

/** Deliveries: `#/deliveries` searches them (the `GET /deliveries` filters), `#/deliveries/{id}` shows one. */
export function DeliveriesPage(props: PageProps) {
  const [id] = props.params;
  // Keyed by the id: moving to another delivery starts from nothing, not from the last one's answer or dialog.
  if (id !== undefined) return <DeliveryView key={id} id={id} canWrite={props.canWrite} />;
  return <DeliverySearch />;
}

function DeliverySearch() {
  const [draft, setDraft] = useState<Search>(empty);
  const [search, setSearch] = useState<Search>(empty);
  const cursor = useCursor();
  const destinations = useApi<{ destinations: Destination[] }>('/destinations');
  const path = withQuery('/deliveries', {
    messageId: search.messageId.trim(),
    userId: search.userId.trim(),
    event: search.event,
    status: search.status,
    destinationId: search.destinationId,
    receivedAfter: isoFromLocal(search.receivedAfter),
    receivedBefore: isoFromLocal(search.receivedBefore),
    limit: pageSize,
    after: cursor.after,
  });
  const list = useApi<DeliveryPage>(path);
  const set = (key: keyof Search) => (e: { currentTarget: { value: string } }) => setDraft({ ...draft, [key]: e.currentTarget.value });
  const submit = (event: Event) => {
    event.preventDefault();
    cursor.reset();
    setSearch(draft);
    list.reload();
  };

  return (
    <>
      <h1>Deliveries</h1>
      <form class="panel search-form" role="search" aria-label="Search deliveries" onSubmit={submit}>
        <div class="toolbar">
          <Field id="dl-message" label="Message id">
            {(c) => <input {...c} type="search" value={draft.messageId} onInput={set('messageId')} />}
          </Field>
          <Field id="dl-user" label="User id">
            {(c) => <input {...c} type="search" value={draft.userId} onInput={set('userId')} />}
          </Field>
          <Field id="dl-event" label="Event name">
            {(c) => <input {...c} type="search" value={draft.event} onInput={set('event')} />}
          </Field>
          <Field id="dl-status" label="Status">
            {(c) => (
              <select {...c} value={draft.status} onChange={set('status')}>
                <option value="">Any</option>
                <option value="pending">Pending</option>
                <option value="succeeded">Succeeded</option>
                <option value="dead">Dead</option>
              </select>
            )}
          </Field>
          <Field id="dl-destination" label="Destination">
            {(c) => (
              <select {...c} value={draft.destinationId} onChange={set('destinationId')}>
                <option value="">Any</option>
                {destinations.data?.destinations.map((d) => (
                  <option key={d.id} value={d.id}>
                    {d.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field id="dl-after" label="Received from">
            {(c) => <input {...c} type="datetime-local" step={1} value={draft.receivedAfter} onInput={set('receivedAfter')} />}
          </Field>
          <Field id="dl-before" label="Received before">
            {(c) => <input {...c} type="datetime-local" step={1} value={draft.receivedBefore} onInput={set('receivedBefore')} />}
          </Field>
        </div>
        <div class="actions">
          <button type="submit" class="primary">
            Search
          </button>
          <button
            type="button"
            onClick={() => {
              setDraft(empty);
              setSearch(empty);
              cursor.reset();
            }}
          >
            Clear
          </button>
        </div>
      </form>
      {list.error !== undefined && <ErrorNotice error={list.error} />}
      {list.loading && !list.data && <Loading />}
      {list.data && list.data.deliveries.length === 0 && <p class="muted">No delivery matches.</p>}
      {list.data && list.data.deliveries.length > 0 && <DeliveryTable deliveries={list.data.deliveries} label="Deliveries found" />}
      <Pager label="Deliveries" cursor={cursor} next={list.data?.next} />
    </>
  );
}

/** A status as a coloured badge, its word always written out. */
export function StatusBadge(props: { status: string }) {
  const tone =
    props.status === 'succeeded' || props.status === 'done' ? 'badge-ok' : props.status === 'dead' || props.status === 'failed' ? 'badge-bad' : 'badge-off';
  return <span class={`badge ${tone}`}>{props.status}</span>;
}

/** What a delivery carries, in a few words: the track event's name, the call type, or the kind. */
export function whatOf(d: Delivery): string {
  if (d.kind === 'delete') return 'deletion notice';
  if (d.kind === 'audience') return 'audience identify';
  return d.event ?? d.type ?? 'event';
}

function DeliveryTable(props: { deliveries: Delivery[]; label: string }) {
  return (
    <div class="table-wrap" role="region" aria-label={props.label} tabIndex={0}>
      <table class="stack-table">
        <thead>
          <tr>
            <th scope="col">Delivery</th>
            <th scope="col">Status</th>
            <th scope="col">Destination</th>
            <th scope="col">What</th>
            <th scope="col">User</th>
            <th scope="col">Message id</th>
            <th scope="col">Received</th>
            <th scope="col" class="num">
              Attempts
            </th>
            <th scope="col">Last error</th>
          </tr>
        </thead>
        <tbody>
          {props.deliveries.map((d) => (
            <tr key={d.id}>
              <th scope="row" data-label="Delivery">
                <a href={href('deliveries', String(d.id))} aria-label={`Delivery ${d.id}`}>
                  #{d.id}
                </a>
              </th>
              <td data-label="Status">
                <StatusBadge status={d.status} />
              </td>
              <td data-label="Destination">{d.destinationId}</td>
              <td data-label="What">{whatOf(d)}</td>
              <td data-label="User">{d.userId ?? d.anonymousId ?? '–'}</td>
              <td data-label="Message id">
                <code>{d.messageId ?? '–'}</code>
              </td>
              <td data-label="Received">{time(d.receivedAt ?? d.createdAt)}</td>
              <td class="num" data-label="Attempts">
                {d.attemptCount}
              </td>
              <td class="clip" data-label="Last error">
                {d.lastError ?? ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
