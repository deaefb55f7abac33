import { defineEmbeddingsVendor } from '../module.js';
import { vertexVendor } from './adapter.js';
import { startVertexSimulator, VERTEX_SIM_PROJECT } from './simulator.js';
import { vertexOptionsSchema } from './options.js';

export const embeddingModule = defineEmbeddingsVendor({
  vendor: vertexVendor,
  optionsSchema: vertexOptionsSchema,
  startSimulator: startVertexSimulator,
  // The simulator's token stands in for an OAuth access token.
  demoCredentials: 'in-options',
  demoOptions: (sim) => ({ project: VERTEX_SIM_PROJECT, location: 'us-central1', access_token: String(sim.settings['apiKey']) }),
  demoModels: [
    { name: 'text-embedding-005', capabilities: ['embedding'], pricePerMillionInput: 0.025, description: '768-dim text embeddings (Vertex AI)' },
    { name: 'gemini-embedding-001', capabilities: ['embedding'], pricePerMillionInput: 0.15, description: '3072-dim text embeddings, one input per upstream call' },
    {
      name: 'gemini-embedding-2-preview',
      capabilities: ['embedding'],
      pricePerMillionInput: 0.2,
      description: '3072-dim Gemini Embedding 2 (text here), through :embedContent, one input per call',
    },
  ],
});
