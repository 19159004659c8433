import '../records.css';
import { useEffect, useState } from 'preact/hooks';
import { api, withQuery } from '../lib/api.js';
import { errorClasses } from '../lib/error-classes.js';
import { count, time } from '../lib/format.js';
import type { Delivery, DeliveryPage, ReplayAnswer, ReplayJob } from '../lib/records.js';
import { href } from '../lib/router.js';
import { isoFromLocal } from '../lib/time-input.js';
import type { Destination, PageProps } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { Field } from '../components/field.js';
import { ErrorNotice, Loading, StatusNotice } from '../components/notice.js';
import { Pager, useCursor } from '../components/pager.js';
import { whatOf } from './deliveries.js';

const pageSize = 50;

interface Filter {
  destinationId: string;
  errorClass: string;
  since: string;
  until: string;
}

const noFilter: Filter = { destinationId: '', errorClass: '', since: '', until: '' };

/** A replay asked for, counted by a dry run and waiting for its confirmation. */
interface Planned {
  body: Record<string, unknown>;
  what: string;
  wouldReplay: number;
}

/**
 * Dead letters: filter (destination, when they died, error class), select and replay one or
 * many. Every replay of more than one is counted by a dry run first and replayed on a second
 * click; a replay the server runs as a job shows its progress until it ends.
 */
