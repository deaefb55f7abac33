import { describe, expect, it } from 'vitest';
import { ShutdownState } from '../../src/http/shutdown-state.js';

describe('ShutdownState', () => {
  it('flips once, tells every listener once, and survives a throwing listener', () => {
    const s = new ShutdownState();
    const heard: string[] = [];
    s.onShutdown(() => heard.push('a'));
    s.onShutdown(() => {
      throw new Error('listener bug');
    });
    const off = s.onShutdown(() => heard.push('removed'));
    off();
    s.onShutdown(() => heard.push('b'));
    expect(s.isShuttingDown()).toBe(false);
    expect(s.begin()).toBe(true);
    expect(s.isShuttingDown()).toBe(true);
    expect(s.begin()).toBe(false);
    expect(heard).toEqual(['a', 'b']);
    s.onShutdown(() => heard.push('late')); // subscribing after the start runs at once
    expect(heard).toEqual(['a', 'b', 'late']);
  });
});
