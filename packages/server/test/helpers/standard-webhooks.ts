import { mock } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { IncomingHttpHeaders } from 'node:http';

/** A `whsec_` secret of `bytes` bytes, each `fill`: distinct fills make distinct secrets. */
export function whsec(fill: number, bytes = 32): string {
  return 'whsec_' + Buffer.alloc(bytes, fill).toString('base64');
}

/**
 * Whether the reference `standardwebhooks` package accepts a request for `secret`, its clock
 * set to `atMs`: it reads `Date.now()` itself, so Date is mocked around the one call.
 */
export function referenceVerifies(secret: string, body: Buffer | string, headers: IncomingHttpHeaders, atMs: number): boolean {
  mock.timers.enable({ apis: ['Date'], now: atMs });
  try {
    new Webhook(secret).verify(body.toString(), headers as Record<string, string>, { jsonParse: false });
    return true;
  } catch {
    return false;
  } finally {
    mock.timers.reset();
  }
}
