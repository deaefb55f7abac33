import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts a test receiver on a loopback port; resolves with its origin (`http://127.0.0.1:port`). */
export async function listenOnLoopback(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes a test receiver, ending connections a delivery may still hold open. */
export async function shutReceiver(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}
