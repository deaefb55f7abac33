import { isObject, mergeInto, type JsonObject } from '../../../core/json.js';
import type { UpstreamResponse } from '../../../http/types.js';
import type { BatchResult, EmbeddingRequest } from '../../types.js';

/**
 * The Gemini Embedding 2 models on Vertex AI are served by `:embedContent`, not by the `:predict`
 * the older text-embedding models use (Vertex AI REST reference,
 * "projects.locations.publishers.models.embedContent"; "Get multimodal embeddings" lists
 * gemini-embedding-2-preview). One content per call:
 * `{content: {parts: [{text}]}, title?, taskType?, outputDimensionality?, autoTruncate?}` answered by
 * `{embedding: {values}, usageMetadata: {promptTokenCount}, truncated}`.
 */
export function usesEmbedContent(model: string): boolean {
  return /^gemini-embedding-2/.test(model);
}

export function embedContentBody(text: string, req: EmbeddingRequest, autoTruncate: unknown): JsonObject {
  const body: JsonObject = { content: { parts: [{ text }] } };
  if (req.taskType !== undefined) body['taskType'] = req.taskType;
  if (req.title !== undefined) body['title'] = req.title;
  if (req.dimensions !== undefined) body['outputDimensionality'] = req.dimensions;
  if (typeof autoTruncate === 'boolean') body['autoTruncate'] = autoTruncate;
  // `parameters` is the :predict spelling; on :embedContent the same knobs sit at the top level.
  // Merged in place, in the client's order (a later name wins): a copy of the body per field would
  // make a body of many extra fields quadratic.
  for (const [k, v] of Object.entries(req.extra)) {
    if (k === 'parameters' && isObject(v)) mergeInto(body, v);
    else if (k !== 'instances') mergeInto(body, { [k]: v });
  }
  return body;
}

export function parseEmbedContent(res: UpstreamResponse): BatchResult {
  const json = res.json;
  const emb = isObject(json) ? json['embedding'] : undefined;
  const values = isObject(emb) ? emb['values'] : undefined;
  // The values themselves (numbers, finite, how many) are checked once by the service (run.ts).
  if (!Array.isArray(values)) throw new Error('no embedding.values in the answer');
  const usage = isObject(json) ? json['usageMetadata'] : undefined;
  const count = isObject(usage) ? Number(usage['promptTokenCount']) : NaN;
  return { vectors: [values as number[]], promptTokens: Number.isFinite(count) ? Math.round(count) : undefined };
}
