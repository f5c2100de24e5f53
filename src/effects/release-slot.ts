// The semaphore release moved to src/effects/release/ (its plan to src/core/release/); this path
// stays for the importers that still name it (contend.ts).
export { releaseSlot, type ReleaseSlotOptions } from './release/release-slot.js'
