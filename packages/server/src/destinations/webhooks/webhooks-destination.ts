import type { DestinationType } from '../destination-type.js';
import { attemptWebhooks } from './attempt.js';
import { buildAudienceIdentifyBody, buildDeleteBody, buildWebhookBody } from './body.js';
import { redactWebhooksSettings } from './redact-settings.js';
import { rotateWebhooksSecret } from './secret-rotation.js';
import type { WebhooksSettings } from './settings.js';
import { webhooksSettingsSchema } from './settings-schema.js';

/**
 * The Webhooks destination of `spec/webhooks-destination.md`: signed JSON POSTs to up to 5
 * URLs, with Standard Webhooks signatures beside `X-Signature` when configured. It takes
 * deletion notices and audience changes, and rotates its secrets.
 */
export const webhooksDestinationType: DestinationType<WebhooksSettings> = {
  type: 'Webhooks',
  settingsSchema: webhooksSettingsSchema,
  renderMessage: buildWebhookBody,
  renderDeleteNotice: buildDeleteBody,
  renderAudienceChange: buildAudienceIdentifyBody,
  redactSettings: redactWebhooksSettings,
  rotateSecret: rotateWebhooksSecret,
  targets: (settings) => settings.webhooks.map((w) => w.url),
  attempt: attemptWebhooks,
};
