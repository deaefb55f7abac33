import { GatewayError } from '../core/errors.js';
import { redactorFor } from '../core/redact.js';
import { believableTokens } from './believable-usage.js';
import { inheritHold } from '../http/answer-budget.js';
import { toAbortSignal, type CallSignal } from '../http/call-signal.js';
import { CredentialError, type UpstreamClient } from '../http/upstream-client.js';
import { TransportError, type Upstream, type UpstreamResponse, type UpstreamVerdict } from '../http/types.js';
import type { Catalog } from '../routing/catalog.js';
import type { AttemptOutcome } from '../routing/failover.js';
import { planBatches, runBounded, sum } from './batching.js';
import { forwardOpenAIBody, type RawAnswer } from './raw.js';
import { maxAnswerBytesFor, maxInputsPerCall } from './answer-bounds.js';
import { requestedDimensions } from './requested-dimensions.js';
import { countAll, needsExactCount } from './tokens.js';
import type { Batch, BatchResult, BuildContext, BuiltCall, EmbeddingRequest, EmbeddingVendor, Vector } from './types.js';
import { upstreamAnswer } from '../http/upstream-answer.js';
import { vectorSize, vectorValuesProblem } from './vectors.js';

/** Upstream calls of one request in flight at once, unless the upstream sets `concurrency`. */
const DEFAULT_CONCURRENCY = 8;

export interface UpstreamAnswer {
  /** The upstream's answer to forward as it is, but for the model name and usage.cost (fast path); when set, `vectors` is not. */
  forward?: RawAnswer;
  /** One vector per client input, in input order. */
  vectors?: Vector[];
  /** Reported input tokens, with the gateway's estimate standing in for calls that reported none. */
  promptTokens: number;
}

export interface RunInput {
  vendor: EmbeddingVendor;
  up: Upstream;
  req: EmbeddingRequest;
  /** Per-input token estimates (embeddings/tokens.ts `estimateAll`), or exact counts when `exact`. */
  tokens: number[];
  /** True when `tokens` are exact counts; estimates are replaced by counts where a bill or a cap needs them. */
  exact?: boolean;
  /** The one upstream client: applies the vendor's credentials and signature, then sends. */
  client: UpstreamClient;
  catalog: Catalog;
  /** The client request's abort (and its answer-memory hold). */
  signal?: CallSignal;
  /** The request's x-request-id, for vendors that take one (vendor.requestIdHeader). */
  requestId?: string;
}

/**
 * One failover attempt: the whole request on one upstream, split into as many calls as the vendor's
 * limits demand and run with bounded concurrency. The first failing call cancels the rest and
 * decides the attempt's outcome, so the next upstream starts from a clean slate.
 */
