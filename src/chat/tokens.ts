import { countTokens } from 'gpt-tokenizer';
import { isObject, type Json, type JsonObject } from '../core/json.js';

/**
 * Token estimates for admission, made before the call with the o200k tokenizer (GPT-4o and later)
 * and corrected afterwards with the usage the vendor reports. The per-message framing follows
 * OpenAI's published counting recipe: 3 tokens per message, 1 more for a name, 3 to prime the reply.
 */

// Text such as "<|endoftext|>" in a prompt is plain text to us; the tokenizer would otherwise throw.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/** Flat allowance for an image part: the vendor's low-detail price, a floor for high detail. */
const IMAGE_PART_TOKENS = 85;

export function countText(text: string): number {
  return text.length === 0 ? 0 : countTokens(text, PLAIN_TEXT);
}

/** Prompt tokens of a chat completion request: messages plus tool and function definitions. */
export function estimatePromptTokens(body: JsonObject): number {
  let total = 3;
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const m of messages) {
    if (!isObject(m)) continue;
    total += 3;
    if (typeof m.role === 'string') total += countText(m.role);
    if (typeof m.name === 'string') total += 1 + countText(m.name);
    total += contentTokens(m.content);
    if (m.tool_calls !== undefined) total += countText(JSON.stringify(m.tool_calls));
    if (m.function_call !== undefined) total += countText(JSON.stringify(m.function_call));
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) total += countText(JSON.stringify(body.tools));
  if (Array.isArray(body.functions) && body.functions.length > 0) total += countText(JSON.stringify(body.functions));
  return total;
}

function contentTokens(content: Json | undefined): number {
  if (typeof content === 'string') return countText(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    if (!isObject(part)) continue;
    if (typeof part.text === 'string') n += countText(part.text);
    else if (part.type === 'image_url') n += IMAGE_PART_TOKENS;
    else n += countText(JSON.stringify(part));
  }
  return n;
}

/**
 * The completion tokens a request may use: its max_completion_tokens (or the older max_tokens)
 * times the number of choices. Without a cap nothing is reserved; the correction after the call
 * accounts for what was generated.
 */
export function reservedCompletionTokens(body: JsonObject): number {
  const cap = positiveInt(body.max_completion_tokens) ?? positiveInt(body.max_tokens) ?? 0;
  return cap * (positiveInt(body.n) ?? 1);
}

function positiveInt(v: Json | undefined): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
}
