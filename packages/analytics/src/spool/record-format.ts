import { crc32 } from './crc32.js';

/** Bytes before each record's payload: its length, then the CRC-32 of the payload (both u32, big-endian). */
export const recordHeaderBytes = 8;

/**
 * Frames `payload` (a UTF-8 string of `payloadBytes` bytes) as one record: length, CRC-32,
 * payload. A record is written with a single write, so a crash leaves at most the last one torn.
 */
export function encodeRecord(payload: string, payloadBytes: number): Buffer {
  const buf = Buffer.allocUnsafe(recordHeaderBytes + payloadBytes);
  buf.write(payload, recordHeaderBytes, 'utf8');
  buf.writeUInt32BE(payloadBytes, 0);
  buf.writeUInt32BE(crc32(buf, recordHeaderBytes), 4);
  return buf;
}

/**
 * Frames `payload` (a UTF-8 string of `payloadBytes` bytes) into `scratch` from offset 0, so the
 * hot path allocates nothing per call. @returns the record's length in `scratch`.
 */
export function encodeRecordInto(scratch: Buffer, payload: string, payloadBytes: number): number {
  scratch.write(payload, recordHeaderBytes, 'utf8');
  scratch.writeUInt32BE(payloadBytes, 0);
  scratch.writeUInt32BE(crc32(scratch, recordHeaderBytes, recordHeaderBytes + payloadBytes), 4);
  return recordHeaderBytes + payloadBytes;
}

/** What reading a file of records found. */
export interface ScanResult {
  /** Payloads of the intact records, in file order. */
  payloads: string[];
  /** Records whose payload does not match its CRC-32 (skipped). */
  badCrc: number;
  /** Bytes at the end that do not hold a whole record: a write cut short by a crash (skipped). */
  tornBytes: number;
}

/**
 * Reads every record of `data`. A record whose CRC-32 does not match is skipped and the scan
 * goes on after it (its length still frames it); a record that runs past the end is a torn
 * tail and ends the scan. Neither is fatal: the caller reports them.
 */
export function scanRecords(data: Buffer): ScanResult {
  const payloads: string[] = [];
  let badCrc = 0;
  let at = 0;
  while (at + recordHeaderBytes <= data.length) {
    const length = data.readUInt32BE(at);
    const start = at + recordHeaderBytes;
    const end = start + length;
    if (end > data.length) break;
    if (crc32(data, start, end) === data.readUInt32BE(at + 4)) payloads.push(data.toString('utf8', start, end));
    else badCrc++;
    at = end;
  }
  return { payloads, badCrc, tornBytes: data.length - at };
}
