import type { JsonObject } from '../../src/core/json.js';
import type { Upstream, UpstreamResponse } from '../../src/http/types.js';
import type { CreateInput, StandardVideoRequest } from '../../src/video/types.js';
import { makeStd, NOTHING_SENT } from './video.js';

/** Builders of the fal suites: a fal upstream, a create input, an upstream answer. */
export function falUpstream(baseUrl: string, options: JsonObject = {}, apiKey: string | null = 'k-123'): Upstream {
  return { name: 'fal-test', vendor: 'fal', baseUrl, apiKey: apiKey ?? undefined, models: [], priority: 1, weight: 1, timeoutMs: 5000, options };
}

export function falInput(model: string, std: Partial<StandardVideoRequest> = {}, native: JsonObject = {}): CreateInput {
  return {
    model,
    upstreamModel: model,
    std: { ...makeStd({ model, prompt: 'a red fox in the snow' }), sent: NOTHING_SENT, ...std },
    native,
    media: new Map(),
  };
}

export function answer(status: number, json: unknown, headers: Record<string, string> = {}): UpstreamResponse {
  return { status, headers, json: json as never, text: JSON.stringify(json) };
}
