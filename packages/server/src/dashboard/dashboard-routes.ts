import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { assetCacheControl, dashboardSecurityHeaders, indexCacheControl } from './dashboard-headers.js';

/** Where `npm run build` (the `@ferry/dashboard` workspace) writes the dashboard: beside `src` and `dist` of this package. */
export const defaultDashboardAssets = fileURLToPath(new URL('../../dashboard-assets/', import.meta.url));

/** What `/dashboard/` serves. */
export interface DashboardRouteDeps {
  /** The built dashboard: `index.html` and `assets/`. Default {@link defaultDashboardAssets}. */
  assetsDir?: string;
}

const contentTypes: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

// A built asset's name: letters, digits, `-`, `_` and dots, never a leading dot, so no
// request can step out of the assets folder or read a hidden file.
const assetName = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

const notBuilt =
  'The dashboard is not built: its assets are missing from the server package (dashboard-assets/).\n' +
  'Run `npm run build` at the root of the Ferry checkout (`npm ci` does it), then reload.\n';

/**
 * `GET /dashboard/`: the browser console, a static single page that talks to the admin API
 * with the token the person signs in with. The page itself holds nothing secret, so it needs
 * no token; it is registered on the admin listener so that it lives where the API it calls does.
 */
export async function dashboardRoutes(app: FastifyInstance, deps: DashboardRouteDeps = {}): Promise<void> {
  const dir = deps.assetsDir ?? defaultDashboardAssets;
  const secure = (reply: FastifyReply): FastifyReply => reply.headers(dashboardSecurityHeaders);

  const sendIndex = async (reply: FastifyReply) => {
    const html = await readOrNull(join(dir, 'index.html'));
    if (html === null) return secure(reply).code(503).header('content-type', 'text/plain; charset=utf-8').header('cache-control', 'no-store').send(notBuilt);
    return secure(reply).header('content-type', 'text/html; charset=utf-8').header('cache-control', indexCacheControl).send(html);
  };

  app.get('/dashboard', async (_request, reply) => secure(reply).redirect('/dashboard/', 301));
  app.get('/dashboard/', async (_request, reply) => sendIndex(reply));
  app.get('/dashboard/index.html', async (_request, reply) => sendIndex(reply));
  app.get<{ Params: { name: string } }>('/dashboard/assets/:name', async (request, reply) => {
    const { name } = request.params;
    const type = contentTypes[extname(name)];
    const body = assetName.test(name) && type !== undefined ? await readOrNull(join(dir, 'assets', name)) : null;
    if (body === null) {
      return secure(reply).code(404).header('content-type', 'text/plain; charset=utf-8').header('cache-control', 'no-store').send('No such dashboard asset.\n');
    }
    return secure(reply).header('content-type', type).header('cache-control', assetCacheControl).send(body);
  });
}

async function readOrNull(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw error;
  }
}
