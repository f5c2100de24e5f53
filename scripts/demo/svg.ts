// The picture of one run as a standalone SVG: no scripts, no external fonts or images, so it opens
// anywhere, e.g. in a README. Where everything goes is decided by layout.ts; this only writes it.
import { layoutTimeline, runFacts, type Element, type SvgFacts } from './layout.js'
import type { Timeline } from './timeline.js'

/** Where `npm run demo` writes its picture unless told otherwise, from the repository's root: git ignores it. */
export const DEFAULT_SVG = '.cache/demo-timeline.svg'

export type { SvgFacts } from './layout.js'

const FONT = 'DejaVu Sans, Verdana, Arial, sans-serif'

const esc = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
const n = (v: number): string => (Math.round(v * 10) / 10).toString()

export function timelineSvg(timeline: Timeline, facts: SvgFacts): string {
  const layout = layoutTimeline(runFacts(timeline), facts)
  const { width, height } = layout
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" font-family="${FONT}" font-size="13" fill="#1d2733">`,
    `<title>${esc(layout.title)}</title>`,
    ...layout.elements.map(draw),
    '</svg>',
    '',
  ].join('\n')
}

function draw(el: Element): string {
  switch (el.kind) {
    case 'rect': {
      const data = Object.entries(el.attrs ?? {})
        .map(([k, v]) => `${k}="${esc(v)}" `)
        .join('')
      return (
        `<rect ${data}x="${n(el.x)}" y="${n(el.y)}" width="${n(el.width)}" ` +
        `height="${n(el.height)}"${el.rx ? ` rx="${el.rx}"` : ''} fill="${el.fill}"/>`
      )
    }
    case 'text':
      return (
        `<text x="${n(el.x)}" y="${n(el.y)}"` +
        (el.anchor === 'start' ? '' : ` text-anchor="${el.anchor}"`) +
        (el.fill ? ` fill="${el.fill}"` : '') +
        ` font-size="${el.size}"` +
        (el.bold ? ' font-weight="bold"' : '') +
        `>${esc(el.text)}</text>`
      )
    case 'line':
      return (
        `<line x1="${n(el.x1)}" y1="${n(el.y1)}" x2="${n(el.x2)}" y2="${n(el.y2)}" ` +
        `stroke="${el.stroke}"` +
        (el.strokeWidth ? ` stroke-width="${el.strokeWidth}"` : '') +
        (el.dash ? ` stroke-dasharray="${el.dash}"` : '') +
        '/>'
      )
    case 'path':
      return (
        `<path d="${el.d}" fill="${el.fill}" stroke="${el.stroke}" ` +
        `stroke-width="${el.strokeWidth}"/>`
      )
    case 'cross': {
      const { cx, cy, r } = el
      const a = r / 2
      return (
        `<g stroke="${el.color}" stroke-width="${r > 8 ? 3 : 2.5}" stroke-linecap="round">` +
        `<circle cx="${n(cx)}" cy="${n(cy)}" r="${r}" fill="#ffffff" stroke-width="2"/>` +
        `<line x1="${n(cx - a)}" y1="${n(cy - a)}" x2="${n(cx + a)}" y2="${n(cy + a)}"/>` +
        `<line x1="${n(cx - a)}" y1="${n(cy + a)}" x2="${n(cx + a)}" y2="${n(cy - a)}"/></g>`
      )
    }
  }
}
