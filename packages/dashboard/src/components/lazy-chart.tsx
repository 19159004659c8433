import { useEffect, useState } from 'preact/hooks';
import type { ChartLine } from './chart.js';

type ChartModule = typeof import('./chart.js');

let loading: Promise<ChartModule> | undefined;
let loaded: ChartModule | undefined;
/** Charts showing that the code failed: a retry from any of them brings them all in. */
const waiting = new Set<(charts: ChartModule) => void>();

/**
 * Starts loading the chart code (uPlot, a chunk of its own) if it is not under way: called as
 * a page that shows charts renders, so the code comes in while the page's data does.
 */
export function loadCharts(): Promise<ChartModule> {
  return (loading ??= import('./chart.js').then(
    (m) => {
      loaded = m;
      for (const show of waiting) show(m);
      return m;
    },
    (error: unknown) => {
      // Asked again later (a retry, the next chart shown), the chunk is fetched again.
      loading = undefined;
      throw error;
    },
  ));
}

/**
 * A {@link import('./chart.js').TimeChart} whose code is loaded apart from the app's: what
 * the page has to say (figures, tables) is shown without waiting for it. Until it is in, an
 * empty box of the chart's default height, named for a screen reader, holds its place under
 * the chart's title; when it cannot be fetched, an error with a retry takes that place.
 */
export function LazyTimeChart(props: { title: string; summary: string; times: number[]; lines: ChartLine[]; height?: number }) {
  const [charts, setCharts] = useState<ChartModule | undefined>(loaded);
  const [failed, setFailed] = useState(false);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    waiting.add(setCharts);
    return () => void waiting.delete(setCharts);
  }, []);
  useEffect(() => {
    let live = true;
    if (charts === undefined)
      loadCharts().then(
        (m) => live && setCharts(m),
        () => live && setFailed(true),
      );
    return () => {
      live = false;
    };
  }, [attempt]);
  if (charts !== undefined) return <charts.TimeChart {...props} />;
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      {failed ? (
        <p class="notice notice-error" role="alert">
          Charts could not be loaded.{' '}
          <button
            type="button"
            onClick={() => {
              setFailed(false);
              setAttempt((n) => n + 1);
            }}
          >
            Retry
          </button>
        </p>
      ) : (
        <div class="chart-placeholder" role="img" aria-label={`${props.title}: loading`} aria-busy="true" />
      )}
    </figure>
  );
}