export function DeadLettersPage(props: PageProps) {
  const [draft, setDraft] = useState<Filter>(noFilter);
  const [filter, setFilter] = useState<Filter>(noFilter);
  const cursor = useCursor();
  const destinations = useApi<{ destinations: Destination[] }>('/destinations');
  const since = isoFromLocal(filter.since);
  const until = isoFromLocal(filter.until);
  // The server filters, with the names the bulk replay takes: the list shows what "Replay all
  // matching the filter" would take, page after page.
  const list = useApi<DeliveryPage>(
    withQuery('/dead-letters', {
      destinationId: filter.destinationId,
      errorClass: filter.errorClass,
      since,
      until,
      limit: pageSize,
      after: cursor.after,
    }),
  );
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [planned, setPlanned] = useState<Planned | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [job, setJob] = useState<ReplayJob | null>(null);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  // Bumped when a job ends, so the list of recent jobs is read again with its final state.
  const [jobsRead, setJobsRead] = useState(0);

  const shown = list.data?.deliveries ?? [];

  const set = (key: keyof Filter) => (e: { currentTarget: { value: string } }) => setDraft({ ...draft, [key]: e.currentTarget.value });
  const apply = (event: Event) => {
    event.preventDefault();
    cursor.reset();
    setFilter(draft);
    setSelected(new Set());
    setPlanned(null);
    list.reload();
  };
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
  const dryRun = (body: Record<string, unknown>, what: string) =>
    run(async () => {
      setOutcome(null);
      const answer = await api<ReplayAnswer>('POST', '/dead-letters/replay', { ...body, dryRun: true });
      if ('wouldReplay' in answer) setPlanned({ body, what, wouldReplay: answer.wouldReplay });
    });
  const replay = (body: Record<string, unknown>) =>
    run(async () => {
      setPlanned(null);
      const answer = await api<ReplayAnswer>('POST', '/dead-letters/replay', body);
      if ('job' in answer) setJob(answer.job);
      else if ('replayed' in answer) setOutcome(`Replayed ${count(answer.replayed)} dead letter${answer.replayed === 1 ? '' : 's'}.`);
      setSelected(new Set());
      list.reload();
    });
  const replayOne = (id: number) =>
    run(async () => {
      await api('POST', `/dead-letters/${id}/replay`);
      setOutcome(`Replayed dead letter #${id}.`);
      setSelected((s) => new Set([...s].filter((x) => x !== id)));
      list.reload();
    });
  const filterBody = () => {
    const body: Record<string, unknown> = {};
    if (filter.destinationId) body['destinationId'] = filter.destinationId;
    if (filter.errorClass) body['errorClass'] = filter.errorClass;
    if (since) body['since'] = since;
    if (until) body['until'] = until;
    return body;
  };
  const toggle = (id: number, on: boolean) => setSelected((s) => (on ? new Set([...s, id]) : new Set([...s].filter((x) => x !== id))));
  const allShown = shown.length > 0 && shown.every((d) => selected.has(d.id));

  return (
    <>
      <h1>Dead letters</h1>
      <form class="panel search-form" role="search" aria-label="Filter dead letters" onSubmit={apply}>
        <div class="toolbar">
          <Field id="dead-destination" label="Destination">
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
          <Field id="dead-class" label="Error class">
            {(c) => (
              <select {...c} value={draft.errorClass} onChange={set('errorClass')}>
                <option value="">Any</option>
                {errorClasses.map((e) => (
                  <option key={e} value={e}>
                    {e}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field id="dead-since" label="Dead since">
            {(c) => <input {...c} type="datetime-local" step={1} value={draft.since} onInput={set('since')} />}
          </Field>
          <Field id="dead-until" label="Dead before">
            {(c) => <input {...c} type="datetime-local" step={1} value={draft.until} onInput={set('until')} />}
          </Field>
        </div>
        <div class="actions">
          <button type="submit" class="primary">
            Filter
          </button>
        </div>
      </form>

      {error !== undefined && <ErrorNotice error={error} />}
      {outcome && <StatusNotice>{outcome}</StatusNotice>}
      {job && (
        <JobProgress
          job={job}
          onEnd={() => {
            list.reload();
            setJobsRead((n) => n + 1);
          }}
        />
      )}

      {props.canWrite && (
        <div class="panel actions" aria-label="Replay">
          <button type="button" disabled={busy || selected.size === 0} onClick={() => void dryRun({ ids: [...selected] }, 'selected')}>
            Replay selected ({selected.size})…
          </button>
          <button type="button" disabled={busy} onClick={() => void dryRun(filterBody(), 'matching the filter')}>
            Replay all matching the filter…
          </button>
        </div>
      )}
      {planned && props.canWrite && (
        <div class="panel confirm-box" role="alertdialog" aria-labelledby="dry-run-title" aria-describedby="dry-run-text">
          <h2 id="dry-run-title">Dry run</h2>
          <p id="dry-run-text">
            {planned.wouldReplay === 0
              ? `No dead letter ${planned.what} can be replayed.`
              : `${count(planned.wouldReplay)} dead letter${planned.wouldReplay === 1 ? '' : 's'} ${planned.what} would be replayed, with the same body and message id.`}
            {planned.what !== 'selected' && Object.keys(planned.body).length === 0 && ' No filter is set: this is every dead letter.'}
          </p>
          <div class="actions">
            <button type="button" onClick={() => setPlanned(null)}>
              Cancel
            </button>
            {planned.wouldReplay > 0 && (
              <button type="button" class="primary" disabled={busy} onClick={() => void replay(planned.body)}>
                Replay {count(planned.wouldReplay)}
              </button>
            )}
          </div>
        </div>
      )}

      {list.error !== undefined && <ErrorNotice error={list.error} />}
      {list.loading && !list.data && <Loading />}
      {list.data && shown.length === 0 && <p class="muted">No dead letter matches.</p>}
      {shown.length > 0 && (
        <div class="table-wrap" role="region" aria-label="Dead letters found" tabIndex={0}>
          <table class="stack-table">
            <thead>
              <tr>
                {props.canWrite && (
                  <th scope="col">
                    <input
                      type="checkbox"
                      aria-label="Select every dead letter shown"
                      checked={allShown}
                      onChange={(e) => setSelected(e.currentTarget.checked ? new Set(shown.map((d) => d.id)) : new Set())}
                    />
                  </th>
                )}
                <th scope="col">Delivery</th>
                <th scope="col">Destination</th>
                <th scope="col">What</th>
                <th scope="col">User</th>
                <th scope="col">Dead since</th>
                <th scope="col">Last error</th>
                {props.canWrite && <th scope="col">Action</th>}
              </tr>
            </thead>
            <tbody>
              {shown.map((d: Delivery) => (
                <tr key={d.id} class={selected.has(d.id) ? 'row-selected' : undefined}>
                  {props.canWrite && (
                    <td data-label="Select">
                      <input
                        type="checkbox"
                        aria-label={`Select dead letter ${d.id}`}
                        checked={selected.has(d.id)}
                        onChange={(e) => toggle(d.id, e.currentTarget.checked)}
                      />
                    </td>
                  )}
                  <th scope="row" data-label="Delivery">
                    <a href={href('deliveries', String(d.id))} aria-label={`Delivery ${d.id}`}>
                      #{d.id}
                    </a>
                  </th>
                  <td data-label="Destination">{d.destinationId}</td>
                  <td data-label="What">{whatOf(d)}</td>
                  <td data-label="User">{d.userId ?? d.anonymousId ?? '–'}</td>
                  <td data-label="Dead since">{time(d.completedAt)}</td>
                  <td class="clip" data-label="Last error">
                    {/* One box, so that on a phone (cells laid out as flex rows) the reason stays above the text. */}
                    <span>
                      <code class="dead-reason">{d.deadReason ?? ''}</code>
                      {d.lastError ?? ''}
                    </span>
                  </td>
                  {props.canWrite && (
                    <td data-label="Action">
                      <button type="button" disabled={busy} onClick={() => void replayOne(d.id)} aria-label={`Replay dead letter ${d.id}`}>
                        Replay
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Dead letters" cursor={cursor} next={list.data?.next} />
      <RecentJobs key={`${job?.id ?? 'none'}-${jobsRead}`} />
    </>
  );
}

/** A replay job followed until it ends: `GET /replay-jobs/{id}` every second. */
function JobProgress(props: { job: ReplayJob; onEnd: () => void }) {
  const [job, setJob] = useState(props.job);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    setJob(props.job);
    if (props.job.status !== 'running') return undefined;
    let live = true;
    const timer = setInterval(() => {
      api<ReplayJob>('GET', `/replay-jobs/${encodeURIComponent(props.job.id)}`).then(
        (j) => {
          if (!live) return;
          setJob(j);
          if (j.status !== 'running') {
            clearInterval(timer);
            props.onEnd();
          }
        },
        (e: unknown) => live && setError(e),
      );
    }, 1_000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [props.job.id]);
  return (
    <section class="panel job" aria-labelledby="job-title">
      <h2 id="job-title">Replay job</h2>
      <p>
        <code>{job.id}</code>: {job.status === 'running' ? 'running' : job.status === 'done' ? 'done' : `failed: ${job.error ?? ''}`}
      </p>
      <label for="job-progress">
        {count(job.replayed)} of {count(job.total)} replayed
      </label>
      <progress id="job-progress" max={Math.max(job.total, 1)} value={job.replayed} />
      {error !== undefined && <ErrorNotice error={error} />}
    </section>
  );
}

function RecentJobs() {
  const jobs = useApi<{ jobs: ReplayJob[] }>('/replay-jobs?limit=5', 10_000);
  if (!jobs.data || jobs.data.jobs.length === 0) return null;
  return (
    <section class="panel" aria-labelledby="jobs-title">
      <h2 id="jobs-title">Recent replay jobs</h2>
      <div class="table-wrap" role="region" aria-label="Replay job list" tabIndex={0}>
        <table class="stack-table">
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Status</th>
              <th scope="col" class="num">
                Replayed
              </th>
              <th scope="col">Started</th>
              <th scope="col">Finished</th>
            </tr>
          </thead>
          <tbody>
            {jobs.data.jobs.map((j) => (
              <tr key={j.id}>
                <th scope="row" data-label="Job">
                  <code>{j.id}</code>
                </th>
                <td data-label="Status">{j.status}</td>
                <td class="num" data-label="Replayed">
                  {count(j.replayed)} / {count(j.total)}
                </td>
                <td data-label="Started">{time(j.createdAt)}</td>
                <td data-label="Finished">{time(j.finishedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
