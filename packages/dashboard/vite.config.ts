import { defineConfig } from 'vite';

// The build lands in the server package, which serves it at /dashboard/ (server
// `src/dashboard/`): hashed names under assets/, so they can be cached for good.
export default defineConfig({
  base: '/dashboard/',
  build: {
    outDir: '../server/dashboard-assets',
    emptyOutDir: true,
    assetsDir: 'assets',
    // Nothing may be inlined as a data: script or style the policy would refuse; small images may.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
    sourcemap: false,
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
});
