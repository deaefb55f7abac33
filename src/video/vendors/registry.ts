import type { VideoVendorModule } from './module.js';
import { videoModule as wan } from './wan/index.js';
import { videoModule as seedance } from './seedance/index.js';
import { videoModule as veo } from './veo/index.js';
import { videoModule as sora } from './sora/index.js';
import { videoModule as azureSora } from './azure-sora/index.js';
import { videoModule as fal } from './fal/index.js';

/** Every video vendor the gateway speaks. Adding a vendor = one folder + one line here. */
export const videoModules: readonly VideoVendorModule[] = [wan, seedance, veo, sora, azureSora, fal];

export const videoVendors = new Map(videoModules.map((m) => [m.vendor.id, m.vendor]));

/** Each vendor's capability declaration, by vendor id. */
export const videoCapabilities = new Map(videoModules.map((m) => [m.vendor.id, m.capabilities]));
