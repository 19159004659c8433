import '../records.css';
import { useState } from 'preact/hooks';
import { api, withQuery } from '../lib/api.js';
import { audiencePath, describeRule, kindOfSegment, kinds } from '../lib/audience-paths.js';
import { count, time } from '../lib/format.js';
import type { Audience, AudienceKind, Member, SyncHistoryEntry, SyncResult } from '../lib/records.js';
import { href, navigate } from '../lib/router.js';
import type { PageProps } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { ErrorNotice, Loading, StatusNotice } from '../components/notice.js';
import { Pager, useCursor } from '../components/pager.js';
import { AudienceForm } from './audience-form.js';

const memberPage = 50;
const syncPage = 20;

/**
 * Audiences and computed traits: `#/audiences` lists both, `#/audiences/new/{kind}` creates,
 * `#/audiences/{kind}/{id}` shows one with its members, `…/edit` edits it.
 */
export function AudiencesPage(props: PageProps) {
  const [first, second, third] = props.params;
  if (first === 'new' && props.canWrite) return <AudienceForm kind={kindOfSegment(second) ?? 'audience'} />;
  const kind = kindOfSegment(first);
  if (kind && second !== undefined && third === 'edit' && props.canWrite) return <AudienceForm kind={kind} id={second} />;
  if (kind && second !== undefined) return <AudienceOne kind={kind} id={second} canWrite={props.canWrite} />;
  return (
    <>
      <h1>Audiences and computed traits</h1>
      <AudienceList kind="audience" canWrite={props.canWrite} />
      <AudienceList kind="computed_trait" canWrite={props.canWrite} />
    </>
  );
}

