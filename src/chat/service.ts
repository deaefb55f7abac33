import { Reservations } from '../billing/reservations.js';
import { KeyBudgets, type BudgetSettle } from '../billing/key-budgets.js';
import { costUnits } from '../billing/usage-cost.js';
import type { AuthContext } from '../auth/types.js';
import { errors, GatewayError } from '../core/errors.js';
import { isObject, type JsonObject } from '../core/json.js';
import { redactorFor } from '../core/redact.js';
import type { StreamResponse } from '../http/executor.js';
import { STATIC_AUTH, UpstreamClient } from '../http/upstream-client.js';
import { discard } from '../http/streams.js';
import { TransportError, type Upstream } from '../http/types.js';
import { admitOrThrow, giveBack, refusalGivesBack } from '../limits/refusal.js';
import { scopesFor } from '../limits/scopes.js';
import type { ModelInfo } from '../routing/catalog.js';
import { withFailover } from '../routing/failover.js';
import { ChatBilling } from './billing.js';
import { relayEvents } from './sse.js';
import { admittedOutputTokens, holdRefusals } from './output-hold.js';
import { DEFAULT_OUTPUT_RESERVE_TOKENS, estimatePromptTokens, reservedCompletionTokens } from './tokens.js';
import type { ChatCall, ChatLogger, ChatResult, ChatServiceDeps, Reservation } from './types.js';
import { buildChatRequest, CHAT_VENDORS, classifyChatError, parseJson } from './upstream.js';
import { chatCost, readUsage } from './usage.js';
import { generatedText, readCompletion, renderCompletion } from './completion-body.js';
import { LargeCompletions, OFF_THREAD_BYTES, type Completion } from './large-completions.js';
import { validateChatBody } from './validate.js';

const MAX_ERROR_BODY = 64 * 1024;

/**
 * OpenAI-compatible chat completions, kept thin: admission on the chat limiter with a tokenizer
 * estimate, a balance pre-check, failover across `openai` upstreams before the first byte, the body
 * passed through, and billing from the usage the vendor reports (input and output tokens apart).
 */
export class ChatService {
  private readonly log: ChatLogger;
  private readonly reservations: Reservations;
  private readonly client: UpstreamClient;
  private readonly budgets: KeyBudgets;
  private readonly defaultOutputTokens: number;
  private readonly billing: ChatBilling;
  /** Where answers over OFF_THREAD_BYTES are prepared, off the main thread. */
  readonly largeAnswers: LargeCompletions;

  constructor(private readonly deps: ChatServiceDeps) {
    this.defaultOutputTokens = deps.defaultOutputReserveTokens ?? DEFAULT_OUTPUT_RESERVE_TOKENS;
    this.log = deps.logger ?? { warn: (m) => console.warn(m), error: (m) => console.error(m) };
    this.reservations = deps.reservations ?? new Reservations(deps.store);
    this.client = deps.client ?? new UpstreamClient(deps.executor);
    this.billing = new ChatBilling(deps, this.log);
    this.largeAnswers = deps.largeAnswers ?? new LargeCompletions({ log: (m) => this.log.error(m) });
    this.budgets =
      deps.budgets ?? new KeyBudgets(deps.store, () => deps.clock.now(), (e) => this.log.error(`key budget correction failed: ${(e as Error).message}`));
  }

