import { readFileSync } from 'node:fs';
import type { Server } from 'node:net';

/**
 * Loopback ports for servers a test stops and starts again on the same port (a relay playing an
 * outage of the service behind it). A port the OS handed out for port 0 is free again while such
 * a server is down, and other tests' servers, which ask for port 0 all the time, are handed ports
 * from the same range: one of them may take it, and the restart then fails with EADDRINUSE. Ports
 * below the range the OS hands out (for port 0 and for outgoing connections) are never taken that
 * way, so these servers are put there.
 */

/** The range the OS hands out by itself, as Linux configures it. */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // not Linux: its defaults
  }
  return [32768, 60999];
}

/** Ports not used by well-known services start here. */
const FIRST = 10_000;

/**
 * Listens `server` on 127.0.0.1 on a random port below the OS's own range (tried again on another
 * when taken), or on one the OS picks when there is no room below that range. Resolves with the port.
 */
export async function listenOutsideEphemeral(server: Server): Promise<number> {
  const [low] = ephemeralRange();
  for (let i = 0; i < 20 && low - FIRST > 1_000; i++) {
    const port = FIRST + Math.floor(Math.random() * (low - FIRST));
    const taken = await new Promise<boolean>((resolve, reject) => {
      const onError = (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' || e.code === 'EACCES' ? resolve(true) : reject(e));
      server.once('error', onError);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', onError);
        resolve(false);
      });
    });
    if (!taken) return port;
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return (server.address() as { port: number }).port;
}
