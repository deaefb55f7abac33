import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import { startSoraSimulator } from '../../src/video/vendors/sora/simulator.js';
import { childOptions, runChild } from './child.js';

/**
 * One vendor simulator in its own process: `openai` (OpenAI-compatible embeddings, 1,536 floats for
 * text-embedding-3-small) or `sora` (OpenAI video; `taskMs` decides how long jobs stay processing,
 * `videoBytes` makes the content endpoint stream that many synthetic bytes).
 */
export interface SimChildOptions {
  kind: 'openai' | 'sora';
  taskMs?: number;
  videoBytes?: number;
}

export interface SimChildInfo {
  url: string;
  apiKey: string;
}

runChild(async () => {
  const o = childOptions<SimChildOptions>();
  const sim = o.kind === 'openai' ? await startOpenAISimulator() : await startSoraSimulator({ taskMs: o.taskMs ?? 3_000 });
  // A long run must not keep every request in memory.
  sim.record = false;
  if (o.videoBytes !== undefined) sim.settings['videoBytes'] = o.videoBytes;
  const info: SimChildInfo = { url: sim.url, apiKey: String(sim.settings['apiKey']) };
  return { info, close: () => sim.close() };
});
