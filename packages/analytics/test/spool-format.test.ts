import assert from 'node:assert/strict';
import * as zlib from 'node:zlib';
import { describe, it } from 'node:test';
import { crc32 } from '../src/spool/crc32.js';
import { encodeRecord, scanRecords } from '../src/spool/record-format.js';

describe('spool record format', () => {
  it('computes the standard CRC-32 (check value of "123456789") and agrees with zlib where it exists', () => {
    assert.equal(crc32(Buffer.from('123456789')), 0xcbf43926);
    assert.equal(crc32(Buffer.alloc(0)), 0);
    const sample = Buffer.from('{"type":"track","event":"Ünïcödé ✓"}');
    // zlib.crc32 exists from Node 20.15; the package supports 20.10.
    if (typeof zlib.crc32 === 'function') assert.equal(crc32(sample), zlib.crc32(sample));
    assert.equal(crc32(Buffer.concat([Buffer.from('xx'), sample]), 2), crc32(sample), 'a range of a buffer');
  });

  it('reads back every record, skips a bad CRC and stops at a torn tail', () => {
    const payloads = ['{"a":1}', '{"b":"é"}', '{"c":3}'];
    const records = payloads.map((p) => encodeRecord(p, Buffer.byteLength(p)));
    assert.deepEqual(scanRecords(Buffer.concat(records)), { payloads, badCrc: 0, tornBytes: 0 });
    const corrupt = Buffer.from(records[1]!);
    corrupt.writeUInt8(corrupt.readUInt8(corrupt.length - 2) ^ 0xff, corrupt.length - 2);
    const torn = records[2]!.subarray(0, 10);
    assert.deepEqual(scanRecords(Buffer.concat([records[0]!, corrupt, records[2]!, torn])), {
      payloads: ['{"a":1}', '{"c":3}'],
      badCrc: 1,
      tornBytes: 10,
    });
    assert.deepEqual(scanRecords(Buffer.from([0, 0, 0])), { payloads: [], badCrc: 0, tornBytes: 3 });
  });
});
