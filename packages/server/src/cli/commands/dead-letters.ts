import type { Command } from 'commander';
import { adminGroup, withAdminFlags } from '../admin-command.js';
import { printDeliveryListing, withDeliveryFilters, type DeliveryFilterFlags } from './delivery-listing.js';

/** `ferry dead-letters ls`. */
export function registerDeadLetters(program: Command): void {
  const group = adminGroup(program, 'dead-letters', 'list dead letters: deliveries that will not be attempted again unless replayed (ferry replay)');
  withDeliveryFilters(withAdminFlags(group.command('ls').description('list dead letters, oldest first, filtered')), false).action(
    (flags: DeliveryFilterFlags) => printDeliveryListing('/dead-letters', flags, 'no dead letters match'),
  );
}
