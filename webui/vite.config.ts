// Vite build of the web UI. The output (dist/) is embedded into the hearth binary by CMake
// (cmake/WebUi.cmake): hashed file names under assets/, no inline scripts (the server's CSP
// allows only 'self' scripts), no module-preload polyfill (an inline script).
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// KaTeX's CSS lists each font as woff2, woff and ttf; every browser this UI supports takes
// woff2, so the other two are dropped and never embedded.
const woff2Only = {
  name: 'katex-woff2-only',
  enforce: 'pre' as const,
  transform(code: string, id: string) {
    if (!/katex(\.min)?\.css$/.test(id)) return null;
    return { code: code.replace(/,\s*url\([^)]*\.(woff|ttf)\)\s*format\("(woff|truetype)"\)/g, ''), map: null };
  },
};

export default defineConfig({
  plugins: [svelte(), woff2Only],
  base: '/',
  build: {
    outDir: process.env.HEARTH_WEBUI_OUT || 'dist',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1024,
  },
  server: {
    // `npm run dev` against a running `hearth serve` on the default port.
    proxy: { '/v1': 'http://127.0.0.1:11434', '/api': 'http://127.0.0.1:11434', '/props': 'http://127.0.0.1:11434' },
  },
});
