import type { Command } from 'commander';
import type { AttemptView } from '../../store/delivery-reads.js';
import { adminClient, adminGroup, deliveryIdArg, withAdminFlags, type AdminFlags } from '../admin-command.js';
import { fields, print, printJson, table } from '../output.js';
import { printDeliveryListing, withDeliveryFilters, type DeliveryFilterFlags, type ListedDelivery } from './delivery-listing.js';

/** `GET /deliveries/{id}`: the delivery, the bytes it sends and its attempt log. */
type DeliveryDetail = ListedDelivery & { body: string; attempts: AttemptView[] };

/** The body as a person reads it: indented when it is JSON (it always is for the built-in types). */
function readableBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** `ferry deliveries ls|show|replay`. */
export function registerDeliveries(program: Command): void {
  const group = adminGroup(program, 'deliveries', 'list and inspect deliveries (one event for one destination) and their attempts');

  withDeliveryFilters(withAdminFlags(group.command('ls').description('list deliveries, oldest first, filtered')), true).action((flags: DeliveryFilterFlags) =>
    printDeliveryListing('/deliveries', flags, 'no deliveries match'),
  );

  withAdminFlags(
    group.command('show').description('show one delivery: its fields, the body it sends, and every attempt').argument('<id>', 'delivery id'),
  ).action(async (id: string, flags: AdminFlags) => {
    const detail = await adminClient(flags).get<DeliveryDetail>(`/deliveries/${deliveryIdArg(id)}`);
    if (flags.json) return printJson(detail);
    const { body, attempts, ...delivery } = detail;
    print(fields(Object.entries(delivery)));
    print(`\nbody:\n${readableBody(body)}\n`);
    print(
      table(
        attempts,
        [
          { heading: 'STARTED', value: (a) => a.startedAt },
          { heading: 'TRIGGER', value: (a) => a.trigger },
          { heading: 'STATUS', value: (a) => a.statusCode },
          { heading: 'LATENCY', value: (a) => `${a.latencyMs}ms` },
          { heading: 'ERROR', value: (a) => (a.errorClass ? `${a.errorClass}: ${a.errorMessage ?? ''}` : null), maxWidth: 50 },
          { heading: 'URL', value: (a) => a.url },
          { heading: 'RESPONSE', value: (a) => a.responseBody, maxWidth: 60 },
        ],
        'attempts: none yet',
      ),
    );
  });

  withAdminFlags(
    group
      .command('replay')
      .description('send one finished delivery again, delivered or dead: the same body and messageId, a fresh retry window')
      .argument('<id>', 'delivery id'),
  ).action(async (id: string, flags: AdminFlags) => {
    const n = deliveryIdArg(id);
    const { body } = await adminClient(flags).request<{ replayed: number }>('POST', `/deliveries/${n}/replay`, {}, undefined);
    if (flags.json) return printJson(body);
    print(`replayed delivery ${n}: pending again, with the same body and messageId`);
  });
}
