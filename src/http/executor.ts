import { Agent, type Dispatcher } from 'undici';
import type { Readable } from 'node:stream';
import type { CounterSeries, HistogramSeries } from '../ops/fast-metrics.js';
import { upstreamCalls, upstreamDuration } from '../ops/metrics.js';
import { recordUpstreamCall } from '../ops/upstream-health.js';
import { startUpstreamSpan, type UpstreamSpan } from '../ops/tracing.js';
import { GatewayError } from '../core/errors.js';
import { restoreNumbers } from '../core/lossless-json.js';
import { readAnswer, WholeAnswer, type AnswerLimits } from './answer-budget.js';
import type { CallSignal } from './call-signal.js';
import { dispatchWhole } from './dispatch-whole.js';
import { isRefusedAddress } from './guarded-agent.js';
import { encodeJsonBody } from './json-body.js';
import { guard } from './streams.js';
import { TransportError, type Upstream, type UpstreamRequest, type UpstreamResponse } from './types.js';
import { mediaAnswer, upstreamAnswer } from './upstream-answer.js';

/** Which configured upstream a call goes to: labels its metrics and its client span. */
export type UpstreamTarget = Pick<Upstream, 'name' | 'vendor'>;

/** Default cap of one answer read whole (video bytes go through `stream`, never buffered). */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export interface StreamResponse {
  status: number;
  headers: Record<string, string>;
  body: Readable;
}

/**
 * The one place that talks to upstreams: keep-alive pools, timeouts, JSON encoding and decoding.
 * Built once at start; adapters describe requests and parse answers, this sends them.
 */
export class Executor {
  readonly agent: Agent;
  /** Cap per answer and the process-wide budget answers read whole take from (answer-budget.ts). */
  readonly answers: AnswerLimits;

  constructor(opts: { connections?: number; keepAliveTimeoutMs?: number; answers?: Partial<AnswerLimits> } = {}) {
    this.answers = { maxBytes: opts.answers?.maxBytes ?? MAX_ANSWER_BYTES, budget: opts.answers?.budget };
    this.agent = new Agent({
      connections: opts.connections ?? 128,
      keepAliveTimeout: opts.keepAliveTimeoutMs ?? 30_000,
      pipelining: 1,
    });
  }

  async send(req: UpstreamRequest, timeoutMs: number, signal?: AbortSignal, target?: UpstreamTarget): Promise<UpstreamResponse> {
    const res = await this.dispatch(req, timeoutMs, signal, false, target);
    const raw = await this.read(res, req.timeoutMs ?? timeoutMs, signal, req.maxAnswerBytes, req.meterAll);
    return req.inlineMedia ? mediaAnswer(res.statusCode, flatHeaders(res.headers), raw, req) : upstreamAnswer(res.statusCode, flatHeaders(res.headers), raw, req);
  }

  /**
   * Sends a request and hands back the body as a stream, for video bytes (never buffered whole).
   * `via` sends it through another dispatcher (a guarded agent, for a URL a vendor gave) with the
   * same timeouts, metrics and span; an address that agent refuses is passed on as it is (outcome
   * `refused` in the metrics), for the caller to tell from a failed connection.
   */
  async stream(req: UpstreamRequest, timeoutMs: number, signal?: AbortSignal, target?: UpstreamTarget, via?: Dispatcher): Promise<StreamResponse> {
    const res = await this.dispatch(req, timeoutMs, signal, true, target, via);
    return { status: res.statusCode, headers: flatHeaders(res.headers), body: res.body };
  }

