import { o200kCount } from '../core/tokenizers.js';
import { TokenCounter } from '../core/token-count.js';
import { isObject, type Json, type JsonObject } from '../core/json.js';

/**
 * Token estimates for admission, made before the call with the o200k tokenizer (GPT-4o and later)
 * and corrected afterwards with the usage the vendor reports. The per-message framing follows
 * OpenAI's published counting recipe: 3 tokens per message, 1 more for a name, 3 to prime the reply.
 * Counting is linear in the text and bounded per request (see core/token-count.ts).
 */

// Text such as "<|endoftext|>" in a prompt is plain text to us; the tokenizer would otherwise throw.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };
// The table loads on the first chat request, not at start (core/tokenizers.ts).
const encode = (text: string): number => o200kCount()(text, PLAIN_TEXT);

/** Characters a synchronous count may feed the tokenizer (it cannot yield, so its budget is smaller). */
const SYNC_EXACT_CHARS = 32 * 1024;

/**
 * Prompt tokens estimated for an image part: what gpt-4o-mini bills for a low-detail image (gpt-4o:
 * 85), and about what the models that count 32-pixel patches bill for a typical one (gpt-4.1-mini:
 * 1,659 for 1024 x 1024). A high-detail image can bill more, up to IMAGE_PART_CEILING.
 */
export const IMAGE_PART_TOKENS = 2_833;

/**
 * The most prompt tokens one image part may be billed (believable-usage.ts): gpt-4o-mini's price for
 * the largest high-detail image, 2,833 + 8 tiles of 5,667. No current model bills more for one image
 * (gpt-4o at most 1,445, the patch-counting ones under 4,000, Qwen-VL 16,384 at its default size limit).
 */
export const IMAGE_PART_CEILING = 48_169;

/**
 * Top-level members of a request that hold no prompt text: the estimate counts every other member
 * that is text or an object (tools, functions, response_format, tool_choice, and what a compatible
 * server renders into its prompt, such as vLLM's documents), as the vendor may, and as
 * believable-usage.ts measures the whole body. A prediction is billed as output, not prompt.
 */
const NOT_PROMPT: ReadonlySet<string> = new Set(['messages', 'model', 'user', 'metadata', 'stop', 'logit_bias', 'stream_options', 'prediction']);

/** A counter for one request's texts, sharing one budget; `count` yields to the event loop. */
export function chatTokenCounter(): TokenCounter {
  return new TokenCounter(encode);
}

/** Tokens of one text, synchronously (bounded: see SYNC_EXACT_CHARS). */
export function countText(text: string): number {
  return text.length === 0 ? 0 : new TokenCounter(encode, SYNC_EXACT_CHARS).countSync(text);
}

/** Prompt tokens of a chat completion request: messages, plus tools, response_format and the other members a vendor may read as prompt. */
export async function estimatePromptTokens(body: JsonObject): Promise<number> {
  const { framing, texts } = promptTexts(body);
  const counter = chatTokenCounter();
  let total = framing;
  for (const t of texts) total += await counter.count(t);
  return total;
}

/** The same estimate without yielding, for the simulator (which answers small prompts). */
export function estimatePromptTokensSync(body: JsonObject): number {
  const { framing, texts } = promptTexts(body);
  let total = framing;
  for (const t of texts) total += countText(t);
  return total;
}

/** The texts to tokenize (see NOT_PROMPT), and the tokens that framing and image parts add to them. */
function promptTexts(body: JsonObject): { framing: number; texts: string[] } {
  let framing = 3;
  const texts: string[] = [];
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const m of messages) {
    if (!isObject(m)) continue;
    framing += 3;
    if (typeof m.role === 'string') texts.push(m.role);
    if (typeof m.name === 'string') {
      framing += 1;
      texts.push(m.name);
    }
    framing += contentTexts(m.content, texts);
    if (m.tool_calls !== undefined) texts.push(JSON.stringify(m.tool_calls));
    if (m.function_call !== undefined) texts.push(JSON.stringify(m.function_call));
  }
  for (const [name, value] of Object.entries(body)) {
    if (NOT_PROMPT.has(name) || value === null || (typeof value !== 'object' && typeof value !== 'string')) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    texts.push(typeof value === 'string' ? value : JSON.stringify(value));
  }
  return { framing, texts };
}

/** Pushes a message content's texts; returns the flat tokens of its image parts. */
function contentTexts(content: Json | undefined, texts: string[]): number {
  if (typeof content === 'string') {
    texts.push(content);
    return 0;
  }
  if (!Array.isArray(content)) return 0;
  let images = 0;
  for (const part of content) {
    if (!isObject(part)) continue;
    if (typeof part.text === 'string') texts.push(part.text);
    else if (part.type === 'image_url') images += IMAGE_PART_TOKENS;
    else texts.push(JSON.stringify(part));
  }
  return images;
}

/**
 * Output tokens per choice held for a request without a cap when its model declares no limit
 * (config `chat.default_output_reserve_tokens`; the reasons for 4,096 are given there).
 */
export const DEFAULT_OUTPUT_RESERVE_TOKENS = 4_096;

/** What the gateway knows of the output a request may produce, besides the request itself. */
export interface OutputLimits {
  /** The model's own output limit per choice (catalog `max_output_tokens`), when declared. */
  modelMax?: number;
  /** Per choice, for a request without a cap whose model declares no limit (`chat.default_output_reserve_tokens`). */
  fallback: number;
}

export interface OutputAllowance {
  /** Completion tokens held for the request, all choices together. */
  tokens: number;
  /** True when the client set no cap and the gateway's allowance stands in for it. */
  defaulted: boolean;
  /**
   * The most completion tokens an answer may be billed, all choices together: the client's cap, or
   * the model's max_output_tokens, which the vendor enforces; when neither is known, a ceiling far
   * above what current models write (UNCAPPED_OUTPUT_CEILING per choice), since the allowance then
   * is only the gateway's guess for the hold and a long honest answer is owed in full.
   */
  billable: number;
}

/**
 * Output tokens per choice an answer may be billed when neither the client nor the catalog caps it:
 * above the output limits of current models (128K for the largest), so only an absurd count is cut.
 */
export const UNCAPPED_OUTPUT_CEILING = 131_072;

/**
 * The completion tokens a request is held for, times the number of choices: its
 * max_completion_tokens (or the older max_tokens), but no more than the model's own limit when the
 * catalog knows it, since the model cannot produce more and clients commonly send a huge cap to mean
 * "no cap"; without a cap, the model's limit, or else the configured fallback. Without a hold for
 * the output, parallel uncapped requests would each pass the balance check on the prompt alone and
 * spend past it by everything they generate. The real usage, never more output than this allowance
 * (believable-usage.ts), replaces the hold afterwards.
 */
export function reservedCompletionTokens(body: JsonObject, limits: OutputLimits): OutputAllowance {
  const cap = positiveInt(body.max_completion_tokens) ?? positiveInt(body.max_tokens);
  const choices = choicesOf(body);
  if (cap === undefined) {
    const tokens = (limits.modelMax ?? limits.fallback) * choices;
    return { tokens, defaulted: true, billable: limits.modelMax !== undefined ? tokens : Math.max(limits.fallback, UNCAPPED_OUTPUT_CEILING) * choices };
  }
  const tokens = Math.min(cap, limits.modelMax ?? cap) * choices;
  return { tokens, defaulted: false, billable: tokens };
}

/** How many choices the request asks for (`n`, default 1). */
export function choicesOf(body: JsonObject): number {
  return positiveInt(body.n) ?? 1;
}

function positiveInt(v: Json | undefined): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
}
