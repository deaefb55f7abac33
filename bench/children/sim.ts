import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import { startSoraSimulator } from '../../src/video/vendors/sora/simulator.js';
import { startVeoSim } from '../../src/video/vendors/veo/simulator.js';
import { childOptions, runChild } from './child.js';

/**
 * One vendor simulator in its own process: `openai` (OpenAI-compatible embeddings, 1,536 floats for
 * text-embedding-3-small), `sora` (OpenAI video; `taskMs` decides how long jobs stay processing,
 * `videoBytes` makes the content endpoint stream that many synthetic bytes) or `veo` (Vertex AI;
 * without a storage URI its finished jobs carry `videoBytes` of video inline, as base64).
 */
export interface SimChildOptions {
  kind: 'openai' | 'sora' | 'veo';
  taskMs?: number;
  videoBytes?: number;
}

export interface SimChildInfo {
  url: string;
  apiKey: string;
}

runChild(async () => {
  const o = childOptions<SimChildOptions>();
  const taskMs = o.taskMs ?? 3_000;
  const sim = o.kind === 'openai' ? await startOpenAISimulator() : o.kind === 'veo' ? await startVeoSim({ taskMs }) : await startSoraSimulator({ taskMs });
  // A long run must not keep every request in memory.
  sim.record = false;
  if (o.videoBytes !== undefined) sim.settings['videoBytes'] = o.videoBytes;
  const info: SimChildInfo = { url: sim.url, apiKey: String(sim.settings['apiKey']) };
  return { info, close: () => sim.close() };
});
