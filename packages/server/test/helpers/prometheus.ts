/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A parsed scrape: its samples, and each metric family's `# TYPE`. */
export interface Scrape {
  samples: Sample[];
  types: Map<string, string>;
  /** The value of the one sample of `name` whose labels include `labels`; undefined when none. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/g;

/**
 * Parses the Prometheus text format (version 0.0.4) strictly enough for tests: every line is a
 * comment, blank, or a sample, and anything else throws, so a malformed exposition fails the test.
 */
export function parsePrometheus(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      else if (!line.startsWith('# HELP ')) throw new Error(`not a Prometheus comment: ${line}`);
      continue;
    }
    const m = sampleLine.exec(line);
    if (!m) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    const rawLabels = m[2] ?? '';
    let consumed = 0;
    for (const pair of rawLabels.matchAll(labelPair)) {
      labels[pair[1]!] = pair[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      consumed += pair[0].length;
    }
    if (consumed !== rawLabels.length) throw new Error(`bad labels: ${line}`);
    // As Go's ParseFloat, which Prometheus uses: NaN in any case (prom-client writes `Nan`).
    const raw = m[3]!;
    const value = /^nan$/i.test(raw) ? NaN : /^\+?inf$/i.test(raw) ? Infinity : /^-inf$/i.test(raw) ? -Infinity : Number(raw);
    if (Number.isNaN(value) && !/^nan$/i.test(raw)) throw new Error(`bad value: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return {
    samples,
    types,
    value(name, labels = {}) {
      const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
      return found[0]?.value;
    },
  };
}
