/**
 * The requests in flight, as a doubly linked list through the requests themselves: add and remove
 * in O(1), a walk for the deadline sweep, and nothing left behind by a removal.
 *
 * Why not a `Set`: V8 replaces a Set's hash table as entries come and go, and a replaced table keeps
 * its old entries and a pointer to the table that replaced it (for iterators still walking it). With
 * every request added and deleted, the table was replaced every few hundred requests. Once a full
 * collection had moved one table into the old generation, that dead table kept every later table
 * alive, and with them the requests each one held, so every young collection promoted whole request
 * graphs until the next full one: at 32 connections ~570 KB per scavenge instead of ~30, and about
 * 30% more CPU per request (bench/README.md, "The gap at 32 connections by kind"). A removed node here
 * has both links cleared, so a dead request points at nothing.
 */
export interface InflightNode<T> {
  /** The list's links; only InflightList touches them. */
  prevInflight: T | undefined;
  nextInflight: T | undefined;
  /** The list holding the node, if any: a node is in at most one list at a time. */
  inList: object | undefined;
}

export class InflightList<T extends InflightNode<T>> {
  private head: T | undefined;
  private tail: T | undefined;
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Adds `node` at the end; a node already in this list stays where it is (one in another list must leave it first). */
  add(node: T): void {
    if (node.inList === this) return;
    if (node.inList) throw new Error('InflightList: the node is in another list');
    node.inList = this;
    node.prevInflight = this.tail;
    node.nextInflight = undefined;
    if (this.tail) this.tail.nextInflight = node;
    else this.head = node;
    this.tail = node;
    this.count++;
  }

  /** Removes `node` if this list holds it; a second removal, or one from a list it is not in, does nothing. */
  delete(node: T): void {
    if (node.inList !== this) return;
    const { prevInflight: prev, nextInflight: next } = node;
    if (prev) prev.nextInflight = next;
    else this.head = next;
    if (next) next.prevInflight = prev;
    else this.tail = prev;
    node.prevInflight = undefined;
    node.nextInflight = undefined;
    node.inList = undefined;
    this.count--;
  }

  /**
   * Calls `fn` on every node, oldest first, without copying the list (a sweep every 250 ms over
   * tens of thousands of requests made an array of them each time). `fn` may delete any node: the
   * walk goes on after the nearest of the next node, the current one and the previous one (taken
   * before `fn` ran) still listed; only should `fn` delete all three does it start again from the
   * head, where a node seen before is one `fn` left listed and decides on again the same way.
   * Nodes added during the walk are visited too.
   */
  forEach(fn: (node: T) => void): void {
    let node = this.head;
    while (node) {
      const { prevInflight: prev, nextInflight: next } = node;
      fn(node);
      if (next && next.inList === this) node = next;
      else if (node.inList === this) node = node.nextInflight;
      else if (!next) node = undefined;
      else if (prev && prev.inList === this) node = prev.nextInflight;
      else node = this.head;
    }
  }
}
