import { createHash } from 'node:crypto'
import { fromUnits, minorDigits, roundUnits, toUnits } from '../lib/money.js'

/**
 * The sandbox's records (`marketplace-gateway sandbox seed`): customers, invoices and bills of a small manufacturer
 * trading in several countries, as the accounting system would send them through POST /events, every record valid
 * (plugins/domain/records/validate.ts). Deterministic: the same options give the same events byte for byte (a seeded
 * PRNG; the only clock is `asOf`), and each event's id is derived from its content, so sending them again changes
 * nothing, and a seed with other sizes or another as-of date sends new events instead of conflicting ones.
 *
 * Every timestamp is before `asOf` 00:00 UTC: the data is a snapshot as the day begins. Invoices and bills are
 * issued over the 365 days before it, customers were created before that.
 */

export interface SandboxOptions {
  org: string
  entity: string
  customers: number
  invoices: number
  bills: number
  /** YYYY-MM-DD. */
  asOf: string
  /** Any text; default `<org>/<entity>`, so that two tenants get different data. */
  seed?: string
}

export interface SandboxEvent {
  id: string
  topic: string
  org_ref_id: string
  entity_ref_id: string
  data: Record<string, unknown>
}

export type SandboxKind = 'customer' | 'invoice' | 'bill'

/** One record with the events of its history, oldest first: the last one's data is the record as it is now. */
export interface SandboxRecord {
  kind: SandboxKind
  id: string
  events: SandboxEvent[]
}

// ---------------------------------------------------------------------------------------------------------------
// A seeded PRNG: sfc32, seeded through cyrb128 (both public domain, bryc/code). Small, fast and well distributed;
// nothing here needs cryptographic randomness, only the same sequence from the same seed on every runtime.

function cyrb128 (text: string): [number, number, number, number] {
  let h1 = 1779033703
  let h2 = 3144134277
  let h3 = 1013904242
  let h4 = 2773480762
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i)
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067)
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233)
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213)
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179)
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067)
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233)
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213)
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179)
  h1 ^= (h2 ^ h3 ^ h4)
  h2 ^= h1
  h3 ^= h1
  h4 ^= h1
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0]
}

export class Random {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor (seed: string) {
    [this.a, this.b, this.c, this.d] = cyrb128(seed)
    for (let i = 0; i < 12; i++) this.next()
  }

  /** A float in [0, 1). */
  next (): number {
    this.a >>>= 0; this.b >>>= 0; this.c >>>= 0; this.d >>>= 0
    let t = (this.a + this.b) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.d = (this.d + 1) | 0
    t = (t + this.d) | 0
    this.c = (this.c + t) | 0
    return (t >>> 0) / 4294967296
  }

