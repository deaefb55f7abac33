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
  /** Figures of peer gateways (`--peers`) by column name; their ratio is to the floor too. */
  peers?: Record<string, number>;
  /** Decimal places for the figures (default 0). */
  digits?: number;
  target?: { text: string; met: boolean };
}

function fmt(v: number | undefined, digits: number): string {
  if (v === undefined) return '';
  if (!Number.isFinite(v)) return 'n/a';
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function ratioOf(v: number | undefined, floor: number | undefined): string {
  if (v === undefined || floor === undefined || !Number.isFinite(v) || !Number.isFinite(floor)) return '';
  // An added latency can be at or below zero within noise; a ratio to it means nothing.
  if (floor <= 0) return 'n/a';
  return `${(v / floor).toFixed(2)}x`;
}

/** A peer gateway's column: its name, and why it is empty when it did not run. */
export interface PeerColumn {
  name: string;
  notRun?: string;
}

function peerCell(r: Row, c: PeerColumn): string {
  if (c.notRun) return 'not run';
  const v = r.peers?.[c.name];
  if (v === undefined) return '';
  const ratio = ratioOf(v, r.floor);
  return ratio ? `${fmt(v, r.digits ?? 0)} (${ratio})` : fmt(v, r.digits ?? 0);
}

/** The results table; peer columns (value and ratio to the floor) only when `peers` has any. */
export function renderTable(rows: Row[], peers: readonly PeerColumn[] = []): string {
  const peerHead = peers.map((c) => ` ${c.name} (/ floor) |`).join('');
  const head = `| Section | Measure | Direct | Floor proxy | Gateway | Gateway / floor |${peerHead} Target | Result |`;
  const rule = `|---|---|--:|--:|--:|--:|${peers.map(() => '--:|').join('')}---|---|`;
  const lines = rows.map((r) => {
    const d = r.digits ?? 0;
    const result = r.target ? (r.target.met ? 'met' : '**missed**') : '';
    const peerCells = peers.map((c) => ` ${peerCell(r, c)} |`).join('');
    return `| ${r.section} | ${r.measure} | ${fmt(r.direct, d)} | ${fmt(r.floor, d)} | ${fmt(r.gateway, d)} | ${ratioOf(r.gateway, r.floor)} |${peerCells} ${r.target?.text ?? ''} | ${result} |`;
  });
  return [head, rule, ...lines].join('\n');
}

/**
 * Every target of the run in one table: the gateway's figure, the threshold as computed from this
 * run's figures (ratios are to the floor measured in the same run), and whether it was met.
 */
export function renderTargets(rows: Row[]): string {
  const withTarget = rows.filter((r) => r.target);
  if (withTarget.length === 0) return '';
  const head = '| Target | Gateway | Threshold (this run) | Result |';
  const rule = '|---|--:|---|---|';
  const lines = withTarget.map((r) => `| ${r.section}: ${r.measure} | ${fmt(r.gateway, r.digits ?? 0)} | ${r.target!.text} | ${r.target!.met ? 'met' : '**missed**'} |`);
  const met = withTarget.filter((r) => r.target!.met).length;
  return [head, rule, ...lines, '', `${met} of ${withTarget.length} targets met.`].join('\n');
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
