import '../records.css';
import { useEffect, useState } from 'preact/hooks';
import { api, withQuery } from '../lib/api.js';
import { count, time } from '../lib/format.js';
import type { Regulation } from '../lib/records.js';
import type { PageProps, Source } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { Field } from '../components/field.js';
import { placeError, type FormErrors } from '../components/form-errors.js';
import { ErrorNotice, Loading, StatusNotice } from '../components/notice.js';
import { Pager, useCursor } from '../components/pager.js';
import { StatusBadge } from './deliveries.js';

const pageSize = 50;
const fields = ['userIds', 'sourceIds'] as const;

/** Deletion requests (`/regulations`): create one for some user ids, list them with their status and counts. */
export function RegulationsPage(props: PageProps) {
  const cursor = useCursor();
  const [status, setStatus] = useState('');
  // A pending request's counts grow as its batches commit: read the list again every 2 s until none is.
  const [pending, setPending] = useState(false);
  const list = useApi<{ regulations: Regulation[]; next: string | null }>(
    withQuery('/regulations', { status, limit: pageSize, after: cursor.after }),
    pending ? 2_000 : undefined,
  );
  const anyPending = list.data?.regulations.some((r) => r.status === 'pending') ?? false;
  useEffect(() => setPending(anyPending), [anyPending]);

  return (
    <>
      <h1>Deletion requests</h1>
      <p class="hint">
        A request deletes the users' stored events and deliveries, follows their alias links, and sends a deletion notice to the Webhooks destinations that
        received their data (docs/admin-api.md, "Regulations").
      </p>
      {props.canWrite && (
        <RegulationForm
          onCreated={() => {
            cursor.reset();
            list.reload();
          }}
        />
      )}
      <section class="panel" aria-labelledby="regulations-title">
        <div class="panel-head">
          <h2 id="regulations-title">Requests</h2>
          <div class="segmented" role="group" aria-label="Status shown">
            {[
              ['', 'All'],
              ['pending', 'Pending'],
              ['done', 'Done'],
            ].map(([value, label]) => (
              <button
                key={value}
                type="button"
                aria-pressed={status === value}
                onClick={() => {
                  cursor.reset();
                  setStatus(value!);
                }}
              >
                {label}
              </button>
            ))}
          </div>
        </div>
        {list.error !== undefined && <ErrorNotice error={list.error} />}
        {list.loading && !list.data && <Loading />}
        {list.data && list.data.regulations.length === 0 && <p class="muted">No deletion request.</p>}
        {list.data && list.data.regulations.length > 0 && <RegulationTable regulations={list.data.regulations} />}
        <Pager label="Deletion requests" cursor={cursor} next={list.data?.next} />
      </section>
    </>
  );
}

function RegulationForm(props: { onCreated: () => void }) {
  const sources = useApi<{ sources: Source[] }>('/sources');
  const [users, setUsers] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [errors, setErrors] = useState<FormErrors>({ fields: {} });
  const [created, setCreated] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setCreated(null);
    const userIds = users
      .split(/[\n,]/)
      .map((u) => u.trim())
      .filter((u) => u !== '');
    try {
      const body: Record<string, unknown> = { userIds };
      if (chosen.length > 0) body['sourceIds'] = chosen;
      const answer = await api<{ id: string; status: string }>('POST', '/regulations', body);
      setErrors({ fields: {} });
      setUsers('');
      setChosen([]);
      setCreated(`Request ${answer.id} created for ${count(userIds.length)} user${userIds.length === 1 ? '' : 's'}: it is carried out in the background.`);
      props.onCreated();
    } catch (error) {
      setErrors(placeError(error, fields));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="panel" onSubmit={(e) => void submit(e)} noValidate aria-labelledby="new-regulation-title">
      <h2 id="new-regulation-title">New deletion request</h2>
      {errors.form !== undefined && <ErrorNotice error={new Error(errors.form)} />}
      {created && <StatusNotice>{created}</StatusNotice>}
      <Field id="reg-users" label="User ids" error={errors.fields['userIds']} hint="One per line (or separated by commas), up to 1,000.">
        {(c) => <textarea {...c} rows={3} value={users} onInput={(e) => setUsers(e.currentTarget.value)} />}
      </Field>
      <fieldset
        aria-describedby={errors.fields['sourceIds'] ? 'reg-sources-error' : 'reg-sources-hint'}
        class={errors.fields['sourceIds'] ? 'field-invalid' : undefined}
      >
        <legend>Sources</legend>
        <p class="hint" id="reg-sources-hint">
          None chosen: every source.
        </p>
        {sources.data?.sources.map((s) => (
          <label key={s.id} class="check">
            <input
              type="checkbox"
              value={s.id}
              checked={chosen.includes(s.id)}
              onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen, s.id] : chosen.filter((x) => x !== s.id))}
            />
            {s.name} <code class="muted">{s.id}</code>
          </label>
        ))}
        {errors.fields['sourceIds'] && (
          <p class="field-error" id="reg-sources-error" role="alert">
            {errors.fields['sourceIds']}
          </p>
        )}
      </fieldset>
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          Create deletion request
        </button>
      </div>
    </form>
  );
}

function RegulationTable(props: { regulations: Regulation[] }) {
  return (
    <div class="table-wrap" role="region" aria-label="Deletion requests" tabIndex={0}>
      <table class="stack-table">
        <thead>
          <tr>
            <th scope="col">Request</th>
            <th scope="col">Status</th>
            <th scope="col">Users</th>
            <th scope="col">Sources</th>
            <th scope="col">Created</th>
            <th scope="col">Finished</th>
            <th scope="col" class="num">
              Events deleted
            </th>
            <th scope="col" class="num">
              Deliveries deleted
            </th>
            <th scope="col" class="num">
              Notices queued
            </th>
            <th scope="col">Linked ids</th>
          </tr>
        </thead>
        <tbody>
          {props.regulations.map((r) => (
            <tr key={r.id}>
              <th scope="row" data-label="Request">
                <code>{r.id}</code>
              </th>
              <td data-label="Status">
                <StatusBadge status={r.status} />
              </td>
              {/* A done request keeps no user id, only how many it named. */}
              <td data-label="Users">{r.userIds.length > 0 ? r.userIds.join(', ') : `${count(r.userCount)} (ids not kept)`}</td>
              <td data-label="Sources">{r.sourceIds === null ? 'all' : r.sourceIds.join(', ')}</td>
              <td data-label="Created">{time(r.createdAt)}</td>
              <td data-label="Finished">{time(r.finishedAt)}</td>
              <td class="num" data-label="Events deleted">
                {count(r.eventsDeleted)}
              </td>
              <td class="num" data-label="Deliveries deleted">
                {count(r.deliveriesDeleted)}
              </td>
              <td class="num" data-label="Notices queued">
                {count(r.notificationsQueued)}
              </td>
              <td data-label="Linked ids">{linked(r)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function linked(r: Regulation): string {
  const l = r.linkedIdentities;
  if (l === null) return '–';
  const text = `${count(l.followed)} followed, ${count(l.skipped)} skipped`;
  return l.reason ? `${text} (${l.reason.replace(/_/g, ' ')})` : text;
}
