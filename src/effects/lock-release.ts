// The lock release moved to src/effects/release/ (its plan to src/core/release/); this path stays
// for the importers that still name it (leader-election.ts).
export { releaseLockKey, type LockReleaseOptions } from './release/lock-release.js'
