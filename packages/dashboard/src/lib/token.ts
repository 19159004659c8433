// The admin token lives in this tab's sessionStorage only: never in localStorage, a cookie or
// a URL, so it leaves with the tab and is never sent anywhere but in the Authorization header.
const key = 'ferry.dashboard.token';

/** The token signed in with in this tab, or null. */
export function readToken(): string | null {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
}

/** Keeps the token for this tab. */
export function keepToken(token: string): void {
  sessionStorage.setItem(key, token);
}

/** Forgets the token (sign out, or the server refused it). */
export function forgetToken(): void {
  sessionStorage.removeItem(key);
}
