import { useEffect, useState } from 'preact/hooks';
import { api } from '../lib/api.js';
import { ms, time } from '../lib/format.js';
import type { Attempt, DeliveryDetail } from '../lib/records.js';
import { href } from '../lib/router.js';
import { useApi } from '../lib/use-api.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { ErrorNotice, Loading, StatusNotice } from '../components/notice.js';
import { StatusBadge, whatOf } from './deliveries.js';

/** How much of a receiver's answer the timeline shows before "show all". */
const responseStart = 300;

/**
 * One delivery (`#/deliveries/{id}`): what it is, the exact body sent, each attempt per URL
 * on a timeline, and (admin) replay of a finished one, delivered or dead: a delivered one
 * only after a confirmation, since its receiver gets it a second time.
 */
export function DeliveryPage(props: { id: string; canWrite: boolean }) {
  // Read again every 2 s while pending, so a replay is seen to succeed or fail without a reload.
  const [pending, setPending] = useState(false);
  const one = useApi<DeliveryDetail>(`/deliveries/${encodeURIComponent(props.id)}`, pending ? 2_000 : undefined);
  const d = one.data;
  useEffect(() => setPending(d?.status === 'pending'), [d?.status]);
  const [replayed, setReplayed] = useState(false);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [confirmResend, setConfirmResend] = useState(false);

  const replay = async () => {
    setConfirmResend(false);
    setBusy(true);
    setError(undefined);
    try {
      await api('POST', `/deliveries/${encodeURIComponent(props.id)}/replay`);
      setReplayed(true);
      one.reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <p>
        <a href={href('deliveries')}>All deliveries</a>
      </p>
      {one.error !== undefined && <ErrorNotice error={one.error} />}
      {!d && one.error === undefined && <Loading />}
      {d && (
        <>
          <div class="panel-head">
            <div class="title-line">
              <h1>Delivery #{d.id}</h1>
              <StatusBadge status={d.status} />
            </div>
            <div class="actions">
              <button type="button" onClick={one.reload} disabled={one.loading}>
                Refresh
              </button>
              {props.canWrite && d.status !== 'pending' && (
                <button
                  type="button"
                  class={d.status === 'dead' ? 'primary' : undefined}
                  disabled={busy}
                  onClick={() => (d.status === 'dead' ? void replay() : setConfirmResend(true))}
                >
                  {d.status === 'dead' ? 'Replay' : 'Replay…'}
                </button>
              )}
            </div>
          </div>
          {replayed && d.status === 'pending' && (
            <StatusNotice>Replayed: the delivery is pending again and is sent with the same body and message id.</StatusNotice>
          )}
          {error !== undefined && <ErrorNotice error={error} />}
          {props.canWrite && (
            <ConfirmDialog
              open={confirmResend}
              title={`Replay delivery #${d.id}?`}
              confirmLabel="Send again"
              onConfirm={() => void replay()}
              onCancel={() => setConfirmResend(false)}
            >
              <p>
                It was delivered. {d.destinationId} gets the same body with the same message id <code>{d.messageId ?? '–'}</code> once more; a receiver that
                deduplicates on it ignores the copy.
              </p>
            </ConfirmDialog>
          )}
          <dl class="pairs panel">
            <dt>Destination</dt>
            <dd>
              <a href={href('destinations', d.destinationId)}>{d.destinationId}</a>
            </dd>
            <dt>What</dt>
            <dd>
              {whatOf(d)}
              {d.type && d.event ? ` (${d.type})` : ''}
            </dd>
            <dt>Source</dt>
            <dd>{d.sourceId ?? '–'}</dd>
            <dt>Message id</dt>
            <dd>
              <code>{d.messageId ?? '–'}</code>
            </dd>
            <dt>User</dt>
            <dd>{d.userId ?? '–'}</dd>
            <dt>Anonymous id</dt>
            <dd>{d.anonymousId ?? '–'}</dd>
            <dt>Received</dt>
            <dd>{time(d.receivedAt)}</dd>
            <dt>Attempts (this window)</dt>
            <dd>{d.attemptCount}</dd>
            {d.status === 'pending' && (
              <>
                <dt>Next attempt</dt>
                <dd>{time(d.nextAttemptAt)}</dd>
              </>
            )}
            {d.completedAt && (
              <>
                <dt>{d.status === 'dead' ? 'Dead since' : 'Delivered'}</dt>
                <dd>{time(d.completedAt)}</dd>
              </>
            )}
            {d.deadReason && (
              <>
                <dt>Dead because</dt>
                <dd>
                  <code>{d.deadReason}</code>
                </dd>
              </>
            )}
            {d.lastError && (
              <>
                <dt>Last error</dt>
                <dd class="clip-wrap">{d.lastError}</dd>
              </>
            )}
          </dl>
          <section class="panel" aria-labelledby="attempts-title">
            <h2 id="attempts-title">Attempts</h2>
            {d.attempts.length === 0 ? <p class="muted">Not attempted yet.</p> : <Timeline attempts={d.attempts} />}
          </section>
          <section class="panel" aria-labelledby="body-title">
            <h2 id="body-title">Body sent</h2>
            <p class="hint">The exact bytes sent to every URL ({new TextEncoder().encode(d.body).length} bytes).</p>
            <pre class="body" tabIndex={0} aria-labelledby="body-title">
              {d.body}
            </pre>
          </section>
        </>
      )}
    </>
  );
}

/** The attempts oldest first, one entry per URL called, each with what the receiver answered. */
function Timeline(props: { attempts: Attempt[] }) {
  return (
    <ol class="timeline" aria-label="Attempts, oldest first">
      {props.attempts.map((a, i) => {
        const ok = a.statusCode !== null && a.statusCode >= 200 && a.statusCode < 300 && a.errorClass === null;
        return (
          <li key={i} class={ok ? 'attempt attempt-ok' : 'attempt attempt-failed'}>
            <div class="attempt-head">
              <time dateTime={a.startedAt}>{time(a.startedAt)}</time>
              <span class={`badge ${ok ? 'badge-ok' : 'badge-bad'}`}>{a.statusCode ?? 'no answer'}</span>
              {a.errorClass && <span class="badge badge-off">{a.errorClass}</span>}
              <span class="muted">{ms(a.latencyMs)}</span>
              <span class="muted">{a.trigger}</span>
            </div>
            <code class="url">{a.url}</code>
            {a.errorMessage && <p class="attempt-error">{a.errorMessage}</p>}
            {a.responseBody !== null && a.responseBody !== '' && <ResponseStart text={a.responseBody} />}
          </li>
        );
      })}
    </ol>
  );
}

function ResponseStart(props: { text: string }) {
  const [all, setAll] = useState(false);
  const long = props.text.length > responseStart;
  return (
    <div class="response">
      <span class="muted">Response{long && !all ? ' (start)' : ''}:</span>
      <pre>{all || !long ? props.text : `${props.text.slice(0, responseStart)}…`}</pre>
      {long && (
        <button type="button" class="link-button" onClick={() => setAll(!all)} aria-expanded={all}>
          {all ? 'Show less' : 'Show all that was kept'}
        </button>
      )}
    </div>
  );
}
