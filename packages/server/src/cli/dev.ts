import { createListener, formatEvent, type ReceivedWebhook } from '@ferry/webhooks';
import { displayUrl, startFromSettings } from './serve.js';
import { readSettings } from './settings.js';
import { stopOnSignals } from './stop-on-signals.js';
import type { DestinationConfig } from '../config/model.js';
import type { WebhooksSettings } from '../destinations/webhooks/settings.js';
import { webhooksDestinationType } from '../destinations/webhooks/webhooks-destination.js';

/** The demo shows a webhook arrive, so it follows the Webhooks destinations of the config. */
function isWebhooks(d: DestinationConfig): d is DestinationConfig<WebhooksSettings> {
  return d.type === webhooksDestinationType.type;
}

/** Options of `ferry dev`. */
export interface DevOptions {
  config?: string;
  port?: string;
  data?: string;
  listenPort: string;
}

/**
 * `ferry dev` (what `npm start` runs): the server on the embedded store with the example
 * config, plus a local receiver on the demo webhook URL, then one track call sent through the
 * public API so that the whole path (ingest, store, sign, deliver, verify) is seen to work.
 * Private networks are allowed here, and only here, because the receiver is on loopback.
 */
export async function devCommand(options: DevOptions): Promise<void> {
  // The demo tells its own story on stdout: the server's log shows warnings and errors only,
  // unless FERRY_LOG_LEVEL asks for more.
  const env = { ...process.env, FERRY_ALLOW_PRIVATE_NETWORKS: '1', FERRY_LOG_LEVEL: process.env['FERRY_LOG_LEVEL'] || 'warn' };
  // Loopback only, and no drain: nothing balances load in front of a demo.
  const settings = readSettings({ config: options.config, port: options.port, data: options.data, host: '127.0.0.1', drainMs: '0' }, env);
  const print = (line: string) => process.stdout.write(line + '\n');

  let firstArrival: (event: ReceivedWebhook) => void = () => {};
  const arrived = new Promise<ReceivedWebhook>((r) => (firstArrival = r));
  const config0 = await import('../config/load.js').then((m) => m.applyEnvironment(m.loadConfigFile(settings.configPath, env), env));
  const demo = config0.destinations.filter(isWebhooks).find((d) => d.enabled && d.settings.webhooks.length > 0);
  const listener = createListener({
    port: Number(options.listenPort),
    host: '127.0.0.1',
    secret: demo?.settings.sharedSecret,
    onEvent: (event) => {
      print(formatEvent(event));
      firstArrival(event);
    },
  });
  await listener.start();

  // The example config names the receiver's default address; follow the receiver if it got another port.
  const configured = demo ? new URL(demo.settings.webhooks[0]!.url).origin : undefined;
  const actual = new URL(listener.url!).origin;
  const { ferry, url } = await startFromSettings(settings, env, (config) =>
    configured === undefined || configured === actual
      ? config
      : {
          ...config,
          destinations: config.destinations.map((d) =>
            isWebhooks(d)
              ? {
                  ...d,
                  settings: {
                    ...d.settings,
                    webhooks: d.settings.webhooks.map((w) => (new URL(w.url).origin === configured ? { ...w, url: actual + new URL(w.url).pathname } : w)),
                  },
                }
              : d,
          ),
        },
  );
  stopOnSignals(ferry, print, settings.drainMs);
  const base = displayUrl(url);
  const source = config0.sources[0];
  print('');
  print(`Ferry is running on the embedded SQLite store in ${settings.dataDir}`);
  print(`  ingestion URL: ${base}/v1/batch`);
  if (source) print(`  write key (source "${source.id}"): ${source.writeKey}`);
  if (ferry.generatedAdminToken) print(`  admin token (shown once): ${ferry.generatedAdminToken}`);
  print(`  webhook receiver: ${listener.url}${demo?.settings.sharedSecret ? ' (verifying X-Signature)' : ''}`);
  if (source) {
    print('');
    print('Send a track call:');
    print(
      `  curl -u '${source.writeKey}:' -H 'Content-Type: application/json' ${base}/v1/track -d '{"userId":"user-1","event":"Signed Up","properties":{"plan":"pro"}}'`,
    );
    print('');
    const auth = 'Basic ' + Buffer.from(`${source.writeKey}:`).toString('base64');
    const response = await fetch(`${base}/v1/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: auth },
      body: JSON.stringify({ userId: 'demo-user', event: 'Ferry Demo Started', properties: { source: 'npm start' } }),
    });
    print(`Sent a demo track call: HTTP ${response.status}. Waiting for it at the receiver…`);
    const timer = setTimeout(() => print('No webhook arrived within 15 s: check the destination settings in the config file.'), 15_000);
    timer.unref();
    const event = await arrived;
    clearTimeout(timer);
    print(event.verified ? '✓ webhook delivered and its signature verified' : '✓ webhook delivered (no shared secret configured, so nothing to verify)');
  }
  print('Press Ctrl+C to stop.');
  process.on('exit', () => void listener.close());
}
