import type { AuthContext } from '../auth/types.js';
import type { Clock } from '../core/clock.js';
import { DimensionMisses } from './dimension-misses.js';
import { errors, GatewayError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { costForTokens } from '../core/money.js';
import { timeOrderedUuid } from '../core/time-ordered-id.js';
import type { CallSignal } from '../http/call-signal.js';
import type { Executor } from '../http/executor.js';
import { UpstreamClient } from '../http/upstream-client.js';
import { TransportError, type Upstream } from '../http/types.js';
import { Reservations } from '../billing/reservations.js';
import type { ChargeBatcher } from '../billing/charges.js';
import { KeyBudgets } from '../billing/key-budgets.js';
import { usageCostMember } from '../billing/usage-cost.js';
import { admitOrThrow, giveBack, refusalGivesBack } from '../limits/refusal.js';
import { countCharged } from '../ops/metrics.js';
import { annotateRequest, tracingOn } from '../ops/tracing.js';
import { scopesFor } from '../limits/scopes.js';
import type { Admission, LimitScope, Quota, RateLimiter } from '../limits/types.js';
import type { Catalog, ModelInfo } from '../routing/catalog.js';
import { withFailover } from '../routing/failover.js';
import type { Store } from '../store/types.js';
import { sum } from './batching.js';
import { renderEmbeddings } from './render.js';
import { forwardedBody } from './raw.js';
import { checkOwnership, paramOwners, type ParamOwners } from './ownership.js';
import { parseEmbeddingRequest } from './request.js';
import { dimensionsParam, mayAskSize, requestedDimensions, type RequestedDimensions } from './requested-dimensions.js';
import { runOnUpstream, type UpstreamAnswer } from './run.js';
import { countAll, estimateAllBounded } from './tokens.js';
import type { EmbeddingRequest, EmbeddingVendor } from './types.js';
import { embeddingVendors } from './vendors/registry.js';

export interface EmbeddingsDeps {
  catalog: Catalog;
  store: Store;
  executor: Executor;
  /** The one upstream client; defaults to one over `executor`. */
  client?: UpstreamClient;
  limiter: RateLimiter;
  clock: Clock;
  /** Default embeddings quota (config `limits.defaults.embeddings`), overridden per account and key. */
  defaults: Quota;
  /** Vendor adapters by id; defaults to the registry. */
  vendors?: ReadonlyMap<string, EmbeddingVendor>;
  /** In-flight spending shared with chat; defaults to one of its own. */
  reservations?: Reservations;
  /**
   * Batches concurrent charges into one write and acknowledges them before the write (see
   * ChargeBatcher.submit); defaults to charging one by one, each awaited.
   */
  charges?: Pick<ChargeBatcher, 'submit'>;
  /** Per-key budgets; defaults to one over `store`. */
  budgets?: KeyBudgets;
}

export interface EmbeddingsResult {
  /** The JSON body to send as it is (bytes forwarded from the upstream, or serialised here; a large one in pieces, in order). */
  body: Buffer | string | Buffer[];
  /** x-ratelimit-* headers of the admission. */
  headers: Record<string, string>;
  requestId: string;
  promptTokens: number;
  costMicros: number;
  upstream: string;
  /** True when the upstream's bytes were forwarded without parsing the vectors (the fast path). */
  forwarded: boolean;
  /** Settles once the charge is in the store (it may be acknowledged before). */
  durable?: Promise<void>;
}

/**
 * POST /v1/embeddings behind the route: validation, the balance pre-check, admission by the
 * embeddings limiter (its own family, so chat traffic never spends it), the upstream calls with
 * failover, then the usage correction and the charge for the tokens the vendor reported.
 */
export class EmbeddingsService {
  private readonly vendors: ReadonlyMap<string, EmbeddingVendor>;
  private readonly owners: ParamOwners;
  private readonly client: UpstreamClient;
  private readonly reservations: Reservations;
  private readonly budgets: KeyBudgets;
  private readonly dimensionMisses: DimensionMisses;

  constructor(private readonly deps: EmbeddingsDeps) {
    this.vendors = deps.vendors ?? embeddingVendors;
    this.owners = paramOwners(this.vendors.values());
    this.reservations = deps.reservations ?? new Reservations(deps.store);
    this.budgets = deps.budgets ?? new KeyBudgets(deps.store, () => deps.clock.now());
    this.client = deps.client ?? new UpstreamClient(deps.executor);
    this.dimensionMisses = new DimensionMisses(() => deps.clock.now());
  }

  /** The vector size `up` is asked for by this request (requested-dimensions.ts), or undefined. */
  private requestedOf(up: Upstream, req: EmbeddingRequest): RequestedDimensions | undefined {
    return requestedDimensions(this.vendors.get(up.vendor), req, this.deps.catalog.upstreamModel(up, req.model));
  }

  /**
   * The candidates without those that recently answered another length for this model and the size
   * they are asked for (dimension-misses.ts); none left is a 400 before any call, any hold or any
   * admission, naming the field the size came from (`dimensions`, or an `extra_body` one).
   */
  private honouringDimensions(candidates: Upstream[], model: string, req: EmbeddingRequest, body: JsonObject): Upstream[] {
    if (!mayAskSize(req)) return candidates;
    let refused: RequestedDimensions | undefined;
    const usable = candidates.filter((u) => {
      const asked = this.requestedOf(u, req);
      if (asked === undefined || !this.dimensionMisses.skips(u.name, model, asked.size)) return true;
      refused ??= asked;
      return false;
    });
    if (usable.length === 0 && refused) {
      const param = dimensionsParam(refused, body);
      throw errors.invalidRequest(
        `Every upstream of '${model}' recently answered vectors of another length than ${refused.size}; omit '${param}' or ask for a size the model makes.`,
        param,
      );
    }
    return usable;
  }

  /** `model` is what the authorizer returned for `body.model` (action embeddings, capability embedding). */
  async create(ctx: AuthContext, model: ModelInfo, body: JsonObject, signal?: CallSignal, requestId?: string): Promise<EmbeddingsResult> {
    const { catalog } = this.deps;
    const req = parseEmbeddingRequest(body);
    const candidates = this.honouringDimensions(catalog.candidates(model.name, ctx.account), model.name, req, body);
    checkOwnership(req, body, candidates, this.owners);
    const first = candidates[0];
    if (first) this.vendors.get(first.vendor)?.validate?.(req, catalog.upstreamModel(first, req.model), first);

    // A cheap estimate decides admission and holds; the vendor's usage corrects both (embeddings/tokens.ts).
    const estimated = estimateAllBounded(req.inputs, req.inputType);
    const tokens = Array.isArray(estimated) ? estimated : await estimated;
    const estimate = sum(tokens);
    const price = model.price.perMillionInput ?? 0;
    const estCost = costForTokens(price, estimate);
    // The key's own budget first: its refusal names the key, not the account. A key without a
    // budget has nothing to reserve or settle, so the common case awaits nothing here.
    const settleBudget = ctx.key.budget ? await this.budgets.reserve(ctx.key, estCost) : undefined;
    let charged = 0;
    try {
      const release = await this.reservations.reserve(ctx.account.id, estCost);
      if (!release) throw errors.insufficientQuota();
      let durable: Promise<void> | undefined;
      try {
        const out = await this.run(ctx, req, model, candidates, tokens, estimate, price, signal, requestId);
        charged = out.costMicros;
        durable = out.durable;
        return out;
      } finally {
        release(charged, durable);
      }
    } finally {
      if (settleBudget) await settleBudget(charged);
    }
  }

  private async run(
    ctx: AuthContext,
    req: EmbeddingRequest,
    model: ModelInfo,
    candidates: Upstream[],
    tokens: number[],
    estimate: number,
    price: number,
    signal: CallSignal | undefined,
    clientRequestId?: string,
  ): Promise<EmbeddingsResult> {
    const { catalog, store, limiter } = this.deps;

    const scopes = scopesFor(ctx, 'embeddings', this.deps.defaults);
    let exact = false;
    let admission: Admission;
    try {
      admission = await admitOrThrow(limiter, 'embeddings', scopes, estimate);
    } catch (e) {
      // The estimate errs high on text that tokenizes badly (one character repeated: one token per
      // character estimated, about one per four counted). A refusal as larger than a whole minute
      // allows is final, so it rests on an exact count: recounted, the request may fit after all.
      if (!(e instanceof GatewayError) || e.code !== 'request_too_large') throw e;
      const counted = await countAll(req.inputs, req.inputType);
      if (sum(counted) >= estimate) throw e;
      tokens = counted;
      estimate = sum(counted);
      exact = true;
      admission = await admitOrThrow(limiter, 'embeddings', scopes, estimate);
    }

    let answer: UpstreamAnswer;
    let upstream: Upstream;
    try {
      ({ value: answer, upstream } = await withFailover(
        candidates,
        (up) => {
          const vendor = this.vendors.get(up.vendor);
          if (!vendor)
            return Promise.resolve({
              ok: false as const,
              verdict: { kind: 'retryable' as const, status: 500, message: `vendor '${up.vendor}' does not serve embeddings` },
            });
          const attempt = runOnUpstream({ vendor, up, req, tokens, exact, client: this.client, catalog, signal, requestId: clientRequestId });
          // Only a request that asks a size has a miss to remember; the others take no extra step.
          const asked = mayAskSize(req) ? this.requestedOf(up, req) : undefined;
          if (asked === undefined) return attempt;
          return attempt.then((outcome) => {
            if (!outcome.ok && outcome.verdict.kind === 'retryable' && outcome.verdict.dimensionsMissed) this.dimensionMisses.record(up.name, model.name, asked.size);
            return outcome;
          });
        },
        { circuits: catalog.circuits },
      ));
    } catch (e) {
      // Nothing was embedded: the tokens go back, and for a refusal the request too (refusal.ts; the
      // refusal path is not the hot one, so the give-back is awaited and the next request sees it).
      // Its answer's headers then describe the windows after the give-back.
      let headers = admission.headers;
      if (refusalGivesBack(e)) headers = await giveBack(limiter, 'embeddings', scopes, estimate, admission);
      else this.adjust(scopes, -estimate, admission.second);
      if (e instanceof GatewayError) Object.assign(e.headers, headers);
      throw e;
    }

    const promptTokens = answer.promptTokens;
    this.adjust(scopes, promptTokens - estimate, admission.second);
    const now = this.deps.clock.now();
    // The charge's ledger ref: time-ordered, so ledger inserts stay on the unique index's last pages.
    const requestId = `emb-${timeOrderedUuid(now)}`;
    const costMicros = price > 0 ? costForTokens(price, promptTokens) : 0;
    // The answer is made before the charge: a failure to make it (an upstream vector the gateway
    // cannot convert) must leave nothing charged.
    const body = answer.forward ? forwardedBody(answer.forward, usageCostMember(costMicros)) : await renderEmbeddings(req, answer, costMicros);
    // The client hung up or timed out: it receives nothing, so it is not charged.
    if (signal?.aborted) throw new TransportError('aborted', 'the client is gone', true);
    let durable: Promise<void> | undefined;
    if (costMicros > 0) {
      const by = { keyId: ctx.key.id, model: model.name, upstream: upstream.name };
      if (this.deps.charges) ({ durable } = await this.deps.charges.submit(ctx.account.id, costMicros, requestId, req.model, now, by));
      else await store.charge(ctx.account.id, costMicros, requestId, req.model, now, by);
      countCharged(model.name, costMicros);
    }
    if (tracingOn())
      annotateRequest({
        'gen_ai.operation.name': 'embeddings',
        'gen_ai.system': upstream.vendor,
        'gen_ai.request.model': model.name,
        'gen_ai.usage.input_tokens': promptTokens,
      });

    return {
      body,
      headers: admission.headers,
      requestId,
      promptTokens,
      costMicros,
      upstream: upstream.name,
      forwarded: answer.forward !== undefined,
      durable,
    };
  }

  /**
   * Corrects the token windows by the vendor's count. Not awaited: the answer does not depend on
   * it, and the limiter never fails a request (it falls back to local windows by itself); the
   * correction lands a round trip after the answer leaves.
   */
  private adjust(scopes: readonly LimitScope[], delta: number, second: number | undefined): void {
    if (delta !== 0) this.deps.limiter.adjustTokens('embeddings', scopes, delta, second).catch(() => undefined);
  }
}

