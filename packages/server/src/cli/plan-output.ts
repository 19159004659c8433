/** How `ferry config plan` and `ferry config apply` print a plan for people. */
import type { CatalogChange, ChangeAction } from '../control/catalog-plan.js';

function show(value: unknown): string {
  if (value === undefined) return '(none)';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * One line per object created or kept, one per field updated, then a summary line:
 *
 * ```
 * + destination crm-hooks
 * ~ destination x: settings.webhooks[0].url: https://a.example.com -> https://b.example.com
 * ! source old: no longer in the file; kept in the store (delete it through the admin API to remove it)
 * Plan: 1 to create, 1 to update, 4 unchanged, 1 kept.
 * ```
 *
 * @param applied Whether the plan was carried out (`ferry config apply`) or only shown.
 */
export function formatPlan(changes: readonly CatalogChange[], summary: Record<ChangeAction, number>, applied: boolean): string {
  const lines: string[] = [];
  for (const c of changes) {
    const object = `${c.kind} ${c.id}`;
    if (c.action === 'create') lines.push(`+ ${object}`);
    else if (c.action === 'kept') lines.push(`! ${object}: no longer in the file; kept in the store (delete it through the admin API to remove it)`);
    else if (c.action === 'update') {
      const note = c.overridesEdit ? ' (overrides an edit made since the last configuration was applied)' : '';
      for (const f of c.fields) lines.push(`~ ${object}: ${f.path}: ${show(f.old)} -> ${show(f.new)}${f.secret ? ' (secret)' : ''}${note}`);
    }
  }
  const counts = `${summary.create} ${applied ? 'created' : 'to create'}, ${summary.update} ${applied ? 'updated' : 'to update'}, ${summary.unchanged} unchanged, ${summary.kept} kept`;
  if (summary.create + summary.update === 0)
    lines.push(applied ? `No changes: the store already matched the file (${counts}); it is now the last one applied.` : `No changes (${counts}).`);
  else lines.push(`${applied ? 'Applied' : 'Plan'}: ${counts}.`);
  return lines.join('\n') + '\n';
}
