// closeOnDispose: the Symbol.asyncDispose method of every handle with close(), and its absence on a
// runtime without the symbol.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { closeOnDispose } from '../../src/handle/close-on-dispose.js'

function closable() {
  const handle = { closed: 0, close: () => Promise.resolve(void (handle.closed += 1)) }
  return handle
}

describe('closeOnDispose', () => {
  it('gives the handle a Symbol.asyncDispose method that calls close()', async () => {
    const handle = closeOnDispose(closable())
    await handle[Symbol.asyncDispose]()
    assert.equal(handle.closed, 1)
  })

  it('keeps the method out of a spread, as a class method would be', () => {
    const handle = closeOnDispose(closable())
    assert.equal(Object.getOwnPropertySymbols({ ...handle }).length, 0)
  })

  it('adds nothing on a runtime without Symbol.asyncDispose', () => {
    const handle = closeOnDispose(closable(), {})
    assert.deepEqual(Object.getOwnPropertySymbols(handle), [])
    assert.deepEqual(Object.keys(handle), ['closed', 'close'])
  })
})
