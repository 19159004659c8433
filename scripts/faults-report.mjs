#!/usr/bin/env node
// Runs the fault-injection suite (packages/server/test/faults) and regenerates the
// "Reliability" section from its results: between <!-- reliability:start --> and
// <!-- reliability:end --> in README.md when the repository has one, else in
// docs/reliability.md. Exits non-zero when a test fails (the section still shows it).
//
//   node scripts/faults-report.mjs           default forms (what `npm test` runs too)
//   node scripts/faults-report.mjs --long    long forms (FERRY_FAULTS_LONG=1)
//   FERRY_FAULTS_SEED=123 node scripts/faults-report.mjs   replay one seed
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { run } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

// The tests are TypeScript loaded through tsx, with workspace packages resolved to their
// sources; the test runner's children inherit these flags from this process.
if (!process.execArgv.includes('--conditions=ferry-source')) {
  const self = fileURLToPath(import.meta.url);
  const child = spawnSync(process.execPath, ['--conditions=ferry-source', '--import', 'tsx', self, ...process.argv.slice(2)], {
    cwd: root,
    stdio: 'inherit',
  });
  process.exit(child.status ?? 1);
}

const long = process.argv.includes('--long') || process.env.FERRY_FAULTS_LONG === '1';
if (long) process.env.FERRY_FAULTS_LONG = '1';
process.env.FERRY_LOG_LEVEL ??= 'silent';

/** What each file of the suite proves, in one place, shown above its results. */
const claims = {
  'repeated-kill.test.ts': {
    fault: 'Repeated SIGKILL under load',
    proves:
      'The real `ferry serve` process is killed with SIGKILL at a random moment (seeded) while four concurrent senders post batches and the worker delivers, then restarted on the same data directory, several times over. Every event that was answered 200 reaches the receiver; duplicates (at-least-once) are counted and reported, and a final SIGTERM still stops cleanly.',
  },
  'two-node-kill.test.ts': {
    fault: 'SIGKILL of one of two nodes on PostgreSQL',
    proves:
      "Two real `ferry serve` processes share one PostgreSQL schema with the default lease (12 s, renewed every 4 s) and each their own node id. 1,000 events are acknowledged, half through each, and one node is killed with SIGKILL once delivery is under way. Every acknowledged event reaches the receiver within 20 s of the kill (the other node takes the dead one's jobs when their leases run out); duplicates (sent by the dead node, not recorded before it died) are counted and reported, and the survivor still stops cleanly on SIGTERM.",
  },
  'receiver-outage.test.ts': {
    fault: 'Receiver outage and recovery',
    proves:
      'The receiver refuses connections, then answers 503, then hangs past the delivery timeout, then recovers, on a manual clock with a shortened retry window; the webhook time limit runs on that clock too, so a hang times out when the test moves the clock past it, not after real waiting. No attempt starts before its due time (checked one millisecond early and against every attempt start in `GET /admin/v1/deliveries/:id`), the schedule follows the retry policy, each attempt logs the right error class, and everything is delivered once after recovery. An outage longer than the window dead-letters every event with `retry_window_exhausted` and the last error; nothing is retried by itself afterwards, and a replay delivers.',
  },
  'store-failure.test.ts': {
    fault: 'Store failures',
    proves:
      'Disk full for real (the data directory on a tiny tmpfs filled to the last block; skipped where mounting is not permitted) and the database locked by another connection. While broken, ingestion answers 503 `store_unavailable`, never 200, and stores nothing from refused requests; once the fault is removed, service resumes without a restart and every event acknowledged before and after is delivered. The store made read-only: the kernel checks that when a file is opened, so a running Ferry keeps writing to files it has open, and the fault is injected between two starts (the same tmpfs remounted read-only, which root cannot write either; likewise skipped where mounting is not permitted). `ferry serve` then exits at once, naming the store and what to check, and never listens; once writable again it starts on the same data and delivers every event it had acknowledged. (PostgreSQL stopped: next entry.)',
  },
  'postgres-stopped.test.ts': {
    fault: 'PostgreSQL stopped',
    proves:
      "A PostgreSQL server of the test's own (never the shared one) is stopped under a running Ferry and started again. While it is down, ingestion answers 503 `store_unavailable`, never 200, and the process stays up; once it is back, ingestion resumes without restarting Ferry and every event acknowledged before and after is delivered, none of the refused ones.",
  },
  'ingest-fuzz.test.ts': {
    fault: 'Hostile ingestion requests (property-based)',
    proves:
      "fast-check generates requests of hostile shapes (garbage bytes, wrong types at every known field, numeric ids past 2^53 or with a fraction, missing identities and fields, bad messageIds and timestamps, deep nesting, oversize messages and bodies, gzip and bogus encodings, bad Authorization headers, any Content-Type, batches mixing good and bad messages, retried sends), sent serially over HTTP. Each part is generated with the outcome it must cause (each message valid for its type with at most one thing broken), and the answer is compared with that, never with the server's own verdicts: the status and code of a refused request, exactly which messages of an accepted batch are rejected and with which code. Besides: never a 5xx, a 4xx stores nothing, a 200 stores exactly the accepted new messages (nothing half-stored), every rejection is counted, and the server still answers /health at the end.",
  },
  'abusive-clients.test.ts': {
    fault: 'Slow and abusive clients',
    proves:
      "Each test on a server of its own. Oversized headers are refused with 431; with 200 idle connections, slow-header and slow-body sockets open, every request of a normal client still succeeds (its slowest round trip is reported); with its limits shortened for the test, the server closes every idle connection, slow-header and slow-body socket by itself, each with a 408, and a body that never finished stores nothing. Against a real `ferry serve`, 4,800 connections from six loopback addresses each send all but the last byte of a 512,000-byte body, a quarter each with an unknown write key, with none, to a path no route matches (`/v1/batch/`) and to the admin API with a wrong token: every stranger is answered 401, every unmatched path 404 and every wrong admin token 401, on the head alone; keyless bodies past their quarter of the 64 MiB body budget get 503; the server's resident memory stays under a stated ceiling (the peak is reported), and a normal client's 100 KB batches are served throughout. Then 128 complete batches of about 500 KB, sent at once with a valid key, are all stored, and the growth of the resident memory stays under a stated ceiling.",
  },
};

