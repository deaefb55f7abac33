import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routes (#/jobs, #/jobs/ID): the page itself is always /console, so the gateway serves one
 * shell and back/forward work without server routes. Nothing secret ever goes into the hash.
 */
export function currentRoute(): string[] {
  return location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

export function useRoute(): string[] {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const on = () => setRoute(currentRoute());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}

export function go(...parts: string[]): void {
  location.hash = href(...parts);
}
