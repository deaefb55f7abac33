import { expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import type { Ctx } from './cases-accounts.js';
import { T0, makeAccount, uid } from './harness.js';

const endpoint = (accountId: string, n: number) => ({
  id: uid('we'),
  accountId,
  url: `https://hooks.example/${n}`,
  events: ['video.completed' as const],
  secret: `whsec_${n}`,
  createdAt: T0 + n,
});

export function webhookCases(ctx: () => Ctx): void {
  it('30 concurrent registrations under a cap of 10: exactly 10 are written, the rest refused too_many_endpoints', async () => {
    const { store } = ctx();
    const a = await makeAccount(store);
    const other = await makeAccount(store);
    await store.createWebhookEndpoint(endpoint(other.id, 0), 10);
    const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => store.createWebhookEndpoint(endpoint(a.id, i + 1), 10)));
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    expect(refused).toHaveLength(20);
    for (const e of refused) {
      expect(e).toBeInstanceOf(GatewayError);
      expect(e).toMatchObject({ status: 400, code: 'too_many_endpoints', param: 'url' });
    }
    expect(await store.listWebhookEndpoints(a.id)).toHaveLength(10);
    // Another account's endpoints are not counted, and a disabled one frees its place.
    expect(await store.listWebhookEndpoints(other.id)).toHaveLength(1);
    const [first] = await store.listWebhookEndpoints(a.id);
    expect(await store.disableWebhookEndpoint(first!.id, T0 + 100)).toBe(true);
    await store.createWebhookEndpoint(endpoint(a.id, 100), 10);
    await expect(store.createWebhookEndpoint(endpoint(a.id, 101), 10)).rejects.toMatchObject({ code: 'too_many_endpoints' });
  });
}
