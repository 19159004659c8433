import type { Logger } from 'pino';
import type { z } from 'zod';
import type { DestinationConfig } from '../config/model.js';
import type { ExchangeResult } from '../model/attempt.js';
import type { NormalizedMessage } from '../model/message.js';
import type { ClaimedDelivery } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import type { WebhookSender } from './http/sender.js';

/** One user's changed membership of an audience or computed trait, to be told to a destination. */
export interface AudienceChangeNotice {
  userId: string;
  /** Stable for one membership change, so a retried or replayed sync deduplicates. */
  messageId: string;
  /** When the sync computed the change, ms since the epoch. */
  timestampMs: number;
  /** Usually one member: the audience name in snake_case mapped to `true`, `false` or a count. */
  traits: Record<string, unknown>;
}

/** What `POST /admin/v1/destinations/{id}/secrets/rotate` asks of a type. */
export interface SecretRotationRequest {
  /** Which of the type's secrets, as the caller names it (the Webhooks type: `standardWebhooks` or `sharedSecret`). */
  kind: string;
  nowMs: number;
  /** How long the secrets replaced keep signing beside the new one; 0 drops them at once. */
  overlapMs: number;
}

/** What a rotation made: the settings to store, and the new secret, to be shown once. */
export interface SecretRotation<S> {
  settings: S;
  secret: string;
  /** When the last secret replaced stops signing; null when there was none (or `overlapMs` was 0). */
  previousExpiresAtMs: number | null;
}

/** What an attempt may use besides its job and destination; one per worker, shared by every attempt. */
export interface AttemptContext {
  /** Each exchange must be answered within this time. */
  timeoutMs: number;
  clock: Clock;
  logger: Logger;
  /** The process's HTTP transport (connection pools, SSRF guard), for types that POST. */
  http: WebhookSender;
}

/**
 * A destination type: what a destination of this `type` is configured with, the bodies it
 * sends, and how one attempt of a delivery job is made. A type lives in a folder of its own
 * under `destinations/` and is known to Ferry by one line of `registry.ts`.
 *
 * A type takes deletion notices when it has {@link renderDeleteNotice}, and audience changes
 * when it has {@link renderAudienceChange}; without them it is sent neither.
 *
 * @typeParam S Its settings, as {@link settingsSchema} outputs them.
 */
export interface DestinationType<S = unknown> {
  /** The name in a destination's `type` and in a call's `integrations` map (case-sensitive). */
  readonly type: string;
  /**
   * Checks `settings` as the config file and the admin API give them; its output is what
   * {@link attempt} gets. Messages name the rule and never echo a secret.
   */
  readonly settingsSchema: z.ZodType<S>;
  /**
   * The body of one stored call. Rendered once per type for all its destinations, at
   * ingestion, and stored with each job: what is stored is sent, byte for byte.
   */
  renderMessage(message: NormalizedMessage): string;
  /** The body telling a destination that a user's data was deleted, at `timestampMs`. */
  renderDeleteNotice?(userId: string, timestampMs: number): string;
  /** The body telling a destination of one user's changed audience membership. */
  renderAudienceChange?(change: AudienceChangeNotice): string;
  /** Settings as the admin API shows them and logs carry them: no secret, ever. */
  redactSettings(settings: S): object;
  /**
   * Generates a new secret of `request.kind`, keeping the ones it replaces signing until
   * `nowMs + overlapMs` (their end stored in the settings, so every node and every restart
   * honours it), and dropping those already expired. A type without it has no secrets to
   * rotate. Its output settings must pass {@link settingsSchema} again.
   *
   * @throws FerryError `bad_request` for a kind it does not have, `conflict` when no more
   *   secrets can sign at once.
   */
  rotateSecret?(settings: S, request: SecretRotationRequest): SecretRotation<S>;
  /**
   * The targets an attempt of a destination makes one exchange with each (the Webhooks type:
   * its URLs), as its results name them in `url`. The circuit breaker keeps a circuit per
   * target; a type without it has no breaker.
   */
  targets?(settings: S): readonly string[];
  /**
   * Makes one attempt of a job: one exchange per target (the Webhooks type: each URL), all
   * of them over before it resolves. Failures are results, never thrown; what an attempt's
   * outcome is (done, retried, dead) the delivery stage decides from them.
   */
  attempt(job: ClaimedDelivery, destination: DestinationConfig<S>, ctx: AttemptContext): Promise<ExchangeResult[]>;
}

/**
 * A destination type of any settings: what a registry holds. Each type's schema checks the
 * settings its own attempts get, so a list of types of different settings forgets them.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the settings type is existential here (see above)
export type AnyDestinationType = DestinationType<any>;
