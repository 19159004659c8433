import { randomBytes } from 'node:crypto';
import { generateStandardWebhookSecret } from '@ferry/webhooks';
import { FerryError } from '../../errors/error-codes.js';
import { formatUtcMs } from '../../model/timestamps.js';
import type { SecretRotation, SecretRotationRequest } from '../destination-type.js';
import type { SigningSecret, WebhooksSettings } from './settings.js';
import { webhooksLimits } from './settings-schema.js';

/** The kinds of secret a Webhooks destination rotates. */
export const webhooksSecretKinds = ['standardWebhooks', 'sharedSecret'] as const;

/**
 * Rotates a Webhooks destination's `standardWebhooks` or `sharedSecret` (docs/admin-api.md):
 * a new secret signs from now on, and every secret it replaces keeps signing until
 * `nowMs + overlapMs` (an earlier end it already had stays), after which each node ignores it
 * at signing time; those already past their end are dropped here. A kind the destination did
 * not have yet is started with the new secret alone.
 *
 * Standard Webhooks carries every signature in one header, so the new secret joins the list
 * (first). `X-Signature` carries one, so the current `sharedSecret` moves to
 * `previousSharedSecrets` (newest first) and `X-Signature` keeps the oldest one until it
 * expires (see `signaturesFor`).
 */
export function rotateWebhooksSecret(settings: WebhooksSettings, request: SecretRotationRequest): SecretRotation<WebhooksSettings> {
  const { kind, nowMs, overlapMs } = request;
  const endMs = nowMs + overlapMs;
  // What still signs after the rotation: not expired now, and kept only with an overlap.
  const replaced = (list: readonly SigningSecret[]): Required<SigningSecret>[] =>
    overlapMs <= 0
      ? []
      : list
          .map((e) => ({ secret: e.secret, untilMs: Math.min(e.expiresAt === undefined ? Infinity : Date.parse(e.expiresAt), endMs) }))
          .filter((e) => e.untilMs > nowMs)
          .map((e) => ({ secret: e.secret, expiresAt: formatUtcMs(e.untilMs) }));
  const lastEnd = (list: readonly Required<SigningSecret>[]): number | null =>
    list.length === 0 ? null : Math.max(...list.map((e) => Date.parse(e.expiresAt)));

  if (kind === 'standardWebhooks') {
    const kept = replaced(settings.standardWebhooks?.secrets ?? []);
    const max = webhooksLimits.maxStandardWebhooksSecrets;
    if (kept.length + 1 > max) {
      throw new FerryError(
        'conflict',
        `${kept.length} Standard Webhooks secrets still sign for this destination, and at most ${max} can at once; wait until one expires (the first at ${formatUtcMs(Math.min(...kept.map((e) => Date.parse(e.expiresAt))))}), or rotate with "overlapSeconds": 0 to drop them all`,
        'kind',
      );
    }
    const secret = generateStandardWebhookSecret(32);
    return { settings: { ...settings, standardWebhooks: { secrets: [{ secret }, ...kept] } }, secret, previousExpiresAtMs: lastEnd(kept) };
  }
  if (kind === 'sharedSecret') {
    const current: SigningSecret[] = settings.sharedSecret === undefined ? [] : [{ secret: settings.sharedSecret }];
    const kept = replaced([...current, ...(settings.previousSharedSecrets ?? [])]);
    const max = webhooksLimits.maxPreviousSharedSecrets;
    if (kept.length > max) {
      throw new FerryError(
        'conflict',
        `${kept.length} shared secrets would still sign for this destination, and at most ${max} previous ones can; wait until one expires, or rotate with "overlapSeconds": 0 to drop them all`,
        'kind',
      );
    }
    // 32 random bytes, as text that survives a YAML file, an environment variable and a shell.
    const secret = randomBytes(32).toString('base64url');
    const next: WebhooksSettings = { ...settings, sharedSecret: secret };
    if (kept.length > 0) next.previousSharedSecrets = kept;
    else delete next.previousSharedSecrets;
    return { settings: next, secret, previousExpiresAtMs: lastEnd(kept) };
  }
  throw new FerryError('bad_request', `kind must be one of ${webhooksSecretKinds.join(', ')}`, 'kind');
}
