import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The server in front of `npm run dev` (start it with `npm start` in another terminal).
const api = process.env.LOUPE_URL ?? 'http://127.0.0.1:8000';

export default defineConfig({
  base: '/app/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Under the app's Content-Security-Policy everything is a file of its own: no data: URLs for
    // assets and no inline preload polyfill.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  server: {
    host: '127.0.0.1',
    port: 5173,
    strictPort: true,
    proxy: { '/trpc': api },
  },
});
