/**
 * What Ferry prunes, each kind with a retention of its own:
 * - `events`: stored events, by the time they were received (never one that a pending delivery still needs);
 * - `delivered`: deliveries that succeeded, with their attempts, by the time they succeeded;
 * - `deadLetters`: dead-lettered deliveries, with their attempts, by the time they died;
 * - `rejections`: the log of refused messages (their counts stay);
 * - `auditLog`: the admin API's audit log.
 * Pending deliveries (retrying ones included) are never pruned.
 */
export const retentionKinds = ['events', 'delivered', 'deadLetters', 'rejections', 'auditLog'] as const;
export type RetentionKind = (typeof retentionKinds)[number];

/** Days to keep each kind; fractions allowed, `0` keeps forever. */
export type RetentionSettings = Record<RetentionKind, number>;

/**
 * Defaults: events 90 days, delivered deliveries 30, dead letters 90 (time to look at them and
 * replay), rejections 30, and the audit log forever (it is evidence).
 */
export const defaultRetention: Readonly<RetentionSettings> = Object.freeze({
  events: 90,
  delivered: 30,
  deadLetters: 90,
  rejections: 30,
  auditLog: 0,
});

/** Milliseconds in a day of retention. */
export const DAY_MS = 86_400_000;
