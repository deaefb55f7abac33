import { timeOrderedUuid } from '../core/time-ordered-id.js';
import { GatewayError } from '../core/errors.js';
import type { Upstream } from '../http/types.js';
import { countCharged } from '../ops/metrics.js';
import { annotateRequest, tracingOn } from '../ops/tracing.js';
import { boundUsage } from './believable-usage.js';
import { chatCost, type ChatUsage } from './usage.js';
import type { ChatLogger, ChatServiceDeps, Reservation } from './types.js';

/**
 * What a chat completion costs once it is over: the usage, held to what the request can produce
 * (believable-usage.ts), is billed to the ledger (or, when the database fails, handed to the charge
 * queue under the same ref) and the limiter's token estimate is corrected by it.
 */
export class ChatBilling {
  constructor(
    private readonly deps: Pick<ChatServiceDeps, 'store' | 'charges' | 'limiter' | 'clock'>,
    private readonly log: ChatLogger,
  ) {}

  /** Bills the usage, within the request's bounds, and corrects the limiter's estimate with what was billed. */
  async settle(r: Reservation, reported: ChatUsage, upstream: Upstream): Promise<void> {
    const { usage, adjusted } = boundUsage(reported, r.bounds);
    this.correct(r, usage.promptTokens + usage.completionTokens - r.estimate);
    if (tracingOn())
      annotateRequest({
        'gen_ai.operation.name': 'chat',
        'gen_ai.system': upstream.vendor,
        'gen_ai.request.model': r.model.name,
        'gen_ai.usage.input_tokens': usage.promptTokens,
        'gen_ai.usage.output_tokens': usage.completionTokens,
      });
    // Time-ordered refs land on the last pages of the ledger's unique (ref, kind) index (see time-ordered-id.ts).
    const now = this.deps.clock.now();
    const ref = `chat:${timeOrderedUuid(now)}`;
    if (adjusted) await this.reconcile(r, ref, upstream, adjusted, now);
    const cost = chatCost(r.model.price, usage.promptTokens, usage.completionTokens);
    if (cost <= 0) return;
    const note =
      `chat ${r.model.name} via ${upstream.name}: ${usage.promptTokens} input + ${usage.completionTokens} output tokens` +
      (usage.reported ? '' : ' (estimated; the upstream reported no usage)') +
      (adjusted ? ' (held to what the request can produce; see the reconciliation records)' : '');
    r.charged = cost;
    const by = { keyId: r.ctx.key.id, model: r.model.name, upstream: upstream.name };
    const { charges } = this.deps;
    try {
      await (charges ?? this.deps.store).charge(r.ctx.account.id, cost, ref, note, now, by);
      countCharged(r.model.name, cost);
      return;
    } catch (e) {
      // The store's verdict on the charge itself (its account is gone): nothing to retry.
      if (e instanceof GatewayError || !charges) return this.billingFailed(r, cost, e);
    }
    // The database failed (the answer was produced and delivered either way): the same charge, under
    // the same ref so that it can never land twice, goes to the queue that retries until it is written.
    try {
      await charges.submit(r.ctx.account.id, cost, ref, note, now, by);
      countCharged(r.model.name, cost);
      this.log.warn(`chat charge ${ref} for account ${r.ctx.account.id} (${cost} micros) could not be written at once; it is retried in the background`);
    } catch (e) {
      this.billingFailed(r, cost, e);
    }
  }

  /** Moves the limiter's token count for `r` by `delta` (the real usage against the estimate). */
  correct(r: Reservation, delta: number): void {
    if (delta === 0) return;
    this.deps.limiter.adjustTokens('chat', r.scopes, delta, r.admittedSecond).catch((e: unknown) => {
      this.log.warn(`chat limiter correction failed: ${(e as Error).message}`);
    });
  }

  /**
   * Leaves a trail of a usage the bill did not follow, under the charge's ref, so that it can be
   * checked against the vendor's own bill (GET /admin/reconcile), as video's adjusted seconds are.
   */
  private async reconcile(r: Reservation, ref: string, upstream: Upstream, reason: string, now: number): Promise<void> {
    this.log.warn(`chat ${ref} for account ${r.ctx.account.id} via ${upstream.name}: ${reason}`);
    try {
      await this.deps.store.recordReconcile({ jobId: ref, upstream: upstream.name, reason, now });
    } catch (e) {
      // A trail that cannot be written does not stop the bill: the warning above says the same.
      this.log.error(`chat reconciliation record ${ref} could not be written: ${(e as Error).message}`);
    }
  }

  private billingFailed(r: Reservation, cost: number, e: unknown): void {
    // Losing the client's response over a ledger write would not un-spend it: the answer stands.
    this.log.error(`chat billing failed for account ${r.ctx.account.id} (${cost} micros): ${(e as Error).message}`);
  }
}
