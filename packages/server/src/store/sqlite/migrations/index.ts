import * as init from './001-init.js';
import * as audiences from './002-audiences.js';

/** Numbered migrations, applied in order; `PRAGMA user_version` records how many ran. */
export const migrations: { version: number; sql: string }[] = [
  { version: 1, sql: init.sql },
  { version: 2, sql: audiences.sql },
];
