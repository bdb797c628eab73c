import { defineConfig } from 'vitest/config';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { svelteTesting } from '@testing-library/svelte/vite';

/**
 * The console is served under a strict CSP (`script-src 'self'; style-src 'self'`),
 * so the build must emit no inline script or style: CSS goes to files, the
 * module-preload polyfill (an inline helper in some setups) is off, and
 * nothing is inlined as a data: URL script.
 *
 * `--mode demo` builds a self-contained demo fed by `src/dev/fixtures.ts`
 * for visual work without the engine; the production build never imports it
 * (the import is behind `import.meta.env.MODE === 'demo'`, which Vite
 * replaces with a constant so the branch and its chunk are dropped).
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export default defineConfig(({ mode }) => ({
  plugins: [svelte(), svelteTesting()],
  build: {
    outDir: mode === 'demo' ? 'dist-demo' : 'dist',
    target: 'es2022',
    cssCodeSplit: false,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
  server: {
    // The engine's console API, for `npm run dev` against a running `toolgate serve`.
    proxy: process.env.TOOLGATE_URL
      ? { '/api': { target: process.env.TOOLGATE_URL, changeOrigin: false }, '/login': process.env.TOOLGATE_URL }
      : undefined,
  },
  preview: {
    // Preview the build under the same CSP the engine sends, so a violation shows here first.
    headers: { 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff' },
  },
  test: {
    environment: 'jsdom',
    globals: true,
    include: ['src/**/*.test.ts'],
    setupFiles: ['src/test-setup.ts'],
  },
}));
