/**
 * The stamps bench/children/timeline-probe.ts takes on each request, in the order a request normally
 * reaches them, and the summary it reports (kept apart from the probe, which subscribes on import).
 */
export const STAGES = [
  'request',
  'handler',
  'upstreamCreated',
  'upstreamHeadersOut',
  'upstreamWritten',
  'upstreamFirstByte',
  'upstreamComplete',
  'responseWritten',
  'afterResponse',
] as const;
export type Stage = (typeof STAGES)[number];

/** One stage's medians from the request's start: wall time and the process's CPU time, microseconds. */
export interface TimelineSummary {
  requests: number;
  stages: Partial<Record<Stage, { wallUs: number; cpuUs: number }>>;
}