const dir = join(root, 'packages/server/test/faults');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.test.ts'))
  .sort()
  .map((f) => join(dir, f));

/** Per file: its tests in order, each with its diagnostics. */
const results = new Map(files.map((f) => [f, []]));
const last = new Map(); // `${file}|${nesting}` -> the last test seen at that depth
const startedAt = Date.now();
let failed = 0;

const stream = run({ files, concurrency: 2, timeout: long ? 900_000 : 300_000 });
for await (const event of stream) {
  const { type, data } = event;
  if ((type === 'test:pass' || type === 'test:fail') && data.file) {
    const entry = {
      name: data.name,
      nesting: data.nesting,
      ok: type === 'test:pass',
      skip: data.skip,
      todo: data.todo,
      ms: data.details?.duration_ms ?? 0,
      diagnostics: [],
      error: type === 'test:fail' ? String(data.details?.error?.cause?.message ?? data.details?.error?.message ?? 'failed') : undefined,
    };
    if (!entry.ok && !entry.todo) failed++;
    results.get(data.file)?.push(entry);
    last.set(`${data.file}|${data.nesting}`, entry);
    const mark = entry.skip ? '-' : entry.ok ? '✓' : '✗';
    process.stdout.write(`${'  '.repeat(data.nesting)}${mark} ${entry.name} (${Math.round(entry.ms)} ms)\n`);
    if (entry.error) process.stdout.write(`${'  '.repeat(data.nesting + 1)}${entry.error.split('\n').join(`\n${'  '.repeat(data.nesting + 1)}`)}\n`);
  } else if (type === 'test:diagnostic' && data.file) {
    const owner = last.get(`${data.file}|${data.nesting}`);
    owner?.diagnostics.push(data.message);
    process.stdout.write(`${'  '.repeat(data.nesting + 1)}# ${data.message}\n`);
  } else if (type === 'test:stderr' && data.file && process.env.FERRY_FAULTS_VERBOSE) {
    process.stderr.write(data.message);
  }
}
const totalS = ((Date.now() - startedAt) / 1000).toFixed(1);

