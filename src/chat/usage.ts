import { isObject, type Json } from '../core/json.js';
import { costForTokens, type Micros } from '../core/money.js';
import { reportedTokens } from '../core/reported-usage.js';
import type { ModelInfo } from '../routing/catalog.js';

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  /** False when the vendor reported nothing and the numbers are our own estimate. */
  reported: boolean;
  /** Of completionTokens, those the vendor says went to reasoning (completion_tokens_details), when it says. */
  reasoningTokens?: number;
}

/**
 * The vendor's `usage` object, when it is one with believable counts (core/reported-usage.ts). A
 * missing completion count is 0; one that is present but not believable discards the whole usage.
 */
export function readUsage(v: Json | undefined): ChatUsage | undefined {
  if (!isObject(v)) return undefined;
  const promptTokens = reportedTokens(v.prompt_tokens, Math.ceil);
  if (promptTokens === undefined) return undefined;
  const c = v.completion_tokens;
  const completionTokens = c === undefined || c === null ? 0 : reportedTokens(c, Math.ceil);
  if (completionTokens === undefined) return undefined;
  const details = v.completion_tokens_details;
  const reasoningTokens = isObject(details) ? reportedTokens(details.reasoning_tokens, Math.ceil) : undefined;
  return { promptTokens, completionTokens, reported: true, ...(reasoningTokens ? { reasoningTokens } : {}) };
}

/** Input tokens at the input price plus output tokens at the output price; a missing price is 0. */
export function chatCost(price: ModelInfo['price'], promptTokens: number, completionTokens: number): Micros {
  return costForTokens(price.perMillionInput ?? 0, promptTokens) + costForTokens(price.perMillionOutput ?? 0, completionTokens);
}
