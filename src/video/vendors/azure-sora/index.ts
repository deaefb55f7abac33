import type { VideoVendorModule } from '../module.js';
import { azureSoraCapabilities } from './capabilities.js';
import { azureSoraVendor } from './adapter.js';
import { startAzureSoraSimulator } from './simulator.js';

export { azureSoraVendor } from './adapter.js';
export { startAzureSoraSimulator } from './simulator.js';

export const videoModule: VideoVendorModule = {
  vendor: azureSoraVendor,
  capabilities: azureSoraCapabilities,
  simulator: {
    start: startAzureSoraSimulator,
    demo: (sim) => ({
      apiKey: sim.settings.apiKey as string,
      options: { api_version: 'preview', deployments: { sora: (sim.settings.deployments as string[])[0]! } },
      models: [{ name: 'sora', pricePerSecond: 0.1, description: 'Sora on Azure OpenAI (simulated preview jobs API), 1-20 s' }],
    }),
  },
};
