#!/usr/bin/env bash
# Finds a Consul binary and prints its absolute path on stdout (messages go to stderr).
#
# Order: $CONSUL_BIN, then `consul` on PATH, then a copy cached earlier in .cache/consul/,
# then a fresh fetch of Debian bullseye's `consul` package (1.8.7). The fetch uses a private
# sources list and private apt state folders inside .cache/, so the system's apt configuration
# is neither read for sources nor changed. Bookworm ships no consul package; bullseye does.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$root/.cache/consul"
cached_bin="$cache/root/usr/bin/consul"

say() { printf 'consul.sh: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

if [ -n "${CONSUL_BIN:-}" ]; then
  [ -x "$CONSUL_BIN" ] || fail "CONSUL_BIN=$CONSUL_BIN is not an executable file. Point CONSUL_BIN at a consul binary, or unset it to let this script find or fetch one."
  printf '%s\n' "$CONSUL_BIN"
  exit 0
fi

if on_path=$(command -v consul 2>/dev/null); then
  printf '%s\n' "$on_path"
  exit 0
fi

if [ -x "$cached_bin" ]; then
  printf '%s\n' "$cached_bin"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
  fail "no Consul binary found and this system has no apt-get/dpkg-deb to fetch one. Install Consul (https://developer.hashicorp.com/consul/install), then either put it on PATH or run: export CONSUL_BIN=/path/to/consul"
fi

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || fail "cannot verify Debian packages: $keyring is missing (apt-get install debian-archive-keyring). Or install Consul yourself and set CONSUL_BIN."

mkdir -p "$cache"
# One fetch at a time: parallel test runs wait for the first one and then reuse its copy.
exec 9>"$cache/.lock"
flock 9
if [ -x "$cached_bin" ]; then
  printf '%s\n' "$cached_bin"
  exit 0
fi

say "fetching Consul from Debian bullseye's consul package (once; cached in .cache/consul)"
apt_dir="$cache/apt"
rm -rf "$apt_dir" "$cache/root" "$cache/root.tmp"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/parts.d" "$apt_dir/download"
mirror=${CONSUL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
printf 'deb [signed-by=%s] %s bullseye main\n' "$keyring" "$mirror" >"$apt_dir/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list"
  -o "Dir::Etc::SourceParts=$apt_dir/parts.d"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::State::Status=/dev/null"
  -o "Dir::Cache=$apt_dir/cache"
  -o "APT::Sandbox::User=root"
  -o "Debug::NoLocking=1"
  -qq
)
apt-get "${apt_opts[@]}" update >&2 || fail "apt-get update for the bullseye suite failed (see above). Check that the Debian mirror is reachable, or install Consul yourself and set CONSUL_BIN."
(cd "$apt_dir/download" && apt-get "${apt_opts[@]}" download consul >&2) || fail "apt-get download consul failed (see above). Install Consul yourself and set CONSUL_BIN."
deb=$(ls "$apt_dir"/download/consul_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "apt-get download reported success but left no consul_*.deb in $apt_dir/download."
dpkg-deb -x "$deb" "$cache/root.tmp"
mv "$cache/root.tmp" "$cache/root"
rm -rf "$apt_dir"
[ -x "$cached_bin" ] || fail "the consul package did not contain usr/bin/consul."
say "cached $("$cached_bin" version | head -n 1) at $cached_bin"
printf '%s\n' "$cached_bin"
