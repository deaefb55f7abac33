import { isIPv4, isIPv6 } from 'node:net';

/**
 * The base URL a client reaches a listener at `host`:`port` by: an IPv6 literal goes in brackets
 * (`http://::1:8080` is no URL), and a wildcard host (`0.0.0.0`, `::`), which means "every
 * interface" to a listener but is no address a client can connect to, becomes the loopback address
 * of its family. Clients on other machines need `server.public_url` (see loopbackUrlsNotice).
 */
export function listenerUrl(host: string, port: number): string {
  const reachable = isWildcardHost(host) ? (isIPv6(host) ? '::1' : '127.0.0.1') : host;
  return `http://${isIPv6(reachable) ? `[${reachable}]` : reachable}:${port}`;
}

/** `0.0.0.0` or `::` (in any spelling of all zeros): listen on every interface. */
export function isWildcardHost(host: string): boolean {
  if (isIPv4(host)) return host.split('.').every((part) => Number(part) === 0);
  if (isIPv6(host)) return host.split(':').every((group) => /^0*$/.test(group));
  return false;
}

/**
 * The start-up line for a gateway listening on every interface whose URLs for clients (output_url,
 * content and upload links) are its own address, so the loopback one: right for clients on this
 * machine, unreachable from any other.
 */
export function loopbackUrlsNotice(host: string): string {
  const loopback = new URL(listenerUrl(host, 1)).hostname;
  return (
    `server.host is ${host} (every interface) and server.public_url is not set: the URLs given to clients ` +
    `(output_url, content and upload links) name the loopback address ${loopback}, which only this machine can reach; ` +
    'set server.public_url to the address clients on other machines use'
  );
}
