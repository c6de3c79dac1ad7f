#!/usr/bin/env bash
# Replays the kernel cache's two-user threats with a second local user, as root:
#   1. a cache under a group/other-writable parent without the sticky bit is not
#      used (info says why) and `cache clear` refuses it, while the other user
#      swaps the cache for her own tree in a loop;
#   2. root's cleanup of another user's cache refuses it under the default trust,
#      and refuses a layout directory she replaced by a link to root's files, which
#      stay untouched; nothing root-owned is created in her tree;
#   3. with HCWARM_CACHE_TRUST=shared:USER root's cleanup clears her cache, and the
#      lock files it takes belong to her.
# Usage: scripts/two_user_check.sh [HCWARM_BINARY]   (default build/src/hcwarm)
# Needs root; creates the user hcwarm-peer (useradd) when missing. Prints PASS per
# check; exits 1 at the first that fails, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 0
fi
((EUID == 0)) || { echo "two_user_check.sh: run as root (it acts as root and as a second user)" >&2; exit 2; }
hcwarm=$(realpath "${1:-build/src/hcwarm}")
[[ -x $hcwarm ]] || { echo "two_user_check.sh: no hcwarm binary at $hcwarm (build first)" >&2; exit 2; }
peer=hcwarm-peer
id "$peer" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$peer"
as_peer() { setpriv --reuid="$peer" --regid="$peer" --clear-groups -- "$@"; }
version=$("$hcwarm" --version | awk '{print $2}')
key=$(printf 'a%.0s' {1..64})  # entry-shaped: a SHA-256

work=$(mktemp -d /tmp/hcwarm-two-user.XXXXXX)
chmod 0755 "$work"
swapper=
cleanup() {
  [[ -n $swapper ]] && kill "$swapper" 2>/dev/null || true
  pkill -u "$peer" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }
# A cache layout with one entry-shaped directory, made by the user running it.
make_cache() {
  local root=$1
  local ns=$root/v$version/host-test
  mkdir -p "$ns"/{entries,locks,staging,quarantine}
  printf 'Signature: 8a477f597d28d172789f06886806bc55\n' >"$root/CACHEDIR.TAG"
  mkdir "$ns/entries/$key"
  echo '{}' >"$ns/entries/$key/manifest.json"
  chmod -R go-w "$root"
}

# 1. The team scratch directory: writable by everyone, no sticky bit.
team=$work/team
mkdir "$team" && chmod 0777 "$team"
make_cache "$team/cache"
as_peer bash -c "$(declare -f make_cache); version=$version; key=$key; make_cache '$team/evil'"
setpriv --reuid="$peer" --regid="$peer" --clear-groups -- bash -c "while :; do mv -T '$team/cache' '$team/tmp' 2>/dev/null; mv -T '$team/evil' '$team/cache' 2>/dev/null;
                 mv -T '$team/cache' '$team/evil' 2>/dev/null; mv -T '$team/tmp' '$team/cache' 2>/dev/null; done" &
swapper=$!
refused=0
for i in $(seq 1 40); do
  out=$(HCWARM_CACHE_DIR=$team/cache "$hcwarm" info --json 2>&1) || true
  grep -q '"usable": false' <<<"$out" || fail "info would use the cache under $team (round $i): $out"
  rc=0
  err=$("$hcwarm" cache clear --cache-dir "$team/cache" 2>&1 >/dev/null) || rc=$?
  # Refused for the parent, or for her tree's owner when the swap has just happened.
  if [[ $rc == 1 && ($err == *"without the sticky bit"* || $err == *"owned by uid $(id -u "$peer")"*) ]]; then
    refused=$((refused + 1))
  elif [[ ! ($rc != 0 && $err == *"does not exist"*) ]]; then  # caught between two renames
    fail "cache clear under $team exited $rc (round $i): $err"
  fi
done
# No round may succeed (checked above); at least one must have met the cache itself.
((refused >= 1)) || fail "cache clear never met the cache in 40 rounds"
kill "$swapper" && wait "$swapper" 2>/dev/null || true
swapper=
[[ -d $team/cache/v$version/host-test/entries && -d $team/evil/v$version/host-test/entries ]] ||
  [[ -d $team/tmp ]] || fail "a cache under $team lost its entries"
pass "a cache under a world-writable parent without the sticky bit is refused by the runtime and by cache clear (info 40 of 40 rounds, clear $refused of 40, the rest caught between two renames, while $peer swaps it)"

# 2. Her cache, with quarantine/ replaced by a link to root's directory.
home=$work/peer-home
mkdir "$home" && chown "$peer:$peer" "$home" && chmod 0700 "$home"
as_peer bash -c "$(declare -f make_cache); version=$version; key=$key; make_cache '$home/cache'"
precious=$work/root-files
mkdir -p "$precious/$key.1.x" && echo keep >"$precious/keep"
chmod -R 0755 "$precious"
before=$(find "$precious" -printf '%p %s %u\n' | sort)
ns=$home/cache/v$version/host-test
as_peer bash -c "rmdir '$ns/quarantine' && ln -s '$precious' '$ns/quarantine'"
rc=0
err=$("$hcwarm" cache clear --cache-dir "$home/cache" 2>&1 >/dev/null) || rc=$?
[[ $rc == 1 && $err == *"owned by uid $(id -u "$peer")"* ]] || fail "root's clear of $peer's cache exited $rc: $err"
pass "root's cache clear refuses another user's cache under the default trust (exit 1, names the owner)"
rc=0
err=$(HCWARM_CACHE_TRUST=shared:$peer "$hcwarm" cache clear --cache-dir "$home/cache" 2>&1 >/dev/null) || rc=$?
[[ $rc == 1 && $err == *symlink* ]] || fail "root's clear through a symlinked quarantine/ exited $rc: $err"
for sub in "cache prune --max-size 1K" "cache verify --quarantine"; do
  rc=0
  # shellcheck disable=SC2086
  err=$(HCWARM_CACHE_TRUST=shared:$peer "$hcwarm" $sub --cache-dir "$home/cache" 2>&1 >/dev/null) || rc=$?
  [[ $rc == 1 && $err == *symlink* ]] || fail "root's $sub through a symlinked quarantine/ exited $rc: $err"
done
[[ $(find "$precious" -printf '%p %s %u\n' | sort) == "$before" ]] || fail "root's files behind the link changed"
[[ -z $(find "$home" -uid 0 ! -path "$home") ]] || fail "root created files in $peer's cache: $(find "$home" -uid 0)"
pass "clear, prune and verify --quarantine refuse a symlinked layout directory; root's files behind it are untouched"

# 3. Named shared owner: the cleanup works, and leaves her lock files hers.
as_peer bash -c "rm '$ns/quarantine' && mkdir -m 0700 '$ns/quarantine'"
HCWARM_CACHE_TRUST=shared:$peer "$hcwarm" cache clear --cache-dir "$home/cache" >/dev/null ||
  fail "root's clear with HCWARM_CACHE_TRUST=shared:$peer failed"
[[ -z $(ls -A "$ns/entries") ]] || fail "the entry is still in $ns/entries"
[[ -n $(ls -A "$ns/locks") && -z $(find "$ns/locks" ! -user "$peer") ]] || fail "lock files not owned by $peer: $(ls -ln "$ns/locks")"
pass "with HCWARM_CACHE_TRUST=shared:$peer root clears the cache and the lock files it takes are $peer's"
echo "all two-user checks passed"
