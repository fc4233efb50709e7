import t from 'tap'
import fc from 'fast-check'
import { escapeHtml, html, Html, raw } from '../../../views/html.js'

t.test('every interpolation form is escaped', async t => {
  const evil = '<script>alert("x")</script>&\''
  const escaped = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;'
  t.equal(html`<p>${evil}</p>`.toString(), `<p>${escaped}</p>`, 'a string in content')
  t.equal(html`<a title="${evil}">`.toString(), `<a title="${escaped}">`, 'a string in an attribute')
  t.equal(html`<p>${42}</p>`.toString(), '<p>42</p>', 'a number')
  t.equal(html`<ul>${[evil, 'b']}</ul>`.toString(), `<ul>${escaped}b</ul>`, 'an array of strings')
  t.equal(html`<ul>${[html`<li>${evil}</li>`, [html`<li>b</li>`]]}</ul>`.toString(),
    `<ul><li>${escaped}</li><li>b</li></ul>`, 'arrays (nested) of Html are joined as they are')
  t.equal(html`<p>${null}${undefined}${false}</p>`.toString(), '<p></p>', 'nothing for null, undefined, false')
  t.equal(html`<p>${html`<b>${evil}</b>`}</p>`.toString(), `<p><b>${escaped}</b></p>`, 'nested Html kept')
  t.equal(escapeHtml('a&b'), 'a&amp;b')
})

t.test('raw markup only through the marker', async t => {
  t.equal(html`<div>${raw('<hr>')}</div>`.toString(), '<div><hr></div>')
  t.ok(raw('<hr>') instanceof Html)
  // Something that only looks like Html is text.
  const impostor = { toString: () => '<b>x</b>' } as unknown as string
  t.equal(html`${impostor}`.toString(), '&lt;b&gt;x&lt;/b&gt;')
})

t.test('no generated value becomes a tag, an attribute or an entity', async () => {
  const value = fc.oneof(fc.string({ unit: 'binary' }), fc.integer(), fc.array(fc.string({ unit: 'binary' })))
  fc.assert(fc.property(value, value, (a, b) => {
    const out = html`<p title="${a}">${b}</p>`.toString()
    const inner = out.slice('<p title="'.length, -'</p>'.length)
    // The only markup characters left are the template's own: the attribute's closing quote and `>`.
    return !/[<]/.test(inner) && inner.split('"').length === 2 && inner.split('>').length === 2
  }), { numRuns: 2000 })
})
