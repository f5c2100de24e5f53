// The V8 flag of the rxsem bin (src/cli/v8-flags.ts): named only for the V8 versions that have it,
// since V8 prints an error for a flag it does not know.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { wasmTieringBudgetFlag } from '../../src/cli/v8-flags.js'

describe('wasmTieringBudgetFlag', () => {
  it('names the raised budget on V8 11 to 13 (Node 20 to 24)', () => {
    for (const version of ['11.3.244.8-node.33', '12.4.254.21-node.33', '13.6.233.17-node.37']) {
      assert.equal(wasmTieringBudgetFlag(version), '--wasm-tiering-budget=2000000000', version)
    }
  })

  it('names nothing on a V8 not known to have the flag', () => {
    for (const version of ['10.2.154.26-node.36', '14.1.146.11-node.8', 'unknown']) {
      assert.equal(wasmTieringBudgetFlag(version), undefined, version)
    }
  })

  it("reads this process's V8 by default", () => {
    assert.equal(wasmTieringBudgetFlag(), wasmTieringBudgetFlag(process.versions.v8))
  })
})
