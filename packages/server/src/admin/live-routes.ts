import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { FerryEvents } from '../events/catalogue.js';
import type { EventBus } from '../events/event-bus.js';
import { formatUtcMs } from '../model/timestamps.js';
import type { WatchedSources } from '../ingest/watched-sources.js';
import type { Catalog } from '../routing/catalog.js';
import type { EventStreams } from './event-streams.js';

/** What `GET /sources/{id}/live` needs. */
export interface LiveDeps {
  events: EventBus;
  catalog: Catalog;
  /** The admin API's streams, whose cap, heartbeat and stop it shares with `GET /tail`. */
  streams: EventStreams;
  /** Where a stream marks its source watched, so that ingestion emits `ingest:message` for it. */
  watched: WatchedSources;
}

/**
 * `GET /sources/{id}/live`: the messages of one source as this node stores them, as
 * server-sent events, one `message` event each: `data: {"receivedAt","message","routedTo",
 * "filtered"}`, `message` the normalised message as stored. Duplicates are not streamed. The
 * stream is a listener of `ingest:message`, which ingestion emits only for the sources a
 * stream watches ({@link WatchedSources}).
 */
export async function liveRoutes(app: FastifyInstance, deps: LiveDeps): Promise<void> {
  const { events, catalog, streams, watched } = deps;
  app.get<{ Params: { id: string } }>('/sources/:id/live', async (request, reply) => {
    const sourceId = request.params.id;
    if (!catalog.source(sourceId)) throw new FerryError('not_found', `no source ${sourceId}`);
    return streams.send(reply, `ferry live: source ${sourceId}`, (write) => {
      const listener = (p: FerryEvents['ingest:message']) => {
        if (p.sourceId !== sourceId) return;
        // The stored JSON goes out as it is: parsing it to write it again would cost the ingesting stage.
        write(
          `event: message\ndata: {"receivedAt":${JSON.stringify(formatUtcMs(p.receivedAtMs))},"message":${p.json},"routedTo":${JSON.stringify(p.routedTo)},"filtered":${JSON.stringify(p.filtered)}}\n\n`,
        );
      };
      events.on('ingest:message', listener);
      const unwatch = watched.watch(sourceId);
      return () => {
        unwatch();
        events.off('ingest:message', listener);
      };
    });
  });
}
