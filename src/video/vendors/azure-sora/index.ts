import { defineVideoVendor } from '../module.js';
import { azureSoraCapabilities } from './capabilities.js';
import { azureSoraVendor } from './adapter.js';
import { startAzureSoraSimulator } from './simulator.js';
import { azureSoraOptionsSchema } from './options.js';

export { azureSoraVendor } from './adapter.js';
export { startAzureSoraSimulator } from './simulator.js';

export const videoModule = defineVideoVendor({
  vendor: azureSoraVendor,
  capabilities: azureSoraCapabilities,
  optionsSchema: azureSoraOptionsSchema,
  startSimulator: startAzureSoraSimulator,
  demoOptions: (sim) => ({ api_version: 'preview', deployments: { sora: (sim.settings.deployments as string[])[0]! } }),
  demoModels: [{ name: 'sora', pricePerSecond: 0.1, description: 'Sora on Azure OpenAI (simulated preview jobs API), 1-20 s' }],
});
