import { useEffect, useId, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { formatDuration } from '../annotate/call-content.ts';
import { modelOf } from './call-model.ts';
import type { TraceCallData } from './trace-queries.ts';
import { traceRows, visibleRows, type TraceRow } from './trace-tree.ts';

/** Levels indented; deeper ones line up with the last (their level is still announced). */
const INDENTED_LEVELS = 16;

type Row = TraceRow<TraceCallData>;

/** What a row says besides its op name. */
function factsOf(call: TraceCallData) {
  return {
    duration: call.ended_at ? formatDuration(Date.parse(call.ended_at) - Date.parse(call.started_at)) : 'not ended',
    model: modelOf(call.attributes),
    exception: call.exception !== null,
  };
}

/** A comma for screen readers between the parts of a row (its name is its text), a space on screen. */
const Pause = () => <span className="visually-hidden">, </span>;

/**
 * A trace's calls as a tree (the WAI-ARIA tree view pattern, single selection): nested by
 * parent_id, each row with its op name, duration, model and an exception mark; the row shown is
 * selected. One row takes part in the tab order (roving focus); ↑ ↓ Home End move, → opens or goes
 * to the first child, ← closes or goes to the parent, Enter or Space shows that call. Letters and
 * digits are left to the page's shortcuts.
 */
export function TraceTree({ calls, itemCallId, shownId, onShow }: { calls: TraceCallData[]; itemCallId: string; shownId: string; onShow: (callId: string) => void }) {
  const id = useId();
  const rows = useMemo(() => traceRows(calls), [calls]);
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const visible = useMemo(() => visibleRows(rows, collapsed), [rows, collapsed]);
  const [focusedId, setFocusedId] = useState(shownId);
  const elements = useRef(new Map<string, HTMLLIElement>());
  const list = useRef<HTMLUListElement>(null);
  // The tab stop: the row last focused while it is on screen, else the one shown, else the first.
  const tabStop = (visible.find((row) => row.call.id === focusedId) ?? visible.find((row) => row.call.id === shownId) ?? visible[0])?.call.id;

  // The shown row in view inside the tree's own scroll box, without moving the page or the focus.
  useEffect(() => {
    const box = list.current;
    const row = elements.current.get(shownId);
    if (!box || !row) return;
    if (row.offsetTop < box.scrollTop || row.offsetTop + row.offsetHeight > box.scrollTop + box.clientHeight) box.scrollTop = row.offsetTop - box.clientHeight / 2;
    // Only when the tree first shows (the page keys it by item): later the focus keeps rows in view.
  }, []);

  const focusRow = (callId: string | undefined) => {
    if (callId === undefined) return;
    setFocusedId(callId);
    elements.current.get(callId)?.focus();
  };
  const setOpen = (callId: string, open: boolean) =>
    setCollapsed((current) => {
      if (current.has(callId) !== open) return current;
      const next = new Set(current);
      if (open) next.delete(callId);
      else next.add(callId);
      return next;
    });

  const onKeyDown = (event: KeyboardEvent<HTMLUListElement>) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return; // Ctrl+Enter submits (the page's shortcut)
    const index = visible.findIndex((row) => row.call.id === tabStop);
    const row = visible[index];
    if (!row) return;
    const open = row.children > 0 && !collapsed.has(row.call.id);
    const moves: Record<string, () => void> = {
      ArrowDown: () => focusRow(visible[index + 1]?.call.id),
      ArrowUp: () => focusRow(visible[index - 1]?.call.id),
      Home: () => focusRow(visible[0]?.call.id),
      End: () => focusRow(visible.at(-1)?.call.id),
      ArrowRight: () => (open ? focusRow(visible[index + 1]?.call.id) : row.children ? setOpen(row.call.id, true) : undefined),
      ArrowLeft: () => (open ? setOpen(row.call.id, false) : focusRow(row.parentId ?? undefined)),
      Enter: () => onShow(row.call.id),
      ' ': () => onShow(row.call.id),
    };
    const move = moves[event.key];
    if (!move) return;
    event.preventDefault();
    move();
  };

  return (
    <>
      <ul className="trace-tree" role="tree" aria-label="Calls of the trace" aria-describedby={`${id}-keys`} ref={list} onKeyDown={onKeyDown}>
        {visible.map((row) => {
          const callId = row.call.id;
          const { duration, model, exception } = factsOf(row.call);
          const open = row.children > 0 ? !collapsed.has(callId) : undefined;
          return (
            <li
              key={callId}
              ref={(element) => {
                if (element) elements.current.set(callId, element);
                else elements.current.delete(callId);
              }}
              role="treeitem"
              aria-level={row.level}
              aria-setsize={row.siblings}
              aria-posinset={row.position}
              aria-expanded={open}
              aria-selected={callId === shownId}
              tabIndex={callId === tabStop ? 0 : -1}
              className={callId === itemCallId ? 'trace-row trace-item' : 'trace-row'}
              style={{ paddingInlineStart: `${0.4 + Math.min(row.level - 1, INDENTED_LEVELS) * 1.1}rem` }}
              onFocus={(event) => {
                if (event.target === event.currentTarget) setFocusedId(callId);
              }}
              onClick={() => {
                focusRow(callId);
                onShow(callId);
              }}
            >
              <span
                className="trace-toggle"
                aria-hidden="true"
                onClick={(event) => {
                  if (open === undefined) return;
                  event.stopPropagation();
                  focusRow(callId);
                  setOpen(callId, !open);
                }}
              >
                {open === undefined ? '' : open ? '▾' : '▸'}
              </span>
              <span className="trace-text">
                <span className="trace-op">{row.call.op_name}</span>
                <Pause />
                <span className="trace-duration">{duration}</span>
                {model ? (
                  <>
                    <Pause />
                    <span className="trace-model">{model}</span>
                  </>
                ) : null}
                {exception ? (
                  <>
                    <Pause />
                    <span className="trace-exception">
                      <span aria-hidden="true">⚠ </span>exception
                    </span>
                  </>
                ) : null}
                {callId === itemCallId ? (
                  <>
                    <Pause />
                    <span className="trace-badge">this item</span>
                  </>
                ) : null}
                {row.detached ? (
                  <>
                    <Pause />
                    <span className="trace-detached">parent not shown</span>
                  </>
                ) : null}
              </span>
            </li>
          );
        })}
      </ul>
      <p id={`${id}-keys`} className="trace-keys">
        <kbd>↑</kbd> <kbd>↓</kbd> move, <kbd>→</kbd> <kbd>←</kbd> open and close, <kbd>Enter</kbd> shows a call.
      </p>
    </>
  );
}
