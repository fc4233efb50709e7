/**
 * Money as the records carry it: decimal strings with exactly the currency's minor digits ("1250.00", JPY "1250"),
 * summed exactly as integers of the smallest unit, never as floating point (docs/records.md#money).
 */

/** ISO 4217 minor units where they are not 2 (the ISO table, not CLDR's display digits: IQD is 3, HUF is 2). */
const MINOR_DIGITS: Record<string, number> = {
  ...Object.fromEntries(['BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND',
    'VUV', 'XAF', 'XOF', 'XPF'].map(c => [c, 0])),
  ...Object.fromEntries(['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND'].map(c => [c, 3])),
  CLF: 4,
  UYW: 4
}

/**
 * ISO 4217 codes of money: the currencies in circulation and those withdrawn recently enough to be on invoices still
 * kept (HRK, SLL, ZWL), and the units of account invoices are written in (CLF, UYI, UYW); without the drawing rights
 * and settlement units (XDR, XSU), the metals and the test code. A list
 * of our own, not the runtime's (`Intl.supportedValuesOf`), which differs between Node versions.
 */
const CURRENCIES = new Set([
  'AED', 'AFN', 'ALL', 'AMD', 'ANG', 'AOA', 'ARS', 'AUD', 'AWG', 'AZN', 'BAM', 'BBD', 'BDT', 'BGN', 'BHD', 'BIF',
  'BMD', 'BND', 'BOB', 'BRL', 'BSD', 'BTN', 'BWP', 'BYN', 'BZD', 'CAD', 'CDF', 'CHF', 'CLF', 'CLP', 'CNY', 'COP',
  'CRC', 'CUC', 'CUP', 'CVE', 'CZK', 'DJF', 'DKK', 'DOP', 'DZD', 'EGP', 'ERN', 'ETB', 'EUR', 'FJD', 'FKP', 'GBP',
  'GEL', 'GHS', 'GIP', 'GMD', 'GNF', 'GTQ', 'GYD', 'HKD', 'HNL', 'HRK', 'HTG', 'HUF', 'IDR', 'ILS', 'INR', 'IQD',
  'IRR', 'ISK', 'JMD', 'JOD', 'JPY', 'KES', 'KGS', 'KHR', 'KMF', 'KPW', 'KRW', 'KWD', 'KYD', 'KZT', 'LAK', 'LBP',
  'LKR', 'LRD', 'LSL', 'LYD', 'MAD', 'MDL', 'MGA', 'MKD', 'MMK', 'MNT', 'MOP', 'MRU', 'MUR', 'MVR', 'MWK', 'MXN',
  'MYR', 'MZN', 'NAD', 'NGN', 'NIO', 'NOK', 'NPR', 'NZD', 'OMR', 'PAB', 'PEN', 'PGK', 'PHP', 'PKR', 'PLN', 'PYG',
  'QAR', 'RON', 'RSD', 'RUB', 'RWF', 'SAR', 'SBD', 'SCR', 'SDG', 'SEK', 'SGD', 'SHP', 'SLE', 'SLL', 'SOS', 'SRD',
  'SSP', 'STN', 'SVC', 'SYP', 'SZL', 'THB', 'TJS', 'TMT', 'TND', 'TOP', 'TRY', 'TTD', 'TWD', 'TZS', 'UAH', 'UGX',
  'USD', 'UYI', 'UYU', 'UYW', 'UZS', 'VES', 'VND', 'VUV', 'WST', 'XAF', 'XCD', 'XCG', 'XOF', 'XPF', 'YER', 'ZAR',
  'ZMW', 'ZWG', 'ZWL'
])

export const isCurrency = (code: string): boolean => CURRENCIES.has(code)

export const minorDigits = (currency: string): number => MINOR_DIGITS[currency] ?? 2

/** A decimal string: an optional minus, digits without leading zeros, an optional fraction. */
const DECIMAL = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?$/

/** The number of decimals of a decimal string; undefined when it is not one. */
export function decimals (value: string): number | undefined {
  const m = DECIMAL.exec(value)
  return m ? (m[3]?.length ?? 0) : undefined
}

/**
 * Whether a decimal string is zero written with a minus (`"-0"`, `"-0.00"`). It reads as a decimal but is not an
 * amount: zero has no sign, and every app reading a record that kept one would have to know to drop it.
 */
export const isNegativeZero = (value: string): boolean => /^-0(?:\.0+)?$/.test(value)

/** A decimal string as an integer count of 10^-scale units (the string must have at most `scale` decimals). */
export function toUnits (value: string, scale: number): bigint {
  const m = DECIMAL.exec(value)
  if (!m) throw new Error(`not a decimal: ${value}`)
  const fraction = (m[3] ?? '').padEnd(scale, '0')
  const units = BigInt(m[2]! + fraction)
  return m[1] === '-' ? -units : units
}

/** Units of 10^-scale as a decimal string with exactly `scale` decimals. */
export function fromUnits (units: bigint, scale: number): string {
  const negative = units < 0n
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0')
  const whole = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`
  return negative ? `-${whole}` : whole
}

/** `units` of 10^-from rounded half away from zero to 10^-to units (to ≤ from). */
export function roundUnits (units: bigint, from: number, to: number): bigint {
  const divisor = 10n ** BigInt(from - to)
  const half = divisor / 2n
  const magnitude = units < 0n ? -units : units
  const rounded = divisor === 1n ? magnitude : (magnitude + half) / divisor
  return units < 0n ? -rounded : rounded
}
