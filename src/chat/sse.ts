import { StringDecoder } from 'node:string_decoder';
import type { Readable, Writable } from 'node:stream';
import type { Json } from '../core/json.js';
import { discard } from '../http/streams.js';
import { readUsage, type ChatUsage } from './usage.js';

export interface RelayResult {
  /** The usage of the final chunk, when the vendor sent one. */
  usage?: ChatUsage;
  /** Data events other than the usage-only chunk and [DONE] (each is about one generated token). */
  chunks: number;
  /** The upstream stream ended normally. */
  finished: boolean;
  /** The client went away first; the upstream was cancelled. */
  clientGone: boolean;
  /** `settleUsage` ran (the usage chunk came); the caller must not bill again. */
  settled: boolean;
}

export interface RelayOptions {
  /**
   * Whether the client asked for the usage-only final chunk itself. When it did not, the chunk we
   * requested for billing is read and not passed on, so the client sees the stream it asked for.
   */
  forwardUsageChunk: boolean;
  /** Applied to events that carry an error (upstreams and proxies may echo credentials in them). */
  redact?: (event: string) => string;
  /**
   * Applied to everything passed on: removes the upstream's own credentials wherever they are (an
   * echo in an event without an error field, a proxy's page in place of a stream).
   */
  scrub?: (text: string) => string;
  /**
   * Called once, when the usage-only chunk arrives and before it is passed on: settles the charge
   * from the vendor's usage and returns its cost in currency units, which the chunk then carries as
   * `usage.cost`. So the client's figure is the one the ledger recorded, not a second computation.
   */
  settleUsage?: (usage: ChatUsage) => Promise<number>;
  /**
   * How long a write may wait for the client to take it. A client that stops reading is cut after it,
   * as an upstream that stops sending is: otherwise it would hold the upstream stream, and what the
   * request reserved, for as long as it keeps the connection open.
   */
  clientStallMs?: number;
}

const BOUNDARY = /\r?\n\r?\n/;
/**
 * The longest event passed on. Events are relayed whole, so an upstream that never ends one (a
 * malformed stream) would otherwise make the gateway buffer without bound.
 */
