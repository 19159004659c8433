import { createListener, formatEvent, formatRejection } from '@ferry/webhooks';

/** Options of `ferry listen`. */
export interface ListenOptions {
  port: string;
  host: string;
  secret?: string;
  /** Standard Webhooks secrets (`--whsec`, repeatable: give both during a rotation). */
  whsec?: string[];
  path?: string;
}

/** Collects a repeatable option's values, for commander. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/**
 * `ferry listen`: a local receiver that verifies each arriving webhook (X-Signature with
 * `--secret`, Standard Webhooks with `--whsec`) and prints it with both verdicts.
 */
export async function listenCommand(options: ListenOptions): Promise<void> {
  const secret = options.secret ?? process.env['FERRY_LISTEN_SECRET'];
  // The variable may hold several secrets, space-separated, as webhook-signature lists them.
  const whsec = options.whsec ?? (process.env['FERRY_LISTEN_WHSEC'] ?? '').split(' ').filter((s) => s !== '');
  let listener;
  try {
    listener = createListener({
      port: Number(options.port),
      host: options.host,
      secret,
      standardWebhooksSecrets: whsec,
      onEvent: (event) => void process.stdout.write(formatEvent(event) + '\n'),
      onRejected: (rejection) => void process.stdout.write(formatRejection(rejection) + '\n'),
    });
  } catch (error) {
    throw new Error(`--whsec: ${error instanceof Error ? error.message : String(error)}`);
  }
  await listener.start();
  const checks = [
    secret ? 'verifying X-Signature' : 'no --secret: X-Signature is not checked',
    whsec.length > 0
      ? `verifying Standard Webhooks with ${whsec.length} secret${whsec.length > 1 ? 's' : ''}`
      : 'no --whsec: Standard Webhooks are not checked',
  ];
  process.stdout.write(`Listening for webhooks on ${listener.url} (${checks.join('; ')})\n`);
  const stop = () =>
    void listener.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
