import { defineEmbeddingsVendor } from '../module.js';
import { bedrockVendor } from './adapter.js';
import { BEDROCK_SIM_ACCESS_KEY, BEDROCK_SIM_REGION, startBedrockSimulator } from './simulator.js';
import { bedrockOptionsSchema } from './options.js';

export const embeddingModule = defineEmbeddingsVendor({
  vendor: bedrockVendor,
  optionsSchema: bedrockOptionsSchema,
  startSimulator: startBedrockSimulator,
  // SigV4: the simulator's secret is the secret access key of a fixed access key id.
  demoCredentials: 'in-options',
  demoOptions: (sim) => ({ region: BEDROCK_SIM_REGION, access_key_id: BEDROCK_SIM_ACCESS_KEY, secret_access_key: String(sim.settings['apiKey']) }),
  demoModels: [
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
});
