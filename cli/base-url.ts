import { InvalidArgumentError } from 'commander'

/**
 * `--url <base_url>` of the commands that call the service: an absolute http:// or https:// URL. Anything else is
 * refused while the options are parsed, naming what is wrong: `localhost:3000` would otherwise reach fetch as a URL
 * of the scheme `localhost:`, and fail as if the service were down.
 */
export function baseUrl (value: string): string {
  const url = URL.canParse(value) ? new URL(value) : undefined
  if (url && (url.protocol === 'http:' || url.protocol === 'https:') && /^https?:\/\//i.test(value)) return value
  // A host and port without the scheme (localhost:3000, 127.0.0.1:4000/prefix): the URL meant is plain to see.
  const meant = /^[\w.-]+(:\d+)?(\/\S*)?$/.test(value) ? ` (did you mean http://${value}?)` : ''
  throw new InvalidArgumentError(`Not a URL starting with http:// or https://${meant}.`)
}
