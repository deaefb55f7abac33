import { isIPv6 } from 'node:net';

/** The base URL of a listener at `host`:`port`: an IPv6 literal goes in brackets (`http://::1:8080` is no URL). */
export function listenerUrl(host: string, port: number): string {
  return `http://${isIPv6(host) ? `[${host}]` : host}:${port}`;
}
