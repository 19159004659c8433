import { closeSync, existsSync, fsync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import type { Clock, TimerHandle } from '../clock.js';
import { AnalyticsError } from '../errors.js';
import type { Logger } from '../logger.js';
import { utf8Length } from '../utf8-length.js';
import { encodeRecord, encodeRecordInto, recordHeaderBytes, scanRecords } from './record-format.js';
import { ackPath, listSegments, logPath } from './segment-files.js';
import { acquireSpoolLock } from './spool-lock.js';
import type { ResolvedSpoolOptions } from './spool-options.js';

/** A message held by the spool, as recovered at open. */
export interface SpooledMessage {
  messageId: string;
  json: string;
  bytes: number;
  /** Segment whose log holds it; given back to {@link Spool.confirm}. */
  segment: number;
}

/** A message to mark done. */
export interface SpoolRef {
  messageId: string;
  bytes: number;
  spoolSegment?: number | undefined;
}

/** Damage found at open in one file; skipped, reported by the caller. */
export interface SpoolDamage {
  file: string;
  /** Records whose CRC-32 did not match their payload (or whose payload was not a message). */
  badRecords: number;
  /** Bytes at the end that do not hold a whole record: a write cut short by a crash. */
  tornBytes: number;
}

interface Segment {
  id: number;
  /** Unconfirmed messages in its log. */
  live: number;
  /** Size of its log. */
  bytes: number;
  /** Open only for the active (last) segment. */
  logFd: number | undefined;
  ackFd: number | undefined;
  /** Records appended by this process: tells whether a background fsync covered all of them. */
  appends: number;
  /** Background fsyncs running on `logFd`: it must stay open until they return. */
  syncing: number;
  /** Closed while an fsync was running: its callback closes `logFd`. */
  closeAfterSync: boolean;
}

function writeFully(fd: number, buf: Buffer, length = buf.length): void {
  let done = 0;
  while (done < length) done += writeSync(fd, buf, done, length - done);
}

function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/**
 * The durable journal behind `spool: { dir }`: segment files of length + CRC-32 framed
 * messages, each with an acknowledgement file of the messageIds that are done (one JSON array per answered batch). A segment is
 * deleted once every message in it is done; at open, what is not done is handed back to be
 * sent again. Writes are synchronous so a call has reached the OS before it returns.
 */
export class Spool {
  readonly #options: ResolvedSpoolOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #release: () => void;
  readonly #segments = new Map<number, Segment>();
  #active: Segment;
  #liveBytes = 0;
  #dirty = false;
  // Segments rolled over with writes not yet forced to disk; their files close at the next sync.
  readonly #unsynced = new Set<Segment>();
  // Reused for every record: a Buffer per call costs more in garbage collection than the write.
  #scratch = Buffer.allocUnsafe(64 * 1024);
  #timer: TimerHandle | undefined;
  #backgroundSyncs = 0;
  #closed = false;

  private constructor(options: ResolvedSpoolOptions, clock: Clock, logger: Logger, release: () => void, nextId: number) {
    this.#options = options;
    this.#clock = clock;
    this.#logger = logger;
    this.#release = release;
    this.#active = this.#startSegment(nextId);
  }

  /**
   * Takes the directory's lock, reads every segment and starts a new one for this process.
   * @returns the spool, the messages not yet done (oldest first) and the damage skipped.
   * @throws AnalyticsError `spool_locked` when another live process holds the directory,
   * `spool_io_failed` when the directory cannot be read or written.
   */
  static open(options: ResolvedSpoolOptions, clock: Clock, logger: Logger): { spool: Spool; recovered: SpooledMessage[]; damage: SpoolDamage[] } {
    const dir = options.dir;
    try {
      mkdirSync(dir, { recursive: true });
    } catch (cause) {
      throw new AnalyticsError('spool_io_failed', `The spool directory cannot be created: ${String(cause)}`, { cause });
    }
    const release = acquireSpoolLock(dir);
    try {
      const recovered: SpooledMessage[] = [];
      const damage: SpoolDamage[] = [];
      const kept: Segment[] = [];
      const { logs, strayAcks } = listSegments(dir);
      for (const id of strayAcks) removeFile(ackPath(dir, id));
      for (const id of logs) {
        const found = Spool.#readSegment(dir, id, damage);
        if (found.messages.length === 0) {
          removeFile(logPath(dir, id));
          removeFile(ackPath(dir, id));
          continue;
        }
        recovered.push(...found.messages);
        kept.push({ id, live: found.messages.length, bytes: found.bytes, logFd: undefined, ackFd: undefined, appends: 0, syncing: 0, closeAfterSync: false });
      }
      const spool = new Spool(options, clock, logger, release, (logs.at(-1) ?? 0) + 1);
      for (const s of kept) spool.#segments.set(s.id, s);
      for (const m of recovered) spool.#liveBytes += m.bytes;
      return { spool, recovered, damage };
    } catch (cause) {
      release();
      if (cause instanceof AnalyticsError) throw cause;
      throw new AnalyticsError('spool_io_failed', `The spool cannot be read: ${String(cause)}`, { cause });
    }
  }

  static #readSegment(dir: string, id: number, damage: SpoolDamage[]): { messages: SpooledMessage[]; bytes: number } {
    const log = readFileSync(logPath(dir, id));
    const scanned = scanRecords(log);
    let badRecords = scanned.badCrc;
    const done = new Map<string, number>();
    const ackFile = ackPath(dir, id);
    if (existsSync(ackFile)) {
      // A torn or bad acknowledgement only costs a duplicate, which the server's idempotency drops.
      for (const payload of scanRecords(readFileSync(ackFile)).payloads) {
        let ids: unknown;
        try {
          ids = JSON.parse(payload);
        } catch {
          continue;
        }
        if (!Array.isArray(ids)) continue;
        for (const messageId of ids) if (typeof messageId === 'string') done.set(messageId, (done.get(messageId) ?? 0) + 1);
      }
    }
    const messages: SpooledMessage[] = [];
    for (const json of scanned.payloads) {
      let messageId: unknown;
      try {
        messageId = (JSON.parse(json) as { messageId?: unknown }).messageId;
      } catch {
        messageId = undefined;
      }
      if (typeof messageId !== 'string') {
        badRecords++;
        continue;
      }
      const n = done.get(messageId) ?? 0;
      if (n > 0) done.set(messageId, n - 1);
      else messages.push({ messageId, json, bytes: utf8Length(json), segment: id });
    }
    if (badRecords > 0 || scanned.tornBytes > 0) damage.push({ file: logPath(dir, id), badRecords, tornBytes: scanned.tornBytes });
    return { messages, bytes: log.length };
  }

  /** Bytes of the messages not yet done, the measure `maxBytes` bounds. */
  get liveBytes(): number {
    return this.#liveBytes;
  }

  /**
   * Appends one message to the active segment before returning.
   * @returns the segment to give back to {@link Spool.confirm}.
   * @throws AnalyticsError `spool_io_failed` when the write fails (the journal is left as before).
   */
  append(messageId: string, json: string, bytes: number): number {
    if (this.#closed) throw new AnalyticsError('closed', 'The spool is closed.');
    if (this.#scratch.length < recordHeaderBytes + bytes) this.#scratch = Buffer.allocUnsafe(recordHeaderBytes + bytes);
    const length = encodeRecordInto(this.#scratch, json, bytes);
    let seg: Segment | undefined;
    try {
      if (this.#active.bytes >= this.#options.segmentBytes) this.#roll();
      seg = this.#active;
      writeFully(seg.logFd!, this.#scratch, length);
      if (this.#options.fsync === 'call') fsyncSync(seg.logFd!);
    } catch (cause) {
      // A partial record would misframe every later one, and a call that throws must not come
      // back at the next start: cut the file back to its last whole record.
      try {
        if (seg) ftruncateSync(seg.logFd!, seg.bytes);
      } catch {
        // The scan at the next open skips what is left as a torn or bad record.
      }
      throw new AnalyticsError('spool_io_failed', `The message ${messageId} could not be written to the spool: ${String(cause)}`, { cause });
    }
    seg.bytes += length;
    seg.live++;
    seg.appends++;
    this.#liveBytes += bytes;
    if (this.#options.fsync === 'call') return seg.id;
    this.#dirty = true;
    this.#armSyncTimer();
    return seg.id;
  }

  #armSyncTimer(): void {
    if (this.#options.fsync !== 'interval' || this.#timer !== undefined || this.#closed) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#syncInBackground();
    }, this.#options.fsyncIntervalMs);
  }

  /** With the `batch` policy, puts what was appended on disk before a request leaves. */
  beforeSend(): void {
    if (this.#options.fsync === 'batch') this.#syncLogged();
  }

  /**
   * Marks messages done (delivered, refused, or dropped by the overflow policy) so they are not
   * sent again after a restart, and deletes the segments left with nothing to send.
   */
  confirm(refs: Iterable<SpoolRef>): void {
    if (this.#closed) return;
    const bySegment = new Map<number, SpoolRef[]>();
    for (const ref of refs) {
      if (ref.spoolSegment === undefined) continue;
      let list = bySegment.get(ref.spoolSegment);
      if (!list) bySegment.set(ref.spoolSegment, (list = []));
      list.push(ref);
    }
    for (const [id, list] of bySegment) {
      const seg = this.#segments.get(id);
      if (!seg) continue;
      seg.live -= list.length;
      for (const ref of list) this.#liveBytes -= ref.bytes;
      if (seg.live <= 0 && seg !== this.#active) {
        this.#delete(seg);
        continue;
      }
      // JSON, not lines: a caller's own messageId may hold any character.
      const payload = JSON.stringify(list.map((r) => r.messageId));
      try {
        seg.ackFd ??= openSync(ackPath(this.#options.dir, id), 'a');
        writeFully(seg.ackFd, encodeRecord(payload, utf8Length(payload)));
      } catch (error) {
        // Without the acknowledgement these messages are sent again after a restart: duplicates, not loss.
        this.#logger.error('spool: could not record delivered messages', { error: String(error), messages: list.length });
      }
    }
  }

  /**
   * Stops counting messages against `maxBytes` without marking them done: reported failed in
   * this process (retries ran out), they stay in the journal and are sent again at the next
   * start. Their bytes stay on disk until then, so the directory can exceed `maxBytes`.
   */
  releaseBudget(refs: Iterable<SpoolRef>): void {
    if (this.#closed) return;
    for (const ref of refs) if (ref.spoolSegment !== undefined && this.#segments.has(ref.spoolSegment)) this.#liveBytes -= ref.bytes;
  }

  /** Puts what was written on disk, closes the files and releases the lock. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    // A background fsync may still be running on a file about to close: force it here.
    if (this.#backgroundSyncs > 0) this.#dirty = true;
    this.#syncLogged();
    for (const seg of this.#segments.values()) this.#closeFiles(seg);
    if (this.#active.live === 0) this.#delete(this.#active);
    this.#release();
  }

  #startSegment(id: number): Segment {
    const seg: Segment = {
      id,
      live: 0,
      bytes: 0,
      logFd: openSync(logPath(this.#options.dir, id), 'a'),
      ackFd: undefined,
      appends: 0,
      syncing: 0,
      closeAfterSync: false,
    };
    this.#segments.set(id, seg);
    this.#syncDirectory();
    return seg;
  }

  // A new file survives a machine crash only once its directory entry is on disk too; once per
  // segment. Best effort: some platforms (Windows) cannot open a directory.
  #syncDirectory(): void {
    let fd: number | undefined;
    try {
      fd = openSync(this.#options.dir, 'r');
      fsyncSync(fd);
    } catch {
      // Nothing more can be done; the file's contents are still forced by the policy.
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  // The old segment's fsync is left to the policy's next sync, off this call.
  #roll(): void {
    const old = this.#active;
    this.#active = this.#startSegment(old.id + 1);
    if (old.live <= 0) this.#delete(old);
    else if (this.#dirty) this.#unsynced.add(old);
    else this.#closeLog(old);
  }

  #sync(): void {
    if (!this.#dirty) return;
    for (const seg of this.#unsynced) {
      fsyncSync(seg.logFd!);
      this.#closeLog(seg);
    }
    this.#unsynced.clear();
    fsyncSync(this.#active.logFd!);
    this.#dirty = false;
  }

  // A file with a background fsync running stays open until it returns: closed now, its fsync
  // would fail with EBADF (or force whatever file reused the descriptor) and never force its writes.
  #closeLog(seg: Segment): void {
    if (seg.logFd === undefined) return;
    if (seg.syncing > 0) {
      seg.closeAfterSync = true;
      return;
    }
    const fd = seg.logFd;
    seg.logFd = undefined;
    closeSync(fd);
  }

  // The interval policy's fsync runs on libuv's thread pool: a synchronous one would stop every
  // call and delivery for as long as the disk takes (milliseconds, more on a busy disk).
  #syncInBackground(): void {
    if (!this.#dirty || this.#closed) return;
    this.#dirty = false;
    const segments = [...this.#unsynced, this.#active].filter((seg) => seg.logFd !== undefined);
    this.#backgroundSyncs++;
    let left = segments.length;
    if (left === 0) this.#backgroundSyncs--;
    for (const seg of segments) {
      const appends = seg.appends;
      seg.syncing++;
      fsync(seg.logFd!, (error) => {
        seg.syncing--;
        if (--left === 0) this.#backgroundSyncs--;
        if (error && !this.#closed && seg !== this.#active && this.#segments.has(seg.id)) {
          // Forced again at the next turn: a rolled segment waits open in the unsynced list.
          seg.closeAfterSync = false;
          this.#unsynced.add(seg);
        } else if (seg.closeAfterSync && seg.syncing === 0) {
          seg.closeAfterSync = false;
          this.#closeLogQuietly(seg);
        }
        if (this.#closed) return;
        if (error) {
          this.#dirty = true;
          this.#logger.error('spool: fsync failed', { error: String(error) });
          this.#armSyncTimer();
        } else if (seg !== this.#active && seg.appends === appends && this.#unsynced.delete(seg)) {
          this.#closeLogQuietly(seg);
        }
      });
    }
  }

  #closeLogQuietly(seg: Segment): void {
    try {
      this.#closeLog(seg);
    } catch (error) {
      this.#logger.error('spool: could not close a segment', { error: String(error), segment: seg.id });
    }
  }

  #syncLogged(): void {
    try {
      this.#sync();
    } catch (error) {
      this.#logger.error('spool: fsync failed', { error: String(error) });
    }
  }

  #closeFiles(seg: Segment): void {
    try {
      this.#closeLog(seg);
    } catch {
      // Closing is best effort; the data was written already.
    }
    if (seg.ackFd === undefined) return;
    try {
      closeSync(seg.ackFd);
    } catch {
      // As above.
    }
    seg.ackFd = undefined;
  }

  #delete(seg: Segment): void {
    this.#unsynced.delete(seg);
    this.#closeFiles(seg);
    this.#segments.delete(seg.id);
    try {
      removeFile(logPath(this.#options.dir, seg.id));
      removeFile(ackPath(this.#options.dir, seg.id));
    } catch (error) {
      this.#logger.error('spool: could not delete a finished segment', { error: String(error), segment: seg.id });
    }
  }
}
