/**
 * The retention's rules, shared by the file's `retention:` section and
 * `PATCH /admin/v1/retention`: days per kind, from 0 (kept forever) to 100 years; fractions
 * are allowed (a test or a benchmark keeps minutes).
 */
import { defaultRetention, type RetentionSettings } from '../model/retention.js';
import { boundedNumber, strict, toConfigIssues, type ConfigIssue } from './schema-rules.js';

/** The most days a retention may be, short of forever (0). */
export const maxRetentionDays = 36_500;

const days = () => boundedNumber(0, maxRetentionDays).optional();

/** Any subset of the kinds, each in days. */
export const retentionPatchSchema = strict({
  events: days(),
  delivered: days(),
  deadLetters: days(),
  rejections: days(),
  auditLog: days(),
});

/** The kinds a parsed patch names: those left out are absent, not `undefined`, so they can be spread over others. */
function namedKinds(r: Partial<Record<keyof RetentionSettings, number | undefined>>): Partial<RetentionSettings> {
  const named: Partial<RetentionSettings> = {};
  for (const [kind, value] of Object.entries(r)) if (value !== undefined) named[kind as keyof RetentionSettings] = value;
  return named;
}

/** The file's `retention:` section: the kinds it names over the defaults, as the whole retention desired. */
export const retentionSettingsSchema = retentionPatchSchema.transform((r): RetentionSettings => ({ ...defaultRetention, ...namedKinds(r) }));

/** Validates a patch of the retention: the kinds it changes, or the broken rules. */
export function validateRetentionPatch(input: unknown): { ok: true; patch: Partial<RetentionSettings> } | { ok: false; issues: ConfigIssue[] } {
  const result = retentionPatchSchema.safeParse(input);
  if (!result.success) return { ok: false, issues: toConfigIssues(result.error) };
  return { ok: true, patch: namedKinds(result.data) };
}
