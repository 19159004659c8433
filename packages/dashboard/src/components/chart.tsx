import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

/** One line of a {@link TimeChart}. */
export interface ChartLine {
  label: string;
  values: number[];
  /** A CSS colour; the legend and the line share it. */
  color: string;
}

/**
 * A time series chart (uPlot, drawn on a canvas): `times` in seconds since the epoch. The
 * canvas says nothing to a screen reader, so `summary` (the totals) labels the figure.
 */
export function TimeChart(props: { title: string; summary: string; times: number[]; lines: ChartLine[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const options: uPlot.Options = {
      width: Math.max(el.clientWidth, 240),
      height: props.height ?? 220,
      series: [{}, ...props.lines.map((l) => ({ label: l.label, stroke: l.color, width: 2, points: { show: false } }))],
      axes: [
        { stroke: '#4b5563', grid: { stroke: '#e5e7eb' } },
        { stroke: '#4b5563', grid: { stroke: '#e5e7eb' }, size: 50 },
      ],
      scales: { x: { time: true } },
      legend: { live: false },
      cursor: { drag: { x: false, y: false } },
    };
    const data: uPlot.AlignedData = [props.times, ...props.lines.map((l) => l.values)];
    plot.current = new uPlot(options, data, el);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(el.clientWidth, 240), height: props.height ?? 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
    // The chart is rebuilt when its lines change shape; new values go through setData below.
  }, [props.lines.map((l) => l.label).join('|'), props.height]);

  useEffect(() => {
    plot.current?.setData([props.times, ...props.lines.map((l) => l.values)]);
  }, [props.times, props.lines]);

  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={box} role="img" aria-label={`${props.title}: ${props.summary}`} />
    </figure>
  );
}
