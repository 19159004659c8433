import type { FastifyInstance } from 'fastify';
import { validateRetentionPatch } from '../config/retention-schema.js';
import { formatIssue } from '../config/schema-rules.js';
import { FerryError } from '../errors/error-codes.js';
import { loadRetention, saveRetention } from '../retention/retention-settings.js';
import type { CatalogStore } from '../store/catalog-store.js';

/**
 * `GET /retention`: days kept per kind (0: forever), as every node prunes by them.
 * `PATCH /retention`: changes the kinds the body names (the others stay), written to the
 * store, so every node prunes by it from its next run; audited as `retention.update`. A value
 * out of range or an unknown kind is refused with `invalid_settings` and changes nothing.
 */
export async function retentionRoutes(app: FastifyInstance, store: Pick<CatalogStore, 'getSetting' | 'setSetting'>): Promise<void> {
  app.get('/retention', async () => loadRetention(store));
  app.patch('/retention', { config: { audit: { action: 'retention.update', kind: 'retention' } } }, async (request) => {
    const body = request.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      throw new FerryError('bad_request', 'the body must be a JSON object of days per kind, e.g. {"events": 30}');
    const result = validateRetentionPatch(body);
    if (!result.ok) {
      const first = result.issues[0];
      throw new FerryError('invalid_settings', result.issues.map(formatIssue).join('; '), first?.path || undefined);
    }
    const next = { ...(await loadRetention(store)), ...result.patch };
    await saveRetention(store, next);
    return next;
  });
}
