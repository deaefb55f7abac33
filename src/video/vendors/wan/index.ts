import { defineVideoVendor } from '../module.js';
import { wanCapabilities } from './capabilities.js';
import { wanVendor } from './adapter.js';
import { startWanSimulator } from './simulator.js';
import { wanOptionsSchema } from './options.js';

export { wanVendor } from './adapter.js';
export { startWanSimulator } from './simulator.js';

export const videoModule = defineVideoVendor({
  vendor: wanVendor,
  capabilities: wanCapabilities,
  optionsSchema: wanOptionsSchema,
  startSimulator: startWanSimulator,
  // Prices are per output second at 720P, in line with DashScope's international list prices.
  demoModels: [
    { name: 'wan2.6-t2v', pricePerSecond: 0.1, description: 'Wan 2.6 text-to-video with audio' },
    { name: 'wan2.6-i2v', pricePerSecond: 0.1, description: 'Wan 2.6 image-to-video (first frame)' },
    { name: 'wan2.2-kf2v-flash', pricePerSecond: 0.05, description: 'Wan 2.2 first-and-last-frame video' },
  ],
});
