/** The help texts of `rxsem` and its commands, printed to stdout by `--help`. */
import { consulFlagHelp } from './consul-flags.js'

export const mainUsage = `Usage: rxsem <command> [flags]

A distributed semaphore and leader lock on Consul, interoperable with \`consul lock\`.

Commands:
  run        hold a slot of a semaphore (or the leader lock) while a command runs
  status     show the holders and waiters of a prefix, once (--json for scripts)
  watch      show the holders and waiters of a prefix live, until q or Ctrl-C
  set-limit  change the limit of a semaphore live, keeping its holders
  evict      take one holder out of a semaphore or leader lock, and destroy its session
  drain      let a semaphore's holders finish and admit no one until lifted (--lift)
  doctor     check the agent, the ACL token and a prefix as contenders would use them

Run \`rxsem <command> --help\` for its flags.
`

export const runUsage = `Usage: rxsem run --prefix <p> --limit <n> [flags] -- <command> [args...]
       rxsem run --leader --prefix <p> [flags] -- <command> [args...]

Waits for a slot of the semaphore at <p> (at most <n> holders, shared with \`consul lock -n <n>\`),
runs the command while the slot is held, and releases the slot when the command ends.
With --leader, holds the single-key lock at <p>/.lock instead (shared with \`consul lock\`).

The command runs in a process group of its own, with stdio inherited and, in its environment,
CONSUL_LOCK_HELD=true, RXSEM_PREFIX=<p>, RXSEM_SESSION=<session id>, RXSEM_FENCING_TOKEN=<n> and
RXSEM_LEASE_DEADLINE_MS=<epoch ms> (the first lease deadline; renewals extend it).
If the slot is lost, the whole group gets SIGTERM, then SIGKILL after --grace.
A watchdog (bash 5 or later, found in PATH) stops the group when rxsem itself dies (SIGTERM at
once, SIGKILL 0.5 s later) or is frozen and stops renewing the lease (the group is gone by the
lease deadline: SIGTERM 0.5 s before it, then SIGKILL).

Flags:
  --prefix <p>         KV prefix all contenders agree on, e.g. service/db/lock
  -n, --limit <n>      most holders at once (-n as in \`consul lock -n\`); every contender of
                       the prefix must use the same, unless --follow-limit
  --follow-limit       take the limit <p>/.lock states (an operator may change it with
                       \`rxsem set-limit\`); --limit is then only the limit of a new .lock
  --permits <k>        hold k of the slots at once (default 1), all taken in one write;
                       \`consul lock -n\` counts k holders
  --leader             hold the leader lock (one holder) instead of a semaphore slot
  --ttl <duration>     session TTL, 10s to 24h (default 15s)
  --lock-delay <duration>
                       the session's lock-delay, 0 to 60s (default Consul's, 15s): how long
                       Consul keeps the slot (or the leader lock) from everyone after this
                       session ends without a release (rxsem killed, its lease run out); 0 turns
                       it off, so the next contender gets in at once
  --name <text>        session name shown by \`rxsem status\` and Consul's UI
                       (default "rxsem run '<command>' at <prefix>")
  --value <text>       value of this contender's key (default <hostname>:<pid>)
  --timeout <duration> give up when no slot is held within it (exit 124); 0 tries once:
                       run if a slot is free now, whatever the queue, else exit 124
  --grace <duration>   time between SIGTERM and SIGKILL when stopping the command (default 5s)
  --ride-through       keep the command running while Consul does not answer (a leader
                       election of its servers) until the lease deadline, instead of stopping it
                       at the first failed watch; stopped at once if an answer shows the slot gone
  --service-check <id> tie the session to a service health check of the agent's node
                       (repeatable): when it goes critical, Consul ends the session, the slot
                       goes to the next contender at once and the command is stopped (75);
                       a check critical or unknown at the start is an error (1)
  --node-check <id>    a node health check the session depends on (repeatable; default
                       serfHealth): when it goes critical, Consul ends the session
  --no-node-checks     no node checks: only the TTL ends the session, whatever happens to
                       the agent's node
  --health-addr <host:port>
                       serve GET /ready (200 while the slot is held, else 503) and GET /live
                       (200 while contending or holding, 503 once rxsem failed) for probes;
                       :port listens on every interface, port 0 on a free port (the address
                       is told on stderr)
  --shell              run the command through /bin/sh -c "<command and args joined by spaces>"
  --verbose            tell every transition and its reason (on stderr)
  --quiet              print nothing but errors
  -h, --help           show this help

${consulFlagHelp}

Durations are Go-style: 500ms, 15s, 1m30s.

Exit status:
  the command's own status (128+n if it was killed by signal n) when it ended by itself
  1    bad flags or options, Consul unreachable at start, an address that is not a Consul
       agent, permission denied, a conflicting, limit-conflicting or corrupt <prefix>/.lock, no
       bash 5 for the watchdog: nothing was started
  71   the watchdog was killed while the command ran; the command was stopped
  75   the slot was lost while the command ran (or the lease ran out while rxsem was
       stopped, and the watchdog stopped the command); the command was stopped
  124  no slot within --timeout; nothing was started
  127  the command could not be started
  129  hung up (SIGHUP, the terminal or ssh connection went away): as for SIGTERM below, and
       the command gets SIGTERM
  130  interrupted (SIGINT); 143  terminated (SIGTERM): the signal is passed to the command,
       which gets --grace to end before SIGKILL (a second signal: SIGKILL at once); the slot
       is released afterwards
`

