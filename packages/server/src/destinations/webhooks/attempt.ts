import type { DestinationConfig } from '../../config/model.js';
import type { ExchangeResult } from '../../model/attempt.js';
import type { ClaimedDelivery } from '../../store/store.js';
import type { AttemptContext } from '../destination-type.js';
import type { SendResult } from '../http/sender.js';
import { signaturesFor, sourceHeaderValue, webhookHeaders } from './request.js';
import type { WebhookEntry, WebhooksSettings } from './settings.js';

/**
 * One attempt of a Webhooks delivery: the stored body, signed once for this attempt (the
 * Standard Webhooks timestamp is the attempt's), POSTed to every URL of the destination at the
 * same time, each with its static headers and Ferry's own.
 */
export function attemptWebhooks(job: ClaimedDelivery, destination: DestinationConfig<WebhooksSettings>, ctx: AttemptContext): Promise<ExchangeResult[]> {
  const body = Buffer.from(job.body);
  const signatures = signaturesFor(destination.settings, job, body, ctx.clock.now());
  const source = sourceHeaderValue(job);
  const { webhooks } = destination.settings;
  const sendTo = (entry: WebhookEntry): Promise<SendResult> =>
    ctx.http.send({ url: entry.url, headers: webhookHeaders(entry, signatures, source), body, timeoutMs: ctx.timeoutMs });
  // Most destinations have one URL: no array of promises to gather for it, and (not async) no
  // promise of this function's own around its exchange. Anything thrown above reaches the
  // worker as a rejection would: it awaits this inside a try.
  return webhooks.length === 1 ? sendTo(webhooks[0]!).then(alone) : Promise.all(webhooks.map(sendTo));
}

const alone = (result: SendResult): ExchangeResult[] => [result];
