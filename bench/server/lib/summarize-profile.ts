/**
 * Summarises V8 CPU profiles (`node --cpu-prof`, or `BENCH_CPU_PROF=<dir>` for the server
 * under test): top functions by self time, and by total time (self + callees). TypeScript via tsx.
 *
 *   npx tsx bench/server/lib/summarize-profile.ts FILE.cpuprofile [--top 25]
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const topIdx = args.indexOf('--top');
const top = topIdx === -1 ? 25 : Number(args[topIdx + 1]);
const files = args.filter((a, i) => !a.startsWith('--') && (topIdx === -1 || i !== topIdx + 1));

for (const file of files) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  p.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const key = (n: Node) =>
    `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url ? basename(n.callFrame.url) + ':' + (n.callFrame.lineNumber + 1) : ''}`.trim();
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    self.set(key(n), (self.get(key(n)) ?? 0) + us);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = key(byId.get(cur)!);
      if (seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + us);
    }
  }
  const all = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const idle = self.get('(idle)') ?? 0;
  console.log(`\n${basename(file)}: ${(all / 1e6).toFixed(1)} s sampled, ${(100 * (1 - idle / all)).toFixed(0)} % busy`);
  const show = (title: string, m: Map<string, number>) => {
    console.log(`  ${title}`);
    for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
      console.log(`    ${((100 * us) / all).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`);
  };
  show('self time', self);
  show('total time', total);
}
