import type { DestinationType } from '../destination-type.js';
import { attemptWebhooks } from './attempt.js';
import { buildAudienceIdentifyBody, buildDeleteBody, buildWebhookBody } from './body.js';
import { redactWebhooksSettings } from './redact-settings.js';
import type { WebhooksSettings } from './settings.js';
import { webhooksSettingsSchema } from './settings-schema.js';

/**
 * The Webhooks destination of `spec/webhooks-destination.md`: signed JSON POSTs to up to 5
 * URLs. It takes deletion notices and audience changes.
 */
export const webhooksDestinationType: DestinationType<WebhooksSettings> = {
  type: 'Webhooks',
  settingsSchema: webhooksSettingsSchema,
  renderMessage: buildWebhookBody,
  renderDeleteNotice: buildDeleteBody,
  renderAudienceChange: buildAudienceIdentifyBody,
  redactSettings: redactWebhooksSettings,
  attempt: attemptWebhooks,
};