export const statusUsage = `Usage: rxsem status --prefix <p> [--json] [--sample <d>] [--limit <n>] [flags]

Shows the semaphore (or \`consul lock\` leader lock) at <p> as Consul has it now: the limit, the
shape of <p>/.lock, the holders (live, and dead ones still listed), and the waiting contenders in
the order they will be served (#0 is next), each with session, session name and value. The
waiters of a leader lock write nothing under <p> until they hold it, so they are not shown or
counted.

Flags:
  --prefix <p>     KV prefix of the semaphore
  --sample <d>     watch <p> for <d> (e.g. 10s) and give each waiter an estimated wait from the
                   hand-overs seen meanwhile; the status shown is the one at the end
  --json           print one JSON object:
                   {"prefix","limit","shape","holders":[{"session","alive","value","name"}],
                    "waiting":[{"session","rank","value","name"}]}
                   (with --sample, each waiter has "estimatedWaitMs": ms, or null)
                   shape is "go-map", "guide-list", "java-list", "lock" (a \`consul lock\`
                   leader lock, limit 1) or null (no .lock yet); for a leader lock, waiting is
                   null and "waitingNote" says why
  -n, --limit <n>  the limit to expect: a .lock that says otherwise is an error
  -h, --help       show this help

${consulFlagHelp}

Exit status: 0 shown; 1 error (message on stderr); 77 shown, but the ACL token may not read
<p>, so Consul left out what it may not read and holders or waiters may be missing (a warning
on stderr names the policy to give).
`

export const watchUsage = `Usage: rxsem watch --prefix <p> [--limit <n>] [flags]

A live view of the semaphore at <p>: holders and since when, waiting contenders in order, and
the connection to Consul. Redrawn on every change, from one blocking query; the first frame
comes from the first answer. Consul records no time of acquisition: SINCE and FOR are the time
this view saw a slot taken, and for a holder that held already when it first saw it, that time
marked with ≤ (taken then or before) and ≥ (held at least so long). On a terminal, press q or
Ctrl-C to quit; otherwise one frame is printed per change.

Flags:
  --prefix <p>     KV prefix of the semaphore
  -n, --limit <n>  the limit to expect
  -h, --help       show this help

${consulFlagHelp}

Exit status: 0 after q, Ctrl-C, SIGINT or SIGTERM; 1 error (message on stderr).
`

export const setLimitUsage = `Usage: rxsem set-limit --prefix <p> --limit <n> [--dry-run] [--json] [flags]

Changes the limit of the semaphore at <p> live: one check-and-set of <p>/.lock that keeps its
holders, so no slot is taken from anyone and no acquisition or release in between is lost.
Contenders started with --follow-limit (rxsem run) or followLimit (the library) take the new
limit at their next read: a raise admits waiters at once; a lowering lets the holders finish
and admits no one until fewer than <n> hold. Other contenders, and \`consul lock -n\` with
another limit, fail with a limit conflict when they next try for a slot (a waiter at once);
their holders keep their slots until they release. Without a .lock yet, one is created with
no holders.

Before it writes, it reads <p> and says what the change does to the holders and waiters it
sees. Consul does not record which of them follow the limit, so it says what happens to both.

Flags:
  --prefix <p>     KV prefix of the semaphore
  -n, --limit <n>  the new limit, a whole number of at least 1
  --dry-run        say what the change would do, and write nothing
  --json           print one JSON object instead of text:
                   {"prefix","previous","limit","holders","waiting","index"}
                   (previous is null when there was no .lock; waiting is the count read before
                   the write, null if unread; index is .lock's ModifyIndex); with --dry-run,
                   {"prefix","previous","limit","holders","waiting","written":false}
  -h, --help       show this help

${consulFlagHelp}

Exit status: 0 written (or the limit was already <n>, or shown with --dry-run); 1 error
(message on stderr): bad flags, a .lock of \`consul lock\` without -n or that cannot be read
(never written over), Consul unreachable or refusing.
`