  /** Sends a request and returns the raw body bytes without parsing (used on pass-through hot paths). */
  async sendRaw(
    req: UpstreamRequest,
    timeoutMs: number,
    signal?: CallSignal,
    target?: UpstreamTarget,
  ): Promise<{ status: number; headers: Record<string, string>; raw: Buffer }> {
    const { headers, body } = encode(req);
    const t = req.timeoutMs ?? timeoutMs;
    const { url, origin, path } = parsedUrl(req.url);
    const span: UpstreamSpan | undefined = startUpstreamSpan(req.method, url, headers, target);
    const started = target ? performance.now() : 0;
    const answer = new WholeAnswer(this.limitsFor(req.maxAnswerBytes, req.meterAll), signal);
    let answered = false;
    try {
      const res = await dispatchWhole(
        this.agent,
        { origin, path, method: req.method, headers, body, headersTimeout: t, bodyTimeout: t },
        answer,
        signal,
        t,
        (status) => {
          answered = true;
          if (target) observe(target, statusClass(status), started);
          span?.answered(status);
        },
      );
      return { status: res.status, headers: flatHeaders(res.headers), raw: res.raw };
    } catch (e) {
      if (e instanceof GatewayError) throw e;
      const err = toTransportError(e, answered || body !== undefined || req.method !== 'GET');
      if (!answered) {
        if (target) observe(target, err.reason, started);
        span?.failed(err);
      }
      throw err;
    }
  }

  /** The whole body, bounded in size, time and process-wide memory; a refusal for memory is the gateway's 503. */
  private async read(res: Dispatcher.ResponseData, timeoutMs: number, signal: AbortSignal | undefined, maxBytes?: number, meterAll?: boolean): Promise<Buffer> {
    try {
      return await readAnswer(res.body, res.headers['content-length'], this.limitsFor(maxBytes, meterAll), Date.now() + timeoutMs, signal);
    } catch (e) {
      if (e instanceof GatewayError) throw e;
      throw toTransportError(e, true);
    }
  }

  /**
   * The answer limits of one call: a request's own `maxAnswerBytes` only ever lowers the configured
   * cap; `meterAll` meters a small answer too (one call of a fan-out).
   */
  private limitsFor(maxBytes: number | undefined, meterAll = false): AnswerLimits {
    if (!meterAll && (maxBytes === undefined || maxBytes >= this.answers.maxBytes)) return this.answers;
    // Spelled out, not `{ ...this.answers, maxBytes }`: a spread whose property is then overridden
    // made a slow-mode (dictionary) object on every call.
    return { budget: this.answers.budget, maxBytes: Math.min(maxBytes ?? this.answers.maxBytes, this.answers.maxBytes), meterAll };
  }

  private async dispatch(
    req: UpstreamRequest,
    timeoutMs: number,
    signal?: AbortSignal,
    streaming = false,
    target?: UpstreamTarget,
    via: Dispatcher = this.agent,
  ): Promise<Dispatcher.ResponseData> {
    const { headers, body } = encode(req);
    const t = req.timeoutMs ?? timeoutMs;
    const url = new URL(req.url);
    // Undefined unless tracing is configured: then the span's traceparent goes into `headers`.
    const span: UpstreamSpan | undefined = startUpstreamSpan(req.method, url, headers, target);
    const started = target ? performance.now() : 0;
    let res: Dispatcher.ResponseData;
    try {
      res = await via.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: req.method,
        headers,
        body,
        signal,
        headersTimeout: t,
        // A streamed download may legitimately take long; only a stall between chunks counts, and a
        // stall of twice the upstream's timeout (60 s with the default 30 s) ends it.
        bodyTimeout: streaming ? 2 * t : t,
      });
    } catch (e) {
      if (isRefusedAddress(e)) {
        if (target) observe(target, 'refused', started);
        span?.failed({ reason: 'connect' });
        throw e;
      }
      const err = toTransportError(e, body !== undefined || req.method !== 'GET');
      if (target) observe(target, err.reason, started);
      span?.failed(err);
      throw err;
    }
    // From here on the body may fail (reset, timeout, abort, a destroy before it was read) at any
    // moment, also before its consumer attaches a listener: that must never be an uncaught error.
    guard(res.body);
    if (target) observe(target, statusClass(res.statusCode), started);
    span?.answered(res.statusCode);
    return res;
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;
const statusClass = (status: number): string => STATUS_CLASSES[Math.floor(status / 100) - 1] ?? 'other';

