import { useEffect, useState } from 'preact/hooks';
import type { ChartLine } from './chart.js';

type ChartModule = typeof import('./chart.js');

let loading: Promise<ChartModule> | undefined;
let loaded: ChartModule | undefined;

/**
 * Starts loading the chart code (uPlot, a chunk of its own) if it is not under way: called as
 * a page that shows charts renders, so the code comes in while the page's data does.
 */
export function loadCharts(): Promise<ChartModule> {
  return (loading ??= import('./chart.js').then(
    (m) => (loaded = m),
    (error: unknown) => {
      // Asked again later (the next chart shown), the chunk is fetched again.
      loading = undefined;
      throw error;
    },
  ));
}

/**
 * A {@link import('./chart.js').TimeChart} whose code is loaded apart from the app's: what
 * the page has to say (figures, tables) is shown without waiting for it. Until it is in, an
 * empty box of the chart's default height holds its place under the chart's title.
 */
export function LazyTimeChart(props: { title: string; summary: string; times: number[]; lines: ChartLine[]; height?: number }) {
  const [charts, setCharts] = useState<ChartModule | undefined>(loaded);
  useEffect(() => {
    let live = true;
    if (charts === undefined)
      loadCharts().then(
        (m) => live && setCharts(m),
        () => undefined,
      );
    return () => {
      live = false;
    };
  }, []);
  if (charts !== undefined) return <charts.TimeChart {...props} />;
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div class="chart-placeholder" aria-busy="true" />
    </figure>
  );
}
