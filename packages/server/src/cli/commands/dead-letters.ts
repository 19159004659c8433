import type { Command } from 'commander';
import { adminGroup, timeFlag, withAdminFlags } from '../admin-command.js';
import { deliveryQuery, printDeliveryListingOf, withDeliveryFilters, type DeliveryFilterFlags } from './delivery-listing.js';

/** The flags of `ferry dead-letters ls`: the listing's, and when and how the letters died (the replay's filters). */
interface DeadLetterFlags extends DeliveryFilterFlags {
  errorClass?: string;
  deadSince?: string;
  deadUntil?: string;
}

/** `ferry dead-letters ls`. */
export function registerDeadLetters(program: Command): void {
  const group = adminGroup(program, 'dead-letters', 'list dead letters: deliveries that will not be attempted again unless replayed (ferry replay)');
  withDeliveryFilters(withAdminFlags(group.command('ls').description('list dead letters, oldest first, filtered')), false)
    .option('--error-class <class>', 'dead letters whose last attempt failed with this error class (see docs/errors.md)')
    .option('--dead-since <time>', 'dead-lettered at or after: ISO 8601, or a span back from now (15m, 2h, 7d)')
    .option('--dead-until <time>', 'dead-lettered before: ISO 8601, or a span back from now')
    .action((flags: DeadLetterFlags) =>
      printDeliveryListingOf(
        '/dead-letters',
        flags,
        {
          ...deliveryQuery(flags),
          errorClass: flags.errorClass,
          since: timeFlag(flags.deadSince, '--dead-since'),
          until: timeFlag(flags.deadUntil, '--dead-until'),
        },
        'no dead letters match',
      ),
    );
}
