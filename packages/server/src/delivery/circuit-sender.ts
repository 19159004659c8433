import type { DestinationConfig } from '../config/model.js';
import type { SendRequest, SendResult, WebhookSender } from '../destinations/http/sender.js';
import type { Clock } from '../util/clock.js';
import type { CircuitBreakers } from './circuit-breaker.js';

/**
 * The transport a destination's attempts send through while its breaker is on: each exchange
 * asks the breaker first. A URL with no room (open, its probe out, its ramp full) is not
 * requested; its result is `circuit_open`, which the retry policy treats as a temporary
 * failure of that URL, so another URL's 2xx still ends the event and otherwise it is retried.
 * Every result of an exchange that went out is told to the breaker before the attempt ends.
 */
export function circuitSender(breakers: CircuitBreakers, destination: DestinationConfig, sender: WebhookSender, clock: Clock): WebhookSender {
  return {
    send(request: SendRequest): Promise<SendResult> {
      const admission = breakers.admit(destination, request.url);
      if (admission === 'skip') {
        return Promise.resolve({
          url: request.url,
          startedAtMs: clock.now(),
          latencyMs: 0,
          errorClass: 'circuit_open',
          errorMessage: 'not sent: the circuit breaker of this URL is open',
        });
      }
      return sender.send(request).then((result) => {
        breakers.record(destination, request.url, admission, result);
        return result;
      });
    },
    close: () => sender.close(),
  };
}
