import type { EmbeddingVendorModule } from '../../types.js';
import { vertexVendor } from './adapter.js';
import { startVertexSimulator, VERTEX_SIM_PROJECT, VERTEX_SIM_TOKEN } from './simulator.js';

export const embeddingModule: EmbeddingVendorModule = {
  id: 'vertex',
  vendor: vertexVendor,
  simulator: {
    start: (opts) => startVertexSimulator(opts),
    demo: (sim) => ({
      options: {
        project: VERTEX_SIM_PROJECT,
        location: 'us-central1',
        access_token: (sim.settings['apiKey'] as string | undefined) ?? VERTEX_SIM_TOKEN,
      },
      models: [
        { name: 'text-embedding-005', capabilities: ['embedding'], pricePerMillionInput: 0.025, description: '768-dim text embeddings (Vertex AI)' },
        { name: 'gemini-embedding-001', capabilities: ['embedding'], pricePerMillionInput: 0.15, description: '3072-dim text embeddings, one input per upstream call' },
        {
          name: 'gemini-embedding-2-preview',
          capabilities: ['embedding'],
          pricePerMillionInput: 0.2,
          description: '3072-dim Gemini Embedding 2 (text here), through :embedContent, one input per call',
        },
      ],
    }),
  },
};
