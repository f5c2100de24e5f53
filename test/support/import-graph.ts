// The import graph of src/, read with the TypeScript compiler's parser: every import and export
// declaration that names a module (`import type` and `export type` too), every `import x =
// require(...)`, every type written `import('...')` and every dynamic `import()` or `require()`
// call. Only specifiers that begin with `.` are edges (the rest are packages); each is resolved to
// the file it names, as Node and TypeScript resolve the `.js` spelling of a `.ts` source.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

/** One import of one file: the file it names, and whether it takes only types. */
export interface ImportEdge {
  readonly from: string
  readonly to: string
  readonly specifier: string
}

const SOURCE = /\.(ts|cts|mts)$/

/** Every TypeScript source below `dir`, relative to `root`, with `/` separators, sorted. */
export function sourceFiles(root: string, dir: string): string[] {
  const walk = (at: string): string[] =>
    readdirSync(at).flatMap((name) => {
      const path = join(at, name)
      if (statSync(path).isDirectory()) return walk(path)
      return SOURCE.test(name) && !name.endsWith('.d.ts') ? [path] : []
    })
  return walk(join(root, dir))
    .map((path) => relative(root, path).split('\\').join('/'))
    .sort()
}

/** The module specifiers that `code` names, in the order they appear. */
export function specifiersOf(fileName: string, code: string): string[] {
  const file = ts.createSourceFile(fileName, code, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const literal = (node: ts.Node | undefined): void => {
    if (node !== undefined && ts.isStringLiteralLike(node)) found.push(node.text)
  }
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      literal(node.moduleSpecifier)
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference)
    ) {
      literal(node.moduleReference.expression)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      literal(node.argument.literal)
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      literal(node.arguments[0])
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return found
}

/** The source file that relative `specifier`, written in `from`, names; undefined if none. */
function resolveSpecifier(root: string, from: string, specifier: string): string | undefined {
  const base = resolve(root, dirname(from), specifier)
  const candidates = [
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.cjs$/, '.cts'),
    base.replace(/\.mjs$/, '.mts'),
    `${base}.ts`,
    join(base, 'index.ts'),
  ]
  const found = candidates.find((path) => SOURCE.test(path) && existsSync(path))
  return found === undefined ? undefined : relative(root, found).split('\\').join('/')
}

/**
 * The edges between the sources below `dir`. A relative specifier that names no source file is
 * thrown as an error, since the graph would be missing an edge.
 */
export function importEdges(root: string, dir: string): ImportEdge[] {
  return sourceFiles(root, dir).flatMap((from) =>
    specifiersOf(from, readFileSync(join(root, from), 'utf8'))
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => {
        const to = resolveSpecifier(root, from, specifier)
        if (to === undefined) {
          throw new Error(`${from} imports '${specifier}', which names no source file.`)
        }
        return { from, to, specifier }
      }),
  )
}

/**
 * The circles of a graph: each strongly connected component of more than one file, and each file
 * that imports itself (Tarjan's algorithm, iterative so that a long chain cannot overflow the stack).
 */
export function circles(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, string[]>()
  for (const { from, to } of edges) {
    next.set(from, [...(next.get(from) ?? []), to])
    if (!next.has(to)) next.set(to, [])
  }
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  let counter = 0
  for (const start of [...next.keys()].sort()) {
    if (index.has(start)) continue
    const work: { node: string; child: number }[] = [{ node: start, child: 0 }]
    index.set(start, counter)
    low.set(start, counter++)
    stack.push(start)
    onStack.add(start)
    while (work.length > 0) {
      const frame = work[work.length - 1]!
      const children = next.get(frame.node)!
      if (frame.child < children.length) {
        const child = children[frame.child++]!
        if (!index.has(child)) {
          index.set(child, counter)
          low.set(child, counter++)
          stack.push(child)
          onStack.add(child)
          work.push({ node: child, child: 0 })
        } else if (onStack.has(child)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(child)!))
        }
        continue
      }
      work.pop()
      const parent = work[work.length - 1]
      if (parent !== undefined) {
        low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!))
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = []
        let member: string
        do {
          member = stack.pop()!
          onStack.delete(member)
          component.push(member)
        } while (member !== frame.node)
        if (component.length > 1 || children.includes(frame.node)) found.push(component.sort())
      }
    }
  }
  return found
}
