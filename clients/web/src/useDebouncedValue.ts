import { useEffect, useState } from 'react';

/**
 * `value` once it has stayed the same for `ms`: what a request made while typing should follow.
 * Values are compared by their JSON, so a new object with the same content does not restart the wait.
 */
export function useDebouncedValue<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  const json = JSON.stringify(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
    // The content (json) decides, not the object's identity.
  }, [json, ms]);
  return settled;
}
