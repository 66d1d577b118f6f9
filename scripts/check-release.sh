#!/usr/bin/env bash
# The release, as a user gets it: builds the linux/amd64 and linux/arm64
# release twice and requires identical checksums, checks SHA256SUMS and
# each archived binary's ELF header, then, with no index and no registry,
# installs the linux/amd64 wheel into a fresh virtualenv and the npm
# tarballs into a fresh folder and from each runs `hostguard version` and
# a five-line program that starts its own daemon, adds and claims an item
# through it and stops it; no daemon may be left running. About two
# minutes with a cold build cache; the second build is the cache's.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
started=$(date +%s)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
v="$(cat VERSION)"
fail() {
	echo "check-release: $*" >&2
	exit 1
}

python3 scripts/release.py check-version
python3 scripts/release.py dist --platforms linux/amd64,linux/arm64 --out "$work/a" >/dev/null
python3 scripts/release.py dist --platforms linux/amd64,linux/arm64 --out "$work/b" >/dev/null
if ! diff -u "$work/a/SHA256SUMS" "$work/b/SHA256SUMS"; then
	fail "two builds of one commit differ"
fi
(cd "$work/a" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match the files"
for arch in amd64 arm64; do
	top="hostguard-$v-linux-$arch"
	tar -xzf "$work/a/$top.tar.gz" -C "$work"
	for f in hostguard LICENSE README.md hostguard.service; do
		[ -f "$work/$top/$f" ] || fail "$top.tar.gz has no $f"
	done
	python3 scripts/release.py check-binary "$work/$top/hostguard" "linux/$arch"
done
grep -q "^$top/hostguard: go" "$work/a/modules.txt" || fail "modules.txt does not list $top/hostguard"

# Only a program's own daemon may run from these folders; this finds one
# that was left behind.
leftover() {
	if pgrep -f "^$1" >/dev/null; then
		pgrep -af "^$1" >&2
		fail "a daemon was left running from $1"
	fi
}

# Python: the platform wheel, offline, into a fresh virtualenv.
if ! python3 -m venv "$work/venv"; then
	[ "${CI:-}" = "true" ] || fail "python3 cannot make a virtualenv (Debian: apt-get install python3-venv)"
	echo "check-release: installing python3-venv with apt"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
	rm -rf "$work/venv"
	python3 -m venv "$work/venv"
fi
env -u PIP_FIND_LINKS PIP_NO_INDEX=1 "$work/venv/bin/pip" install -q --no-deps \
	"$work/a/hostguard-$v-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_2_x86_64.whl"
out="$("$work/venv/bin/hostguard" version)"
case "$out" in "hostguard $v (commit "*) ;; *) fail "the wheel's hostguard version says: $out" ;; esac
cat >"$work/own.py" <<'PY'
import hostguard, sys
with hostguard.Daemon(state_dir=sys.argv[1]) as hg:
    hg.items.add(["job-1"])
    [lease] = hg.items.claim(1, 60)
    hg.items.succeed(lease)
PY
# A clean environment: the binary must come from the wheel, not PATH.
env -i HOME="$work" PATH=/usr/bin:/bin "$work/venv/bin/python" "$work/own.py" "$work/py-state"
grep -q "server: stopped" "$work/py-state/hostguard.log" || fail "the Python program's daemon did not stop"
leftover "$work/venv/bin/hostguard"

# npm: the packed tarballs, offline, with an empty cache, into a fresh folder.
mkdir "$work/node"
echo '{"private": true, "type": "module"}' >"$work/node/package.json"
(cd "$work/node" && npm install --offline --no-audit --no-fund --loglevel=error --cache "$work/npm-cache" \
	"$work/a/hostguard-$v.tgz" "$work/a/hostguard-linux-x64-$v.tgz" >/dev/null)
out="$(cd "$work/node" && ./node_modules/.bin/hostguard version)"
case "$out" in "hostguard $v (commit "*) ;; *) fail "the npm package's hostguard version says: $out" ;; esac
cat >"$work/node/own.mjs" <<'JS'
import { startDaemon } from "hostguard";
const hg = await startDaemon({ stateDir: process.argv[2] });
await hg.items.add(["job-1"]);
await hg.items.succeed((await hg.items.claim(1, 60))[0]);
await hg.stop();
JS
(cd "$work/node" && env -i HOME="$work" PATH="$(dirname "$(command -v node)"):/usr/bin:/bin" node own.mjs "$work/node-state")
grep -q "server: stopped" "$work/node-state/hostguard.log" || fail "the Node program's daemon did not stop"
leftover "$work/node/node_modules/@hostguard/linux-x64/bin/hostguard"

echo "check-release: two identical builds, checksums, headers, wheel and npm packages verified in $(($(date +%s) - started)) s"
