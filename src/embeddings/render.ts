import { costUnits } from '../billing/usage-cost.js';
import type { UpstreamAnswer } from './run.js';
import type { EmbeddingRequest } from './types.js';
import { toClientForm, vectorSize } from './vectors.js';

/**
 * Vector values serialised between turns of the event loop. 2,048 vectors of 3,072 floats are
 * ~130 MB of JSON: one JSON.stringify of that held the loop for about half a second, and even 64
 * such vectors at a time ~100 ms; 32,768 values (ten vectors of 3,072) hold it ~15 ms, so /health
 * and other requests keep being answered while a large answer is built.
 */
const VALUES_PER_TURN = 32_768;

const yieldTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The spec 2.6 body, with every vector in the client's encoding and `index` = input position: the
 * same bytes as `JSON.stringify({object, data, model, usage})`, built in bounded pieces. Each turn's
 * vectors become bytes in that turn, and a large answer stays in those pieces, sent one after the
 * other: joining them as one string and encoding it (127 MB for 2,048 vectors of 3,072 floats) held
 * the loop ~0.5 s and ~0.35 s, and even one copy of the bytes into one buffer ~75 ms.
 */
export async function renderEmbeddings(req: EmbeddingRequest, answer: UpstreamAnswer, costMicros: number): Promise<Buffer | Buffer[]> {
  const vectors = answer.vectors!;
  const usage = { prompt_tokens: answer.promptTokens, total_tokens: answer.promptTokens, cost: costUnits(costMicros) };
  const tail = `],"model":${JSON.stringify(req.model)},"usage":${JSON.stringify(usage)}}`;
  const item = (i: number) => JSON.stringify({ object: 'embedding', index: i, embedding: toClientForm(vectors[i]!, req.encodingFormat) });
  // The vectors are of one size (run.ts checked): the first tells how many make a turn's worth.
  const perTurn = Math.max(1, Math.floor(VALUES_PER_TURN / Math.max(1, (vectors[0] && vectorSize(vectors[0])) || 1)));
  if (vectors.length <= perTurn) {
    const items: string[] = new Array(vectors.length);
    for (let i = 0; i < vectors.length; i++) items[i] = item(i);
    return Buffer.from(`{"object":"list","data":[${items.join(',')}${tail}`);
  }
  const pieces: Buffer[] = [Buffer.from('{"object":"list","data":[')];
  for (let from = 0; from < vectors.length; from += perTurn) {
    if (from > 0) await yieldTurn();
    const to = Math.min(vectors.length, from + perTurn);
    const items: string[] = new Array(to - from);
    for (let i = from; i < to; i++) items[i - from] = item(i);
    pieces.push(Buffer.from(from === 0 ? items.join(',') : `,${items.join(',')}`));
  }
  pieces.push(Buffer.from(tail));
  return pieces;
}

