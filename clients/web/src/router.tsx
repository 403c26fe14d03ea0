import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

// Client-side routing on the History API: the server answers index.html for every page path.
export const BASE = '/app/';

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((listener) => listener()));

/** The current page path under the app, without the base: '' is the home page. */
export function usePage(): string {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => (window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : ''),
  );
}

export function navigate(page: string): void {
  window.history.pushState(null, '', BASE + page);
  listeners.forEach((listener) => listener());
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { to: string };

/** A real link (it opens in a new tab too) that moves within the app without a reload. */
export function Link({ to, onClick, ...props }: LinkProps) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return <a href={BASE + to} onClick={follow} {...props} />;
}
