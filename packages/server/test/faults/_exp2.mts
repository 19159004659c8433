import { mkdtempSync, openSync, writeSync, closeSync, unlinkSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createFerry } from '../../src/app.ts';
import { testConfig, webhooksDestination, adminToken, writeKey } from '../helpers/ferry.ts';
import { ManualClock } from '../../src/util/clock.ts';

const mnt = mkdtempSync(join(tmpdir(), 'ferry-full-'));
execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=' + (process.env.SZ ?? '8m'), 'tmpfs', mnt]);
try {
  const clock = new ManualClock();
  const ferry = await createFerry({ config: testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/x'])]), dataDir: join(mnt, 'data'), adminToken, logger: pino({ level: 'silent' }), clock, deliver: false });
  const url = await ferry.start(0);
  const auth = 'Basic ' + Buffer.from(`${writeKey}:`).toString('base64');
  const send = async (n: number, tag: string, pad = 1000) => {
    const r = await fetch(url + '/v1/batch', { method: 'POST', headers: { 'content-type': 'application/json', authorization: auth }, body: JSON.stringify({ batch: Array.from({ length: n }, (_, i) => ({ type: 'track', userId: 'u', event: 'E', messageId: `${tag}-${i}`, properties: { pad: 'x'.repeat(pad) } })) }) });
    return r.status;
  };
  const stats = async () => (await (await fetch(url + '/admin/v1/stats', { headers: { authorization: `Bearer ${adminToken}` } })).json());
  console.log(await send(10, 'a'));
  const fd = openSync(join(mnt, 'filler'), 'w');
  try { for (let i = 0; i < 100000; i++) writeSync(fd, Buffer.alloc(4096)); } catch (e: any) { console.log('filler', e.code); }
  closeSync(fd);
  for (let round = 0; round < 3; round++) {
    const statuses = await Promise.all(Array.from({ length: 8 }, (_, k) => send(300, `big${round}-${k}`, 1200)));
    console.log('round', round, statuses, await stats());
  }
  unlinkSync(join(mnt, 'filler'));
  console.log('freed', await send(5, 'c'), await stats());
  await ferry.stop();
} finally {
  execFileSync('umount', [mnt]);
  rmSync(mnt, { recursive: true });
}
