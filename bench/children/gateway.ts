import type { AddressInfo } from 'node:net';
import { buildApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { buildServices } from '../../src/services.js';

import { childOptions, runChild } from './child.js';

/**
 * A whole gateway (the same services and app `gateway serve` builds) in its own process, listening
 * on a loopback port, with one funded account and an all-access key made at start. Its logger
 * writes to stdout, which the parent points at a log file.
 */
export interface GatewayChildOptions {
  /** A raw config, validated here exactly like a config file. */
  config: Record<string, unknown>;
  account: { name: string; balance: number };
  /** Starts the background refresher (settles jobs nobody polls). */
  poller?: boolean;
}

export interface GatewayChildInfo {
  url: string;
  key: string;
  keyId: string;
  accountId: string;
}

runChild(async () => {
  const o = childOptions<GatewayChildOptions>();
  const cfg = validateConfig(o.config, '(bench)');
  const services = await buildServices(cfg);
  const app = buildApp(services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  // output_url must point at the port actually bound.
  (services.video.deps.settings as { publicUrl: string }).publicUrl = url;
  if (o.poller) services.poller.start();
  const account = await services.admin.createAccount(o.account.name, { balance: o.account.balance });
  const { key, record } = await services.admin.createKey({ account: o.account.name });
  const info: GatewayChildInfo = { url, key, keyId: record.id, accountId: account.id };
  return {
    info,
    close: async () => {
      await app.close();
      await services.close();
    },
  };
});
