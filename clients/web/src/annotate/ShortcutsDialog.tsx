import { useEffect, useRef } from 'react';
import { SHORTCUTS } from './shortcuts.ts';

/** Every shortcut of the page, in a modal dialog (Esc or the button closes it). */
export function ShortcutsDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  return (
    <dialog ref={dialog} className="shortcuts" aria-labelledby="shortcuts-title" onClose={onClose}>
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <dl>
        {SHORTCUTS.map(({ keys, does }) => (
          <div key={does}>
            <dt>
              {keys.map((key, index) => (
                <span key={key}>
                  {index ? ' ' : ''}
                  {key === '…' ? '…' : <kbd>{key}</kbd>}
                </span>
              ))}
            </dt>
            <dd>{does}</dd>
          </div>
        ))}
      </dl>
      <button type="button" onClick={onClose}>
        Close
      </button>
    </dialog>
  );
}
