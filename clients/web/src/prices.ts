/**
 * A USD price per token (a plain decimal string such as "0.00000022") as the price per million
 * tokens ("0.22"), moved by six decimal places on the digits themselves: no floating-point error.
 */
export function perMillion(perToken: string): string {
  const [whole = '0', fraction = ''] = perToken.split('.');
  const padded = fraction.padEnd(6, '0');
  const integer = (whole + padded.slice(0, 6)).replace(/^0+(?=\d)/, '');
  const decimals = padded.slice(6).replace(/0+$/, '');
  return decimals ? `${integer}.${decimals}` : integer;
}

/** A price for people: "$0.22", "$2", "free". */
export function formatPerMillion(perToken: string): string {
  const value = perMillion(perToken);
  return /^0(\.0*)?$/.test(value) ? 'free' : `$${value}`;
}
