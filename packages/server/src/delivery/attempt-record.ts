import type { AttemptRecord, AttemptTrigger, ExchangeResult } from '../model/attempt.js';
import { redactUrl } from '../util/redact.js';

/**
 * The attempt log's entry for one exchange, as the store records it: the target redacted
 * (query values and credentials hidden), the latency in whole ms, and null for what the
 * exchange did not have.
 */
export function attemptRecordOf(result: ExchangeResult, trigger: AttemptTrigger): AttemptRecord {
  return {
    url: redactUrl(result.url),
    startedAtMs: result.startedAtMs,
    latencyMs: Math.round(result.latencyMs),
    statusCode: result.statusCode ?? null,
    errorClass: result.errorClass ?? null,
    errorMessage: result.errorMessage ?? null,
    responseBody: result.responseBody ?? null,
    trigger,
  };
}
