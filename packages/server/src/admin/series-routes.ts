import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import { seriesWindows, type ActivitySeries, type SeriesWindow } from '../metrics/activity-series.js';

const windows = Object.keys(seriesWindows) as SeriesWindow[];

/**
 * `GET /series?window=1h|24h` (default `1h`): what the nodes did per bucket of the window,
 * `{"bucketSeconds","buckets":[{"t","accepted","delivered","retried","dead"}]}`, oldest first,
 * ending with the current bucket, zero-filled (see `metrics/activity-series.ts`).
 */
export async function seriesRoutes(app: FastifyInstance, series: Pick<ActivitySeries, 'series'>): Promise<void> {
  app.get<{ Querystring: { window?: string } }>('/series', { config: { query: ['window'] } }, async (request) => {
    const window = request.query.window ?? '1h';
    if (!(windows as string[]).includes(window))
      throw new FerryError('bad_request', `window must be one of ${windows.join(', ')} (got ${JSON.stringify(window).slice(0, 40)})`, 'window');
    return series.series(window as SeriesWindow);
  });
}
