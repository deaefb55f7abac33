import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';

/**
 * One row of the results table. `direct` is the upstream on its own, `floor` the minimal
 * forwarding proxy, `gateway` the real gateway; the ratio column is always gateway / floor.
 */
export interface Row {
  section: string;
  measure: string;
  direct?: number;
  floor?: number;
  gateway?: number;
  /** Decimal places for the figures (default 0). */
  digits?: number;
  target?: { text: string; met: boolean };
}

function fmt(v: number | undefined, digits: number): string {
  if (v === undefined) return '';
  if (!Number.isFinite(v)) return 'n/a';
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function ratio(r: Row): string {
  if (r.gateway === undefined || r.floor === undefined || !Number.isFinite(r.gateway) || !Number.isFinite(r.floor)) return '';
  // An added latency can be at or below zero within noise; a ratio to it means nothing.
  if (r.floor <= 0) return 'n/a';
  return `${(r.gateway / r.floor).toFixed(2)}x`;
}

export function renderTable(rows: Row[]): string {
  const head = '| Section | Measure | Direct | Floor proxy | Gateway | Gateway / floor | Target | Result |';
  const rule = '|---|---|--:|--:|--:|--:|---|---|';
  const lines = rows.map((r) => {
    const d = r.digits ?? 0;
    const result = r.target ? (r.target.met ? 'met' : '**missed**') : '';
    return `| ${r.section} | ${r.measure} | ${fmt(r.direct, d)} | ${fmt(r.floor, d)} | ${fmt(r.gateway, d)} | ${ratio(r)} | ${r.target?.text ?? ''} | ${result} |`;
  });
  return [head, rule, ...lines].join('\n');
}

export interface Machine {
  cpus: number;
  model: string;
  memoryGb: number;
  node: string;
  date: string;
}

export function machine(): Machine {
  let model = 'unknown';
  try {
    model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? model;
  } catch {
    // Not Linux: keep 'unknown'.
  }
  return {
    cpus: availableParallelism(),
    model,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
}

export function describeMachine(m: Machine): string {
  return `${m.cpus} cores (nproc), ${m.model}, ${m.memoryGb} GB RAM, Node ${m.node}, ${m.date}`;
}
