/**
 * Whether JSON text nests arrays and objects deeper than `limit`, by one pass over the characters (strings
 * skipped): deep enough nesting overflows the stack of whatever walks the value later (JSON.stringify, the
 * validator), so it is refused before parsing.
 */
export function nestsDeeperThan (text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // a backslash escapes the next character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}