export async function runOnUpstream(input: RunInput): Promise<AttemptOutcome<UpstreamAnswer>> {
  const { vendor, up, req } = input;
  const upstreamModel = input.catalog.upstreamModel(up, req.model);
  const ctx: BuildContext = { req, upstreamModel, up };
  vendor.validate?.(req, upstreamModel, up);
  // The size this upstream is asked for: every vector of its answer must have it.
  const dimensions = requestedDimensions(vendor, req, upstreamModel)?.size;
  // The vendor's per-call limits, and no more inputs than keep one call's answer a bounded parse.
  const vendorLimits = vendor.limits(upstreamModel, up);
  const limits = { ...vendorLimits, maxItems: Math.min(vendorLimits.maxItems, maxInputsPerCall(dimensions)) };
  if (!input.exact && needsExactCount(req.inputs, limits.maxTokens))
    input = { ...input, tokens: await countAll(req.inputs, req.inputType), exact: true };
  const batches = planBatches(req.inputs, input.tokens, limits);

  if (batches.length === 1) return callOnce(input, ctx, batches[0]!, input.signal, true, dimensions);

  const inner = new AbortController();
  const signal = input.signal ? AbortSignal.any([toAbortSignal(input.signal), inner.signal]) : inner.signal;
  inheritHold(signal, input.signal);
  const vectors = new Array<Vector>(req.inputs.length);
  let promptTokens = 0;
  let failed: { verdict: UpstreamVerdict } | { error: unknown } | undefined;
  const concurrency = positiveInt(up.options['concurrency']) ?? DEFAULT_CONCURRENCY;

  await runBounded(
    batches.length,
    concurrency,
    async (i) => {
      const batch = batches[i]!;
      try {
        const out = await callOnce(input, ctx, batch, signal, false, dimensions);
        if (!out.ok) {
          failed ??= { verdict: out.verdict };
          inner.abort();
          return;
        }
        const got = out.value.vectors!;
        for (let k = 0; k < got.length; k++) vectors[batch.offset + k] = got[k]!;
        promptTokens += out.value.promptTokens;
      } catch (e) {
        // Siblings cancelled after the first failure end up here too; only the first one counts.
        failed ??= { error: e };
        inner.abort();
      }
    },
    () => failed !== undefined,
  );

  if (failed) {
    if ('error' in failed) throw failed.error;
    return { ok: false, verdict: failed.verdict };
  }
  // Each call's vectors were sound; the calls must also agree with one another (sizes only: the
  // values were checked once, with their call).
  const problem = vectorsProblem(vectors, false);
  if (problem) return malformed(`${vendor.label} ${problem}`);
  return { ok: true, value: { vectors, promptTokens } };
}

async function callOnce(
  input: RunInput,
  ctx: BuildContext,
  batch: Batch,
  signal: CallSignal | undefined,
  mayForward: boolean,
  dimensions: number | undefined,
): Promise<AttemptOutcome<UpstreamAnswer>> {
  const { vendor, up } = input;
  let built: BuiltCall;
  let res: { status: number; headers: Record<string, string>; raw: Buffer };
  try {
    built = vendor.build(batch, ctx);
    // No more bytes than this call's vectors can take: a larger answer is abandoned unread (the
    // upstream's failure) rather than parsed, which for 64 MB of JSON would hold the event loop.
    // One call of several (mayForward is false only then) meters even a small answer: 2,048 calls of
    // 60 KB each are 120 MB that the request holds until its answer is sent.
    let request = { ...built.request, maxAnswerBytes: maxAnswerBytesFor(batch.inputs.length), meterAll: !mayForward };
    if (input.requestId && vendor.requestIdHeader) request.headers = { ...request.headers, [vendor.requestIdHeader]: input.requestId };
    res = await input.client.sendRaw(up, vendor, request, signal);
  } catch (e) {
    if (e instanceof TransportError && !(e instanceof CredentialError)) throw e;
    // The gateway's own refusal (no memory for the answer: 503 overloaded) is not this upstream's fault.
    if (e instanceof GatewayError) throw e;
    // Broken credentials or settings of this upstream (token endpoint refused, no project): the next
    // upstream may do, and the client must not see a 500 for it.
    return { ok: false, verdict: { kind: 'auth', status: 502, message: `upstream '${up.name}': ${(e as Error).message}` } };
  }
  const ok = res.status >= 200 && res.status < 300;
  // Base64 vectors are text handed on as it came (decoded and encoded again, the same characters),
  // never through the redaction: one that is this upstream's own key (an Azure key, 32 hex digits,
  // is valid base64) would reach the client as it is.
  if (ok && ctx.req.encodingFormat === 'base64' && redactorFor(up).foundIn(res.raw)) return malformed(`${vendor.label} returned its own credential in its answer`);

  if (ok && mayForward && built.passthroughFormat === ctx.req.encodingFormat) {
    const forward = forwardOpenAIBody(res.raw, ctx.req.model, ctx.req.encodingFormat, batch.inputs.length);
    const wrong = forward && wrongDimensions(vendor, forward.vectorSize, dimensions);
    if (wrong) return wrong;
    // A count the bill cannot rest on goes to the full parse, which shows the count billed instead.
    if (forward && believableTokens(forward.promptTokens, batch.inputs, ctx.req.inputType) !== undefined)
      return { ok: true, value: { forward, promptTokens: forward.promptTokens } };
  }

  const parsed = upstreamAnswer(res.status, res.headers, res.raw);
  if (!ok) return { ok: false, verdict: vendor.classifyError(parsed) };

  let result: BatchResult;
  try {
    result = vendor.parse(parsed, batch, ctx);
  } catch (e) {
    return malformed(`${vendor.label} sent an answer the gateway cannot read: ${(e as Error).message}`);
  }
  if (result.vectors.length !== batch.inputs.length)
    return malformed(`${vendor.label} returned ${result.vectors.length} vectors for ${batch.inputs.length} inputs`);
  const problem = vectorsProblem(result.vectors, true);
  if (problem) return malformed(`${vendor.label} ${problem}`);
  // All of one size now (vectorsProblem); a request split over calls has each call checked here.
  const wrong = wrongDimensions(vendor, vectorSize(result.vectors[0]!)!, dimensions);
  if (wrong) return wrong;
  // No usable usage from the vendor (none, or not a believable count): the bill rests on the
  // gateway's own count, so it is an exact one.
  const promptTokens = believableTokens(result.promptTokens, batch.inputs, ctx.req.inputType) ?? sum(input.exact ? batch.tokens : await countAll(batch.inputs, ctx.req.inputType));
  return { ok: true, value: { vectors: result.vectors, promptTokens } };
}

