/**
 * The configuration through a running server: `POST /config/plan` and `POST /config/apply`
 * take a configuration already resolved by the caller (`ferry config plan|apply --url`
 * expands the file's `${VAR}` references from its own environment), and `GET /config/export`
 * writes the store's catalogue as a file with its secrets as placeholders. The server never
 * expands `${…}` in what it is sent: a caller must not read the server's environment.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { formatIssue, validateConfig } from '../config/schema.js';
import { applyCatalog } from '../control/catalog-apply.js';
import { exportCatalog } from '../control/catalog-export.js';
import { planCatalog, summarizePlan } from '../control/catalog-plan.js';
import { readAppliedConfig } from '../control/applied-config.js';
import type { DesiredCatalog } from '../control/config-hash.js';
import { FerryError } from '../errors/error-codes.js';
import type { Catalog } from '../routing/catalog.js';
import type { CatalogStore } from '../store/catalog-store.js';
import type { Clock } from '../util/clock.js';
import { refuseUnknownKeys } from './unknown-keys.js';

/** What the configuration routes need. */
export interface ConfigRouteDeps {
  store: CatalogStore;
  catalog: Catalog;
  clock: Clock;
  /** Where an apply's changes are logged at `warn`, as a start's are. */
  logger: Logger;
}

/** The configuration a plan or an apply is sent: `{ "config": { "sources": [...], "destinations": [...] } }`. */
function desiredFrom(body: unknown, catalog: Catalog): DesiredCatalog {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new FerryError('bad_request', 'the body must be a JSON object: {"config": {"sources": [...], "destinations": [...]}}');
  refuseUnknownKeys(body, ['config'], 'key');
  const input = (body as { config?: unknown }).config;
  if (input === undefined) throw new FerryError('bad_request', 'config is required: {"config": {"sources": [...], "destinations": [...]}}', 'config');
  const result = validateConfig(input, catalog.types);
  if (!result.ok) {
    const first = result.issues[0];
    throw new FerryError(
      'invalid_settings',
      result.issues.map((issue) => `config.${formatIssue(issue)}`).join('; '),
      first === undefined || first.path === '' ? 'config' : `config.${first.path}`,
    );
  }
  return { sources: result.value.sources, destinations: result.value.destinations };
}

/**
 * Registers the configuration routes. An apply answers once the store holds the result and
 * this server's catalogue is reloaded; other nodes on a shared store pick it up at their next
 * catalogue refresh. Applies are carried out one at a time.
 */
export async function configRoutes(app: FastifyInstance, deps: ConfigRouteDeps): Promise<void> {
  const { store, catalog, clock, logger } = deps;
  let applying: Promise<unknown> = Promise.resolve();

  // A plan changes nothing: it is not an entry of the audit log.
  app.post('/config/plan', { config: { audit: { skip: true } } }, async (request) => {
    const desired = desiredFrom(request.body, catalog);
    const [stored, applied] = await Promise.all([store.loadCatalog(), readAppliedConfig(store)]);
    const changes = planCatalog(stored, desired, { types: catalog.types, applied });
    return { changes, summary: summarizePlan(changes), applied: false };
  });

  app.post('/config/apply', async (request) => {
    const desired = desiredFrom(request.body, catalog);
    const run = applying.then(async () => {
      const changes = await applyCatalog(store, desired, {
        types: catalog.types,
        logger: logger.child({ reqId: request.id }),
        clock,
        origin: 'POST /admin/v1/config/apply',
      });
      await catalog.reload();
      return changes;
    });
    applying = run.catch(() => {});
    const changes = await run;
    return { changes, summary: summarizePlan(changes), applied: true };
  });

  app.get('/config/export', async () => exportCatalog(await store.loadCatalog(), catalog.types, new Date(clock.now())));
}
