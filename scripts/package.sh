#!/usr/bin/env bash
# Pack the board binaries that scripts/build-boards.sh left in dist/ into one release
# archive per board profile, and write dist/SHA256SUMS over the archives and binaries.
# Builds nothing: a board whose binary is missing is named, with the command that builds it.
#
#   scripts/package.sh [BOARD ...]      (default: every boards/*.conf)
#
# Each dist/yoctoclaw-<version>-<board>.tar.gz unpacks to yoctoclaw-<version>-<board>/:
#   yoctoclaw             the static binary for the board's triple
#   config-<board>.json   the board's runtime defaults (install.sh starts the home from it)
#   board.conf            the profile (install.sh checks the machine against its triple)
#   install.sh            scripts/install.sh: checks the machine and the checksum, installs
#   yoctoclaw.service     a systemd unit to adapt by hand (yoctoclaw service install writes
#                         one for the board's init system by itself)
#   README.txt            how to install, in five lines
#   SHA256SUMS            checksums of the files above
#
# It also writes dist/index.json, the release index `yoctoclaw update` reads from
# update.url (the version, and per board the archive, its SHA-256 and its signature, as
# names relative to the index), and, when MINISIGN_SECRET_KEY names a minisign secret key,
# signs each archive with the `minisign` tool into <archive>.minisig (the key's password,
# if it has one, from MINISIGN_PASSWORD).
#
# Environment: BOARDS_DIST (default dist), SOURCE_DATE_EPOCH (default: the last commit's
# time; file times in the archives, so two runs on one commit give identical archives),
# MINISIGN_SECRET_KEY, MINISIGN_PASSWORD.
# Exit status: 1 when a board named on the command line, or every board, is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIST=${BOARDS_DIST:-$ROOT/dist}
say() { echo "package: $*" >&2; }
die() { say "$*"; exit 1; }
conf_get() { sed -n "s/^$2=//p" "$1" | head -n 1; }

case ${1:-} in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac

version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n 1)
[ -n "$version" ] || die "cannot read the version from Cargo.toml"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)
fi
[ -d "$DIST" ] || die "no $DIST: build first with scripts/build-boards.sh"

