import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracingOn } from '../../src/ops/tracing.js';
import { tracingWanted } from '../../src/ops/tracing-setup.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

const cfg = { enabled: false, service_name: 'gw', sample_ratio: 1 };

describe('tracing is off unless configured', () => {
  it('turns on from config or the standard OTLP endpoint variables, and OTEL_SDK_DISABLED or exporter none win', () => {
    expect(tracingWanted(cfg, {})).toBe(false);
    expect(tracingWanted({ ...cfg, enabled: true }, {})).toBe(true);
    expect(tracingWanted(cfg, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingWanted(cfg, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingWanted({ ...cfg, enabled: true }, { OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingWanted(cfg, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  });

  describe('with it off', () => {
    let sim: SimServer;
    let gw: TestGateway;
    beforeAll(async () => {
      sim = await sora.simulator.start({ taskMs: 100 });
      gw = await startTestGateway(upstreamsFor([{ module: sora, sim }]));
    });
    afterAll(async () => {
      await gw?.close();
      await sim?.close();
    });

    it('sends no traceparent upstream, even when the caller sent one', async () => {
      expect(tracingOn()).toBe(false);
      const { key } = await gw.newKey(10);
      const r = await call(gw, 'POST', '/v1/videos/generations', {
        key,
        body: { model: 'sora-2', prompt: 'x' },
        headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      });
      expect(r.status, r.text).toBe(200);
      expect(sim.requests.length).toBeGreaterThan(0);
      for (const q of sim.requests) expect(q.headers['traceparent']).toBeUndefined();
    });
  });
});
