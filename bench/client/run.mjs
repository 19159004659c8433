#!/usr/bin/env node
// Client benchmark: @ferry/analytics against @segment/analytics-node and a featureless
// ceiling, on the same burst of track calls to the same local sink. Every runner posts
// batches of at most 20 messages (Ferry's and Segment's flushAt, the ceiling's fixed size);
// the sink records the largest batch it saw, so the table shows that the comparison is like
// for like.
//
//   npm run build --workspace @ferry/analytics   # the bench uses the built package
//   node bench/client/run.mjs                     # full run: 100,000 calls, 3 rounds
//   node bench/client/run.mjs --quick             # 20,000 calls, 1 round
//
// Options: --calls N, --rounds N, --budget-s N (default 170: no round starts that would
// likely end past it; the peer's 100k-call round dominates). Every runner is its own child process (peak RSS is per
// runner); rounds interleave the runners in rotating order; the table shows medians and the
// JSON lands in bench/client/results/latest.json (quick.json for --quick or --calls).
import { execFile, fork } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const argValue = (flag, fallback) => {
  const i = args.indexOf(flag);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const calls = argValue('--calls', quick ? 20_000 : 100_000);
const rounds = argValue('--rounds', quick ? 1 : 3);
const budgetMs = argValue('--budget-s', 170) * 1000;
const RUNNER_TIMEOUT_MS = 100_000;
const runners = ['ferry', 'ferry-spool', 'segment', 'featureless'];

if (!Number.isInteger(calls) || calls < 20 || calls % 20 !== 0) throw new Error('--calls must be a multiple of 20');
if (!Number.isInteger(rounds) || rounds < 1 || rounds > 9) throw new Error('--rounds must be 1..9');
if (!existsSync(`${root}packages/analytics/dist/esm/index.js`)) {
  console.error('Build the client first: npm run build --workspace @ferry/analytics');
  process.exit(1);
}

function startSink() {
  return new Promise((resolve, reject) => {
    const child = fork(`${here}sink.mjs`, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (m) => resolve({ child, url: `http://127.0.0.1:${m.port}` }));
    child.once('error', reject);
  });
}

function post(url) {
  return fetch(url, { method: 'POST' }).then((r) => r.text());
}

function runOnce(name, sinkUrl) {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [`${here}runner.mjs`, name, sinkUrl, String(calls)],
      { cwd: root, timeout: RUNNER_TIMEOUT_MS, maxBuffer: 1 << 20, env: { ...process.env, DEBUG: '' } },
      (error, stdout, stderr) => {
        const warnings = stderr.trim().split('\n').filter(Boolean).slice(0, 3);
        for (const w of warnings) process.stderr.write(`    [${name} stderr] ${w}\n`);
        if (error) return resolve({ runner: name, failed: String(error.message).split('\n')[0] });
        resolve(JSON.parse(stdout.trim().split('\n').at(-1)));
      },
    );
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const sink = await startSink();
const results = Object.fromEntries(runners.map((r) => [r, []]));
console.log(
  `client bench: ${calls.toLocaleString('en')} track calls, ${rounds} round(s), ${os.cpus().length} CPUs, ` +
    `load ${os.loadavg()[0].toFixed(1)}, Node ${process.version}`,
);
const began = Date.now();
let slowestRoundMs = 0;
for (let round = 0; round < rounds; round++) {
  if (round > 0 && Date.now() - began + slowestRoundMs > budgetMs) {
    console.log(`  stopping after ${round} round(s): another would pass the ${budgetMs / 1000} s budget`);
    break;
  }
  const roundStart = Date.now();
  const order = runners.map((_, i) => runners[(i + round) % runners.length]);
  for (const name of order) {
    await post(`${sink.url}/reset`);
    const r = await runOnce(name, sink.url);
    results[name].push(r);
    const line = r.failed
      ? `failed: ${r.failed}`
      : `${Math.round(r.e2ePerSec).toLocaleString('en')} events/s end to end, ${Math.round(r.peakRssMB)} MB peak, ${r.unique} unique, ${r.duplicates} duplicates, CPU µs/request ${Math.round(r.clientCpuUsPerRequest)} runner ${Math.round(r.sinkCpuUsPerRequest)} sink`;
    console.log(`  round ${round + 1} ${name.padEnd(11)} ${line}`);
  }
  slowestRoundMs = Math.max(slowestRoundMs, Date.now() - roundStart);
}
sink.child.disconnect();
sink.child.kill();

const summary = {};
for (const name of runners) {
  const ok = results[name].filter((r) => !r.failed);
  summary[name] =
    ok.length === 0
      ? null
      : {
          enqueuePerSec: median(ok.map((r) => r.enqueuePerSec)),
          e2ePerSec: median(ok.map((r) => r.e2ePerSec)),
          peakRssMB: median(ok.map((r) => r.peakRssMB)),
          exactlyOnce: ok.every((r) => r.complete && r.duplicates === 0 && r.unique === calls),
          duplicates: ok.reduce((n, r) => n + r.duplicates, 0),
          requestsPerRun: median(ok.map((r) => r.requests)),
          // From the first call until the sink saw the last message; the runner's includes enqueueing.
          clientCpuUsPerRequest: median(ok.map((r) => r.clientCpuUsPerRequest)),
          sinkCpuUsPerRequest: median(ok.map((r) => r.sinkCpuUsPerRequest)),
          largestBatch: Math.max(...ok.map((r) => r.largestBatch)),
          runs: ok.length,
        };
}

const f = summary.ferry;
const sp = summary['ferry-spool'];
const s = summary.segment;
const c = summary.featureless;
const ratio = (a, b) => (a && b ? a / b : NaN);
const ratios = {
  e2eVsSegment: ratio(f?.e2ePerSec, s?.e2ePerSec),
  e2eVsFeatureless: ratio(f?.e2ePerSec, c?.e2ePerSec),
  rssVsSegment: ratio(f?.peakRssMB, s?.peakRssMB),
  enqueueVsSegment: ratio(f?.enqueuePerSec, s?.enqueuePerSec),
  spoolVsMemory: ratio(sp?.e2ePerSec, f?.e2ePerSec),
};
const goals = {
  'e2e >= 10x segment': ratios.e2eVsSegment >= 10,
  'e2e >= 0.8x featureless': ratios.e2eVsFeatureless >= 0.8,
  'peak RSS <= 0.15x segment': ratios.rssVsSegment <= 0.15,
  'ferry exactly once': Boolean(f?.exactlyOnce),
  'spool e2e >= 0.5x memory': ratios.spoolVsMemory >= 0.5,
};

const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toLocaleString('en', { maximumFractionDigits: d, minimumFractionDigits: d }) : '-');
console.log('\nmedians');
console.log('| runner | enqueue calls/s | end-to-end events/s | peak RSS MB | requests/run | largest batch | CPU µs/request (runner, sink) | exactly once |');
console.log('|---|---:|---:|---:|---:|---:|---:|---|');
for (const name of runners) {
  const m = summary[name];
  if (!m) {
    console.log(`| ${name} | failed | | | | | | |`);
    continue;
  }
  const once = m.exactlyOnce ? 'yes' : `no (${m.duplicates} duplicates)`;
  console.log(
    `| ${name} | ${fmt(m.enqueuePerSec)} | ${fmt(m.e2ePerSec)} | ${fmt(m.peakRssMB)} | ${fmt(m.requestsPerRun)} | ${fmt(m.largestBatch)} | ${fmt(m.clientCpuUsPerRequest)}, ${fmt(m.sinkCpuUsPerRequest)} | ${once} |`,
  );
}
console.log('\n| ratio | value | goal |');
console.log('|---|---:|---|');
console.log(`| ferry / segment, end to end | ${fmt(ratios.e2eVsSegment, 1)}x | >= 10x ${goals['e2e >= 10x segment'] ? 'met' : 'NOT met'} |`);
console.log(`| ferry / featureless, end to end | ${fmt(ratios.e2eVsFeatureless, 2)}x | >= 0.8x ${goals['e2e >= 0.8x featureless'] ? 'met' : 'NOT met'} |`);
console.log(`| ferry / segment, peak RSS | ${fmt(ratios.rssVsSegment, 3)}x | <= 0.15x ${goals['peak RSS <= 0.15x segment'] ? 'met' : 'NOT met'} |`);
console.log(`| ferry / segment, enqueue | ${fmt(ratios.enqueueVsSegment, 1)}x | - |`);
console.log(`| ferry-spool / ferry, end to end | ${fmt(ratios.spoolVsMemory, 2)}x | >= 0.5x ${goals['spool e2e >= 0.5x memory'] ? 'met' : 'NOT met'} |`);

mkdirSync(`${here}results`, { recursive: true });
const out = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: os.cpus().length,
  loadavg: os.loadavg(),
  calls,
  rounds,
  summary,
  ratios,
  goals,
  runs: results,
};
// A quick or resized run never overwrites the full run's record.
const file = quick || calls !== 100_000 ? 'quick.json' : 'latest.json';
writeFileSync(`${here}results/${file}`, `${JSON.stringify(out, null, 2)}\n`);
console.log(`\nwrote bench/client/results/${file}`);
