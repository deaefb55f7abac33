import { defineEmbeddingsVendor } from '../module.js';
import { openaiVendor } from './adapter.js';
import { startOpenAISimulator } from './simulator.js';
import { openaiOptionsSchema } from './options.js';

export const embeddingModule = defineEmbeddingsVendor({
  vendor: openaiVendor,
  optionsSchema: openaiOptionsSchema,
  startSimulator: startOpenAISimulator,
  demoModels: [
    { name: 'text-embedding-3-small', capabilities: ['embedding'], pricePerMillionInput: 0.02, description: '1536-dim text embeddings' },
    { name: 'text-embedding-3-large', capabilities: ['embedding'], pricePerMillionInput: 0.13, description: '3072-dim text embeddings' },
    { name: 'gpt-4o-mini', capabilities: ['chat'], pricePerMillionInput: 0.15, pricePerMillionOutput: 0.6, description: 'chat completions' },
  ],
});
