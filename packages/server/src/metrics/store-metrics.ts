import { Counter, Gauge, type Registry } from 'prom-client';
import { retentionKinds } from '../model/retention.js';
import type { PruneRun } from '../retention/pruner.js';
import type { RetentionStore } from '../store/retention-store.js';

/** What the store's series read: its size and row estimates, and this node's pruner. */
export interface StoreMetricsDeps {
  retention: Pick<RetentionStore, 'sizeBytes' | 'rowEstimates'>;
  pruner: { readonly lastRun: PruneRun | undefined; readonly deletedTotal: Readonly<Record<string, number>> };
}

/**
 * The store's series: its size and rows per table, read at each scrape from what the database
 * keeps without reading a table (see `RetentionStore.rowEstimates`), and what this node's
 * pruner did. On a cluster every node shows the same size and rows, and its own pruning.
 */
export function registerStoreMetrics(registry: Registry, deps: StoreMetricsDeps): void {
  const registers = [registry];
  new Gauge({
    name: 'ferry_store_size_bytes',
    help: "Bytes the store takes: SQLite's database file; on PostgreSQL, Ferry's tables with their indexes.",
    registers,
    async collect() {
      this.set(await deps.retention.sizeBytes());
    },
  });
  new Gauge({
    name: 'ferry_store_rows',
    help: 'Rows per table (events, deliveries, attempts, rejections, audit_log), estimated: SQLite max(id) - min(id) + 1, PostgreSQL the planner statistics.',
    labelNames: ['kind'],
    registers,
    async collect() {
      for (const [kind, n] of Object.entries(await deps.retention.rowEstimates())) this.set({ kind }, n);
    },
  });
  new Gauge({
    name: 'ferry_retention_last_prune_timestamp_seconds',
    help: "When this node's pruner last finished a run (Unix seconds, by the run's start); 0 before the first.",
    registers,
    collect() {
      this.set(deps.pruner.lastRun === undefined ? 0 : deps.pruner.lastRun.atMs / 1000);
    },
  });
  const pruned = new Counter({
    name: 'ferry_retention_pruned_rows_total',
    help: "Rows this node's pruner deleted past their retention, by kind (events, delivered, deadLetters, rejections, auditLog, attempts).",
    labelNames: ['kind'],
    registers,
    collect() {
      // A counter read from the pruner's own totals, which only grow.
      pruned.reset();
      for (const kind of [...retentionKinds, 'attempts']) pruned.inc({ kind }, deps.pruner.deletedTotal[kind] ?? 0);
    },
  });
}
