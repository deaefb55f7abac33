const cache = new Map<string, RegExp>();

/** Shell-style model pattern: `*` matches any run of characters, `?` one character. */
export function globMatch(pattern: string, name: string): boolean {
  if (pattern === '*') return true;
  let re = cache.get(pattern);
  if (!re) {
    const body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
    re = new RegExp(`^${body}$`);
    cache.set(pattern, re);
  }
  return re.test(name);
}
