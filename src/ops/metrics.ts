import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { FastCounter, FastHistogram, type CounterSeries } from './fast-metrics.js';
import { BACKLOG_COUNT_CAP, BACKLOG_SHARED_MS } from './outbox-backlog.js';

/**
 * Every Prometheus metric of the gateway, in one registry per process (prom-client's own model:
 * counters are process-wide, like the process they describe). Gauges that describe shared state
 * (jobs by state, circuits) are filled in at scrape time by whoever serves /metrics.
 *
 * Label values come only from bounded sets: route templates (never raw paths), methods, status
 * codes, configured upstream, vendor and model names, and fixed outcome words. Never ids, keys or
 * prompts.
 *
 * The metrics recorded on every request, upstream call and charge are FastCounter / FastHistogram
 * (fast-metrics.ts): same exposition, but their callers hold resolved series instead of passing
 * label objects that prom-client would check and hash on every increment.
 */
export const registry = new Registry();

// Process metrics: CPU, RSS, heap, GC, handles, and event-loop lag (nodejs_eventloop_lag_*).
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export const httpRequests = new FastCounter({
  name: 'gateway_http_requests_total',
  help: 'HTTP requests answered, by route template, method and status code.',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new FastHistogram({
  name: 'gateway_http_request_duration_seconds',
  help: 'Time from the request arriving to the answer being written, by route template and method.',
  labelNames: ['route', 'method'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const upstreamCalls = new FastCounter({
  name: 'gateway_upstream_requests_total',
  help: 'Calls to upstreams, by vendor, upstream and outcome (2xx, 4xx, 5xx, timeout, connect, reset, aborted, too_large, refused).',
  labelNames: ['vendor', 'upstream', 'outcome'] as const,
  registers: [registry],
});

export const upstreamDuration = new FastHistogram({
  name: 'gateway_upstream_request_duration_seconds',
  help: 'Time until an upstream answered with its status line and headers, by vendor and upstream.',
  labelNames: ['vendor', 'upstream'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const failovers = new Counter({
  name: 'gateway_failovers_total',
  help: 'Attempts that failed on one upstream and moved on to the next candidate, by the upstream left and why.',
  labelNames: ['upstream', 'reason'] as const,
  registers: [registry],
});

export const circuitState = new Gauge({
  name: 'gateway_circuit_state',
  help: 'Circuit breaker state per upstream: 0 closed, 1 open (skipped), 2 half-open (one trial let through).',
  labelNames: ['upstream'] as const,
  registers: [registry],
});

export const videoJobs = new Gauge({
  name: 'gateway_video_jobs',
  help: `Video jobs in the store, by state; exact up to ${BACKLOG_COUNT_CAP} per state, and ${BACKLOG_COUNT_CAP} when more (read from the store at scrape time).`,
  labelNames: ['state'] as const,
  registers: [registry],
});

export const videoSettlements = new Counter({
  name: 'gateway_video_settlements_total',
  help: 'Video jobs settled by this process, by model and outcome (completed, failed, rejected) and failure code.',
  labelNames: ['model', 'outcome', 'code'] as const,
  registers: [registry],
});

/** Integer micro-units to currency units for the money counters. */
export const units = (micros: number): number => micros / 1_000_000;

const money = (name: string, help: string) =>
  new Counter({ name, help: `${help} In currency units.`, labelNames: ['model'] as const, registers: [registry] });

export const moneyHeld = money('gateway_money_held_total', 'Money held for video jobs at creation, by model.');
export const moneyCaptured = money('gateway_money_captured_total', 'Money captured for completed video jobs, by model.');
export const moneyReleased = money('gateway_money_released_total', 'Holds released (settled, failed or rejected video jobs), by model.');
export const moneyCharged = new FastCounter({
  name: 'gateway_money_charged_total',
  help: 'Money charged for embeddings and chat, by model. In currency units.',
  labelNames: ['model'] as const,
  registers: [registry],
});

/** moneyCharged's series per model, resolved once: a charge is counted on every billed embeddings and chat request. */
const chargedByModel = new Map<string, CounterSeries>();

export function countCharged(model: string, micros: number): void {
  let s = chargedByModel.get(model);
  if (!s) chargedByModel.set(model, (s = moneyCharged.series({ model })));
  s.inc(units(micros));
}

export const limiterRefusals = new Counter({
  name: 'gateway_limiter_refusals_total',
  help: 'Requests refused by the rate limiter, by family (embeddings, chat, video) and reason (requests, tokens, too_large).',
  labelNames: ['family', 'reason'] as const,
  registers: [registry],
});

export const webhookDeliveries = new Counter({
  name: 'gateway_webhook_deliveries_total',
  help: 'Webhook delivery attempts by event type and outcome: delivered (2xx), retrying (failed, will be tried again), gave_up (failed for the last time).',
  labelNames: ['event', 'outcome'] as const,
  registers: [registry],
});

export const webhookDeliveryDuration = new Histogram({
  name: 'gateway_webhook_delivery_duration_seconds',
  help: 'Time of one webhook delivery attempt (connect, send, answer), by whether the receiver answered 2xx (ok) or not (error).',
  labelNames: ['result'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const webhookBacklog = new Gauge({
  name: 'gateway_webhook_outbox_pending',
  help: `Webhook deliveries waiting in the outbox, due or backing off; exact up to ${BACKLOG_COUNT_CAP}, and ${BACKLOG_COUNT_CAP} when more (read from the store at scrape time, at most every ${BACKLOG_SHARED_MS / 1000} s).`,
  registers: [registry],
});

export const webhookOldestPending = new Gauge({
  name: 'gateway_webhook_outbox_oldest_pending_seconds',
  help: `Age of the oldest webhook delivery still waiting in the outbox; 0 when none is (read at scrape time, at most every ${BACKLOG_SHARED_MS / 1000} s).`,
  registers: [registry],
});

export const logLinesDropped = new Counter({
  name: 'gateway_log_lines_dropped_total',
  help: 'Log lines not written: standard output failed (a full disk, a reader that went away), or its reader stopped taking lines and the buffer was full, or the exit could not write them.',
  registers: [registry],
});

export const connectionsRefused = new Counter({
  name: 'gateway_connections_refused_total',
  help: 'Client connections closed as they were accepted: over server.max_connections (reason "total") or over server.max_connections_per_address from one address (reason "per_address").',
  labelNames: ['reason'] as const,
  registers: [registry],
});
