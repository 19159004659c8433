import { createListener, formatEvent, formatRejection } from '@ferry/webhooks';

/** Options of `ferry listen`. */
export interface ListenOptions {
  port: string;
  host: string;
  secret?: string;
  path?: string;
}

/** `ferry listen`: a local receiver that verifies each arriving webhook and prints it. */
export async function listenCommand(options: ListenOptions): Promise<void> {
  const secret = options.secret ?? process.env['FERRY_LISTEN_SECRET'];
  const listener = createListener({
    port: Number(options.port),
    host: options.host,
    secret,
    onEvent: (event) => void process.stdout.write(formatEvent(event) + '\n'),
    onRejected: (rejection) => void process.stdout.write(formatRejection(rejection) + '\n'),
  });
  await listener.start();
  process.stdout.write(`Listening for webhooks on ${listener.url}${secret ? ' (verifying X-Signature)' : ' (no secret: signatures are not checked)'}\n`);
  const stop = () =>
    void listener.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
