import { Analytics as CoreAnalytics } from './analytics.js';
import type { Runtime } from './runtime.js';
import { nodeRuntime } from './runtime-node.js';

/**
 * A client bound to one write key. Calls are validated and queued synchronously and sent in
 * background batches to `{endpoint}/v1/batch` over keep-alive `node:net`/`node:https`
 * connections (`transport: 'fetch'` selects the standard `fetch`); call `close()` (or
 * `flush()` in a serverless handler) before the process ends.
 *
 * @example
 * import { Analytics } from '@ferry/analytics';
 * const analytics = new Analytics('WRITE_KEY', { endpoint: 'https://ferry.example.com' });
 * analytics.track({ userId: 'u1', event: 'Signed Up', properties: { plan: 'pro' } });
 * await analytics.close();
 */
export class Analytics extends CoreAnalytics {
  protected static override runtime: Runtime = nodeRuntime;
}
