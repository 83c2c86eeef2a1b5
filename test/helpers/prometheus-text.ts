/** The Prometheus text exposition format (what GET /metrics answers), read back for assertions. */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
  /** The value as written: compare big counters to exact integers with it. */
  readonly raw: string;
}

export interface Exposition {
  readonly samples: readonly Sample[];
  /** `# TYPE` of each metric family. */
  readonly types: ReadonlyMap<string, string>;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line.startsWith('#')) continue;
    const match = SAMPLE_LINE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(LABEL))
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const raw = match[3]!;
    samples.push({ name: match[1]!, labels, raw, value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) });
  }
  return { samples, types };
}

/** The sample with exactly these labels; undefined when there is none. */
export function sampleOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): Sample | undefined {
  const wanted = Object.entries(labels);
  return exposition.samples.find(
    (s) => s.name === name && Object.keys(s.labels).length === wanted.length && wanted.every(([k, v]) => s.labels[k] === v),
  );
}

/** The value of the sample with exactly these labels; undefined when there is none. */
export function valueOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  return sampleOf(exposition, name, labels)?.value;
}

/** The sum of every sample of `name` whose labels include `labels` (a counter over all its series, or some); 0 when none. */
export function totalOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels);
  return exposition.samples
    .filter((s) => s.name === name && wanted.every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** `sms_gateway_<suffix>` */
export const M = (suffix: string): string => `sms_gateway_${suffix}`;
