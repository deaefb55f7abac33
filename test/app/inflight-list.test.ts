import { describe, expect, it } from 'vitest';
import { InflightList, type InflightNode } from '../../src/http/inflight-list.js';

class Node implements InflightNode<Node> {
  prevInflight: Node | undefined = undefined;
  nextInflight: Node | undefined = undefined;
  inList: object | undefined = undefined;
  constructor(readonly name: string) {}
}

const names = (list: InflightList<Node>): string[] => {
  const out: string[] = [];
  list.forEach((n) => out.push(n.name));
  return out;
};

/** The deadline sweep's list of requests in flight (http/lifecycle.ts). */
describe('InflightList', () => {
  it('keeps requests in the order they came and removes any of them', () => {
    const list = new InflightList<Node>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => new Node(n)) as [Node, Node, Node, Node];
    for (const n of [a, b, c, d]) list.add(n);
    expect(names(list)).toEqual(['a', 'b', 'c', 'd']);
    list.delete(b); // middle
    list.delete(a); // head
    list.delete(d); // tail
    expect(names(list)).toEqual(['c']);
    expect(list.size).toBe(1);
    list.delete(c);
    expect(names(list)).toEqual([]);
    expect(list.size).toBe(0);
    list.add(b);
    expect(names(list)).toEqual(['b']);
  });

  it('leaves a removed request pointing at nothing, so a dead one keeps no later request alive', () => {
    const list = new InflightList<Node>();
    const [a, b, c] = ['a', 'b', 'c'].map((n) => new Node(n)) as [Node, Node, Node];
    for (const n of [a, b, c]) list.add(n);
    list.delete(b);
    expect(b.prevInflight).toBeUndefined();
    expect(b.nextInflight).toBeUndefined();
    expect(a.nextInflight).toBe(c);
    expect(c.prevInflight).toBe(a);
    list.delete(c);
    expect(c.prevInflight).toBeUndefined();
    expect(a.nextInflight).toBeUndefined();
  });

  it('ignores a second add and a second delete of the same request', () => {
    const list = new InflightList<Node>();
    const a = new Node('a');
    list.add(a);
    list.add(a);
    expect(names(list)).toEqual(['a']);
    list.delete(a);
    list.delete(a);
    expect(list.size).toBe(0);
    expect(names(list)).toEqual([]);
  });

  it('lets the sweep remove the request it is looking at and go on to the next', () => {
    const list = new InflightList<Node>();
    const nodes = ['a', 'b', 'c', 'd', 'e'].map((n) => new Node(n));
    for (const n of nodes) list.add(n);
    const seen: string[] = [];
    list.forEach((n) => {
      seen.push(n.name);
      if (n.name !== 'c') list.delete(n);
    });
    expect(seen).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(names(list)).toEqual(['c']);
  });

  it('lets the sweep remove other requests too: those removed before their turn are skipped, the rest still visited', () => {
    const list = new InflightList<Node>();
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((n) => new Node(n)) as [Node, Node, Node, Node, Node];
    for (const n of [a, b, c, d, e]) list.add(n);
    const seen: string[] = [];
    list.forEach((n) => {
      seen.push(n.name);
      // Visiting a removes the next one (b) and itself; visiting c removes e.
      if (n === a) (list.delete(b), list.delete(a));
      if (n === c) list.delete(e);
    });
    expect(seen).toEqual(['a', 'c', 'd']);
    expect(names(list)).toEqual(['c', 'd']);
  });
});
