import type { Command } from 'commander';
import type { DeliveryView } from '../../store/delivery-reads.js';
import type { AdminClient, Query } from '../admin-client.js';
import { adminClient, pageLimitFlag, timeFlag, type AdminFlags } from '../admin-command.js';
import { print, printJson, table, type Column } from '../output.js';

/** The filters of `ferry deliveries ls` and `ferry dead-letters ls`, as flags. */
export interface DeliveryFilterFlags extends AdminFlags {
  status?: string;
  destination?: string;
  source?: string;
  messageId?: string;
  user?: string;
  anonymousId?: string;
  event?: string;
  type?: string;
  since?: string;
  until?: string;
  limit?: string;
  after?: string;
  all?: boolean;
}

/**
 * A delivery as listings show it: today's fields, and those the search adds (`anonymousId`,
 * `type`, `event`, `receivedAt`) where the server sends them.
 */
export type ListedDelivery = DeliveryView & { anonymousId?: string | null; type?: string | null; event?: string | null; receivedAt?: string | null };

/** A page of a delivery listing, as the API answers it. */
export interface DeliveryPage {
  deliveries: ListedDelivery[];
  next: string | null;
}

/** Adds the filter flags; `withStatus` for `deliveries ls` (dead letters are all `dead`). */
export function withDeliveryFilters(command: Command, withStatus: boolean): Command {
  if (withStatus) command.option('--status <status>', 'pending, succeeded or dead');
  return command
    .option('--destination <id>', 'deliveries to this destination')
    .option('--source <id>', 'deliveries of events from this source')
    .option('--message-id <id>', 'deliveries of this messageId')
    .option('--user <userId>', 'deliveries of events with this userId')
    .option('--anonymous-id <id>', 'deliveries of events with this anonymousId')
    .option('--event <name>', 'deliveries of track events of this name')
    .option('--type <type>', 'deliveries of calls of this type (identify, track, page, screen, group, alias)')
    .option('--since <time>', 'received at or after: ISO 8601, or a span back from now (15m, 2h, 7d)')
    .option('--until <time>', 'received before: ISO 8601, or a span back from now')
    .option('--limit <n>', 'deliveries per page, 1 to 1000 (default 100; 1000 with --all)')
    .option('--after <cursor>', 'start after this cursor (the `next` of the page before)')
    .option('--all', 'follow `next` to the last page');
}

/** The API's query for the flags given: only those set, so a server without the search filters still answers the others. */
export function deliveryQuery(flags: DeliveryFilterFlags): Query {
  return {
    status: flags.status,
    destinationId: flags.destination,
    sourceId: flags.source,
    messageId: flags.messageId,
    userId: flags.user,
    anonymousId: flags.anonymousId,
    event: flags.event,
    type: flags.type,
    receivedAfter: timeFlag(flags.since, '--since'),
    receivedBefore: timeFlag(flags.until, '--until'),
    limit: pageLimitFlag(flags.limit) ?? (flags.all ? 1000 : undefined),
    after: flags.after,
  };
}

/** One page, or with `all` every page from the first: the deliveries and the `next` of the last page read. */
export async function listDeliveries(client: AdminClient, path: string, query: Query, all: boolean): Promise<DeliveryPage> {
  const page = await client.get<DeliveryPage>(path, query);
  const deliveries = [...page.deliveries];
  let next = page.next;
  while (all && next !== null) {
    const more = await client.get<DeliveryPage>(path, { ...query, after: next });
    deliveries.push(...more.deliveries);
    next = more.next;
  }
  return { deliveries, next };
}

const columns: Column<ListedDelivery>[] = [
  { heading: 'ID', value: (d) => d.id },
  { heading: 'STATUS', value: (d) => d.status },
  { heading: 'DESTINATION', value: (d) => d.destinationId, maxWidth: 24 },
  { heading: 'SOURCE', value: (d) => d.sourceId, maxWidth: 16 },
  { heading: 'KIND', value: (d) => (d.kind === 'event' && d.type ? d.type : d.kind) },
  { heading: 'EVENT', value: (d) => d.event, maxWidth: 24 },
  { heading: 'USER', value: (d) => d.userId ?? d.anonymousId, maxWidth: 24 },
  { heading: 'ATTEMPTS', value: (d) => d.attemptCount },
  { heading: 'CREATED', value: (d) => d.receivedAt ?? d.createdAt },
  // The last column is not cut: nothing after it needs aligning.
  { heading: 'LAST ERROR', value: (d) => (d.deadReason ? `${d.deadReason}: ${d.lastError ?? ''}` : d.lastError) },
];

/** Runs a listing and prints it: a table and where the next page starts, or the API's JSON. */
export function printDeliveryListing(path: string, flags: DeliveryFilterFlags, emptyText: string): Promise<void> {
  return printDeliveryListingOf(path, flags, deliveryQuery(flags), emptyText);
}

/** {@link printDeliveryListing} with a query of the caller's (a listing with filters of its own). */
export async function printDeliveryListingOf(path: string, flags: DeliveryFilterFlags, query: Query, emptyText: string): Promise<void> {
  const client = adminClient(flags);
  const page = await listDeliveries(client, path, query, flags.all === true);
  if (flags.json) return printJson(page);
  print(table(page.deliveries, columns, emptyText));
  if (page.next !== null) print(`more: --after ${page.next} (or --all)`);
}
