import * as init from './001-init.js';
import * as audiences from './002-audiences.js';
import * as claimOrder from './003-claim-order.js';
import * as deliveryQueue from './004-delivery-queue.js';
import * as firstAttemptLog from './005-first-attempt-log.js';
import * as deletion from './006-deletion.js';
import * as linkedIdentities from './007-linked-identities.js';
import * as searchAndReplayJobs from './008-search-and-replay-jobs.js';
import * as tokensAndAudit from './009-tokens-and-audit.js';
import * as deadLettersByDestination from './010-dead-letters-by-destination.js';
import * as endpointProtection from './011-endpoint-protection.js';
import * as archiveReplay from './012-archive-replay.js';
import * as activityCounts from './013-activity-counts.js';
import * as backlogCounts from './014-backlog-counts.js';
import * as storeTotals from './015-store-totals.js';
import * as audienceSyncs from './016-audience-syncs.js';
import * as completionCountsTotals from './017-completion-counts-totals.js';

/**
 * Numbered PostgreSQL migrations, applied in order under an advisory lock; `ferry_migrations`
 * records each one applied. Numbers must grow but may leave gaps: each missing one is applied.
 */
export const migrations: { version: number; sql: string }[] = [
  { version: 1, sql: init.sql },
  { version: 2, sql: audiences.sql },
  { version: 3, sql: claimOrder.sql },
  { version: 4, sql: deliveryQueue.sql },
  { version: 5, sql: firstAttemptLog.sql },
  { version: 6, sql: deletion.sql },
  { version: 7, sql: linkedIdentities.sql },
  { version: 8, sql: searchAndReplayJobs.sql },
  { version: 9, sql: tokensAndAudit.sql },
  { version: 10, sql: deadLettersByDestination.sql },
  { version: 11, sql: endpointProtection.sql },
  { version: 12, sql: archiveReplay.sql },
  { version: 13, sql: activityCounts.sql },
  { version: 14, sql: backlogCounts.sql },
  { version: 15, sql: storeTotals.sql },
  { version: 16, sql: audienceSyncs.sql },
  { version: 17, sql: completionCountsTotals.sql },
];