  /**
   * `commit`: called when a non-streamed answer is about to be billed, so that the request is not
   * answered with an error (its deadline, a shutdown's cut) while the charge is being written.
   */
  async create(ctx: AuthContext, model: ModelInfo, body: JsonObject, signal?: AbortSignal, requestId?: string, commit?: () => void): Promise<ChatResult> {
    validateChatBody(body);
    const { limiter, catalog } = this.deps;
    const promptEstimate = await estimatePromptTokens(body);
    // Without a cap of the client's own, an allowance stands in for the output (tokens.ts).
    const output = reservedCompletionTokens(body, { modelMax: model.maxOutputTokens, fallback: this.defaultOutputTokens });
    const scopes = scopesFor(ctx, 'chat', this.deps.defaults);
    const estimate = promptEstimate + admittedOutputTokens(output, promptEstimate, scopes);
    const admission = await admitOrThrow(limiter, 'chat', scopes, estimate);
    const r: Reservation = { ctx, model, scopes, estimate, promptEstimate, bounds: { body, promptEstimate, output }, requestId, admittedSecond: admission.second };
    let release: ((charged?: number) => void) | undefined;
    let settleBudget: BudgetSettle | undefined;
    try {
      const estCost = chatCost(model.price, promptEstimate, output.tokens);
      const refusals = holdRefusals(output, estCost);
      // The key's own budget first: its refusal names the key, not the account.
      settleBudget = await this.budgets.reserve(ctx.key, estCost, refusals.keyBudget);
      release = await this.reservations.reserve(ctx.account.id, estCost);
      if (!release) throw errors.insufficientQuota(refusals.balance);
      const candidates = catalog.candidates(model.name, ctx.account).filter((u) => CHAT_VENDORS.has(u.vendor));
      if (candidates.length === 0) throw errors.upstreamUnavailable(`No chat upstream is configured for '${model.name}'.`);
      if (body.stream !== true) {
        const out = await this.complete({ r, candidates, body, limitHeaders: admission.headers, signal, commit });
        release(r.charged);
        await settleBudget(r.charged ?? 0);
        return out;
      }
      const out = await this.stream({ r, candidates, body, limitHeaders: admission.headers, signal });
      if (out.kind !== 'stream') {
        release(r.charged);
        await settleBudget(r.charged ?? 0);
        return out;
      }
      // The reservations last until the stream is over and billed.
      const done = release;
      const budgetDone = settleBudget;
      return { ...out, relay: (sink, cutBy) => out.relay(sink, cutBy).finally(() => (done(r.charged), budgetDone(r.charged ?? 0))) };
    } catch (e) {
      release?.();
      await settleBudget?.(r.charged ?? 0);
      // Nothing was generated: the tokens reserved at admission go back, and for a refusal (402,
      // an upstream's 400, load shedding) the request too (limits/refusal.ts).
      // The give-back is awaited (a refusal is not the hot path) so that the refused answer's
      // headers describe the windows without this request.
      let headers = admission.headers;
      if (refusalGivesBack(e))
        headers = await giveBack(limiter, 'chat', r.scopes, r.estimate, admission, (err) => this.log.warn(`rate-limit give-back failed: ${(err as Error).message}`));
      else this.billing.correct(r, -r.estimate);
      if (e instanceof GatewayError) for (const [k, v] of Object.entries(headers)) e.headers[k] ??= v;
      throw e;
    }
  }

  /** The upstream request of one attempt of `call` on `up`. */
  private requestFor({ r, body }: ChatCall, up: Upstream, stream: boolean) {
    return buildChatRequest(up, this.deps.catalog.upstreamModel(up, r.model.name), body, stream, r.requestId);
  }

  private async complete(call: ChatCall): Promise<ChatResult> {
    const { r, candidates, limitHeaders, signal } = call;
    const { value, upstream } = await withFailover(
      candidates,
      async (up) => {
        const req = this.requestFor(call, up, false);
        const res = await this.client.sendRaw(up, STATIC_AUTH, req, signal);
        if (res.status >= 200 && res.status < 300) {
          // Tens of MB (many choices, log probabilities, audio) would hold the event loop for seconds.
          if (res.raw.length > OFF_THREAD_BYTES) return this.largeAnswers.prepare(res.raw, up, signal);
          const read = readCompletion(res.raw);
          return 'verdict' in read ? { ok: false, verdict: read.verdict } : { ok: true, value: smallCompletion(res.raw, read.json, up) };
        }
        // An error envelope is a few hundred bytes: a larger error answer is classified by its status
        // alone, not parsed (as for a stream's error answer, of which MAX_ERROR_BODY is read).
        const json = res.raw.length <= MAX_ERROR_BODY ? parseJson(res.raw) : undefined;
        return { ok: false, verdict: classifyChatError(res.status, json, res.headers) };
      },
      this.failoverOptions(),
    );
    const usage = value.usage ?? { promptTokens: r.promptEstimate, completionTokens: await value.generated(), reported: false };
    // The client hung up or timed out before the answer: it receives nothing and is not charged.
    if (signal?.aborted) throw new TransportError('aborted', 'the client is gone', true);
    // From here the answer is owed: billed, it must also be delivered.
    call.commit?.();
    await this.billing.settle(r, usage, upstream);
    const body = value.render(costUnits(r.charged ?? 0));
    return { kind: 'json', status: 200, headers: { ...limitHeaders }, body };
  }

