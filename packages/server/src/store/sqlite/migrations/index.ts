import * as init from './001-init.js';
import * as audiences from './002-audiences.js';
import * as deletion from './003-deletion.js';
import * as linkedIdentities from './004-linked-identities.js';
import * as searchAndReplayJobs from './005-search-and-replay-jobs.js';
import * as tokensAndAudit from './006-tokens-and-audit.js';
import * as deadLettersByDestination from './007-dead-letters-by-destination.js';
import * as destinationHealth from './008-destination-health.js';
import * as archiveReplay from './009-archive-replay.js';
import * as activityCounts from './010-activity-counts.js';
import * as audienceSyncs from './011-audience-syncs.js';

/**
 * Numbered migrations, applied in order; `PRAGMA user_version` records the number of the last
 * one that ran. Numbers must grow but may leave gaps (work on parallel branches reserves them).
 */
export const migrations: { version: number; sql: string }[] = [
  { version: 1, sql: init.sql },
  { version: 2, sql: audiences.sql },
  { version: 3, sql: deletion.sql },
  { version: 4, sql: linkedIdentities.sql },
  { version: 5, sql: searchAndReplayJobs.sql },
  { version: 6, sql: tokensAndAudit.sql },
  { version: 7, sql: deadLettersByDestination.sql },
  { version: 8, sql: destinationHealth.sql },
  { version: 9, sql: archiveReplay.sql },
  { version: 10, sql: activityCounts.sql },
  { version: 11, sql: audienceSyncs.sql },
];
