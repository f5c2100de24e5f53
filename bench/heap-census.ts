// A census of a V8 heap snapshot file (v8.writeHeapSnapshot), read as a stream so that a snapshot
// of a few hundred MB is never one string: the live heap (the sum of every node's self size; the
// snapshot holds only what a full collection kept) and the live instances of some classes.
//
// The file is `{"snapshot":{"meta":…,"node_count":…},"nodes":[…],"edges":[…],…,"strings":[…]}`:
// each node is `meta.node_fields.length` integers (type, name as an index into strings, …,
// self_size, …). Nodes are read as they stream by; the names are resolved from `strings` at the end.
import { createReadStream } from 'node:fs'
import { StringDecoder } from 'node:string_decoder'

export interface HeapCensus {
  /** Sum of the self sizes of every node in the snapshot, in bytes. */
  readonly liveBytes: number
  readonly nodes: number
  /** Live objects whose constructor is one of the asked names, per name. */
  readonly instances: Readonly<Record<string, number>>
}

interface SnapshotMeta {
  readonly snapshot: {
    readonly meta: {
      readonly node_fields: readonly string[]
      readonly node_types: readonly [readonly string[], ...unknown[]]
    }
  }
}

const NODES = '"nodes":['
const STRINGS = '"strings":['

/**
 * Reads a heap snapshot file and counts its live bytes and the live objects of `classNames`.
 *
 * @example
 * const census = await heapCensus('/tmp/steady.heapsnapshot', ['SafeSubscriber'])
 * console.log(census.liveBytes, census.instances['SafeSubscriber'])
 * @returns The census.
 */
export async function heapCensus(path: string, classNames: readonly string[]): Promise<HeapCensus> {
  const decoder = new StringDecoder('utf8')
  let phase: 'header' | 'nodes' | 'between' | 'strings' = 'header'
  let text = ''
  // Node fields, resolved from the header.
  let fieldCount = 0
  let typeField = -1
  let nameField = -1
  let sizeField = -1
  let objectType = -1
  // The node being read, field by field.
  let field = 0
  let type = 0
  let name = 0
  let digits = -1
  let liveBytes = 0
  let nodes = 0
  const objectsByName = new Map<number, number>()

  const endOfField = (value: number): void => {
    if (field === typeField) type = value
    else if (field === nameField) name = value
    if (field === sizeField) liveBytes += value
    if (++field === fieldCount) {
      field = 0
      nodes++
      if (type === objectType) objectsByName.set(name, (objectsByName.get(name) ?? 0) + 1)
    }
  }
  /** Reads node integers from `chunk` at `from`; returns where the array ended, or -1. */
  const readNodes = (chunk: string, from: number): number => {
    for (let i = from; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i)
      if (c >= 48 && c <= 57) {
        digits = (digits < 0 ? 0 : digits * 10) + (c - 48)
        continue
      }
      if (digits >= 0) {
        endOfField(digits)
        digits = -1
      }
      if (c === 93 /* ] */) return i
    }
    return -1
  }

  for await (const buffer of createReadStream(path, { highWaterMark: 1 << 20 })) {
    let chunk = decoder.write(buffer as Buffer)
    if (phase === 'header') {
      text += chunk
      const at = text.indexOf(NODES)
      if (at < 0) continue
      const header = JSON.parse(`${text.slice(0, at).replace(/,\s*$/, '')}}`) as SnapshotMeta
      const { node_fields: fields, node_types: types } = header.snapshot.meta
      fieldCount = fields.length
      typeField = fields.indexOf('type')
      nameField = fields.indexOf('name')
      sizeField = fields.indexOf('self_size')
      objectType = types[0].indexOf('object')
      if ([typeField, nameField, sizeField, objectType].includes(-1)) {
        throw new Error(`${path}: a heap snapshot without type, name or self_size`)
      }
      chunk = text.slice(at + NODES.length)
      text = ''
      phase = 'nodes'
    }
    if (phase === 'nodes') {
      const end = readNodes(chunk, 0)
      if (end < 0) continue
      chunk = chunk.slice(end + 1)
      phase = 'between'
    }
    if (phase === 'between') {
      // Edges and the rest are numbers; keep a tail in case the marker is split across chunks.
      text += chunk
      const at = text.indexOf(STRINGS)
      if (at < 0) {
        text = text.slice(-STRINGS.length)
        continue
      }
      chunk = text.slice(at + STRINGS.length)
      text = ''
      phase = 'strings'
    }
    // phase === 'strings': kept whole, parsed at the end.
    text += chunk
  }
  text += decoder.end()
  if (phase !== 'strings') throw new Error(`${path}: not a complete heap snapshot`)
  const strings = JSON.parse(`[${text.slice(0, text.lastIndexOf(']'))}]`) as string[]
  const instances: Record<string, number> = Object.fromEntries(classNames.map((c) => [c, 0]))
  for (const [index, count] of objectsByName) {
    const className = strings[index]
    if (className !== undefined && className in instances) {
      instances[className] = (instances[className] ?? 0) + count
    }
  }
  return { liveBytes, nodes, instances }
}
