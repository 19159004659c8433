import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../lib/api.js';
import { age, count, ms, percent } from '../lib/format.js';
import { href } from '../lib/router.js';
import type { DestinationStats, PageProps, Series, Stats } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { TimeChart } from '../components/chart.js';
import { ErrorNotice, Loading } from '../components/notice.js';

const refreshMs = 10_000;

/** Why a destination needs attention, most urgent first. */
type Concern = 'failing' | 'backlog growing' | 'breaker open' | 'disabled';
const concernOrder: readonly Concern[] = ['failing', 'backlog growing', 'breaker open', 'disabled'];

interface DestinationRow {
  id: string;
  name: string;
  enabled: boolean;
  stats: DestinationStats | undefined;
  concerns: Concern[];
}

/** Overview: traffic charts over the last hour or day, and each destination's health, what needs attention first. */
export function OverviewPage(_props: PageProps) {
  const [window, setWindow] = useState<'1h' | '24h'>('1h');
  const stats = useApi<Stats>('/stats', refreshMs);
  const series = useApi<Series>(`/series?window=${window}`, refreshMs);
  const destinations = useDestinationStats(stats.data, refreshMs);

  const rows = useMemo(() => destinations.rows.slice().sort(byUrgency), [destinations.rows]);
  const attention = rows.filter((r) => r.concerns.length > 0);

  return (
    <>
      <h1>Overview</h1>
      {stats.error !== undefined && <ErrorNotice error={stats.error} />}
      {stats.data && (
        <dl class="tiles" aria-label="Totals">
          <Tile label="Events stored" value={count(stats.data.events)} />
          <Tile label="Deliveries pending" value={count(stats.data.deliveries['pending'] ?? 0)} />
          <Tile label="Delivered" value={count(stats.data.deliveries['succeeded'] ?? 0)} />
          <Tile label="Dead letters" value={count(stats.data.deliveries['dead'] ?? 0)} />
          <Tile label="Rejected messages" value={count(stats.data.rejections)} />
        </dl>
      )}

      <section aria-labelledby="attention-title" class="panel">
        <h2 id="attention-title">Needs attention</h2>
        {stats.data === undefined || destinations.loading ? (
          <Loading />
        ) : attention.length === 0 ? (
          <p class="ok-line">Every destination is delivering.</p>
        ) : (
          <ul class="attention">
            {attention.map((r) => (
              <li key={r.id}>
                <a href={href('destinations', r.id)}>{r.name}</a>: {r.concerns.join(', ')}
                {r.stats?.disabledReason ? ` (${r.stats.disabledReason})` : ''}
              </li>
            ))}
          </ul>
        )}
      </section>

      <section aria-labelledby="traffic-title" class="panel">
        <div class="panel-head">
          <h2 id="traffic-title">Traffic</h2>
          <div class="segmented" role="group" aria-label="Time window">
            {(['1h', '24h'] as const).map((w) => (
              <button key={w} type="button" aria-pressed={window === w} onClick={() => setWindow(w)}>
                {w === '1h' ? 'Last hour' : 'Last day'}
              </button>
            ))}
          </div>
        </div>
        {series.error !== undefined && <ErrorNotice error={series.error} />}
        {series.data ? <TrafficCharts series={series.data} /> : series.error === undefined && <Loading />}
      </section>

      <section aria-labelledby="destinations-title" class="panel">
        <h2 id="destinations-title">Destinations</h2>
        {destinations.error !== undefined && <ErrorNotice error={destinations.error} />}
        {rows.length === 0 && !destinations.loading ? <p class="muted">No destination yet.</p> : <DestinationTable rows={rows} />}
      </section>
    </>
  );
}

function Tile(props: { label: string; value: string }) {
  return (
    <div class="tile">
      <dt>{props.label}</dt>
      <dd>{props.value}</dd>
    </div>
  );
}

function TrafficCharts(props: { series: Series }) {
  const { times, accepted, delivered, retried, dead } = useMemo(() => {
    const b = props.series.buckets;
    return {
      times: b.map((x) => toSeconds(x.t)),
      accepted: b.map((x) => x.accepted),
      delivered: b.map((x) => x.delivered),
      retried: b.map((x) => x.retried),
      dead: b.map((x) => x.dead),
    };
  }, [props.series]);
  const per = props.series.bucketSeconds === 60 ? 'per minute' : `per ${props.series.bucketSeconds / 60} minutes`;
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const acceptedLines = useMemo(() => [{ label: 'Accepted', values: accepted, color: '#1d4ed8' }], [accepted]);
  const outcomeLines = useMemo(
    () => [
      { label: 'Delivered', values: delivered, color: '#15803d' },
      { label: 'Retried', values: retried, color: '#b45309' },
      { label: 'Dead', values: dead, color: '#b91c1c' },
    ],
    [delivered, retried, dead],
  );
  return (
    <div class="charts">
      <TimeChart title={`Events accepted ${per}`} summary={`${count(sum(accepted))} accepted in this window`} times={times} lines={acceptedLines} />
      <TimeChart
        title={`Deliveries by outcome ${per}`}
        summary={`${count(sum(delivered))} delivered, ${count(sum(retried))} retried, ${count(sum(dead))} dead in this window`}
        times={times}
        lines={outcomeLines}
      />
    </div>
  );
}

