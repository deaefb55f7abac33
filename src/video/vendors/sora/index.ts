import { defineVideoVendor } from '../module.js';
import { soraCapabilities } from './capabilities.js';
import { soraVendor } from './adapter.js';
import { startSoraSimulator } from './simulator.js';
import { soraOptionsSchema } from './options.js';

export { soraVendor } from './adapter.js';
export { startSoraSimulator } from './simulator.js';

export const videoModule = defineVideoVendor({
  vendor: soraVendor,
  capabilities: soraCapabilities,
  optionsSchema: soraOptionsSchema,
  startSimulator: startSoraSimulator,
  demoModels: [
    { name: 'sora-2', pricePerSecond: 0.1, description: 'OpenAI Sora 2 (simulated), 4-20 s, 720p' },
    { name: 'sora-2-pro', pricePerSecond: 0.3, description: 'OpenAI Sora 2 Pro (simulated), up to 1080p' },
  ],
});
