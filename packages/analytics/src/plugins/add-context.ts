import { AnalyticsError } from '../errors.js';
import type { ContextFields, Plugin } from './plugin.js';

/**
 * A plugin that adds fixed `context` fields to every call (an app's name and version, a
 * region...). A field the call sets itself in `context` wins over the fixed one.
 *
 * @example
 * analytics.register(addContext({ app: { name: 'checkout', version: '4.2.0' } }));
 */
export function addContext(fields: ContextFields): Plugin {
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
    throw new AnalyticsError('invalid_option', 'addContext: `fields` must be an object.');
  }
  const fixed = { ...fields };
  return {
    name: 'add-context',
    enrich(message) {
      const own = message['context'];
      const context = own !== null && typeof own === 'object' && !Array.isArray(own) ? { ...fixed, ...own } : own === undefined ? { ...fixed } : own;
      return { ...message, context };
    },
  };
}
