import type { JsonObject } from '../../../core/json.js';
import type { Upstream, UpstreamResponse } from '../../../http/types.js';
import type { CreateInput, StandardVideoRequest } from '../../types.js';

/** Test builders shared by this folder's tests: a fal upstream, a create input, an upstream answer. */
export function falUpstream(baseUrl: string, options: JsonObject = {}, apiKey: string | null = 'k-123'): Upstream {
  return { name: 'fal-test', vendor: 'fal', baseUrl, apiKey: apiKey ?? undefined, models: [], priority: 1, weight: 1, timeoutMs: 5000, options };
}

export function falInput(model: string, std: Partial<StandardVideoRequest> = {}, native: JsonObject = {}): CreateInput {
  return {
    model,
    upstreamModel: model,
    std: {
      model,
      prompt: 'a red fox in the snow',
      frameImages: [],
      inputReferences: [],
      sent: { size: false, resolution: false, aspectRatio: false },
      ...std,
    },
    native,
    media: new Map(),
  };
}

export function answer(status: number, json: unknown, headers: Record<string, string> = {}): UpstreamResponse {
  return { status, headers, json: json as never, text: JSON.stringify(json) };
}
