import { costUnits } from '../billing/usage-cost.js';
import type { UpstreamAnswer } from './run.js';
import type { EmbeddingRequest } from './types.js';
import { toClientForm } from './vectors.js';

/**
 * Vectors serialised between turns of the event loop. 2,048 vectors of 3,072 floats are ~130 MB of
 * JSON: one JSON.stringify of that held the loop for about half a second; 64 at a time hold it for a
 * few milliseconds each, so /health and other requests keep being answered while a large answer is built.
 */
const VECTORS_PER_TURN = 64;

const yieldTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The spec 2.6 body, with every vector in the client's encoding and `index` = input position: the
 * same bytes as `JSON.stringify({object, data, model, usage})`, built in bounded pieces.
 */
export async function renderEmbeddings(req: EmbeddingRequest, answer: UpstreamAnswer, costMicros: number): Promise<string> {
  const vectors = answer.vectors!;
  const items: string[] = new Array(vectors.length);
  for (let i = 0; i < vectors.length; i++) {
    if (i > 0 && i % VECTORS_PER_TURN === 0) await yieldTurn();
    items[i] = JSON.stringify({ object: 'embedding', index: i, embedding: toClientForm(vectors[i]!, req.encodingFormat) });
  }
  const usage = { prompt_tokens: answer.promptTokens, total_tokens: answer.promptTokens, cost: costUnits(costMicros) };
  return `{"object":"list","data":[${items.join(',')}],"model":${JSON.stringify(req.model)},"usage":${JSON.stringify(usage)}}`;
}
