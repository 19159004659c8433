/**
 * The sources someone watches message by message (`GET /sources/{id}/live`), each with how
 * many streams watch it. Ingestion asks it before a request's messages are routed: only a
 * watched source's requests keep each message's filtered destinations, ask the store which
 * messages it stored, and emit `ingest:message`; every other source pays nothing, even while
 * another one is watched.
 */
export class WatchedSources {
  private readonly watchers = new Map<string, number>();

  /**
   * Counts one more watcher of `sourceId`, until the returned function is called (once is
   * enough: calling it again does nothing, so a stream's several ways to end may all call it).
   */
  watch(sourceId: string): () => void {
    this.watchers.set(sourceId, (this.watchers.get(sourceId) ?? 0) + 1);
    let watching = true;
    return () => {
      if (!watching) return;
      watching = false;
      const left = (this.watchers.get(sourceId) ?? 1) - 1;
      if (left > 0) this.watchers.set(sourceId, left);
      else this.watchers.delete(sourceId);
    };
  }

  /** Whether at least one stream watches `sourceId` now. */
  has(sourceId: string): boolean {
    return this.watchers.has(sourceId);
  }
}
