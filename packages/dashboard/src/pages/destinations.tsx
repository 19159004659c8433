import { useState } from 'preact/hooks';
import { api } from '../lib/api.js';
import { age, count, ms, percent, time } from '../lib/format.js';
import { href, navigate } from '../lib/router.js';
import type { Destination, DestinationStats, PageProps } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { CopyButton } from '../components/copy-button.js';
import { Field } from '../components/field.js';
import { ErrorNotice, Loading, StatusNotice } from '../components/notice.js';
import { DestinationForm } from './destination-form.js';

/** Destinations: `#/destinations` the list, `#/destinations/{id}` one, `#/destinations/new` and `#/destinations/{id}/edit` the form. */
export function DestinationsPage(props: PageProps) {
  const [first, second] = props.params;
  if (first === 'new' && props.canWrite) return <DestinationForm />;
  if (first !== undefined && second === 'edit' && props.canWrite) return <DestinationForm id={first} />;
  if (first !== undefined && first !== 'new' && second === undefined) return <DestinationOne id={first} canWrite={props.canWrite} />;
  return <DestinationList canWrite={props.canWrite} />;
}

function DestinationList(props: { canWrite: boolean }) {
  const list = useApi<{ destinations: Destination[] }>('/destinations', 15_000);
  return (
    <>
      <div class="panel-head">
        <h1>Destinations</h1>
        {props.canWrite && (
          <a class="button primary" href={href('destinations', 'new')}>
            New destination
          </a>
        )}
      </div>
      {list.error !== undefined && <ErrorNotice error={list.error} />}
      {list.loading && !list.data && <Loading />}
      {list.data && list.data.destinations.length === 0 && <p class="muted">No destination yet.</p>}
      {list.data && list.data.destinations.length > 0 && (
        <ul class="cards" aria-label="Destinations">
          {list.data.destinations.map((d) => (
            <li key={d.id} class="card">
              <DestinationCard destination={d} canWrite={props.canWrite} onChanged={list.reload} onDeleted={list.reload} headingLevel={2} />
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

function DestinationOne(props: { id: string; canWrite: boolean }) {
  const one = useApi<Destination>(`/destinations/${encodeURIComponent(props.id)}`, 15_000);
  return (
    <>
      <p>
        <a href={href('destinations')}>All destinations</a>
      </p>
      {one.error !== undefined && <ErrorNotice error={one.error} />}
      {!one.data && one.error === undefined && <Loading />}
      {one.data && (
        <div class="card">
          <DestinationCard
            destination={one.data}
            canWrite={props.canWrite}
            onChanged={one.reload}
            onDeleted={() => navigate('destinations')}
            headingLevel={1}
          />
        </div>
      )}
    </>
  );
}

interface TestOutcome {
  ok: boolean;
  attempts: { url: string; statusCode: number | null; errorClass: string | null; latencyMs: number | null; responseBodyStart: string | null }[];
}

/** One destination: its settings, health and (for an admin token) what can be done to it. */
function DestinationCard(props: { destination: Destination; canWrite: boolean; onChanged: () => void; onDeleted: () => void; headingLevel: 1 | 2 }) {
  const d = props.destination;
  const path = `/destinations/${encodeURIComponent(d.id)}`;
  const stats = useApi<DestinationStats>(`${path}/stats`, 15_000);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [test, setTest] = useState<TestOutcome | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [rotating, setRotating] = useState(false);
  const [secret, setSecret] = useState<{ kind: string; secret: string; previousExpiresAt: string | null } | null>(null);
  const Heading = props.headingLevel === 1 ? 'h1' : 'h2';
  const urls = (d.settings.webhooks ?? []).map((w) => w.url);

  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const toggle = () =>
    run(async () => {
      await api('PATCH', path, { enabled: !d.enabled });
      props.onChanged();
      stats.reload();
    });
  const sendTest = () =>
    run(async () => {
      setTest(null);
      setTest(await api<TestOutcome>('POST', `${path}/test`, {}));
    });
  const remove = () =>
    run(async () => {
      setConfirmDelete(false);
      await api('DELETE', path);
      props.onDeleted();
    });

  const s = stats.data;
  const state = !d.enabled ? 'disabled' : s?.failingSince ? 'failing' : s?.circuits.some((c) => c.state !== 'closed') ? 'breaker open' : 'healthy';
  return (
    <article aria-labelledby={`dest-${d.id}`}>
      <div class="card-head">
        <Heading id={`dest-${d.id}`}>
          <a href={href('destinations', d.id)}>{d.name}</a>
        </Heading>
        <code class="muted">{d.id}</code>
        <span class={`badge ${state === 'healthy' ? 'badge-ok' : state === 'disabled' ? 'badge-off' : 'badge-bad'}`}>{state}</span>
      </div>
      <dl class="pairs">
        <dt>Type</dt>
        <dd>{d.type}</dd>
        <dt>Sources</dt>
        <dd>{d.sources.length === 0 ? 'none' : d.sources.join(', ')}</dd>
        {urls.length > 0 && (
          <>
            <dt>{urls.length === 1 ? 'URL' : 'URLs'}</dt>
            <dd>
              {urls.map((u) => (
                <code key={u} class="url">
                  {u}
                </code>
              ))}
            </dd>
          </>
        )}
        <dt>Signing</dt>
        <dd>{signingOf(d)}</dd>
      </dl>
      {s && (
        <dl class="stats" aria-label={`Health of ${d.name}`}>
          <div>
            <dt>Pending</dt>
            <dd>{count(s.pending)}</dd>
          </div>
          <div>
            <dt>Oldest pending</dt>
            <dd>{age(s.oldestPendingAgeSeconds)}</dd>
          </div>
          <div>
            <dt>Success (1 h)</dt>
            <dd>{percent(s.windows['1h'].successRate)}</dd>
          </div>
          <div>
            <dt>p50 / p99</dt>
            <dd>
              {ms(s.windows['1h'].p50Ms)} / {ms(s.windows['1h'].p99Ms)}
            </dd>
          </div>
          <div>
            <dt>Dead letters</dt>
            <dd>{count(s.dead)}</dd>
          </div>
        </dl>
      )}
      {s?.failingSince && <p class="notice notice-error">Failing since {time(s.failingSince)}.</p>}
      {s?.disabledAt && (
        <p class="notice notice-error">
          Disabled by Ferry at {time(s.disabledAt)}: {s.disabledReason}
        </p>
      )}
      {error !== undefined && <ErrorNotice error={error} />}
      {props.canWrite && (
        <div class="actions">
          <a href={href('destinations', d.id, 'edit')} aria-label={`Edit ${d.name}`}>
            Edit
          </a>
          <button type="button" disabled={busy} onClick={() => void toggle()} aria-label={`${d.enabled ? 'Disable' : 'Enable'} ${d.name}`}>
            {d.enabled ? 'Disable' : 'Enable'}
          </button>
          <button type="button" disabled={busy} onClick={() => void sendTest()} aria-label={`Send test event to ${d.name}`}>
            Send test event
          </button>
          <button
            type="button"
            disabled={busy}
            onClick={() => (setSecret(null), setRotating(!rotating))}
            aria-expanded={rotating}
            aria-label={`Rotate secret of ${d.name}`}
          >
            Rotate secret
          </button>
          <button type="button" class="danger-outline" disabled={busy} onClick={() => setConfirmDelete(true)} aria-label={`Delete ${d.name}`}>
            Delete
          </button>
        </div>
      )}
      {busy && <StatusNotice>Working…</StatusNotice>}
      {test && <TestResult outcome={test} />}
      {rotating && props.canWrite && (
        <RotateForm
          destination={d}
          onRotated={(r) => {
            setSecret(r);
            setRotating(false);
            props.onChanged();
          }}
        />
      )}
      {secret && (
        <div class="secret-box" role="status">
          <p>
            <strong>New {secret.kind === 'sharedSecret' ? 'shared secret' : 'Standard Webhooks secret'}</strong>, shown this once: store it where the receiver
            reads it.
            {secret.previousExpiresAt && ` The previous one keeps signing until ${time(secret.previousExpiresAt)}.`}
          </p>
          <code class="secret">{secret.secret}</code>
          <div class="actions">
            <CopyButton value={secret.secret} label="Copy secret" />
            <button type="button" onClick={() => setSecret(null)}>
              Done, hide it
            </button>
          </div>
        </div>
      )}
      {props.canWrite && (
        <ConfirmDialog
          open={confirmDelete}
          title={`Delete ${d.name}?`}
          confirmLabel="Delete destination"
          onConfirm={() => void remove()}
          onCancel={() => setConfirmDelete(false)}
        >
          <p>Its pending deliveries become dead letters (destination_deleted) and nothing more is sent to it. This cannot be undone.</p>
        </ConfirmDialog>
      )}
    </article>
  );
}

function signingOf(d: Destination): string {
  const standard = d.settings['standardWebhooks'] as { secrets?: unknown[] } | undefined;
  if (standard?.secrets?.length) return `Standard Webhooks (${standard.secrets.length} secret${standard.secrets.length === 1 ? '' : 's'})`;
  if (d.settings.hasSharedSecret) return 'shared secret (X-Signature)';
  return 'unsigned';
}

function TestResult(props: { outcome: TestOutcome }) {
  return (
    <section class={`test-result ${props.outcome.ok ? 'test-ok' : 'test-failed'}`} aria-label="Test event outcome" role="status">
      <p>
        <strong>{props.outcome.ok ? 'Test event delivered.' : 'Test event failed.'}</strong>
      </p>
      <div class="table-wrap" role="region" aria-label="Test attempts" tabIndex={0}>
        <table class="stack">
          <thead>
            <tr>
              <th scope="col">URL</th>
              <th scope="col" class="num">
                Status
              </th>
              <th scope="col">Error</th>
              <th scope="col" class="num">
                Latency
              </th>
              <th scope="col">Response</th>
            </tr>
          </thead>
          <tbody>
            {props.outcome.attempts.map((a, i) => (
              <tr key={i}>
                <td data-label="URL">
                  <code class="url">{a.url}</code>
                </td>
                <td data-label="Status" class="num">
                  {a.statusCode ?? '–'}
                </td>
                <td data-label="Error">{a.errorClass ?? '–'}</td>
                <td data-label="Latency" class="num">
                  {ms(a.latencyMs)}
                </td>
                <td data-label="Response">
                  <code>{a.responseBodyStart ?? ''}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function RotateForm(props: { destination: Destination; onRotated: (r: { kind: string; secret: string; previousExpiresAt: string | null }) => void }) {
  const d = props.destination;
  const [kind, setKind] = useState(d.settings['standardWebhooks'] ? 'standardWebhooks' : 'sharedSecret');
  const [error, setError] = useState<string | undefined>();
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      props.onRotated(await api('POST', `/destinations/${encodeURIComponent(d.id)}/secrets/rotate`, { kind }));
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  return (
    <form class="inline-form" onSubmit={(e) => void submit(e)} aria-label={`Rotate a secret of ${d.name}`}>
      <Field
        id={`rotate-kind-${d.id}`}
        label="Secret to rotate"
        error={error}
        hint="The previous secret keeps signing beside the new one for a while, so the receiver can switch."
      >
        {(c) => (
          <select {...c} value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
            <option value="sharedSecret">Shared secret (X-Signature)</option>
            <option value="standardWebhooks">Standard Webhooks</option>
          </select>
        )}
      </Field>
      <button type="submit" class="primary">
        Rotate now
      </button>
    </form>
  );
}