const MAX_EVENT_CHARS = 1024 * 1024;
const USAGE_OBJECT = /"usage"\s*:\s*\{/;
const ERROR_FIELD = /"error"\s*:|^event:\s*error/m;

/**
 * Passes server-sent events from the upstream to the client one complete event at a time, as they
 * arrive (a partial event waits only for its own end), with backpressure. Reads the usage chunk on
 * the way past. If the client disconnects the upstream body is destroyed, which aborts the upstream
 * request; if the upstream breaks mid-stream the client gets an error event and the end of the stream.
 */
export async function relayEvents(source: Readable, sink: Writable, opts: RelayOptions): Promise<RelayResult> {
  const result: RelayResult = { chunks: 0, finished: false, clientGone: false, settled: false };
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let oversized = false;
  const onClose = () => {
    result.clientGone = true;
    discard(source);
  };
  sink.once('close', onClose);
  // The client may already be gone by the time the upstream answered.
  if (sink.destroyed || sink.writableEnded) onClose();
  try {
    for await (const chunk of source) {
      pending += decoder.write(chunk as Buffer);
      let out = '';
      let m: RegExpExecArray | null;
      while ((m = BOUNDARY.exec(pending)) !== null) {
        const end = m.index + m[0].length;
        const event = pending.slice(0, end);
        pending = pending.slice(end);
        const verdict = inspect(event, opts, result);
        if (verdict === 'drop') continue;
        if (verdict !== 'pass') {
          // The usage chunk: what went before it leaves first, then it waits for the charge.
          if (out) await write(sink, scrub(out, opts), opts.clientStallMs);
          out = '';
          const priced = await priceUsageChunk(verdict, opts, result);
          if (priced !== undefined && !result.clientGone) out += priced;
          continue;
        }
        out += opts.redact && ERROR_FIELD.test(event) ? opts.redact(event) : event;
      }
      if (out) await write(sink, scrub(out, opts), opts.clientStallMs);
      if (result.clientGone) break;
      if (pending.length > MAX_EVENT_CHARS) {
        oversized = true;
        discard(source);
        break;
      }
    }
    if (!oversized) {
      pending += decoder.end();
      if (pending && !result.clientGone) await write(sink, scrub(opts.redact && ERROR_FIELD.test(pending) ? opts.redact(pending) : pending, opts), opts.clientStallMs);
      result.finished = !result.clientGone;
    }
  } catch {
    // Either the client left (source destroyed by onClose) or the upstream broke; handled below.
  } finally {
    sink.off('close', onClose);
  }
  if (!result.clientGone) {
    if (!result.finished) {
      const error = { error: { type: 'server_error', code: 'upstream_error', message: 'The upstream stream ended unexpectedly.' } };
      sink.write(`data: ${JSON.stringify(error)}\n\n`);
    }
    sink.end();
  }
  return result;
}

/** The usage-only chunk, parsed, when the caller settles on it. */
interface UsageChunk {
  chunk: Record<string, unknown> & { usage: Record<string, unknown> };
  usage: ChatUsage;
}

/**
 * Settles the charge on the usage chunk and renders it with `usage.cost` added (every other field
 * as the vendor sent it); undefined when the client did not ask for the chunk.
 */
async function priceUsageChunk(u: UsageChunk, opts: RelayOptions, result: RelayResult): Promise<string | undefined> {
  result.settled = true;
  const cost = await opts.settleUsage!(u.usage);
  if (!opts.forwardUsageChunk) return undefined;
  return `data: ${JSON.stringify({ ...u.chunk, usage: { ...u.chunk.usage, cost } })}\n\n`;
}

/** Records what the event tells us; returns whether to pass it on, or the usage chunk to settle on. */
function inspect(event: string, opts: RelayOptions, result: RelayResult): 'pass' | 'drop' | UsageChunk {
  if (!event.includes('data:')) return 'pass';
  if (USAGE_OBJECT.test(event)) {
    const payload = dataOf(event);
    let chunk: unknown;
    try {
      chunk = JSON.parse(payload);
    } catch {
      chunk = undefined;
    }
    const c = chunk as { usage?: unknown; choices?: unknown } | undefined;
    const usage = readUsage(c?.usage as Json | undefined);
    if (usage) result.usage = usage;
    if (Array.isArray(c?.choices) && c.choices.length === 0) {
      if (usage && opts.settleUsage && !result.settled) return { chunk: c as UsageChunk['chunk'], usage };
      return opts.forwardUsageChunk ? 'pass' : 'drop';
    }
  }
  if (!event.includes('[DONE]')) result.chunks += 1;
  return 'pass';
}

/** The data lines of one event, joined as the SSE format says. */
function dataOf(event: string): string {
  let data = '';
  for (const line of event.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    data = data ? `${data}\n${v}` : v;
  }
  return data;
}

function scrub(text: string, opts: RelayOptions): string {
  return opts.scrub ? opts.scrub(text) : text;
}

function write(sink: Writable, data: string, stallMs: number | undefined): Promise<void> | void {
  // A closed client takes nothing, and its 'close' has already been emitted: waiting for one would
  // never end (events read behind the usage chunk after the client was cut, say), and the request's
  // reservations would be held for good.
  if (sink.destroyed) return;
  if (sink.write(data)) return;
  return new Promise((resolve) => {
    // Destroying the sink closes it: the 'close' handlers end the wait and cancel the upstream.
    const timer = stallMs === undefined ? undefined : setTimeout(() => sink.destroy(), stallMs);
    const done = () => {
      clearTimeout(timer);
      sink.off('drain', done);
      sink.off('close', done);
      resolve();
    };
    sink.on('drain', done);
    sink.on('close', done);
  });
}