// -------------------------------------------------------------------------------------------

const md = [];
md.push('## Reliability', '');
md.push(
  `_Generated by \`node scripts/faults-report.mjs${long ? ' --long' : ''}\` from a run of \`packages/server/test/faults\` ` +
    `(${long ? 'long forms, FERRY_FAULTS_LONG=1' : 'default forms, as in `npm test`'}; Node ${process.version}; ${totalS} s in all). ` +
    'Do not edit by hand: run the script again._',
  '',
);
md.push(
  'The fault suite (`npm run test:faults`) runs a real Ferry (in-process or as the `ferry serve` process), real webhook receivers on loopback and a real SQLite file, and injects each fault below. Time-based behaviour runs on a manual clock; random choices come from a printed seed (`FERRY_FAULTS_SEED=<n>` replays one).',
  '',
);
md.push('| fault | result | time |', '|---|---|---|');
for (const file of files) {
  const name = relative(dir, file);
  const tests = results.get(file).filter((e) => e.nesting === 0);
  const ok = tests.length > 0 && tests.every((e) => e.ok);
  const skipped = tests.filter((e) => e.skip).length;
  const ms = tests.reduce((n, e) => n + e.ms, 0);
  md.push(`| ${claims[name]?.fault ?? name} (\`${name}\`) | ${ok ? 'pass' : 'FAIL'}${skipped ? `, ${skipped} skipped` : ''} | ${(ms / 1000).toFixed(1)} s |`);
}
md.push('');
for (const file of files) {
  const name = relative(dir, file);
  md.push(`### ${claims[name]?.fault ?? name}`, '');
  if (claims[name]) md.push(claims[name].proves, '');
  for (const e of results.get(file)) {
    const mark = e.skip ? 'skipped' : e.todo ? 'todo' : e.ok ? 'pass' : 'FAIL';
    const indent = '  '.repeat(e.nesting);
    md.push(`${indent}- ${mark}: ${e.name} (${(e.ms / 1000).toFixed(1)} s)${typeof e.skip === 'string' ? ` — ${e.skip}` : ''}`);
    for (const d of e.diagnostics) md.push(`${indent}  - ${d}`);
    if (e.error) md.push(`${indent}  - error: ${e.error.split('\n')[0]}`);
  }
  md.push('');
}
const section = `<!-- reliability:start -->\n${md.join('\n').trimEnd()}\n<!-- reliability:end -->`;

const readme = join(root, 'README.md');
let target;
if (existsSync(readme)) {
  const text = readFileSync(readme, 'utf8');
  const start = text.indexOf('<!-- reliability:start -->');
  const end = text.indexOf('<!-- reliability:end -->');
  const updated =
    start !== -1 && end > start ? text.slice(0, start) + section + text.slice(end + '<!-- reliability:end -->'.length) : `${text.trimEnd()}\n\n${section}\n`;
  writeFileSync(readme, updated);
  target = readme;
} else {
  target = join(root, 'docs/reliability.md');
  writeFileSync(
    target,
    `# Reliability\n\nWhat the fault-injection suite proves, regenerated by \`node scripts/faults-report.mjs\`. ` +
      `(This page stands in for the README's "Reliability" section until the repository has a README.)\n\n${section}\n`,
  );
}
process.stdout.write(`\n${failed === 0 ? 'all passed' : `${failed} failed`} in ${totalS} s; wrote the Reliability section to ${relative(root, target)}\n`);
process.exit(failed === 0 ? 0 : 1);
