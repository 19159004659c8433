/**
 * The policy every dashboard answer carries. Scripts, styles and requests come from this
 * server only (the bundle holds no inline script or style, and no font or CDN), so a script
 * injected through a displayed value could neither run nor send the token anywhere.
 */
export const dashboardContentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** Headers of every answer under `/dashboard/`: the page is never framed, sniffed or named in a Referer. */
export const dashboardSecurityHeaders: Readonly<Record<string, string>> = {
  'content-security-policy': dashboardContentSecurityPolicy,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** `index.html` names the assets of the current build: asked again every time. */
export const indexCacheControl = 'no-cache';

/** An asset's name holds a hash of its content, so it never changes under that name. */
export const assetCacheControl = 'public, max-age=31536000, immutable';
