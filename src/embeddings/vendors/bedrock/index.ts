import type { EmbeddingVendorModule } from '../../types.js';
import { bedrockVendor } from './adapter.js';
import { BEDROCK_SIM_ACCESS_KEY, BEDROCK_SIM_REGION, BEDROCK_SIM_SECRET, startBedrockSimulator } from './simulator.js';

export const embeddingModule: EmbeddingVendorModule = {
  id: 'bedrock',
  vendor: bedrockVendor,
  simulator: {
    start: (opts) => startBedrockSimulator(opts),
    demo: (sim) => ({
      options: {
        region: BEDROCK_SIM_REGION,
        access_key_id: BEDROCK_SIM_ACCESS_KEY,
        secret_access_key: (sim.settings['apiKey'] as string | undefined) ?? BEDROCK_SIM_SECRET,
      },
      models: [
        {
          name: 'us.twelvelabs.marengo-embed-2-7-v1:0',
          capabilities: ['embedding'],
          pricePerMillionInput: 0.07,
          description: 'TwelveLabs Marengo 2.7 (1024-dim; input_type text or image synchronously)',
        },
        {
          name: 'twelvelabs.marengo-embed-3-0-v1:0',
          capabilities: ['embedding'],
          pricePerMillionInput: 0.07,
          description: 'TwelveLabs Marengo 3.0 (512-dim; input_type text or image synchronously)',
        },
      ],
    }),
  },
};
