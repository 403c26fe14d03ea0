import { useEffect, useRef, useState } from 'react';

/** The time left on the item's lease, every second; `onLapse` once when it is gone. */
export function LeaseCountdown({ endsAt, onLapse }: { endsAt: number; onLapse: () => void }) {
  const [now, setNow] = useState(() => Date.now());
  const lapseRef = useRef(onLapse);
  lapseRef.current = onLapse;
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  const left = Math.max(0, Math.ceil((endsAt - now) / 1000));
  const lapsed = left === 0;
  useEffect(() => {
    if (lapsed) lapseRef.current();
  }, [lapsed]);
  const minutes = Math.floor(left / 60);
  const seconds = String(left % 60).padStart(2, '0');
  return (
    <p className={`lease${left <= 60 ? ' lease-short' : ''}`}>
      Held for you: <time dateTime={`PT${left}S`}>{minutes}:{seconds}</time> left
    </p>
  );
}