/**
 * What makes an answer's vectors unusable, if anything: an input left without one, an empty one,
 * base64 that is no whole number of float32 values (no client could decode it), two of different
 * sizes, in floats whatever their form (one model embeds every input to the same size), and with
 * `values` one too long or holding a value that is not a finite float32 (vectors.ts; one pass per
 * vector, here for every vendor). Such an answer is the upstream's failure, not 200 with vectors no
 * index could hold (or with `null` where Infinity was), nor a charge.
 */
function vectorsProblem(vectors: readonly (Vector | undefined)[], values: boolean): string | undefined {
  let size: number | undefined;
  for (const v of vectors) {
    if (v === undefined || v === null) return 'left an input without a vector';
    if (v.length === 0) return 'returned an empty vector';
    const floats = vectorSize(v);
    if (floats === undefined) return `returned a base64 vector of ${v.length} characters, which is no float32 data`;
    if (size !== undefined && floats !== size) return `returned vectors of different sizes (${size} and ${floats})`;
    size = floats;
    const problem = values ? vectorValuesProblem(v) : undefined;
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Vectors of another size than the client asked (its `dimensions`, or the vendor's own size field in
 * `extra_body` where that is what was sent: requested-dimensions.ts; an upstream that ignored it, or
 * cut the vectors short) are a wrong answer: the upstream's failure like a malformed one, so the next upstream
 * is tried and nothing is charged. The client's message holds only the two sizes. The circuit is
 * spared: the failure comes with the parameter, and the upstream may serve every other request well.
 */
function wrongDimensions(vendor: EmbeddingVendor, size: number, dimensions: number | undefined): AttemptOutcome<UpstreamAnswer> | undefined {
  if (dimensions === undefined || size === dimensions) return undefined;
  const mismatch = `vectors of ${size} values, a length that does not match the requested dimensions (${dimensions})`;
  return {
    ok: false,
    verdict: {
      kind: 'retryable',
      status: 502,
      message: `${vendor.label} returned ${mismatch}`,
      clientMessage: `Every upstream for this model failed: the last one returned ${mismatch}. Nothing was charged.`,
      sparesCircuit: true,
      dimensionsMissed: true,
    },
  };
}

function malformed(message: string): AttemptOutcome<UpstreamAnswer> {
  return { ok: false, verdict: { kind: 'retryable', status: 502, message } };
}

function positiveInt(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
}