/** One upstream's metric series: its latency, and a call counter per outcome (made on first use). */
interface UpstreamSeries {
  duration: HistogramSeries;
  outcomes: Map<string, CounterSeries>;
}

/**
 * Keyed by the target object: the catalog's upstreams live as long as the process. A short-lived
 * copy (the probe CLI spreads one per call) gets an entry of its own that resolves to the same
 * series, since the metrics look series up by their label values.
 */
const seriesOf = new WeakMap<UpstreamTarget, UpstreamSeries>();

function observe(target: UpstreamTarget, outcome: string, started: number): void {
  const ms = performance.now() - started;
  let s = seriesOf.get(target);
  if (!s) seriesOf.set(target, (s = { duration: upstreamDuration.series({ vendor: target.vendor, upstream: target.name }), outcomes: new Map() }));
  let calls = s.outcomes.get(outcome);
  if (!calls) s.outcomes.set(outcome, (calls = upstreamCalls.series({ vendor: target.vendor, upstream: target.name, outcome })));
  calls.inc();
  s.duration.observe(ms / 1000);
  recordUpstreamCall(target.name, outcome, ms);
}

/**
 * `sendRaw` goes to the same few URLs again and again (an upstream's endpoint per model), so each
 * is parsed once; the URL objects are only read. Bounded: a process calling many distinct URLs
 * this way starts over rather than growing.
 */
const parsedUrls = new Map<string, { url: URL; origin: string; path: string }>();
const MAX_PARSED_URLS = 1_000;

function parsedUrl(href: string): { url: URL; origin: string; path: string } {
  let p = parsedUrls.get(href);
  if (!p) {
    const url = new URL(href);
    if (parsedUrls.size >= MAX_PARSED_URLS) parsedUrls.clear();
    parsedUrls.set(href, (p = { url, origin: url.origin, path: url.pathname + url.search }));
  }
  return p;
}

/**
 * The headers (a copy, which tracing may add to) and the body as undici sends it. A JSON body that
 * may carry media inline (`bodyMedia`) is sent from its strings, never a serialised copy of them
 * (json-body.ts); undici checks that what it sends matches the Content-Length given.
 */
function encode(req: UpstreamRequest): { headers: Record<string, string>; body: string | Buffer | Readable | undefined } {
  const headers: Record<string, string> = { ...req.headers };
  let body: string | Buffer | Readable | undefined;
  if (req.body === undefined) body = undefined;
  else if (typeof req.body === 'string' || Buffer.isBuffer(req.body)) body = req.body;
  else {
    // The client's strings and the vendors' numbers as they came (core/lossless-json.ts).
    const json = req.bodyMedia ? encodeJsonBody(req.body) : restoreNumbers(JSON.stringify(req.body));
    if (typeof json === 'string') body = json;
    else {
      body = json.stream;
      headers['content-length'] = String(json.length);
    }
    if (!hasHeader(headers, 'content-type')) headers['content-type'] = 'application/json';
  }
  return { headers, body };
}

function hasHeader(h: Record<string, string>, name: string): boolean {
  for (const k in h) if (k.toLowerCase() === name) return true;
  return false;
}

export function flatHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  // for...in rather than Object.entries: no array of pairs per answer. The headers object is a plain
  // record from undici or Node (nothing inherited is enumerable).
  for (const k in h) {
    const v = h[k];
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** Maps undici's error codes onto the few reasons the failover logic cares about. */
export function toTransportError(e: unknown, maybeSent: boolean): TransportError {
  if (e instanceof TransportError) return e;
  const err = e as { code?: string; name?: string; message?: string };
  const code = err?.code ?? '';
  const msg = err?.message ?? String(e);
  if (err?.name === 'AbortError' || code === 'UND_ERR_ABORTED') return new TransportError('aborted', msg, maybeSent);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
    return new TransportError('timeout', msg, code !== 'UND_ERR_CONNECT_TIMEOUT' && maybeSent);
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'EAI_AGAIN')
    return new TransportError('connect', msg, false);
  return new TransportError('reset', msg, maybeSent);
}
