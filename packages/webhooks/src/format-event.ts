import { dedupKey } from './dedup-key.js';
import type { ReceivedWebhook, RejectedWebhook } from './listener.js';
import type { StandardWebhookVerdict } from './standard-webhooks.js';

/**
 * Renders one accepted webhook as two lines for a terminal, e.g.
 *
 * ```text
 * 2026-01-02T03:04:05.678Z POST /hooks  track "Order Completed"
 *   key=backend/msg_1 userId=user_42  X-Signature ✓ verified  Standard Webhooks ✓ verified (webhook-id msg_1)
 * ```
 *
 * Both verdicts are shown: `X-Signature` (the spec's) and, when the request carries
 * `webhook-signature` or `whsec_` secrets were given, Standard Webhooks.
 *
 * `key` is the {@link dedupKey} to deduplicate on; a request it cannot be made for (no
 * `X-Ferry-Source` header) shows its `messageId` instead. The body is read defensively: a
 * field that is missing or not a string is left out, so any JSON object can be printed.
 *
 * @example
 * ```ts
 * createListener({ onEvent: (event) => console.log(formatEvent(event)) });
 * ```
 */
export function formatEvent(event: ReceivedWebhook): string {
  const body = event.body as unknown as Record<string, unknown>;
  const type = text(body['type']) ?? '(no type)';
  const head = `${timeOf(event.receivedAtMs)} ${event.method} ${event.path}  ${type}${describe(type, body)}`;

  const key = dedupKey(event.headers, body);
  const ids = key === undefined ? [] : [`key=${key}`];
  for (const name of key === undefined ? (['messageId', 'userId', 'anonymousId'] as const) : (['userId', 'anonymousId'] as const)) {
    const value = text(body[name]);
    if (value !== undefined) ids.push(`${name}=${value}`);
  }
  const signature = [xSignatureText(event), standardWebhooksText(event.headers, event.verdicts?.standardWebhooks)].filter((t) => t !== undefined).join('  ');
  const details = ids.length > 0 ? `${ids.join(' ')}  ${signature}` : signature;
  return `${head}\n  ${details}`;
}

/**
 * Renders one refused request as a line for a terminal, e.g.
 * `2026-01-02T03:04:05.678Z POST /hooks  ✗ 401 signature ✗ invalid: X-Signature does not match ...`.
 *
 * @example
 * ```ts
 * createListener({ secret, onRejected: (r) => console.log(formatRejection(r)) });
 * ```
 */
export function formatRejection(rejection: RejectedWebhook): string {
  const what =
    rejection.code === 'invalid_signature'
      ? 'signature ✗ invalid'
      : rejection.code === 'missing_signature'
        ? 'signature ✗ missing'
        : rejection.code === 'invalid_standard_webhook'
          ? 'Standard Webhooks ✗ invalid'
          : rejection.code;
  const line = `${timeOf(rejection.receivedAtMs)} ${rejection.method} ${rejection.path}  ✗ ${rejection.statusCode} ${what}: ${rejection.message}`;
  const verdicts = rejection.verdicts;
  if (verdicts === undefined) return line;
  const both = [
    xSignatureText({ verified: verdicts.xSignature === 'verified', verdicts, headers: rejection.headers }),
    standardWebhooksText(rejection.headers, verdicts.standardWebhooks),
  ];
  return `${line}\n  ${both.filter((t) => t !== undefined).join('  ')}`;
}

function xSignatureText(event: Pick<ReceivedWebhook, 'verified' | 'verdicts' | 'headers'>): string {
  switch (event.verdicts?.xSignature ?? (event.verified ? 'verified' : 'unchecked')) {
    case 'verified':
      return 'X-Signature ✓ verified';
    case 'missing':
      return 'X-Signature ✗ missing';
    case 'invalid':
      return 'X-Signature ✗ invalid';
    default:
      return event.headers['x-signature'] !== undefined ? 'X-Signature not checked (no secret given)' : 'unsigned (no secret given)';
  }
}

function standardWebhooksText(headers: ReceivedWebhook['headers'], verdict: StandardWebhookVerdict | undefined): string | undefined {
  if (verdict === undefined) return headers['webhook-signature'] !== undefined ? 'Standard Webhooks not checked (no whsec_ secret given)' : undefined;
  return verdict.ok ? `Standard Webhooks ✓ verified (webhook-id ${verdict.id})` : `Standard Webhooks ✗ ${verdict.reason}: ${verdict.message}`;
}

function describe(type: string, body: Record<string, unknown>): string {
  switch (type) {
    case 'track':
      return quoted(body['event']);
    case 'page':
    case 'screen':
      return quoted(body['name']);
    case 'group': {
      const groupId = text(body['groupId']);
      return groupId === undefined ? '' : ` groupId=${groupId}`;
    }
    case 'alias': {
      const previous = text(body['Previous ID']);
      const next = text(body['User ID']);
      return previous === undefined && next === undefined ? '' : ` ${previous ?? '?'} → ${next ?? '?'}`;
    }
    default:
      return '';
  }
}

function quoted(value: unknown): string {
  const s = text(value);
  return s === undefined ? '' : ` ${JSON.stringify(s)}`;
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function timeOf(ms: number): string {
  return new Date(ms).toISOString();
}
