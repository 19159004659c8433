import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { takeEarly } from './early-calls.js';

/** What {@link useApi} holds. */
export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * GETs an admin path and keeps the answer, again when `path` changes, on `reload()`, and every
 * `refreshMs` when given (polling stops while the tab is hidden). An answer to the same path
 * sent early, as the app opened, is taken instead of asking again.
 */
export function useApi<T>(path: string | null, refreshMs?: number): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: path !== null });
  const [tick, setTick] = useState(0);
  const current = useRef(path);
  current.current = path;
  const reload = useCallback(() => setTick((n) => n + 1), []);

  useEffect(() => {
    if (path === null) return undefined;
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    // The first read may have been sent as the app opened (early-calls.ts).
    (takeEarly<T>(path) ?? api<T>('GET', path)).then(
      (data) => live && current.current === path && setState({ data, error: undefined, loading: false }),
      (error: unknown) => live && current.current === path && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [path, tick]);

  useEffect(() => {
    if (refreshMs === undefined || path === null) return undefined;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') reload();
    }, refreshMs);
    return () => clearInterval(timer);
  }, [refreshMs, path, reload]);

  return { ...state, reload };
}
