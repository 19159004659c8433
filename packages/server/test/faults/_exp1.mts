import { mkdtempSync, openSync, writeSync, closeSync, unlinkSync, rmSync, statfsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createFerry } from '../../src/app.ts';
import { testConfig, webhooksDestination, adminToken, writeKey } from '../helpers/ferry.ts';
import { ManualClock } from '../../src/util/clock.ts';

const mnt = mkdtempSync(join(tmpdir(), 'ferry-full-'));
execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
try {
  const clock = new ManualClock();
  const ferry = await createFerry({ config: testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/x'])]), dataDir: join(mnt, 'data'), adminToken, logger: pino({ level: 'silent' }), clock, deliver: false });
  const url = await ferry.start(0);
  const auth = 'Basic ' + Buffer.from(`${writeKey}:`).toString('base64');
  const send = async (n: number, tag: string) => {
    const r = await fetch(url + '/v1/batch', { method: 'POST', headers: { 'content-type': 'application/json', authorization: auth }, body: JSON.stringify({ batch: Array.from({ length: n }, (_, i) => ({ type: 'track', userId: 'u', event: 'E', messageId: `${tag}-${i}`, properties: { pad: 'x'.repeat(1000) } })) }) });
    return [r.status, await r.text()];
  };
  console.log(await send(10, 'a'));
  const fd = openSync(join(mnt, 'filler'), 'w');
  const chunk = Buffer.alloc(64 * 1024);
  let filled = 0;
  try { for (let i = 0; i < 1000; i++) { writeSync(fd, chunk); filled += chunk.length; } } catch (e: any) { console.log('filler', e.code, filled); }
  // fill the tail bytes
  try { for (let i = 0; i < 10000; i++) { writeSync(fd, Buffer.alloc(4096)); filled += 4096; } } catch (e: any) { console.log('filler2', e.code, filled); }
  closeSync(fd);
  console.log(statfsSync(mnt));
  for (let i = 0; i < 12; i++) console.log('full', i, await send(50, `b${i}`));
  console.log((await (await fetch(url + '/admin/v1/stats', { headers: { authorization: `Bearer ${adminToken}` } })).text()));
  unlinkSync(join(mnt, 'filler'));
  for (let i = 0; i < 3; i++) console.log('freed', i, await send(50, `c${i}`));
  console.log((await (await fetch(url + '/admin/v1/stats', { headers: { authorization: `Bearer ${adminToken}` } })).text()));
  await ferry.stop();
} finally {
  execFileSync('umount', [mnt]);
  rmSync(mnt, { recursive: true });
}
