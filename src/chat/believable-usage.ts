import { isObject, type JsonObject } from '../core/json.js';
import { choicesOf, IMAGE_PART_CEILING, UNCAPPED_OUTPUT_CEILING, type OutputAllowance } from './tokens.js';
import type { ChatUsage } from './usage.js';

/** Per message, tokens a vendor's chat template may add beyond its text: role markers, separators, a name. */
export const TEMPLATE_TOKENS_PER_MESSAGE = 16;

/**
 * Per request, prompt tokens a vendor may add that the request does not carry: its own instructions
 * for tool use or JSON mode, a reply primer. A few hundred is what vendors are known to add; this is
 * well above, so a believable count is never mistaken for a broken one.
 */
export const HIDDEN_PROMPT_TOKENS = 4_096;

/** Content parts whose tokens are the bytes of their own text: anything else is counted by the vendor's own rules. */
const TEXT_PARTS: ReadonlySet<string> = new Set(['text', 'refusal']);

/** What one request can be billed at most, known before the call. */
export interface UsageBounds {
  /** The request as the client sent it: its prompt is all the vendor was given to read. */
  body: JsonObject;
  /** The gateway's own count of the prompt, billed when the vendor's is not believable. */
  promptEstimate: number;
  /** The output allowance held for the request (tokens.ts), all choices together. */
  output: OutputAllowance;
}

export interface BoundedUsage {
  usage: ChatUsage;
  /** What was billed instead of the report, and why (for the reconciliation records); undefined when nothing was. */
  adjusted?: string;
}

/**
 * Holds a chat usage (the vendor's, or the gateway's count of a stream) to what the request can
 * produce, so that one broken or hostile answer cannot bill an absurd amount:
 *
 * - output: no more than the request can produce (OutputAllowance.billable). A client's cap
 *   (max_completion_tokens or max_tokens, times n, at most the model's max_output_tokens) is one the
 *   vendor was given to enforce; without one, the model's max_output_tokens; when neither is known,
 *   a ceiling above any current model's output (the configured allowance is then only the hold's
 *   guess: an honest answer longer than it is billed in full). A count past it is billed at it.
 * - input: no more tokens than the request has bytes (a BPE or SentencePiece token covers at least
 *   one), plus the template's tokens per message, a vendor's hidden instructions, and
 *   IMAGE_PART_CEILING per image part (an image URL of 40 bytes can be thousands of tokens). A count
 *   past that is no count: the gateway's own estimate is billed. Audio, files and other parts the
 *   vendor counts by its own rules leave the input to the general bound (core/reported-usage.ts).
 */
export function boundUsage(usage: ChatUsage, b: UsageBounds): BoundedUsage {
  let { promptTokens, completionTokens } = usage;
  const notes: string[] = [];
  if (usage.reported && promptTokens > b.promptEstimate) {
    const ceiling = promptCeiling(b.body, promptTokens, b.promptEstimate);
    if (ceiling !== undefined) {
      notes.push(`the upstream reported ${promptTokens} input tokens, more than a request of ${ceiling} can hold; billed the gateway's estimate, ${b.promptEstimate}`);
      promptTokens = b.promptEstimate;
    }
  }
  const cap = outputCap(usage, b);
  if (completionTokens > cap) {
    const what = usage.reported ? `the upstream reported ${completionTokens} output tokens` : `the stream carried ${completionTokens} events of generated output and no usage`;
    const held = !b.output.defaulted
      ? "the max_tokens held (times n, at most the model's max_output_tokens)"
      : b.output.billable === b.output.tokens
        ? "the model's max_output_tokens (times n) for a request without max_tokens"
        : 'the ceiling for a request without max_tokens on a model that declares no max_output_tokens';
    notes.push(`${what}, more than the ${cap} of ${held}; billed ${cap}`);
    completionTokens = cap;
  }
  if (notes.length === 0) return { usage };
  return { usage: { ...usage, promptTokens, completionTokens }, adjusted: `billed tokens adjusted: ${notes.join('; ')}` };
}

/**
 * The most output tokens the answer may be billed: the allowance, and unless the request set
 * max_completion_tokens, on top of it the reasoning tokens the vendor reports, up to the ceiling of
 * an uncapped request. OpenAI defines max_completion_tokens as covering reasoning and answer alike;
 * some vendors' max_tokens (and a model's output limit) caps only the final answer while
 * completion_tokens also counts the reasoning before it (DeepSeek's reasoner, for one).
 */
function outputCap(usage: ChatUsage, b: UsageBounds): number {
  const cap = b.output.billable;
  const ceiling = UNCAPPED_OUTPUT_CEILING * choicesOf(b.body);
  const coversReasoning = typeof b.body.max_completion_tokens === 'number' && b.body.max_completion_tokens > 0;
  if (!usage.reasoningTokens || coversReasoning || cap >= ceiling) return cap;
  return Math.min(ceiling, cap + usage.reasoningTokens);
}

/**
 * The most input tokens the request can be, said as "<bytes> bytes and <messages> messages" (and its
 * images), when `n` is past it; undefined when `n` is within it or the request carries parts counted by
 * the vendor's own rules other than images. The whole body is measured (tools, response_format and
 * parameters a vendor adds to the prompt included), so the bound errs high, never low.
 */
function promptCeiling(body: JsonObject, n: number, estimate: number): string | undefined {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  let images = 0;
  for (const m of messages) {
    const parts = mediaParts(m);
    if (parts < 0) return undefined;
    images += parts;
  }
  const overhead = HIDDEN_PROMPT_TOKENS + TEMPLATE_TOKENS_PER_MESSAGE * messages.length + IMAGE_PART_CEILING * images;
  // The estimate (o200k tokens of the texts the body holds, a few per message, IMAGE_PART_TOKENS an
  // image) is within the bound but for the hidden instructions: a count it explains needs no
  // serializing of a body that may be megabytes.
  if (n <= estimate + HIDDEN_PROMPT_TOKENS) return undefined;
  const text = JSON.stringify(body);
  // Characters first (no more than bytes): a believable count is usually far below them.
  if (n <= text.length + overhead) return undefined;
  const bytes = Buffer.byteLength(text);
  if (n <= bytes + overhead) return undefined;
  return `${bytes} bytes and ${messages.length} messages${images > 0 ? ` with ${images} images` : ''}`;
}

/**
 * The image parts of a message; -1 when it holds content the vendor counts by its own rules with no
 * bound of ours: audio (sent, or an earlier answer's by id), a file, a part of another type.
 */
function mediaParts(m: unknown): number {
  if (!isObject(m)) return 0;
  if (m.audio !== undefined && m.audio !== null) return -1;
  if (!Array.isArray(m.content)) return 0;
  let images = 0;
  for (const p of m.content) {
    if (isObject(p) && typeof p.type === 'string' && TEXT_PARTS.has(p.type)) continue;
    if (!isObject(p) || p.type !== 'image_url') return -1;
    images++;
  }
  return images;
}
