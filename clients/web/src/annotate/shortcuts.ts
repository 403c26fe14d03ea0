import { useEffect, useRef } from 'react';

// The annotate page's keyboard shortcuts, handled once on the document.

export const SHORTCUTS = [
  { keys: ['Ctrl+Enter', '⌘+Enter'], does: 'Submit and next (from anywhere, text fields included)' },
  { keys: ['1', '…', '9'], does: 'Pick that option of the focused rubric field, else of the first unanswered one' },
  { keys: ['s'], does: 'Skip this item' },
  { keys: ['p'], does: 'Open the item you completed before this one (again for the one before that), to change its answers' },
  { keys: ['n'], does: 'Write a note' },
  { keys: ['Esc'], does: 'Leave a text field' },
  { keys: ['?'], does: 'Show these shortcuts' },
] as const;

export type ShortcutHandlers = {
  submit: () => void;
  /** A digit key 1–9, and the rubric field that holds the focus (if any). */
  pick: (option: number, focusedField: string | undefined) => void;
  skip: () => void;
  /** The previously completed item. */
  previous: () => void;
  note: () => void;
  help: () => void;
  /** Esc in a text field: where the focus goes instead. */
  leaveField: () => void;
};

/** Whether typing there writes text (so that letters and digits are not shortcuts). */
function isTextField(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  return target instanceof HTMLInputElement && !['radio', 'checkbox', 'button', 'submit', 'reset', 'range', 'color'].includes(target.type);
}

export function useShortcuts(enabled: boolean, handlers: ShortcutHandlers): void {
  const latest = useRef(handlers);
  latest.current = handlers;
  useEffect(() => {
    if (!enabled) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.isComposing) return;
      // A modal dialog (the shortcut list) keeps its keys. Asked of the page at each key rather than
      // by turning the listener off while one is open: a listener added back by an effect after
      // the dialog closed would miss the keys typed before the next paint.
      if (document.querySelector('dialog:modal')) return;
      const on = latest.current;
      const target = event.target;
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        on.submit();
        return;
      }
      if (isTextField(target)) {
        if (event.key === 'Escape') {
          event.preventDefault();
          on.leaveField();
        }
        return;
      }
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (/^[1-9]$/.test(event.key)) {
        event.preventDefault();
        const field = target instanceof Element ? (target.closest('[data-rubric-field]')?.getAttribute('data-rubric-field') ?? undefined) : undefined;
        on.pick(Number(event.key), field);
      } else if (event.key === 's') {
        event.preventDefault();
        on.skip();
      } else if (event.key === 'p') {
        event.preventDefault();
        on.previous();
      } else if (event.key === 'n') {
        event.preventDefault();
        on.note();
      } else if (event.key === '?') {
        event.preventDefault();
        on.help();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [enabled]);
}