function DestinationTable(props: { rows: DestinationRow[] }) {
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label="Destination health">
      <table class="stack">
        <thead>
          <tr>
            <th scope="col">Destination</th>
            <th scope="col">State</th>
            <th scope="col" class="num">
              Pending
            </th>
            <th scope="col" class="num">
              Oldest pending
            </th>
            <th scope="col" class="num">
              Success (1 h)
            </th>
            <th scope="col" class="num">
              p50 / p99
            </th>
            <th scope="col" class="num">
              Dead letters
            </th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr key={r.id} class={r.concerns.length > 0 ? 'row-attention' : undefined}>
              <th scope="row">
                <a href={href('destinations', r.id)}>{r.name}</a>
              </th>
              <td data-label="State">
                {r.concerns.length > 0 ? <span class="badge badge-bad">{r.concerns[0]}</span> : <span class="badge badge-ok">healthy</span>}
              </td>
              <td data-label="Pending" class="num">
                {count(r.stats?.pending)}
              </td>
              <td data-label="Oldest pending" class="num">
                {age(r.stats?.oldestPendingAgeSeconds)}
              </td>
              <td data-label="Success (1 h)" class="num">
                {percent(r.stats?.windows['1h'].successRate)}
              </td>
              <td data-label="p50 / p99" class="num">
                {ms(r.stats?.windows['1h'].p50Ms)} / {ms(r.stats?.windows['1h'].p99Ms)}
              </td>
              <td data-label="Dead letters" class="num">
                {count(r.stats?.dead)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Each destination's stats, read again with the totals; a backlog is "growing" when pending rose since the last read. */
function useDestinationStats(stats: Stats | undefined, _refreshMs: number) {
  const [state, setState] = useState<{ rows: DestinationRow[]; error: unknown; loading: boolean }>({ rows: [], error: undefined, loading: true });
  const previous = useRef(new Map<string, number>());
  useEffect(() => {
    if (!stats) return undefined;
    let live = true;
    Promise.all(stats.destinations.map((d) => api<DestinationStats>('GET', `/destinations/${encodeURIComponent(d.id)}/stats`).catch(() => undefined))).then(
      (all) => {
        if (!live) return;
        const rows = stats.destinations.map((d, i) => {
          const s = all[i];
          const before = previous.current.get(d.id);
          return { id: d.id, name: d.name, enabled: d.enabled, stats: s, concerns: concernsOf(d.enabled, s, before) };
        });
        previous.current = new Map(rows.map((r) => [r.id, r.stats?.pending ?? 0]));
        setState({ rows, error: undefined, loading: false });
      },
      (error: unknown) => live && setState((s) => ({ ...s, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [stats]);
  return state;
}

function concernsOf(enabled: boolean, s: DestinationStats | undefined, pendingBefore: number | undefined): Concern[] {
  const out: Concern[] = [];
  if (s) {
    const recent = s.windows['5m'];
    if (s.failingSince !== null || (recent.attempts > 0 && recent.successRate !== null && recent.successRate < 0.5)) out.push('failing');
    if (pendingBefore !== undefined && s.pending > pendingBefore && (s.oldestPendingAgeSeconds ?? 0) > 60) out.push('backlog growing');
    if (s.circuits.some((c) => c.state !== 'closed')) out.push('breaker open');
  }
  if (!enabled || s?.disabledAt) out.push('disabled');
  return out;
}

function byUrgency(a: DestinationRow, b: DestinationRow): number {
  const rank = (r: DestinationRow) => (r.concerns.length === 0 ? concernOrder.length : Math.min(...r.concerns.map((c) => concernOrder.indexOf(c))));
  return rank(a) - rank(b) || (b.stats?.pending ?? 0) - (a.stats?.pending ?? 0) || a.id.localeCompare(b.id);
}

function toSeconds(t: string | number): number {
  if (typeof t === 'number') return t > 1e12 ? t / 1000 : t;
  return Date.parse(t) / 1000;
}
