import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { adminToken, startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { parsePrometheus } from '../helpers/prometheus.js';

const dashboardPath = fileURLToPath(new URL('../../../../docs/grafana-dashboard.json', import.meta.url));

function expressions(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) expressions(n, out);
  else if (node !== null && typeof node === 'object')
    for (const [k, v] of Object.entries(node)) {
      // A panel's `expr`, a query variable's `query` (a data source variable's names its type).
      const isQuery = k === 'expr' || (k === 'query' && (node as { type?: unknown }).type === 'query');
      if (isQuery && typeof v === 'string') out.push(v);
      else expressions(v, out);
    }
  return out;
}

test('the Grafana dashboard uses only series Ferry exports', async (t) => {
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/'])]), { deliver: false });
  t.after(() => ferry.stop());
  const res = await fetch(`${ferry.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
  const scrape = parsePrometheus(await res.text());
  // A labelled series with no observation yet is exported as its family's TYPE line only; a
  // histogram's samples are its family's name with a suffix.
  const exported = new Set(scrape.samples.map((s) => s.name));
  for (const [family, type] of scrape.types) {
    exported.add(family);
    if (type === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) exported.add(family + suffix);
  }

  const exprs = expressions(JSON.parse(readFileSync(dashboardPath, 'utf8')));
  assert.ok(exprs.length >= 7, 'every panel has a query');
  for (const expr of exprs) {
    const names = [...expr.matchAll(/\b[a-z_:][a-z0-9_:]*\b/g)]
      .map((m) => m[0])
      .filter((n) => n.includes('_') && /_(total|seconds|bucket|count|sum|pending|letters)$/.test(n));
    assert.ok(names.length > 0, `a series in ${expr}`);
    for (const name of names) {
      assert.ok(name.startsWith('ferry_'), `only Ferry's series: ${name} in ${expr}`);
      assert.ok(exported.has(name), `${name} is exported (in ${expr})`);
    }
  }
});
