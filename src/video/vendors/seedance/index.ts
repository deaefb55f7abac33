import { defineVideoVendor } from '../module.js';
import { seedanceCapabilities } from './capabilities.js';
import { seedanceVendor } from './adapter.js';
import { startSeedanceSimulator } from './simulator.js';
import { seedanceOptionsSchema } from './options.js';

export { seedanceVendor } from './adapter.js';
export { startSeedanceSimulator } from './simulator.js';

export const videoModule = defineVideoVendor({
  vendor: seedanceVendor,
  capabilities: seedanceCapabilities,
  optionsSchema: seedanceOptionsSchema,
  startSimulator: startSeedanceSimulator,
  // Ark bills tokens; these per-second prices approximate a 720p 16:9 second at list token prices.
  demoModels: [
    { name: 'doubao-seedance-1-5-pro-251215', pricePerSecond: 0.05, description: 'Seedance 1.5 pro: text/image to video with audio, draft mode' },
    { name: 'doubao-seedance-1-0-lite-i2v-250428', pricePerSecond: 0.03, description: 'Seedance 1.0 lite image-to-video with reference images' },
    { name: 'doubao-seedance-2-0-260128', pricePerSecond: 0.1, description: 'Seedance 2.0 multimodal reference video' },
  ],
});
