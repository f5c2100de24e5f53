import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Subject } from 'rxjs'
import { afterEach } from '../../src/effects/after-each.js'

describe('afterEach', () => {
  it('acts on each value after the subscriber has seen it', () => {
    const source = new Subject<number>()
    const log: string[] = []
    source.pipe(afterEach((v) => log.push(`act ${v}`))).subscribe((v) => log.push(`saw ${v}`))
    source.next(1)
    source.next(2)
    assert.deepEqual(log, ['saw 1', 'act 1', 'saw 2', 'act 2'])
  })

  it('ends the stream with what the act threw', () => {
    const source = new Subject<number>()
    const errors: unknown[] = []
    source
      .pipe(
        afterEach((v) => {
          if (v === 2) throw new Error('two')
        }),
      )
      .subscribe({ error: (e: unknown) => errors.push(e) })
    source.next(1)
    source.next(2)
    assert.equal(errors.length, 1)
    assert.equal((errors[0] as Error).message, 'two')
    assert.equal(source.observed, false, 'unsubscribed from the source')
  })

  it('does not act on a value whose delivery tore the subscription down', () => {
    const source = new Subject<number>()
    const acted: number[] = []
    const subscription = source.pipe(afterEach((v) => acted.push(v))).subscribe((v) => {
      if (v === 2) subscription.unsubscribe()
    })
    source.next(1)
    source.next(2)
    source.next(3)
    assert.deepEqual(acted, [1])
  })
})
