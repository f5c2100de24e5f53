// The table of Consul releases doctor warns of: which releases each row covers, read from the
// version strings agents report, and the client-agent-only rows left out on a server agent.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  KNOWN_VERSION_ISSUES,
  knownIssues,
  parseRelease,
} from '../../src/operator/doctor/known-versions.js'

const severities = (version: string, server?: boolean): string[] => {
  const release = parseRelease(version)
  assert.ok(release !== undefined, version)
  return knownIssues(release, server).map((issue) => issue.severity)
}

describe('the known-version table of doctor', () => {
  it('reads the versions agents report, with or without a suffix or a patch', () => {
    assert.deepEqual(parseRelease('1.8.7'), [1, 8, 7])
    assert.deepEqual(parseRelease('v1.14.3+ent'), [1, 14, 3])
    assert.deepEqual(parseRelease('1.21.0-rc1'), [1, 21, 0])
    assert.deepEqual(parseRelease('1.9'), [1, 9, 0])
    assert.equal(parseRelease('dev'), undefined)
  })

  it('finds releases before 1.8 unsupported, on any agent', () => {
    assert.deepEqual(severities('1.7.14', true), ['problem'])
    assert.deepEqual(severities('0.9.3', false), ['problem'])
    assert.deepEqual(severities('1.8.0', false), [])
  })

  it('warns of the i/o deadline 500s from 1.11.9, 1.12.1 and 1.13.0 through 1.14.x, on client agents only', () => {
    for (const version of ['1.11.9', '1.11.11', '1.12.1', '1.12.9', '1.13.0', '1.14.10']) {
      assert.deepEqual(severities(version, false), ['warning'], version)
      assert.deepEqual(severities(version, undefined), ['warning'], `${version}, role unknown`)
      assert.deepEqual(severities(version, true), [], `${version} on a server agent`)
    }
    for (const version of ['1.10.12', '1.11.8', '1.12.0', '1.15.0', '1.21.4']) {
      assert.deepEqual(severities(version, false), [], version)
    }
  })

  it('names a Consul issue in every row that is not about support', () => {
    for (const issue of KNOWN_VERSION_ISSUES) {
      assert.match(issue.found, /hashicorp\/consul#\d+/)
      assert.notEqual(issue.action, '')
    }
  })
})
