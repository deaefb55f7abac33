import { isObject, type Json } from '../core/json.js';
import { costForTokens, type Micros } from '../core/money.js';
import type { ModelInfo } from '../routing/catalog.js';

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  /** False when the vendor reported nothing and the numbers are our own estimate. */
  reported: boolean;
}

/** The vendor's `usage` object, when it is one. */
export function readUsage(v: Json | undefined): ChatUsage | undefined {
  if (!isObject(v)) return undefined;
  const p = v.prompt_tokens;
  const c = v.completion_tokens;
  if (typeof p !== 'number' || !Number.isFinite(p) || p < 0) return undefined;
  const completion = typeof c === 'number' && Number.isFinite(c) && c >= 0 ? c : 0;
  return { promptTokens: Math.ceil(p), completionTokens: Math.ceil(completion), reported: true };
}

/** Input tokens at the input price plus output tokens at the output price; a missing price is 0. */
export function chatCost(price: ModelInfo['price'], promptTokens: number, completionTokens: number): Micros {
  return costForTokens(price.perMillionInput ?? 0, promptTokens) + costForTokens(price.perMillionOutput ?? 0, completionTokens);
}