  /** An integer in [min, max]. */
  int (min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  chance (p: number): boolean {
    return this.next() < p
  }

  pick<T> (items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!
  }

  /** One of the keys, with the probabilities its weights give. */
  weighted<T extends string> (weights: Readonly<Record<T, number>>): T {
    const entries = Object.entries(weights) as Array<[T, number]>
    let r = this.next() * entries.reduce((s, [, w]) => s + w, 0)
    for (const [key, w] of entries) {
      r -= w
      if (r < 0) return key
    }
    return entries.at(-1)![0]
  }

  digits (n: number): string {
    let s = ''
    for (let i = 0; i < n; i++) s += String(this.int(0, 9))
    return s
  }

  letters (n: number): string {
    let s = ''
    for (let i = 0; i < n; i++) s += String.fromCharCode(65 + this.int(0, 25))
    return s
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Countries: currency, tax rate (parts per million of the net amount), and how names, addresses, phone and tax
// numbers look there. Rates are the standard VAT/GST (US: the city's combined sales tax).

interface City { city: string, region: string | null, postal: (r: Random) => string, rate?: number }
interface Country {
  code: string
  currency: string
  /** Tax in parts per million of the net amount. */
  rate: number
  /** Roughly how many of the currency one euro buys, for prices that look local. */
  perEuro: number
  weight: number
  cities: City[]
  street: (r: Random) => string
  phone: (r: Random) => string
  taxNumber: (r: Random) => string
  company: (r: Random) => [string, string]
}

const SURNAMES: Record<string, string[]> = {
  DE: ['Becker', 'Hoffmann', 'Krüger', 'Schäfer', 'Wagner', 'Lehmann', 'Brandt', 'Vogel', 'Keller', 'Fuchs'],
  FR: ['Lefèvre', 'Moreau', 'Girard', 'Fontaine', 'Chevalier', 'Rousseau', 'Blanc', 'Garnier', 'Faure', 'Mercier'],
  NL: ['de Vries', 'van Dijk', 'Bakker', 'Visser', 'Smit', 'Meijer', 'de Boer', 'Mulder', 'Bos', 'Vos'],
  GB: ['Whitfield', 'Ashworth', 'Pennington', 'Hargreaves', 'Caldwell', 'Thornton', 'Lockwood', 'Fairbairn'],
  US: ['Carver', 'Holloway', 'Bradley', 'Whitman', 'Sterling', 'Lancaster', 'Porter', 'Redfield', 'Granger'],
  JP: ['Tanaka', 'Suzuki', 'Takahashi', 'Watanabe', 'Yamamoto', 'Nakamura', 'Kobayashi', 'Matsumoto'],
  IN: ['Sharma', 'Patel', 'Iyer', 'Reddy', 'Mehta', 'Kulkarni', 'Bose', 'Agarwal', 'Nair', 'Deshpande'],
  AU: ['Mitchell', 'Kingsford', 'Hawthorne', 'Gallagher', 'Doyle', 'Prescott', 'Whitlam', 'Brennan'],
  CA: ['Tremblay', 'Gagnon', 'MacLeod', 'Fraser', 'Bouchard', 'Campbell', 'Lavoie', 'McKenzie'],
  SE: ['Lindqvist', 'Andersson', 'Bergström', 'Nyström', 'Holm', 'Sjöberg', 'Lundgren', 'Ek'],
  CH: ['Meier', 'Brunner', 'Baumann', 'Gerber', 'Frei', 'Zürcher', 'Steiner', 'Moser'],
  BH: ['Al Khalifa', 'Al Zayani', 'Kanoo', 'Fakhro', 'Al Moayyed', 'Almoayed', 'Jawad', 'Al Shirawi']
}
const TRADES = ['Industrial', 'Precision', 'Hydraulics', 'Metalworks', 'Automation', 'Engineering', 'Components',
  'Fabrication', 'Machinery', 'Tooling', 'Plastics', 'Electrics', 'Logistics', 'Packaging', 'Systems']
const PLACES = ['Nordic', 'Alpine', 'Atlas', 'Meridian', 'Harbour', 'Summit', 'Keystone', 'Riverside', 'Pioneer',
  'Cobalt', 'Granite', 'Evergreen', 'Orion', 'Sterling', 'Vanguard', 'Beacon']

/** A company's name without and with its legal form: ['Becker Maschinenbau', 'Becker Maschinenbau GmbH']. */
const company = (code: string, suffixes: string[], local?: (r: Random) => string) => (r: Random): [string, string] => {
  const name = local && r.chance(0.5)
    ? local(r)
    : r.chance(0.5) ? `${r.pick(SURNAMES[code]!)} ${r.pick(TRADES)}` : `${r.pick(PLACES)} ${r.pick(TRADES)}`
  return [name, `${name} ${r.pick(suffixes)}`]
}
const numbered = (pattern: string) => (r: Random): string => pattern.replace(/#/g, () => String(r.int(0, 9)))
const spaced = (r: Random, ...groups: number[]): string => groups.map(n => r.digits(n)).join(' ')
const canadian = (area: string) => (r: Random): string =>
  `${area}${r.int(1, 9)}${r.letters(1)} ${r.int(1, 9)}${r.letters(1)}${r.int(1, 9)}`

const COUNTRIES: Country[] = [
  {
    code: 'DE',
    currency: 'EUR',
    rate: 190_000,
    perEuro: 1,
    weight: 14,
    cities: [
      { city: 'Berlin', region: null, postal: numbered('10###') },
      { city: 'Stuttgart', region: null, postal: numbered('70###') },
      { city: 'München', region: null, postal: numbered('80###') },
      { city: 'Hamburg', region: null, postal: numbered('20###') }
    ],
    street: r => `${r.pick(['Industriestraße', 'Hauptstraße', 'Werkstraße', 'Gutenbergring'])} ${r.int(1, 140)}`,
    phone: r => `+49 ${r.pick(['30', '711', '89', '40'])} ${r.digits(7)}`,
    taxNumber: r => `DE${r.digits(9)}`,
    company: company('DE', ['GmbH', 'GmbH & Co. KG', 'AG'], r => `${r.pick(SURNAMES.DE!)} ${r.pick(['Maschinenbau',
      'Antriebstechnik', 'Metallbau', 'Fördertechnik'])}`)
  },
  {
    code: 'FR',
    currency: 'EUR',
    rate: 200_000,
    perEuro: 1,
    weight: 8,
    cities: [
      { city: 'Lyon', region: 'Auvergne-Rhône-Alpes', postal: numbered('6900#') },
      { city: 'Toulouse', region: 'Occitanie', postal: numbered('3100#') },
      { city: 'Lille', region: 'Hauts-de-France', postal: numbered('5900#') }
    ],
    street: r => `${r.int(1, 90)} ${r.pick(['rue de la République', 'avenue Jean Jaurès', 'rue des Ateliers',
      'boulevard de l\'Industrie'])}`,
    phone: r => `+33 ${r.int(1, 5)} ${spaced(r, 2, 2, 2, 2)}`,
    taxNumber: r => `FR${r.digits(2)}${r.digits(9)}`,
    company: company('FR', ['SAS', 'SARL', 'SA'], r => `${r.pick(['Ateliers', 'Établissements', 'Forges'])} ` +
      r.pick(SURNAMES.FR!))
  },
  {
    code: 'NL',
    currency: 'EUR',
    rate: 210_000,
    perEuro: 1,
    weight: 6,
    cities: [
      { city: 'Eindhoven', region: null, postal: r => `56${r.digits(2)} ${r.letters(2)}` },
      { city: 'Rotterdam', region: null, postal: r => `30${r.digits(2)} ${r.letters(2)}` }
    ],
    street: r => `${r.pick(['Industrieweg', 'Havenstraat', 'Kanaaldijk', 'Stationsplein'])} ${r.int(1, 200)}`,
    phone: r => `+31 ${r.pick(['40', '10'])} ${r.digits(3)} ${r.digits(4)}`,
    taxNumber: r => `NL${r.digits(9)}B0${r.int(1, 9)}`,
    company: company('NL', ['B.V.', 'N.V.'])
  },
  {
    code: 'GB',
    currency: 'GBP',
    rate: 200_000,
    perEuro: 0.85,
    weight: 10,
    cities: [
      { city: 'Sheffield', region: 'South Yorkshire', postal: r => `S${r.int(1, 14)} ${r.int(1, 9)}${r.letters(2)}` },
      { city: 'Birmingham', region: 'West Midlands', postal: r => `B${r.int(1, 40)} ${r.int(1, 9)}${r.letters(2)}` },
      { city: 'Leeds', region: 'West Yorkshire', postal: r => `LS${r.int(1, 28)} ${r.int(1, 9)}${r.letters(2)}` }
    ],
    street: r => `${r.int(1, 300)} ${r.pick(['Mill Lane', 'Station Road', 'Foundry Street', 'Canal Way'])}`,
    phone: r => `+44 ${r.pick(['114', '121', '113'])} ${r.digits(3)} ${r.digits(4)}`,
    taxNumber: r => `GB${r.digits(9)}`,
    company: company('GB', ['Ltd', 'Limited', 'plc'])
  },
  {
    code: 'US',
    currency: 'USD',
    rate: 0,
    perEuro: 1.1,
    weight: 14,
    cities: [
      { city: 'New York', region: 'NY', postal: numbered('100##'), rate: 88_750 },
      { city: 'San Jose', region: 'CA', postal: numbered('951##'), rate: 93_750 },
      { city: 'Houston', region: 'TX', postal: numbered('770##'), rate: 82_500 },
      { city: 'Portland', region: 'OR', postal: numbered('972##'), rate: 0 }
    ],
    street: r => `${r.int(100, 9800)} ${r.pick(['Commerce Drive', 'Industrial Pkwy', 'Main Street', 'Harbor Blvd'])}`,
    // 555-01xx: numbers reserved for fiction.
    phone: r => `+1 ${r.pick(['212', '408', '713', '503'])} 555 01${r.digits(2)}`,
    taxNumber: r => `${r.digits(2)}-${r.digits(7)}`,
    company: company('US', ['Inc.', 'LLC', 'Corp.'])
  },
  {
    code: 'JP',
    currency: 'JPY',
    rate: 100_000,
    perEuro: 160,
    weight: 8,
    cities: [
      { city: 'Nagoya', region: 'Aichi', postal: r => `${r.int(450, 468)}-${r.digits(4)}` },
      { city: 'Osaka', region: 'Osaka', postal: r => `${r.int(530, 559)}-${r.digits(4)}` },
      { city: 'Yokohama', region: 'Kanagawa', postal: r => `${r.int(220, 247)}-${r.digits(4)}` }
    ],
    street: r => `${r.int(1, 9)}-${r.int(1, 30)}-${r.int(1, 20)} ${r.pick(['Meieki', 'Honmachi', 'Minatomirai'])}`,
    phone: r => `+81 ${r.pick(['52', '6', '45'])} ${r.digits(4)} ${r.digits(4)}`,
    taxNumber: r => `T${r.digits(13)}`,
    company: company('JP', ['K.K.', 'Co., Ltd.'])
  },
  {
    code: 'IN',
    currency: 'INR',
    rate: 180_000,
    perEuro: 90,
    weight: 8,
    cities: [
      { city: 'Pune', region: 'Maharashtra', postal: numbered('4110##') },
      { city: 'Chennai', region: 'Tamil Nadu', postal: numbered('6000##') },
      { city: 'Bengaluru', region: 'Karnataka', postal: numbered('5600##') }
    ],
    street: r => `Plot ${r.int(1, 400)}, ${r.pick(['MIDC Bhosari', 'Ambattur Industrial Estate',
      'Peenya Industrial Area'])}`,
    phone: r => `+91 ${r.int(70, 99)}${r.digits(3)} ${r.digits(5)}`,
    taxNumber: r => `${r.int(10, 36)}${r.letters(5)}${r.digits(4)}${r.letters(1)}1Z${r.int(1, 9)}`,
    company: company('IN', ['Pvt. Ltd.', 'Ltd.', 'LLP'])
  },
  {
    code: 'AU',
    currency: 'AUD',
    rate: 100_000,
    perEuro: 1.65,
    weight: 6,
    cities: [
      { city: 'Melbourne', region: 'VIC', postal: numbered('30##') },
      { city: 'Brisbane', region: 'QLD', postal: numbered('40##') }
    ],
    street: r => `${r.int(1, 250)} ${r.pick(['Industrial Avenue', 'Boundary Road', 'Wharf Street'])}`,
    phone: r => `+61 ${r.pick(['3', '7'])} ${r.digits(4)} ${r.digits(4)}`,
    taxNumber: r => spaced(r, 2, 3, 3, 3),
    company: company('AU', ['Pty Ltd'])
  },
  {
    code: 'CA',
    currency: 'CAD',
    rate: 0,
    perEuro: 1.5,
    weight: 6,
    cities: [
      // HST; QST and GST; GST only.
      { city: 'Toronto', region: 'ON', postal: canadian('M'), rate: 130_000 },
      { city: 'Montréal', region: 'QC', postal: canadian('H'), rate: 149_750 },
      { city: 'Calgary', region: 'AB', postal: canadian('T'), rate: 50_000 }
    ],
    street: r => `${r.int(10, 9000)} ${r.pick(['Industrial Road', 'rue Sherbrooke', 'Macleod Trail'])}`,
    phone: r => `+1 ${r.pick(['416', '514', '403'])} 555 01${r.digits(2)}`,
    taxNumber: r => `${r.digits(9)} RT0001`,
    company: company('CA', ['Inc.', 'Ltd.', 'Ltée'])
  },
  {
    code: 'SE',
    currency: 'SEK',
    rate: 250_000,
    perEuro: 11.5,
    weight: 5,
    cities: [
      { city: 'Göteborg', region: null, postal: r => `41${r.digits(1)} ${r.digits(2)}` },
      { city: 'Västerås', region: null, postal: r => `72${r.digits(1)} ${r.digits(2)}` }
    ],
    street: r => `${r.pick(['Verkstadsgatan', 'Hamngatan', 'Industrivägen'])} ${r.int(1, 80)}`,
    phone: r => `+46 ${r.pick(['31', '21'])} ${r.digits(3)} ${r.digits(2)} ${r.digits(2)}`,
    taxNumber: r => `SE${r.digits(10)}01`,
    company: company('SE', ['AB'])
  },
  {
    code: 'CH',
    currency: 'CHF',
    rate: 81_000,
    perEuro: 0.95,
    weight: 4,
    cities: [
      { city: 'Zürich', region: 'ZH', postal: numbered('80##') },
      { city: 'Basel', region: 'BS', postal: numbered('40##') }
    ],
    street: r => `${r.pick(['Bahnhofstrasse', 'Industriestrasse', 'Seestrasse'])} ${r.int(1, 120)}`,
    phone: r => `+41 ${r.pick(['44', '61'])} ${r.digits(3)} ${r.digits(2)} ${r.digits(2)}`,
    taxNumber: r => `CHE-${r.digits(3)}.${r.digits(3)}.${r.digits(3)} MWST`,
    company: company('CH', ['AG', 'GmbH', 'SA'])
  },
  {
    // Three minor digits: the fils.
    code: 'BH',
    currency: 'BHD',
    rate: 100_000,
    perEuro: 0.41,
    weight: 2,
    cities: [
      { city: 'Manama', region: 'Capital Governorate', postal: r => String(r.int(301, 399)) },
      { city: 'Sitra', region: 'Capital Governorate', postal: r => String(r.int(601, 699)) }
    ],
    street: r => `Building ${r.int(100, 2999)}, Road ${r.int(100, 4999)}, Block ${r.int(100, 999)}`,
    phone: r => `+973 17${r.digits(2)} ${r.digits(4)}`,
    taxNumber: r => `2${r.digits(14)}`,
    company: company('BH', ['W.L.L.', 'B.S.C.'])
  }
]

// ---------------------------------------------------------------------------------------------------------------
// What is sold and bought: a description, how it is counted, and a price in euro before local rounding.

type Unit = 'each' | 'hours' | 'kg' | 'metres' | 'litres' | 'kwh'
interface Product { description: string, unit: Unit, euro: number }

const SOLD: Product[] = [
  { description: 'Hydraulic pump HP-200', unit: 'each', euro: 480 },
  { description: 'Gear motor GM-45, 0.75 kW', unit: 'each', euro: 312 },
  { description: 'Ball bearing 6204-2RS', unit: 'each', euro: 4.2 },
  { description: 'Stainless bolts M8×40, box of 100', unit: 'each', euro: 18.9 },
  { description: 'Aluminium profile 40×40, per metre', unit: 'metres', euro: 12.4 },
  { description: 'Pneumatic cylinder DSBC-32-100', unit: 'each', euro: 142 },
  { description: 'Temperature sensor PT100, 2 m cable', unit: 'each', euro: 38.5 },
  { description: 'Control cabinet CC-12, assembled', unit: 'each', euro: 2150 },
  { description: 'Spare parts kit SK-3', unit: 'each', euro: 265 },
  { description: 'CNC machining, hours', unit: 'hours', euro: 85 },
  { description: 'Installation and commissioning, hours', unit: 'hours', euro: 90 },
  { description: 'Engineering consultancy, hours', unit: 'hours', euro: 120 },
  { description: 'Laser cutting, hours', unit: 'hours', euro: 110 },
  { description: 'Powder coating, per kg', unit: 'kg', euro: 3.75 },
  { description: 'Annual maintenance contract', unit: 'each', euro: 1800 },
  { description: 'On-site service visit', unit: 'each', euro: 150 },
  { description: 'Freight and packaging', unit: 'each', euro: 45 }
]

const BOUGHT: Product[] = [
  { description: 'Steel sheet 2 mm, kg', unit: 'kg', euro: 1.84 },
  { description: 'Copper wire 2.5 mm², per metre', unit: 'metres', euro: 1.12 },
  { description: 'Welding wire 1.0 mm, kg', unit: 'kg', euro: 6.8 },
  { description: 'Hydraulic oil HLP 46, litres', unit: 'litres', euro: 3.9 },
  { description: 'Cutting fluid, litres', unit: 'litres', euro: 4.6 },
  { description: 'Turning inserts CNMG 120408, box of 10', unit: 'each', euro: 89 },
  { description: 'Industrial gases, argon cylinder', unit: 'each', euro: 42 },
  { description: 'Electricity, kWh', unit: 'kwh', euro: 0.28 },
  { description: 'Workshop rent, month', unit: 'each', euro: 2400 },
  { description: 'Cleaning services, month', unit: 'each', euro: 780 },
  { description: 'ERP software subscription, user/month', unit: 'each', euro: 35 },
  { description: 'Calibration of measuring equipment', unit: 'each', euro: 210 },
  { description: 'Pallet transport, per pallet', unit: 'each', euro: 65 },
  { description: 'Safety gloves, pair', unit: 'each', euro: 3.4 }
]

/** A quantity in 10^-4 units: whole pieces, quarter hours, weights and lengths with decimals. */
function quantity (r: Random, p: Product): bigint {
  switch (p.unit) {
    case 'each': {
      const n = p.euro < 20 ? r.pick([10, 20, 25, 50, 100, 200]) : Number(r.weighted({ 1: 6, 2: 3, 3: 1, 5: 1 }))
      return BigInt(n) * 10_000n
    }
    // 0.5 to 16 hours in quarters: "1.5", "0.75", "12.25".
    case 'hours': return BigInt(r.int(2, 64)) * 2_500n
    // Weighed: "12.5", "1480.2", a third of them to the gram, "3.125".
    case 'kg': return r.chance(0.3) ? BigInt(r.int(2_000, 200_000)) * 10n : BigInt(r.int(20, 20_000)) * 1_000n
    case 'metres':
    case 'litres': return BigInt(r.int(10, 2_000)) * 1_000n // "1.5", "120.4"
    case 'kwh': return BigInt(r.int(800, 40_000)) * 1_000n
  }
}

/** Trailing zeros of a decimal dropped: "1.5000" → "1.5", "2.0000" → "2". */
const trim = (value: string): string => value.includes('.') ? value.replace(/\.?0+$/, '') : value

/** A local unit price from a euro price: whole yen to the ten, other currencies to their minor unit. */
function unitPrice (r: Random, p: Product, country: Country): bigint {
  const digits = minorDigits(country.currency)
  const local = p.euro * country.perEuro * (0.85 + r.next() * 0.3)
  if (digits === 0) return BigInt(Math.max(1, Math.round(local / 10)) * 10)
  const scale = 10 ** digits
  const units = Math.max(1, Math.round(local * scale))
  // Catalogue-looking prices above 50: .00, .50 or .95 more often than not.
  if (local > 50 && r.chance(0.6)) {
    const whole = Math.floor(local)
    return BigInt(whole * scale) + BigInt(Math.round(r.pick([0, 0.5, 0.95]) * scale))
  }
  return BigInt(units)
}

// ---------------------------------------------------------------------------------------------------------------

const DAY = 86_400_000
const seedOf = (opts: SandboxOptions): string => opts.seed ?? `${opts.org}/${opts.entity}`
const pad = (n: number, width: number): string => String(n).padStart(width, '0')
const iso = (ms: number): string => new Date(ms).toISOString()
const dateOf = (ms: number): string => iso(ms).slice(0, 10)

/** A party: a customer's or supplier's identity, where it trades, and its payment terms (days). */
interface Party {
  id: string
  name: string
  /** The name in e-mail domains and document numbers. */
  short: string
  country: Country
  city: City
  terms: number
}

const COUNTRY_WEIGHTS = Object.fromEntries(COUNTRIES.map(c => [c.code, c.weight]))

function pickCountry (r: Random): Country {
  const code = r.weighted(COUNTRY_WEIGHTS)
  return COUNTRIES.find(c => c.code === code)!
}

/**
 * A party; `first` ones take each country in turn, so that from twelve customers every country is there. Its name
 * is one that no other party of the tenant has (`names`).
 */
function party (r: Random, names: PartyNames, id: string, first?: number): Party {
  const country = first !== undefined && first < COUNTRIES.length
    ? COUNTRIES[(first * 5) % COUNTRIES.length]!
    : pickCountry(r)
  const drawn = country.company(r)
  const city = r.pick(country.cities)
  const terms = Number(r.weighted({ 14: 2, 30: 6, 45: 2, 60: 1 }))
  const [short, name] = names.claim(country, city, drawn)
  return { id, name, short, country, city, terms }
}

/**
 * The names given to a tenant's parties, customers and suppliers alike: a name is unique within the tenant, so that
 * an app or an agent that lists, groups or reports by name never merges two parties (a real ledger does not hold
 * three customers called "Bergström Metalworks AB"). Both forms count: the short one also makes the e-mail domain
 * and the bill numbers.
 */
class PartyNames {
  private readonly taken = new Set<string>()
  /** The last number given to a name qualified by its city, so that the next one starts after it. */
  private readonly numbered = new Map<string, number>()
  /** The stream of the names drawn again, made at the first one. */
  private redraws: Random | undefined
  /** Countries where eight names drawn again were all taken: their next parties go straight to the city's name. */
  private readonly exhausted = new Set<string>()

  constructor (private readonly seed: string) {}

  /**
   * `drawn` when it is free. Else other names of the country, drawn from a stream of their own (the tenant's stream,
   * and so every other field of every record, stays as it was), and when eight of those are taken too (a large
   * sandbox uses up a country's names, from then on), the drawn name with its city, then with its city and a number:
   * that always ends.
   */
  claim (country: Country, city: City, drawn: [string, string]): [string, string] {
    if (this.take(drawn)) return drawn
    if (!this.exhausted.has(country.code)) {
      const r = this.redraws ??= new Random(`${this.seed}/names`)
      for (let i = 0; i < 8; i++) {
        const other = country.company(r)
        if (this.take(other)) return other
      }
      this.exhausted.add(country.code)
    }
    const [short, name] = drawn
    const suffix = name.slice(short.length)
    const base = `${short} ${city.city}`
    for (let n = this.numbered.get(base) ?? 1; ; n++) {
      const qualified = n === 1 ? base : `${base} ${n}`
      const candidate: [string, string] = [qualified, qualified + suffix]
      if (this.take(candidate)) {
        this.numbered.set(base, n + 1)
        return candidate
      }
    }
  }

  /** Claims both forms of a name; false, and nothing claimed, when either is taken. */
  private take ([short, name]: [string, string]): boolean {
    const keys = [`short:${slug(short)}`, `name:${name.toLowerCase()}`]
    if (keys.some(k => this.taken.has(k))) return false
    for (const k of keys) this.taken.add(k)
    return true
  }
}

const slug = (name: string): string => name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase()
  .replace(/&/g, 'and').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')

/** The event id: the record, its version and a digest of the whole event, so a repeat is the same event. */
function event (opts: SandboxOptions, topic: string, data: Record<string, unknown>, version: number): SandboxEvent {
  const digest = createHash('sha256')
    .update(JSON.stringify([opts.org, opts.entity, topic, data]))
    .digest('hex')
    .slice(0, 16)
  return {
    id: `sandbox-${data.id as string}-v${version}-${digest}`,
    topic,
    org_ref_id: opts.org,
    entity_ref_id: opts.entity,
    data
  }
}

/** A time of a working day (07:00–18:00 UTC, any millisecond) on the day of `ms`. */
const workingTime = (r: Random, dayMs: number): number =>
  Math.floor(dayMs / DAY) * DAY + r.int(7 * 3600_000, 18 * 3600_000)

/** Something that happened between two instants (strictly after `from`), never on or after `before`. */
const between = (r: Random, from: number, to: number, before: number): number => {
  const end = Math.min(to, before - 1)
  return end <= from + 1 ? Math.min(from + 1, before - 1) : r.int(from + 1, end)
}

function * customers (opts: SandboxOptions, start: number, parties: Party[]): Generator<SandboxRecord> {
  for (const [i, p] of parties.entries()) {
    const r = new Random(`${seedOf(opts)}/customer/${i}`)
    const { country, city } = p
    const domain = `${slug(p.short)}.example`
    // Customers since before the year of documents: up to four years.
    const created = workingTime(r, start - r.int(366, 1460) * DAY)
    const customer: Record<string, unknown> = {
      id: p.id,
      name: p.name,
      email: r.chance(0.94) ? `${r.pick(['accounts', 'billing', 'invoices', 'ap'])}@${domain}` : null,
      phone: r.chance(0.9) ? country.phone(r) : null,
      tax_number: r.chance(0.85) ? country.taxNumber(r) : null,
      address: {
        line1: country.street(r),
        line2: r.chance(0.25) ? r.pick(['Unit 4', 'Building B', '2nd floor', 'Hall 3', 'Gate 7']) : null,
        city: city.city,
        region: city.region,
        postal_code: city.postal(r),
        country: country.code
      },
      currency: country.currency,
      status: 'active',
      created_at: iso(created),
      updated_at: iso(created)
    }
    const events = [event(opts, 'customer.created', customer, 1)]
    let last = created
    if (r.chance(0.25)) {
      last = between(r, Math.max(last, start - 365 * DAY), start, start)
      const changed: Record<string, unknown> = { ...customer, updated_at: iso(last) }
      if (r.chance(0.5) || customer.phone === null) changed.phone = country.phone(r)
      else changed.email = `${r.pick(['finance', 'accounts-payable', 'billing'])}@${domain}`
      events.push(event(opts, 'customer.updated', changed, events.length + 1))
    }
    // One in twelve archived, and the second customer always, so that a small sandbox has one.
    if (i === 1 || r.chance(0.08)) {
      last = between(r, Math.max(last, start - 60 * DAY), start, start)
      const archived = { ...events.at(-1)!.data, status: 'archived', updated_at: iso(last) }
      events.push(event(opts, 'customer.archived', archived, events.length + 1))
    }
    yield { kind: 'customer', id: p.id, events }
  }
}

type DocumentStatus = 'draft' | 'authorised' | 'paid' | 'voided'

/** Which documents there are, oldest first: their status and issue day, before any detail is drawn. */
interface Planned { status: DocumentStatus, ago: number, late?: boolean }

/**
 * Which documents there are, oldest first: their status and issue day (days before the as-of date), before any
 * detail is drawn. The first few are one of each status, one of them overdue and one paid late, so that even a
 * small sandbox shows every case; the rest are drawn by the weights.
 */
function plan (r: Random, n: number, statuses: Record<DocumentStatus, number>): Planned[] {
  // Drafts are recent, open documents mostly recent (some long overdue), paid and voided ones anywhere in the year.
  const age = (status: DocumentStatus): number => status === 'draft'
    ? r.int(1, 21)
    : status === 'authorised' ? 1 + Math.floor(150 * r.next() ** 2) : r.int(3, 365)
  const docs: Planned[] = []
  const each: Planned[] = [
    { status: 'draft', ago: age('draft') },
    { status: 'authorised', ago: r.int(75, 150) },
    { status: 'paid', ago: r.int(100, 365), late: true },
    { status: 'paid', ago: age('paid') },
    { status: 'voided', ago: age('voided') }
  ]
  for (const planned of each.filter(p => statuses[p.status] > 0).slice(0, n)) docs.push(planned)
  while (docs.length < n) {
    const status = r.weighted(statuses)
    docs.push({ status, ago: age(status) })
  }
  return docs.sort((a, b) => b.ago - a.ago)
}

interface DocumentKind {
  kind: 'invoice' | 'bill'
  party: 'customer' | 'supplier'
  products: Product[]
}

const INVOICE_KIND: DocumentKind = { kind: 'invoice', party: 'customer', products: SOLD }
const BILL_KIND: DocumentKind = { kind: 'bill', party: 'supplier', products: BOUGHT }

function lineItems (r: Random, k: DocumentKind, p: Party) {
  const digits = minorDigits(p.country.currency)
  const rate = BigInt(p.city.rate ?? p.country.rate)
  const count = r.chance(0.03) ? r.int(8, 12) : Number(r.weighted({ 1: 30, 2: 25, 3: 20, 4: 12, 5: 8, 6: 5 }))
  // Each product once per document.
  const products = [...k.products]
  const lines = []
  for (let i = 0; i < count; i++) {
    const [product] = products.splice(r.int(0, products.length - 1), 1) as [Product]
    const q = quantity(r, product)
    const unit = unitPrice(r, product, p.country)
    const amount = roundUnits(q * unit, 4 + digits, digits)
    lines.push({
      description: product.description,
      quantity: trim(fromUnits(q, 4)),
      unit_amount: fromUnits(unit, digits),
      tax_amount: fromUnits(roundUnits(amount * rate, 6, 0), digits),
      amount: fromUnits(amount, digits)
    })
  }
  return lines
}

/** A document's money fields from its lines and what has been paid. */
function sums (lines: Array<Record<string, string>>, currency: string, paid: bigint | 'all') {
  const digits = minorDigits(currency)
  const subtotal = lines.reduce((s, l) => s + toUnits(l.amount!, digits), 0n)
  const tax = lines.reduce((s, l) => s + toUnits(l.tax_amount!, digits), 0n)
  const total = subtotal + tax
  const amountPaid = paid === 'all' ? total : paid
  return {
    subtotal: fromUnits(subtotal, digits),
    tax_total: fromUnits(tax, digits),
    total: fromUnits(total, digits),
    amount_paid: fromUnits(amountPaid, digits),
    amount_due: fromUnits(total - amountPaid, digits)
  }
}

function * documents (
  opts: SandboxOptions, start: number, k: DocumentKind, parties: Party[], planned: Planned[]
): Generator<SandboxRecord> {
  const seed = seedOf(opts)
  for (const [i, { status, ago, late: mustBeLate }] of planned.entries()) {
    const r = new Random(`${seed}/${k.kind}/${i}`)
    // A few parties get most of the business.
    const p = parties[Math.floor(parties.length * r.next() ** 1.6)]!
    const currency = p.country.currency
    const issued = start - ago * DAY
    const created = workingTime(r, issued)
    const due = issued + p.terms * DAY
    const id = k.kind === 'invoice' ? `inv_${pad(i + 1, 6)}` : `bill_${pad(i + 1, 6)}`
    const number = k.kind === 'invoice'
      ? `INV-${dateOf(issued).slice(0, 4)}-${pad(1000 + i + 1, 5)}`
      : `${slug(p.short).split('-').map(w => w[0]).join('').toUpperCase()}-${r.int(10_000, 99_999)}`
    const lines = lineItems(r, k, p)
    const base = {
      id,
      number,
      status: 'authorised',
      [k.party]: { id: p.id, name: p.name },
      currency,
      issue_date: dateOf(issued),
      due_date: dateOf(due),
      line_items: lines,
      ...sums(lines, currency, 0n),
      paid_at: null,
      created_at: iso(created),
      updated_at: iso(created)
    }
    const events: SandboxEvent[] = []
    const push = (topic: string, data: Record<string, unknown>) => {
      events.push(event(opts, topic, data, events.length + 1))
    }
    let last = created
    const later = (to: number): number => (last = between(r, last, to, start))

    if (status === 'draft') {
      push(`${k.kind}.created`, { ...base, status: 'draft' })
      if (r.chance(0.3)) {
        // Edited before it was sent: one more line.
        const more = [...lines, ...lineItems(r, k, p).slice(0, 1)]
        push(`${k.kind}.updated`, {
          ...base, status: 'draft', line_items: more, ...sums(more, currency, 0n), updated_at: iso(later(start))
        })
      }
    } else {
      if (r.chance(0.35)) {
        // Drafted first, approved a little later.
        push(`${k.kind}.created`, { ...base, status: 'draft' })
        push(`${k.kind}.updated`, { ...base, updated_at: iso(later(last + 3 * DAY)) })
      } else {
        push(`${k.kind}.created`, base)
      }
      if (status === 'authorised' && r.chance(0.2)) {
        // Paid in part: a deposit.
        const digits = minorDigits(currency)
        const part = roundUnits(toUnits(base.total, digits) * BigInt(r.pick([25, 30, 40, 50])), 2, 0)
        if (part > 0n) {
          push(`${k.kind}.updated`, { ...base, ...sums(lines, currency, part), updated_at: iso(later(start)) })
        }
      } else if (status === 'paid') {
        // A quarter are paid late: after the due date's end, up to two months, if the as-of date is past it.
        const late = (mustBeLate === true || r.chance(0.25)) && due + 2 * DAY < start
        if (late) last = Math.max(last, due + DAY)
        const paidAt = late ? later(due + DAY + r.int(1, 60) * DAY) : later(due + DAY - 1)
        push(`${k.kind}.paid`, {
          ...base, status: 'paid', ...sums(lines, currency, 'all'), paid_at: iso(paidAt), updated_at: iso(paidAt)
        })
      } else if (status === 'voided') {
        push('invoice.voided', { ...base, status: 'voided', updated_at: iso(later(last + 20 * DAY)) })
      }
    }
    yield { kind: k.kind, id, events }
  }
}

/**
 * The sandbox's records, each with its events (oldest first): customers, then invoices, then bills, each kind in
 * the order of its issue dates. Lazy, so that a large sandbox is sent while it is generated.
 */
export function * sandboxRecords (opts: SandboxOptions): Generator<SandboxRecord> {
  const start = Date.parse(`${opts.asOf}T00:00:00.000Z`)
  if (Number.isNaN(start) || iso(start).slice(0, 10) !== opts.asOf) throw new Error(`not a date: ${opts.asOf}`)
  const seed = seedOf(opts)
  const r = new Random(`${seed}/parties`)
  const names = new PartyNames(seed)
  const customerParties = Array.from({ length: opts.customers },
    (_, i) => party(r, names, `cus_${pad(i + 1, 4)}`, i))
  const supplierCount = Math.min(40, Math.max(3, Math.ceil(opts.bills / 8)))
  const suppliers = Array.from({ length: supplierCount }, (_, i) => party(r, names, `sup_${pad(i + 1, 3)}`))
  yield * customers(opts, start, customerParties)
  if (opts.invoices > 0 && customerParties.length === 0) throw new Error('invoices need at least one customer')
  const invoicePlan = plan(new Random(`${seed}/invoice-plan`), opts.invoices,
    { draft: 7, authorised: 25, paid: 62, voided: 6 })
  yield * documents(opts, start, INVOICE_KIND, customerParties, invoicePlan)
  const billPlan = plan(new Random(`${seed}/bill-plan`), opts.bills, { draft: 8, authorised: 30, paid: 62, voided: 0 })
  yield * documents(opts, start, BILL_KIND, suppliers, billPlan)
}

/** The records' events in the order to send them. */
export function * sandboxEvents (opts: SandboxOptions): Generator<SandboxEvent> {
  for (const record of sandboxRecords(opts)) yield * record.events
}

/** What a sandbox holds once its events are in: counts by kind and status, and the invoices' notable cases. */
export interface SandboxSummary {
  events: number
  customers: Record<'total' | 'active' | 'archived', number>
  invoices: Record<'total' | 'draft' | 'authorised' | 'paid' | 'voided' | 'overdue' | 'paidLate', number>
  bills: Record<'total' | 'draft' | 'authorised' | 'paid' | 'overdue' | 'paidLate', number>
}

/** Counts records as they go by (`add` each one), by the last version of each. */
export class SandboxTally {
  readonly summary: SandboxSummary = {
    events: 0,
    customers: { total: 0, active: 0, archived: 0 },
    invoices: { total: 0, draft: 0, authorised: 0, paid: 0, voided: 0, overdue: 0, paidLate: 0 },
    bills: { total: 0, draft: 0, authorised: 0, paid: 0, overdue: 0, paidLate: 0 }
  }

  constructor (private readonly asOf: string) {}

  add (record: SandboxRecord): void {
    const data = record.events.at(-1)!.data
    const status = data.status as string
    this.summary.events += record.events.length
    const counts = record.kind === 'customer'
      ? this.summary.customers
      : record.kind === 'invoice' ? this.summary.invoices : this.summary.bills
    const c = counts as unknown as Record<string, number>
    c.total!++
    c[status] = (c[status] ?? 0) + 1
    if (record.kind === 'customer') return
    const due = data.due_date as string
    if (status === 'authorised' && due < this.asOf) c.overdue!++
    if (status === 'paid' && (data.paid_at as string).slice(0, 10) > due) c.paidLate!++
  }
}

/**
 * `events trigger`'s data for a record topic: the schema's example record (schemas/records.ts) in the state the
 * topic announces, changed `now` so that the read side keeps it. Undefined for a topic without a record.
 */
export function sampleRecord (
  topic: string, samples: Record<SandboxKind, Record<string, unknown>>, now: string
): Record<string, unknown> | undefined {
  const kind = topic.split('.')[0] as SandboxKind
  const sample = Object.hasOwn(samples, kind) ? samples[kind] : undefined
  if (!sample) return undefined
  const r: Record<string, unknown> = { ...structuredClone(sample), updated_at: now }
  if (kind === 'customer') return { ...r, status: topic.endsWith('.archived') ? 'archived' : 'active' }
  const digits = minorDigits(r.currency as string)
  const total = r.total as string
  if (topic.endsWith('.paid')) {
    return { ...r, status: 'paid', amount_paid: total, amount_due: fromUnits(0n, digits), paid_at: now }
  }
  const open = { ...r, amount_paid: fromUnits(0n, digits), amount_due: total, paid_at: null }
  return topic.endsWith('.voided') ? { ...open, status: 'voided' } : { ...open, status: 'authorised' }
}
