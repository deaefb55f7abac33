import { StringDecoder } from 'node:string_decoder';
import type { Readable, Writable } from 'node:stream';
import { isObject, type Json, type JsonObject } from '../core/json.js';
import { discard } from '../http/streams.js';
import { carriesError } from './upstream.js';
import { readUsage, type ChatUsage } from './usage.js';

export interface RelayResult {
  /** The usage of the final chunk, when the vendor sent one. */
  usage?: ChatUsage;
  /**
   * Events that carried generated content (a choice's delta with text, a tool call, ...): each is
   * about one generated token, the estimate billed when the vendor reported no usage. Error events,
   * the usage-only chunk, [DONE] and chunks with an empty delta count for nothing.
   */
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
  /**
   * Applied to every event that is not a completion chunk: an error, a proxy's words, anything that
   * does not parse (upstreams and proxies may echo credentials and addresses in them).
   */
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
  /**
   * Why the gateway cut the stream short, if it did (a shutdown aborting it): the last event then
   * carries this error instead of saying the upstream broke.
   */
  cutError?: () => { type: string; code?: string; message: string } | undefined;
}

const BOUNDARY = /\r?\n\r?\n/;
/**
 * The longest event passed on. Events are relayed whole, so an upstream that never ends one (a
 * malformed stream) would otherwise make the gateway buffer without bound.
 */
const MAX_EVENT_CHARS = 1024 * 1024;
/** An error said in the raw text; the parsed event is looked at too (`"\u0065rror"` is also `error`). */
const ERROR_FIELD = /"error"\s*:|^event:\s*error/m;
const ERROR_EVENT = /^event:\s*error/m;
const DATA_LINE = /^data:/m;

/**
 * Passes server-sent events from the upstream to the client one complete event at a time, as they
 * arrive (a partial event waits only for its own end), with backpressure. Reads the usage chunk on
 * the way past. If the client disconnects the upstream body is destroyed, which aborts the upstream
 * request; if the upstream breaks mid-stream, or ends without a single data event, the client gets
 * an error event and the end of the stream.
 */
export async function relayEvents(source: Readable, sink: Writable, opts: RelayOptions): Promise<RelayResult> {
  const result: RelayResult = { chunks: 0, finished: false, clientGone: false, settled: false };
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let oversized = false;
  let answered = false;
  const onClose = () => {
    result.clientGone = true;
    discard(source);
  };
  sink.once('close', onClose);
  // The client may already be gone by the time the upstream answered.
  if (sink.destroyed || sink.writableEnded) onClose();
  // Events are passed on in batches, one write per read of the upstream.
  let out = '';
  const flush = async () => {
    if (out && !result.clientGone) await write(sink, scrub(out, opts), opts.clientStallMs);
    out = '';
  };
  const relay = async (event: string) => {
    const verdict = inspect(event, opts, result);
    answered ||= DATA_LINE.test(event);
    if (verdict === 'drop') return;
    if (verdict === 'pass' || verdict === 'redact') {
      out += verdict === 'redact' && opts.redact ? opts.redact(event) : event;
      return;
    }
    // The usage chunk: what went before it leaves first, then it waits for the charge.
    await flush();
    const priced = await priceUsageChunk(verdict, opts, result);
    if (priced !== undefined && !result.clientGone) out += priced;
  };
  try {
    for await (const chunk of source) {
      pending += decoder.write(chunk as Buffer);
      let m: RegExpExecArray | null;
      while ((m = BOUNDARY.exec(pending)) !== null) {
        const end = m.index + m[0].length;
        const event = pending.slice(0, end);
        pending = pending.slice(end);
        await relay(event);
      }
      await flush();
      if (result.clientGone) break;
      if (pending.length > MAX_EVENT_CHARS) {
        oversized = true;
        discard(source);
        break;
      }
    }
    if (!oversized) {
      pending += decoder.end();
      if (pending && !result.clientGone) await relay(pending);
      await flush();
      result.finished = !result.clientGone;
    }
  } catch {
    // Either the client left (source destroyed by onClose) or the upstream broke; handled below.
  } finally {
    sink.off('close', onClose);
  }
  if (!result.clientGone) {
    // An empty stream is no answer either: a client reading it would see a completion of nothing.
    if (!result.finished || !answered) {
      const cut = result.finished ? undefined : opts.cutError?.();
      const error = { error: cut ?? { type: 'server_error', code: 'upstream_error', message: 'The upstream stream ended unexpectedly.' } };
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

/**
 * Records what the event tells us (its usage, whether it carried generated content) and returns how
 * to pass it on: as it is (a completion chunk, [DONE], a comment), with the full redaction (anything
 * else), not at all, or as the usage chunk to settle on. The data is parsed, not matched as text, so
 * an error or a key written with escapes is still seen for what it is.
 */
function inspect(event: string, opts: RelayOptions, result: RelayResult): 'pass' | 'redact' | 'drop' | UsageChunk {
  if (!event.includes('data:')) return ERROR_FIELD.test(event) ? 'redact' : 'pass';
  const data = dataOf(event);
  if (data.trim() === '[DONE]') return 'pass';
  const c = parseObject(data);
  // An error event, beside the choices or in one of them (or what is not even JSON), generated
  // nothing and reports no usage of ours.
  if (!c || carriesError(c) || ERROR_EVENT.test(event)) return 'redact';
  const usage = readUsage(c.usage as Json | undefined);
  if (usage) result.usage = usage;
  if (!Array.isArray(c.choices)) return 'redact';
  if (c.choices.length === 0 && isObject(c.usage)) {
    if (usage && opts.settleUsage && !result.settled) return { chunk: c as UsageChunk['chunk'], usage };
    return opts.forwardUsageChunk ? 'pass' : 'drop';
  }
  if (c.choices.some(generatedContent)) result.chunks += 1;
  // A chunk that also says "error" somewhere (an `"error": null` some servers add) is redacted whole.
  return ERROR_FIELD.test(event) ? 'redact' : 'pass';
}

/**
 * A choice whose delta carries something generated: text, a refusal, a tool call, reasoning,
 * audio. The role alone, or fields that are empty or null, are no output (a hostile upstream could
 * otherwise send any number of empty events and have each billed as a token).
 */
function generatedContent(choice: unknown): boolean {
  if (!isObject(choice) || !isObject(choice.delta)) return false;
  for (const [k, v] of Object.entries(choice.delta)) {
    if (k === 'role') continue;
    if (typeof v === 'string' ? v.length > 0 : Array.isArray(v) ? v.length > 0 : isObject(v) && Object.keys(v).length > 0) return true;
  }
  return false;
}

function parseObject(data: string): JsonObject | undefined {
  try {
    const v = JSON.parse(data) as Json;
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
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
