#!/usr/bin/env bash
# The release's artifacts for one target, as the release workflow builds them on each runner:
#
#   .ci/release-build.sh OUT_DIR [TARGET]
#
# TARGET is a Rust target triple, by default this machine's (Linux or macOS; Windows is not
# supported: plancheck runs PostgreSQL's server binaries as a Unix user of their own). It writes
# into OUT_DIR:
#   plancheck-VERSION-py3-none-PLATFORM.whl   the Python wheel (maturin; on Linux built with zig
#                                              against glibc 2.17, tagged manylinux2014)
#   plancheck-VERSION-TARGET.tar.gz            the binary in a folder of that name, with README.md
#   plancheck-PLATFORM-VERSION.tgz             the npm package of that platform, the binary inside
#   plancheck-VERSION.tgz                      the npm launcher (with the Linux x86_64 target only:
#                                              it is the same on every platform)
#   SHA256SUMS                                 the sha256 of each file above, as sha256sum -c reads
# and refuses to finish when the binary needs a newer glibc than 2.17 or an npm package would be
# packed without its binary. The tools come from PyPI at pinned versions with their hashes.
# PLANCHECK_REPOSITORY_URL (https://…, as the release workflow sets it) is written into the npm
# packages' `repository`, which npm checks a provenance statement against.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: .ci/release-build.sh OUT_DIR [TARGET]" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
target=${2:-$(rustc -vV | sed -n 's/^host: //p')}

version=$(sed -n '/^\[package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$version" ] || { echo "no version in Cargo.toml's [package]" >&2; exit 1; }

case "$target" in
    x86_64-unknown-linux-gnu) npm_platform=linux-x64 zig=1 ;;
    aarch64-unknown-linux-gnu) npm_platform=linux-arm64 zig=1 ;;
    x86_64-apple-darwin) npm_platform=darwin-x64 zig= ;;
    aarch64-apple-darwin) npm_platform=darwin-arm64 zig= ;;
    *) echo "release-build: no release for target $target (Linux and macOS on x86_64 and aarch64)" >&2
       exit 2 ;;
esac

# Every npm package.json says the crate's version: a release never mixes two.
for manifest in npm/*/package.json; do
    grep -q "\"$version\"" "$manifest" \
        || { echo "release-build: $manifest does not say version $version (Cargo.toml's)" >&2; exit 1; }
    if grep -q '"0\.' "$manifest" && grep -o '"[0-9][0-9.]*"' "$manifest" | grep -vq "\"$version\""; then
        echo "release-build: $manifest names a version other than $version" >&2; exit 1
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== tools: maturin${zig:+ and zig} from PyPI, pinned with their hashes"
python3 -m venv "$work/tools"
"$work/tools/bin/pip" install --quiet --require-hashes --only-binary :all: \
    -r .ci/release-tools.txt
rustup target add "$target" >/dev/null 2>&1 || true

echo "== the wheel and the binary for $target"
build=(build --release --locked --target "$target" -o "$work/wheel")
if [ -n "$zig" ]; then
    build+=(--zig --compatibility manylinux2014)
    export PATH="$work/tools/bin:$PATH"
fi
"$work/tools/bin/maturin" "${build[@]}"
wheels=("$work"/wheel/plancheck-"$version"-*.whl)
[ ${#wheels[@]} -eq 1 ] && [ -f "${wheels[0]}" ] \
    || { echo "release-build: expected one wheel, found: ${wheels[*]}" >&2; exit 1; }
wheel=${wheels[0]}

# The binary is the one inside the wheel: every artifact ships the same build.
binary="$work/plancheck"
"$work/tools/bin/python" - "$wheel" "$version" "$binary" <<'PY'
import sys, zipfile
wheel, version, dest = sys.argv[1:]
name = f"plancheck-{version}.data/scripts/plancheck"
with zipfile.ZipFile(wheel) as z, open(dest, "wb") as f:
    f.write(z.read(name))
PY
chmod 755 "$binary"

if [ -n "$zig" ]; then
    # The newest glibc symbol version the binary needs: 2.17 at most (manylinux2014).
    newest=$(objdump -T "$binary" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
    if [ "$(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V | tail -1)" != GLIBC_2.17 ]; then
        echo "release-build: the binary needs $newest, newer than glibc 2.17" >&2; exit 1
    fi
    echo "the binary needs glibc ${newest#GLIBC_} or later"
fi
if [ "$target" = "$(rustc -vV | sed -n 's/^host: //p')" ]; then
    "$binary" --version
fi
cp "$wheel" "$out/"

echo "== the .tar.gz"
name="plancheck-$version-$target"
mkdir "$work/$name"
cp "$binary" README.md CHANGELOG.md "$work/$name/"
tar -C "$work" -czf "$out/$name.tar.gz" "$name"

echo "== the npm packages"
cp -R npm "$work/npm"
if [ -n "${PLANCHECK_REPOSITORY_URL:-}" ]; then
    case "$PLANCHECK_REPOSITORY_URL" in
        https://*) ;;
        *) echo "release-build: PLANCHECK_REPOSITORY_URL is not an https:// address" >&2; exit 2 ;;
    esac
    for manifest in "$work"/npm/*/package.json; do
        node -e 'const fs = require("fs"), [file, url] = process.argv.slice(1);
            const m = JSON.parse(fs.readFileSync(file, "utf8"));
            m.repository = { type: "git", url: "git+" + url + ".git" };
            fs.writeFileSync(file, JSON.stringify(m, null, 2) + "\n");' "$manifest" "$PLANCHECK_REPOSITORY_URL"
    done
fi
mkdir -p "$work/npm/$npm_platform/bin"
cp "$binary" "$work/npm/$npm_platform/bin/plancheck"
packs=("$work/npm/$npm_platform")
[ "$target" = x86_64-unknown-linux-gnu ] && packs+=("$work/npm/plancheck")
for dir in "${packs[@]}"; do
    # npm pack runs the package's prepack (npm/check-binary.js): no binary, no package.
    tarball=$(cd "$dir" && npm pack --silent --pack-destination "$out" | tail -1)
    # And checked here too, whatever npm's scripts setting: the binary is in the platform's.
    if [ "$dir" = "$work/npm/$npm_platform" ]; then
        listing=$(tar -tzf "$out/$tarball")
        grep -qx 'package/bin/plancheck' <<<"$listing" \
            || { echo "release-build: $tarball has no bin/plancheck" >&2; exit 1; }
    fi
    echo "$tarball"
done

echo "== SHA256SUMS"
cd "$out"
rm -f SHA256SUMS
files=()
for f in *; do
    [ -f "$f" ] && files+=("$f")
done
if command -v sha256sum >/dev/null; then
    sha256sum "${files[@]}" >SHA256SUMS
else
    shasum -a 256 "${files[@]}" >SHA256SUMS
fi
cat SHA256SUMS
cd "$root"
