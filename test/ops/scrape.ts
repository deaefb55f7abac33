import { call, type TestGateway } from '../helpers/gateway.js';

/** One scrape of /metrics, as `name{label="v",...}` -> value (labels in the order Prometheus prints them). */
export type Samples = Map<string, number>;

export async function scrape(gw: TestGateway): Promise<Samples> {
  const r = await call(gw, 'GET', '/metrics', { headers: { authorization: `Bearer ${gw.adminToken}` } });
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}: ${r.text}`);
  return parse(r.text);
}

export function parse(text: string): Samples {
  const out: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

/** The sum of every sample of `name` whose labels include all of `labels`. */
export function total(s: Samples, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [key, v] of s) {
    const brace = key.indexOf('{');
    if ((brace === -1 ? key : key.slice(0, brace)) !== name) continue;
    if (Object.entries(labels).every(([k, want]) => key.includes(`${k}="${want}"`))) sum += v;
  }
  return sum;
}

/** How much `name` (with `labels`) moved between two scrapes. */
export const delta = (before: Samples, after: Samples, name: string, labels: Record<string, string> = {}) =>
  total(after, name, labels) - total(before, name, labels);
