# rxsem-watchdog.sh: the watchdog of `rxsem run` (see docs/cli.md, "The watchdog").
#
# `rxsem run` starts this script with bash, in a session and process group of its own, before it
# starts its command. It stops the command's process group when rxsem can no longer guard it:
#
#   - rxsem ended (killed, crashed) while the command ran: its end of our stdin closes (EOF);
#   - the lease deadline comes without a new one from rxsem (rxsem frozen: SIGSTOP, swapped out):
#     past it, Consul may give the slot to someone else.
#
# Stopping is SIGTERM to the group, then SIGKILL after the grace given as $1 (milliseconds). For
# the deadline, the SIGTERM goes out that grace before it, so that the group is gone by then.
#
# rxsem writes one line per event on our stdin, each with one write(2):
#
#   guard <pgid> <deadline-ms>   guard this process group; it must be gone by this deadline (epoch ms)
#   deadline <deadline-ms>       the lease was renewed: the new deadline
#   done                         rxsem itself ended the command: exit without stopping anything
#
# We answer on stdout: `ready` once running, and `fired <why>` just before stopping the group
# (`rxsem-ended` or `lease-expired`), so that rxsem, if it still runs, can tell why its command
# ended. Human messages go to stderr, which is rxsem's.
#
# The watchdog ends by itself once the command's group is gone (checked every second while idle).
# It ignores SIGINT, SIGTERM and SIGHUP: those are rxsem's to handle (a service manager that stops
# everything at once must not cut the command's --grace short); only SIGKILL ends it, which rxsem
# notices and treats as the loss of its guard.
#
# Needs bash 5 or later ($EPOCHREALTIME, fractional `read -t`). Costs no fork while it waits.

set -u
trap '' PIPE INT TERM HUP

grace_ms=${1:-500}
# How often an idle watchdog checks that the command's group still exists.
check_ms=1000

if ((BASH_VERSINFO[0] < 5)); then
  echo "unsupported bash ${BASH_VERSION}"
  exit 3
fi

# Epoch milliseconds in $now, without a fork. $EPOCHREALTIME may use the locale's decimal comma.
now_ms() {
  local micros=${EPOCHREALTIME//[!0-9]/}
  now=$((micros / 1000))
}

# Is process group $pgid still there? A group that exists but refuses our signals (EPERM: a member
# changed its user) counts as there.
group_alive() {
  kill -0 -- "-$pgid" 2>/dev/null && return 0
  local why
  why=$(kill -0 -- "-$pgid" 2>&1)
  [[ $why == *"not permitted"* ]]
}

# Stops the group: `fired $1` to rxsem, $2 to stderr, SIGTERM, SIGKILL after the grace.
fire() {
  echo "fired $1" 2>/dev/null
  echo "rxsem: watchdog: $2: stopping the command (SIGTERM to process group $pgid, SIGKILL after ${grace_ms} ms)" >&2
  kill -TERM -- "-$pgid" 2>/dev/null
  local started
  now_ms
  started=$now
  while kill -0 -- "-$pgid" 2>/dev/null; do
    now_ms
    if ((now - started >= grace_ms)); then
      kill -KILL -- "-$pgid" 2>/dev/null
      break
    fi
    sleep 0.05 2>/dev/null
  done
  exit 2
}

# Reads one line from rxsem into $line, waiting at most $1 seconds (none: for ever). A read that
# times out in the middle of a line (a loaded machine can stop us between two bytes of it) keeps
# what it got in $partial, and the next read completes that line instead of starting anew.
partial=''
read_line() {
  local got status
  IFS= read -r ${1:+-t "$1"} got
  status=$?
  if ((status == 0)); then
    line=$partial$got
    partial=''
  else
    partial+=$got
  fi
  return "$status"
}
echo ready
pgid=''
deadline=0
while :; do
  line=''
  if [[ -z $pgid ]]; then
    # Nothing to guard yet: wait for rxsem's first line, however long it takes.
    read_line '' || exit 0
  else
    now_ms
    left=$((deadline - grace_ms - now))
    ((left > check_ms)) && left=$check_ms
    # Even at the deadline, wait a moment for a line rxsem already sent: it may extend it.
    ((left < 1)) && left=1
    printf -v timeout '%d.%03d' $((left / 1000)) $((left % 1000))
    if read_line "$timeout"; then
      :
    elif (($? > 128)); then
      # Timed out: nothing from rxsem. Has the deadline come? Is there still a command?
      now_ms
      if ((deadline - grace_ms - now <= 0)); then
        fire lease-expired "the lease deadline is ${grace_ms} ms away and rxsem (pid $PPID) has not renewed the lease; is it stopped?"
      fi
      group_alive || exit 0
      continue
    else
      fire rxsem-ended "rxsem (pid $PPID) ended while its command ran"
    fi
  fi
  IFS=' ' read -r cmd arg1 arg2 <<<"$line"
  case $cmd in
    guard)
      # A pgid of 0 or 1 would make `kill -- -$pgid` reach our own group or every process.
      if [[ $arg1 =~ ^[1-9][0-9]*$ && $arg1 -gt 1 && $arg2 =~ ^[0-9]+$ ]]; then
        pgid=$arg1 deadline=$arg2
      else
        echo "rxsem: watchdog: ignored a bad guard line from rxsem: $arg1 $arg2" >&2
      fi
      ;;
    deadline) [[ $arg1 =~ ^[0-9]+$ ]] && deadline=$arg1 ;;
    done) exit 0 ;;
    *) echo "rxsem: watchdog: ignored an unknown line from rxsem: $cmd $arg1 $arg2" >&2 ;;
  esac
done