function AudienceList(props: { kind: AudienceKind; canWrite: boolean }) {
  const k = kinds[props.kind];
  const list = useApi<Record<string, Audience[]>>(k.api, 30_000);
  const items = list.data?.[k.listKey];
  const title = props.kind === 'audience' ? 'Audiences' : 'Computed traits';
  return (
    <section class="panel" aria-labelledby={`${k.segment}-list-title`}>
      <div class="panel-head">
        <h2 id={`${k.segment}-list-title`}>{title}</h2>
        {props.canWrite && (
          <a class="button primary" href={href('audiences', 'new', k.segment)}>
            New {k.noun}
          </a>
        )}
      </div>
      {list.error !== undefined && <ErrorNotice error={list.error} />}
      {list.loading && !items && <Loading />}
      {items && items.length === 0 && <p class="muted">No {k.noun} yet.</p>}
      {items && items.length > 0 && (
        <div class="table-wrap" role="region" aria-label={`${title} list`} tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Rule</th>
                <th scope="col" class="num">
                  {props.kind === 'audience' ? 'Members' : 'Profiles'}
                </th>
                <th scope="col" class="num">
                  Syncs
                </th>
                <th scope="col">Last synced</th>
                <th scope="col">Destinations</th>
              </tr>
            </thead>
            <tbody>
              {items.map((a) => (
                <tr key={a.id}>
                  <th scope="row">
                    <a href={href('audiences', k.segment, a.id)}>{a.name}</a> <code class="muted">{a.trait}</code>
                  </th>
                  <td>{describeRule(a.rule)}</td>
                  <td class="num">{count(a.memberCount)}</td>
                  <td class="num">{count(a.syncCount)}</td>
                  <td>{time(a.lastSyncedAt)}</td>
                  <td>{a.destinationIds.join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function AudienceOne(props: { kind: AudienceKind; id: string; canWrite: boolean }) {
  const k = kinds[props.kind];
  const path = audiencePath(props.kind, props.id);
  const one = useApi<Audience>(path);
  const [lastSync, setLastSync] = useState<SyncResult | null>(null);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [membersVersion, setMembersVersion] = useState(0);
  const a = one.data;

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
  const sync = () =>
    run(async () => {
      setLastSync(null);
      try {
        const result = await api<SyncResult>('POST', `${path}/sync`);
        setLastSync(result);
        one.reload();
      } finally {
        // The members and the history are read again, from their first pages: a failed sync is in the history too.
        setMembersVersion((v) => v + 1);
      }
    });
  const remove = () =>
    run(async () => {
      setConfirmDelete(false);
      await api('DELETE', path);
      navigate('audiences');
    });

  return (
    <>
      <p>
        <a href={href('audiences')}>All audiences and computed traits</a>
      </p>
      {one.error !== undefined && <ErrorNotice error={one.error} />}
      {!a && one.error === undefined && <Loading />}
      {a && (
        <>
          <div class="title-line">
            <h1>{a.name}</h1>
            <span class="badge badge-off">{k.noun}</span>
          </div>
          {error !== undefined && <ErrorNotice error={error} />}
          {props.canWrite && (
            <div class="actions">
              <a class="button" href={href('audiences', k.segment, a.id, 'edit')} aria-label={`Edit ${a.name}`}>
                Edit
              </a>
              <button type="button" disabled={busy} onClick={() => void sync()}>
                Sync now
              </button>
              <button type="button" class="danger-outline" disabled={busy} onClick={() => setConfirmDelete(true)} aria-label={`Delete ${a.name}`}>
                Delete
              </button>
            </div>
          )}
          <dl class="pairs panel">
            <dt>Id</dt>
            <dd>
              <code>{a.id}</code>
            </dd>
            <dt>Trait key sent</dt>
            <dd>
              <code>{a.trait}</code>
            </dd>
            <dt>Rule</dt>
            <dd>{describeRule(a.rule)}</dd>
            <dt>Destinations</dt>
            <dd>{a.destinationIds.join(', ')}</dd>
            <dt>Sources</dt>
            <dd>{a.sourceIds === null ? 'every source' : a.sourceIds.join(', ')}</dd>
            <dt>Created</dt>
            <dd>{time(a.createdAt)}</dd>
          </dl>
          <section class="panel" aria-labelledby="syncs-title">
            <h2 id="syncs-title">Syncs</h2>
            <p>
              {count(a.syncCount)} sync{a.syncCount === 1 ? '' : 's'} so far, the last at {time(a.lastSyncedAt)}; {count(a.memberCount)}{' '}
              {props.kind === 'audience' ? 'members' : 'profiles'} as of it.
            </p>
            {lastSync && (
              <StatusNotice>
                Sync {lastSync.syncCount} done: {count(lastSync.queued)} change{lastSync.queued === 1 ? '' : 's'} queued.
              </StatusNotice>
            )}
            <SyncHistory key={membersVersion} path={path} kind={props.kind} />
          </section>
          <Members key={membersVersion} path={path} kind={props.kind} />
          {props.canWrite && (
            <ConfirmDialog
              open={confirmDelete}
              title={`Delete ${a.name}?`}
              confirmLabel={`Delete ${k.noun}`}
              onConfirm={() => void remove()}
              onCancel={() => setConfirmDelete(false)}
            >
              <p>Its stored members are removed; changes already queued still go out, and members are not sent false. This cannot be undone.</p>
            </ConfirmDialog>
          )}
        </>
      )}
    </>
  );
}

/** A count of the history, or a dash where the sync failed and has none. */
const figure = (n: number | null) => (n === null ? '–' : count(n));

/** The sync history from the API (`GET …/{id}/syncs`), newest first, whoever ran each sync. */
function SyncHistory(props: { path: string; kind: AudienceKind }) {
  const cursor = useCursor();
  const history = useApi<{ syncs: SyncHistoryEntry[]; next: string | null }>(withQuery(`${props.path}/syncs`, { limit: syncPage, after: cursor.after }));
  return (
    <>
      <h3 id="history-title">History</h3>
      <p class="hint">Newest first. Syncs in a row that changed nothing are one line; the last 100 lines are kept.</p>
      {history.error !== undefined && <ErrorNotice error={history.error} />}
      {history.loading && !history.data && <Loading />}
      {history.data && history.data.syncs.length === 0 && <p class="muted">No sync yet.</p>}
      {history.data && history.data.syncs.length > 0 && (
        <div class="table-wrap" role="region" aria-labelledby="history-title" tabIndex={0}>
          <table class="stack-table sync-history">
            <thead>
              <tr>
                <th scope="col">Sync</th>
                <th scope="col">Started</th>
                <th scope="col">Finished</th>
                <th scope="col" class="num">
                  Added
                </th>
                <th scope="col" class="num">
                  Removed
                </th>
                <th scope="col" class="num">
                  Changed
                </th>
                <th scope="col" class="num">
                  Queued
                </th>
                <th scope="col" class="num">
                  {props.kind === 'audience' ? 'Members' : 'Profiles'}
                </th>
              </tr>
            </thead>
            <tbody>
              {history.data.syncs.map((s) => (
                <tr key={s.id}>
                  <th scope="row" data-label="Sync">
                    {s.status === 'failed' ? (
                      <span class="badge badge-bad">failed</span>
                    ) : s.runs > 1 ? (
                      `#${(s.syncCount ?? 0) - s.runs + 1}–${s.syncCount} (${count(s.runs)} syncs, no change)`
                    ) : (
                      `#${s.syncCount}`
                    )}
                  </th>
                  <td data-label="Started">{time(s.startedAt)}</td>
                  <td data-label="Finished">{time(s.finishedAt)}</td>
                  {s.status === 'failed' ? (
                    <td colSpan={5} class="sync-error" data-label="Error">
                      {s.error}
                    </td>
                  ) : (
                    <>
                      <td class="num" data-label="Added">
                        {figure(s.added)}
                      </td>
                      <td class="num" data-label="Removed">
                        {figure(s.removed)}
                      </td>
                      <td class="num" data-label="Changed">
                        {figure(s.changed)}
                      </td>
                      <td class="num" data-label="Queued">
                        {figure(s.queued)}
                      </td>
                      <td class="num" data-label={props.kind === 'audience' ? 'Members' : 'Profiles'}>
                        {figure(s.memberCount)}
                      </td>
                    </>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Sync history" cursor={cursor} next={history.data?.next} />
    </>
  );
}

function Members(props: { path: string; kind: AudienceKind }) {
  const cursor = useCursor();
  const members = useApi<{ members: Member[]; next: string | null }>(withQuery(`${props.path}/members`, { limit: memberPage, after: cursor.after }));
  return (
    <section class="panel" aria-labelledby="members-title">
      <h2 id="members-title">{props.kind === 'audience' ? 'Members' : 'Profiles'}</h2>
      <p class="hint">As of the last sync.</p>
      {members.error !== undefined && <ErrorNotice error={members.error} />}
      {members.loading && !members.data && <Loading />}
      {members.data && members.data.members.length === 0 && <p class="muted">None.</p>}
      {members.data && members.data.members.length > 0 && (
        <div class="table-wrap" role="region" aria-label="Member list" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">User id</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              {members.data.members.map((m) => (
                <tr key={m.userId}>
                  <th scope="row">{m.userId}</th>
                  <td>
                    <code>{JSON.stringify(m.value)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Members" cursor={cursor} next={members.data?.next} />
    </section>
  );
}
