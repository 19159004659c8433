import { useMemo, useRef, useState } from 'preact/hooks';
import { age, count, ms, percent } from '../lib/format.js';
import { href } from '../lib/router.js';
import type { DestinationStatsSummary, DestinationsWithStats, PageProps, Series, Stats } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { LazyTimeChart, loadCharts } from '../components/lazy-chart.js';
import { callEarly } from '../lib/early-calls.js';
import { ErrorNotice, Loading } from '../components/notice.js';

const refreshMs = 10_000;
const statsPath = '/stats';
const destinationsPath = '/destinations?include=stats';
const seriesPath = (window: '1h' | '24h') => `/series?window=${window}`;

/**
 * When the app opens on the Overview: its first reads and its charts' code are asked for with
 * the session check, not after it.
 */
export function openOverviewEarly(): void {
  callEarly([statsPath, destinationsPath, seriesPath('1h')]);
  loadCharts().catch(() => undefined);
}

/** Why a destination needs attention, most urgent first. */
type Concern = 'failing' | 'backlog growing' | 'breaker open' | 'disabled';
const concernOrder: readonly Concern[] = ['failing', 'backlog growing', 'breaker open', 'disabled'];

interface DestinationRow {
  id: string;
  name: string;
  enabled: boolean;
  stats: DestinationStatsSummary | undefined;
  concerns: Concern[];
}

/**
 * Overview: traffic charts over the last hour or day, and each destination's health, what
 * needs attention first. Its three reads go out together, and the figures and the table show
 * as soon as theirs are in: the charts' code loads beside them and never holds them up.
 */
export function OverviewPage(_props: PageProps) {
  const [window, setWindow] = useState<'1h' | '24h'>('1h');
  const stats = useApi<Stats>(statsPath, refreshMs);
  const series = useApi<Series>(seriesPath(window), refreshMs);
  const destinations = useApi<DestinationsWithStats>(destinationsPath, refreshMs);
  const rows = useDestinationRows(destinations.data);
  const loadingDestinations = destinations.data === undefined && destinations.error === undefined;
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
        {loadingDestinations ? (
          <Loading />
        ) : destinations.data === undefined ? (
          // The error itself is shown with the Destinations table below; here, that nothing is known.
          <p class="muted">Destination health unavailable.</p>
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
        {destinations.data === undefined && destinations.error !== undefined ? null : rows.length === 0 && !loadingDestinations ? (
          <p class="muted">No destination yet.</p>
        ) : (
          <DestinationTable rows={rows} />
        )}
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
      <LazyTimeChart title={`Events accepted ${per}`} summary={`${count(sum(accepted))} accepted in this window`} times={times} lines={acceptedLines} />
      <LazyTimeChart
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

/** The table's rows from the list with stats; a backlog is "growing" when pending rose since the list was last read. */
function useDestinationRows(listed: DestinationsWithStats | undefined): DestinationRow[] {
  const previous = useRef(new Map<string, number>());
  return useMemo(() => {
    if (listed === undefined) return [];
    const rows = listed.destinations.map((d) => ({
      id: d.id,
      name: d.name,
      enabled: d.enabled,
      stats: d.stats,
      concerns: concernsOf(d.enabled, d.stats, previous.current.get(d.id)),
    }));
    previous.current = new Map(rows.map((r) => [r.id, r.stats.pending]));
    return rows.sort(byUrgency);
  }, [listed]);
}

function concernsOf(enabled: boolean, s: DestinationStatsSummary | undefined, pendingBefore: number | undefined): Concern[] {
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
