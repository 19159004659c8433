import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { AuditEntry, AuditLog } from '../store/audit-log.js';

function pageLimit(raw: unknown): number {
  const n = raw === undefined ? 100 : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new FerryError('bad_request', 'limit must be an integer from 1 to 1000', 'limit');
  return n;
}

function cursor(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || !Number.isSafeInteger(n))
    throw new FerryError('bad_request', 'after must be the `next` of a previous page', 'after');
  return n;
}

/** An entry as the admin API shows it. */
function entryView(entry: AuditEntry) {
  return {
    id: entry.id,
    at: new Date(entry.atMs).toISOString(),
    tokenId: entry.tokenId,
    method: entry.method,
    path: entry.path,
    action: entry.action,
    object: entry.object,
    status: entry.status,
    error: entry.error,
    before: entry.before,
    after: entry.after,
  };
}

/**
 * `GET /audit?after&limit`: the audit log (see `audit.ts`), newest first, so the last changes
 * come first; `next` is the cursor of the next, older, page. Open to `read` tokens: entries
 * hold no secret, and who changed what is what an on-call reader looks for.
 */
export async function auditRoutes(app: FastifyInstance, log: AuditLog): Promise<void> {
  app.get<{ Querystring: { after?: string; limit?: string } }>('/audit', { config: { query: ['after', 'limit'] } }, async (request) => {
    const limit = pageLimit(request.query.limit);
    const entries = await log.list({ beforeId: cursor(request.query.after), limit });
    const last = entries.at(-1);
    return { entries: entries.map(entryView), next: entries.length === limit && last ? String(last.id) : null };
  });
}