export const evictUsage = `Usage: rxsem evict --prefix <p> --session <id> [--grace <d>] [--json] [flags]

Takes the holder whose session is <id> out of the semaphore (or \`consul lock\` leader lock) at
<p>, and destroys its session. For a semaphore, one check-and-set of <p>/.lock removes the
session from its holders (keeping the others, so no acquisition or release in between is lost),
then the session is destroyed, which deletes its contender key. For a leader lock, destroying
the session releases <p>/.lock; the next leader takes it after the session's lock-delay.

With --grace, it asks first: the holder sees the request (\`rxsem run\` stops its command and
releases, \`withSlot\` aborts its work's signal) and may give its slot back within <d>; only a
holder still there when the grace ends is taken out by force (\`consul lock\` cannot see the
request, so it always is). \`rxsem status\` and \`rxsem watch\` show the request meanwhile.

The holder sees that it no longer holds at its next read of <p>: \`rxsem run\` stops its
command (exit 75), \`consul lock -n\` and \`consul lock\` stop their child. \`rxsem status\`
shows the sessions of the holders.

It prints the fencing-token floor: <p>/.lock's ModifyIndex after the eviction. The evicted
holder's fencing token is below it and every later holder's is above it, so a resource that
checks tokens can refuse the evicted holder's writes from now on.

Flags:
  --prefix <p>     KV prefix of the semaphore or leader lock
  --session <id>   the session id of the holder to evict: in full, or its start (such as
                   the 8 characters rxsem run and rxsem watch print; 4 at least) when no
                   other session of <p> starts the same way
  --grace <d>      ask the holder to give its slot back, and force only after <d>
                   (e.g. 30s; up to 24h; default 0: force at once)
  --reason <text>  why, shown to the holder with the request
  --json           print one JSON object instead of text:
                   {"prefix","session","lock","how","floor"} (lock is "semaphore" or
                   "leader"; how is "forced" or "given-back"; floor is a decimal string)
  -h, --help       show this help

${consulFlagHelp}

Exit status: 0 evicted; 1 error (message on stderr): bad flags, a session that is not a
holder of <p>, or a start of an id that no session or several sessions of <p> share (nothing
written), a .lock that cannot be read (never written over), Consul
unreachable or refusing.
`

export const drainUsage = `Usage: rxsem drain --prefix <p> [--limit <n>] [--json] [flags]
       rxsem drain --prefix <p> --lift [--json] [flags]

Drains the semaphore at <p>: its holders keep their slots until they release, and no one new
is admitted until the drain is lifted. The drain holds every slot itself: it makes one session
per slot of the limit, named "rxsem drain of <p>", with no TTL and no health checks (it lasts
until lifted, whatever becomes of this process), each holding its contender key <p>/<session>
with the value "rxsem drain", and adds them all to <p>/.lock's holders in one check-and-set.
The limit is not changed. Waiters, of rxsem run, the library and \`consul lock -n\`, keep
waiting while the holders are at least the limit; none of them fails. \`rxsem status\` and
\`rxsem watch\` show the drain's sessions as holders, with that value and name.

With --lift, destroys the drain's sessions (deleting their keys) and takes them out of
<p>/.lock: waiters are admitted as slots are free.

Draining a drained prefix, or lifting one that is not drained, writes nothing.

Flags:
  --prefix <p>     KV prefix of the semaphore
  -n, --limit <n>  the semaphore's limit: needed only when <p> has no .lock yet (a .lock stating
                   it is created); a .lock that states another is refused
  --lift           lift the drain instead
  --json           print one JSON object instead of text:
                   {"prefix","limit","sessions","added","holders","index"} (added is 0 when it
                   was drained already; holders counts the others, which finish), or with
                   --lift {"prefix","lifted","sessions","index"} (index is null when .lock was
                   not written)
  -h, --help       show this help

${consulFlagHelp}

Exit status: 0 drained or lifted (or already so); 1 error (message on stderr): bad flags, a
leader lock (\`consul lock\` without -n: nothing to drain, evict its holder instead), no .lock
and no --limit, a .lock that cannot be read (never written over), Consul unreachable or refusing.
`

export const doctorUsage = `Usage: rxsem doctor [--prefix <p>] [--json] [session flags] [flags]

Checks what contenders need, as they would use it, and says what to do about each finding: that
the address answers as a Consul agent; its version against the releases known to trouble
sessions, KV or blocking queries; whether it is a server or a client agent; whether ACLs are on,
Consul knows the token, and the ACL default policy (when the token may read it); with --prefix,
the token's rights to read and write <p>/ and what <p>/.lock holds; and the session a contender
would make (created, read back and destroyed), its checks, and its lock-delay against its TTL.
It leaves nothing behind: the right to write is checked with a check-and-set that cannot match.

Flags:
  --prefix <p>              KV prefix of the contenders: check the token's rights on it and its .lock
  --json                    print one JSON object:
                            {"address","prefix","agent":{"version","server","datacenter","node"},
                             "findings":[{"check","severity","found","action"}],"problems","warnings"}
                            severity is "ok", "warning" or "problem"; agent is null when unknown
  --ttl <duration>          the contenders' session TTL, 10s to 24h (default 15s)
  --lock-delay <duration>   the contenders' lock-delay, 0 to 60s (default Consul's, 15s)
  --node-check <id>         a node check of the contenders' sessions (repeat for more; default
                            serfHealth)
  --no-node-checks          sessions with no node checks (the checks: [] option)
  --service-check <id>      a service check of the contenders' sessions (repeat for more)
  -h, --help                show this help

${consulFlagHelp}

Exit status: 0 no problem (warnings may be shown); 78 at least one problem; 1 error (bad flags,
message on stderr). An agent that cannot be reached, or is not Consul, is a problem (78).
`
