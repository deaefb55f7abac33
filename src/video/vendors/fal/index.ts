import { defineVideoVendor } from '../module.js';
import { falCapabilities } from './capabilities.js';
import { falVendor } from './adapter.js';
import { startFalSim } from './simulator.js';
import { falOptionsSchema } from './options.js';

export { falVendor } from './adapter.js';
export { startFalSim } from './simulator.js';

export const videoModule = defineVideoVendor({
  vendor: falVendor,
  capabilities: falCapabilities,
  optionsSchema: falOptionsSchema,
  startSimulator: startFalSim,
  demoModels: [
    { name: 'fal-ai/veo3/fast', pricePerSecond: 0.4, description: 'Veo 3 Fast on fal (duration "4s"/"6s"/"8s")' },
    {
      name: 'fal-ai/kling-video/v2.1/standard/text-to-video',
      pricePerSecond: 0.05,
      description: 'Kling 2.1 Standard on fal (duration "5"/"10")',
    },
    {
      name: 'fal-ai/kling-video/o3/pro/text-to-video',
      pricePerSecond: 0.224,
      description: 'Kling O3 Pro on fal (duration "3".."15")',
    },
  ],
});
