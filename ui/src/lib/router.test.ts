import { describe, expect, it } from 'vitest';
import { router } from './router.svelte';

describe('router', () => {
  it('a view writing its query never undoes a navigation still on its way', async () => {
    location.hash = '#/live';
    router.init(() => 'approvals');
    expect(router.route.view).toBe('live');
    router.setParams({ tool: 'fs_read' });
    expect(location.hash).toBe('#/live?tool=fs_read');
    // Navigate; `hashchange` fires later, and the Live view's effect runs
    // before it does.
    location.hash = '#/policy';
    router.setParams({ tool: 'fs_write' });
    expect(location.hash).toBe('#/policy');
    await new Promise<void>((resolve) => window.addEventListener('hashchange', () => resolve(), { once: true }));
    expect(router.route.view).toBe('policy');
  });
});
