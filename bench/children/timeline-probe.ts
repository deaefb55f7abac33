import dc from 'node:diagnostics_channel';
import { renameSync, writeFileSync } from 'node:fs';
import { STAGES, type Stage, type TimelineSummary } from './timeline-stages.js';

/**
 * Loaded with `--import` into a server child by bench/timeline.ts: stamps each request's way through
 * the process at one connection, from the diagnostics channels Node, Fastify and undici publish (no
 * change to the code measured). Each stamp holds the monotonic time and the process's CPU time
 * (`process.cpuUsage`, one getrusage call: ~1 us, which the figures include). A stage whose wall time
 * far exceeds its CPU time waited: for the scheduler (a loopback write wakes the reader, which may
 * take this core), for another process, or for an event-loop turn.
 *
 * On SIGUSR2 the medians of every stamp since the previous SIGUSR2 go, as JSON, to the file named by
 * `BENCH_TIMELINE_OUT`, and the collected requests are dropped.
 */

type Row = Partial<Record<Stage, number>> & { cpu: Partial<Record<Stage, number>> };

// The requests are sequential (one connection): the latest one is the one every event belongs to.
let current: Row | undefined;
let rows: Row[] = [];
const MAX_ROWS = 100_000;

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function stamp(row: Row | undefined, stage: Stage): void {
  if (!row || row[stage] !== undefined) return;
  row[stage] = performance.now();
  row.cpu[stage] = cpuMs();
}

dc.subscribe('http.server.request.start', () => {
  current = { cpu: {} };
  stamp(current, 'request');
  if (rows.length < MAX_ROWS) rows.push(current);
});
dc.channel('tracing:fastify.request.handler:start').subscribe(() => stamp(current, 'handler'));
dc.subscribe('undici:request:create', () => stamp(current, 'upstreamCreated'));
dc.subscribe('undici:client:sendHeaders', () => stamp(current, 'upstreamHeadersOut'));
dc.subscribe('undici:request:bodySent', () => stamp(current, 'upstreamWritten'));
dc.subscribe('undici:request:headers', () => stamp(current, 'upstreamFirstByte'));
dc.subscribe('undici:request:trailers', () => stamp(current, 'upstreamComplete'));
dc.subscribe('http.server.response.finish', () => {
  const row = current;
  stamp(row, 'responseWritten');
  // What runs after the write in the same turn (the access line, metrics, close listeners) is
  // over when the check phase comes round.
  setImmediate(() => stamp(row, 'afterResponse'));
});

function median(xs: number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!;
}

process.on('SIGUSR2', () => {
  // The last request may still be under way.
  const done = rows.slice(0, -1);
  rows = rows.slice(-1);
  const summary: TimelineSummary = { requests: done.length, stages: {} };
  for (const stage of STAGES) {
    const wall = median(done.map((r) => (r[stage] ?? NaN) - r.request!));
    if (Number.isNaN(wall)) continue;
    const cpu = median(done.map((r) => (r.cpu[stage] ?? NaN) - r.cpu.request!));
    summary.stages[stage] = { wallUs: wall * 1000, cpuUs: cpu * 1000 };
  }
  const out = process.env['BENCH_TIMELINE_OUT'];
  if (!out) return;
  // Whole or not at all: the parent polls for the file.
  writeFileSync(`${out}.tmp`, JSON.stringify(summary));
  renameSync(`${out}.tmp`, out);
});
