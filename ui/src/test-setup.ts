import '@testing-library/jest-dom/vitest';
import { beforeEach } from 'vitest';
import { router } from './lib/router.svelte';

// jsdom has no layout: scrolling is a no-op there.
if (typeof Element !== 'undefined' && !Element.prototype.scrollIntoView) {
  Element.prototype.scrollIntoView = function scrollIntoView() {};
}

// The router is a page-wide singleton; each test starts from a clean location.
beforeEach(() => {
  if (typeof history === 'undefined') return;
  history.replaceState(null, '', '/');
  router.route = { view: 'approvals', params: new URLSearchParams() };
});
