import type { EmbeddingVendorModule } from '../../types.js';
import { openaiVendor } from './adapter.js';
import { OPENAI_SIM_KEY, startOpenAISimulator } from './simulator.js';

export const embeddingModule: EmbeddingVendorModule = {
  id: 'openai',
  vendor: openaiVendor,
  simulator: {
    start: (opts) => startOpenAISimulator(opts),
    demo: (sim) => ({
      apiKey: (sim.settings['apiKey'] as string | undefined) ?? OPENAI_SIM_KEY,
      options: {},
      models: [
        { name: 'text-embedding-3-small', capabilities: ['embedding'], pricePerMillionInput: 0.02, description: '1536-dim text embeddings' },
        { name: 'text-embedding-3-large', capabilities: ['embedding'], pricePerMillionInput: 0.13, description: '3072-dim text embeddings' },
        { name: 'gpt-4o-mini', capabilities: ['chat'], pricePerMillionInput: 0.15, pricePerMillionOutput: 0.6, description: 'chat completions' },
      ],
    }),
  },
};