  /** Stops the answer worker (at shutdown, once no request is left). */
  close(): Promise<void> {
    return this.largeAnswers.close();
  }

  private async stream(call: ChatCall): Promise<ChatResult> {
    const { r, candidates, body, limitHeaders, signal } = call;
    const { value: res, upstream } = await withFailover<StreamResponse>(
      candidates,
      async (up) => {
        const req = this.requestFor(call, up, true);
        const res = await this.client.stream(up, STATIC_AUTH, req, signal);
        if (res.status >= 200 && res.status < 300) {
          if (isEventStream(res.headers['content-type'])) return { ok: true, value: res };
          // A proxy's page or a JSON body in place of the stream: nothing was generated, try the next.
          discard(res.body);
          return { ok: false, verdict: { kind: 'retryable', status: 502, message: 'The upstream answered a streaming request with something other than an event stream.' } };
        }
        const raw = await readSome(res.body, MAX_ERROR_BODY);
        return { ok: false, verdict: classifyChatError(res.status, parseJson(raw), res.headers) };
      },
      this.failoverOptions(),
    );
    const forwardUsageChunk = isObject(body.stream_options) && body.stream_options.include_usage === true;
    const headers = {
      'content-type': res.headers['content-type'] ?? 'text/event-stream; charset=utf-8',
      // As every /v1 answer (auth/request-gate.ts), which a hijacked reply does not inherit: one
      // caller's words, no cache may keep them.
      'cache-control': 'no-store',
      // Tells buffering reverse proxies (nginx) to pass events on at once.
      'x-accel-buffering': 'no',
      ...limitHeaders,
    };
    return {
      kind: 'stream',
      status: 200,
      headers,
      relay: async (sink, cutBy) => {
        sink.writeHead(200, headers);
        sink.flushHeaders?.();
        const redactor = redactorFor(upstream);
        const out = await relayEvents(res.body, sink, {
          forwardUsageChunk,
          redact: (event) => redactor.text(event),
          scrub: (text) => redactor.ownCredentials(text),
          // The same bound as on the upstream's side of the stream (a stall of twice its timeout).
          clientStallMs: 2 * upstream.timeoutMs,
          cutError: () => cutBy?.()?.toBody().error,
          // Billed when the usage chunk passes, so that chunk carries the very amount the ledger records.
          settleUsage: async (usage) => {
            await this.billing.settle(r, usage, upstream);
            return costUnits(r.charged ?? 0);
          },
        });
        if (out.settled) return;
        // Nothing generated and no usage reported (an error event alone, an empty or broken stream, a
        // client gone before the first word): as for a failure before the stream, nothing is billed
        // and the tokens counted at admission go back. The hold is released by `create`.
        if (!out.usage && out.chunks === 0) return this.billing.correct(r, -r.estimate);
        // Without a usage chunk (client left, stream broke, a shutdown cut it) each event of generated
        // content stands for about one token (sse.ts).
        const usage = out.usage ?? { promptTokens: r.promptEstimate, completionTokens: out.chunks, reported: false };
        await this.billing.settle(r, usage, upstream);
      },
    };
  }

  private failoverOptions() {
    return {
      circuits: this.deps.catalog.circuits,
      onAttemptFailed: (up: Upstream, reason: string) => this.log.warn(`chat upstream ${up.name} failed: ${reason}`),
    };
  }
}

/** An answer's type is that of a stream (or not said, which some compatible servers do). */
function isEventStream(contentType: string | undefined): boolean {
  return contentType === undefined || /^\s*text\/event-stream\s*(;|$)/i.test(contentType);
}

/** A completion of up to OFF_THREAD_BYTES, prepared on the main thread (completion-body.ts). */
function smallCompletion(raw: Buffer, json: JsonObject, up: Upstream): Completion {
  return {
    usage: readUsage(json.usage),
    generated: () => generatedText(json),
    render: (cost) => renderCompletion(raw, json, cost, (text) => redactorFor(up).ownCredentials(text)),
  };
}

async function readSome(body: StreamResponse['body'], limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const c of body) {
      const b = c as Buffer;
      chunks.push(b);
      size += b.length;
      if (size >= limit) break;
    }
  } catch {
    // A broken error body still leaves us the status to classify by.
  } finally {
    discard(body);
  }
  return Buffer.concat(chunks, size).subarray(0, limit);
}