named=0
boards=()
if [ $# -gt 0 ]; then
    named=1
    for b in "$@"; do
        [ -f "$ROOT/boards/$b.conf" ] || die "'$b' is not a board profile (scripts/build-boards.sh --list)"
        boards+=("$b")
    done
else
    for f in "$ROOT"/boards/*.conf; do boards+=("$(basename "$f" .conf)"); done
fi

# GNU tar can make the archive reproducible; BusyBox/BSD tar still makes a valid one.
tar_opts=()
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
    tar_opts=(--sort=name --owner=0 --group=0 --numeric-owner "--mtime=@$SOURCE_DATE_EPOCH")
fi

made=() missing=()
for b in "${boards[@]}"; do
    conf=$ROOT/boards/$b.conf
    triple=$(conf_get "$conf" triple)
    bin=$DIST/$triple/yoctoclaw
    if [ ! -f "$bin" ]; then
        missing+=("$b: no $bin (build it: scripts/build-boards.sh $b)")
        continue
    fi
    name=yoctoclaw-$version-$b
    stage=$(mktemp -d "${TMPDIR:-/tmp}/yc-package.XXXXXX")
    trap 'rm -rf "$stage"' EXIT
    top=$stage/$name
    mkdir -p "$top"
    cp "$bin" "$top/yoctoclaw"
    chmod 0755 "$top/yoctoclaw"
    if [ -f "$DIST/$triple/config-$b.json" ]; then
        cp "$DIST/$triple/config-$b.json" "$top/config-$b.json"
    else
        say "$b: no $DIST/$triple/config-$b.json from the build; writing it from boards/$b.conf"
        conf_get "$conf" config > "$top/config-$b.json"
    fi
    cp "$conf" "$top/board.conf"
    cp "$ROOT/scripts/install.sh" "$top/install.sh"
    chmod 0755 "$top/install.sh"
    cp "$ROOT/boards/yoctoclaw.service" "$top/yoctoclaw.service"
    cat > "$top/README.txt" <<EOF
yoctoclaw $version for $(conf_get "$conf" title)
Board profile $b, binary $triple (static).

On the board:
  tar -xzf $name.tar.gz && cd $name
  sh install.sh                 # checks the board and the checksum, installs, runs onboard
                                # (root: /usr/local/bin; others: ~/.local/bin; --help)
  echo 'YOCTOCLAW_API_KEY=sk-...' >> ~/.yoctoclaw/secrets.env && chmod 600 ~/.yoctoclaw/secrets.env
  yoctoclaw doctor
  sudo yoctoclaw service install      # start at boot (systemd, OpenRC, BusyBox init, SysV)

More (configuration, services, troubleshooting): README.md and docs/boards.md in the source.
EOF
    ( cd "$top" && LC_ALL=C sha256sum board.conf "config-$b.json" install.sh README.txt yoctoclaw yoctoclaw.service > SHA256SUMS )
    find "$top" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} + 2>/dev/null || true
    out=$DIST/$name.tar.gz
    if ! ( cd "$stage" && tar -cf - "${tar_opts[@]}" "$name" | gzip -n -9 > "$out.tmp" ); then
        rm -f "$out.tmp"
        die "cannot write $out (disk full?)"
    fi
    mv -f "$out.tmp" "$out"
    rm -rf "$stage"
    trap - EXIT
    made+=("$out")
    say "wrote $out ($(wc -c < "$out") bytes)"
    if [ -n "${MINISIGN_SECRET_KEY:-}" ]; then
        command -v minisign >/dev/null 2>&1 || die "MINISIGN_SECRET_KEY is set but minisign is not installed"
        rm -f "$out.minisig"
        if [ -n "${MINISIGN_PASSWORD:-}" ]; then
            printf '%s\n' "$MINISIGN_PASSWORD" | minisign -S -s "$MINISIGN_SECRET_KEY" -m "$out" -t "yoctoclaw $version $b" >/dev/null
        else
            minisign -S -s "$MINISIGN_SECRET_KEY" -m "$out" -t "yoctoclaw $version $b" </dev/null >/dev/null
        fi || die "cannot sign $out with $MINISIGN_SECRET_KEY"
        say "signed $out.minisig"
    fi
done

# The release index (yoctoclaw update): every archive of this version in dist/.
{
    printf '{"version": "%s",\n "boards": {' "$version"
    sep=""
    for f in "$ROOT"/boards/*.conf; do
        b=$(basename "$f" .conf)
        a=yoctoclaw-$version-$b.tar.gz
        [ -f "$DIST/$a" ] || continue
        sum=$(sha256sum "$DIST/$a" | cut -d' ' -f1)
        printf '%s\n  "%s": {"url": "%s", "sha256": "%s", "minisig": "%s.minisig"}' "$sep" "$b" "$a" "$sum" "$a"
        sep=","
    done
    printf '}}\n'
} > "$DIST/index.json.tmp" && mv -f "$DIST/index.json.tmp" "$DIST/index.json"
say "release index: $DIST/index.json"

# Checksums over every binary, config and archive in dist/.
( cd "$DIST" && { find . -mindepth 2 -maxdepth 2 -type f \( -name yoctoclaw -o -name 'config-*.json' \);
                  find . -maxdepth 1 -type f -name 'yoctoclaw-*.tar.gz'; } \
      | sed 's|^\./||' | LC_ALL=C sort | xargs -r sha256sum > SHA256SUMS.tmp && mv -f SHA256SUMS.tmp SHA256SUMS )
say "checksums: $DIST/SHA256SUMS"

for m in "${missing[@]:-}"; do
    [ -n "$m" ] && say "missing: $m"
done
if [ ${#made[@]} -eq 0 ]; then die "no archive made: nothing built in $DIST"; fi
if [ $named = 1 ] && [ ${#missing[@]} -gt 0 ]; then exit 1; fi
exit 0
