#!/usr/bin/env bash
# Builds a crate that is not a workspace member against the published crates as they would be
# uploaded: what a new user's `cargo add` gets.
#
#   scripts/package-check.sh
#
# 1. `cargo package` for every published crate (the .crate files under target/package/), unpacked
#    under target/package-check/crates/: only what the packages contain, none of the workspace.
# 2. A throwaway crate (target/package-check/user, its own workspace) depending on all five,
#    with `[patch.crates-io]` pointing their dependencies on each other at the unpacked packages,
#    whose src/main.rs is the Quick start of tool-runtime's README, taken from the package.
# 3. `cargo run` of it twice: with every crate's default features, and with
#    `default-features = false` on every one. Both share one target directory.
#
# Packaging is unverified (`--no-verify`): the build in step 3 compiles every packaged crate from
# its unpacked files, with each feature set, which is what verification would check, and more.
# The workspace's Cargo.lock is copied into the throwaway crate, so it builds the versions the
# workspace tests.
set -euo pipefail
cd "$(dirname "$0")/.."

CRATES=(tool-wire tool-runtime-macros tool-runtime tool-providers tool-server tool-mcp)
OUT=target/package-check
VERSION="$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "tool-runtime"))')"

echo "==> packaging ${CRATES[*]} (version $VERSION)"
pkg_args=()
for crate in "${CRATES[@]}"; do pkg_args+=(-p "$crate"); done
# --allow-dirty: what is checked is the tree as it is; publishing itself refuses a dirty tree.
cargo package --no-verify --allow-dirty --quiet "${pkg_args[@]}"

rm -rf "$OUT/crates"
mkdir -p "$OUT/crates" "$OUT/user/src"
for crate in "${CRATES[@]}"; do
  file="target/package/$crate-$VERSION.crate"
  tar -xzf "$file" -C "$OUT/crates"
  printf '  %-22s %6s KiB, %4s files\n' "$crate" "$(($(stat -c %s "$file") / 1024))" \
    "$(tar -tzf "$file" | wc -l)"
  # Every published crate carries both licence texts.
  for licence in LICENSE-MIT LICENSE-APACHE; do
    if [ ! -s "$OUT/crates/$crate-$VERSION/$licence" ]; then
      echo "error: the $crate package has no $licence" >&2
      exit 1
    fi
  done
done

# The Quick start: the first ```rust block after "## Quick start" in the packaged README, with
# rustdoc's hidden-line markers ("# ") removed.
python3 - "$OUT/crates/tool-runtime-$VERSION/README.md" "$OUT/user/src/main.rs" <<'EOF'
import re
import sys

text = open(sys.argv[1]).read()
section = text.split("\n## Quick start\n", 1)
if len(section) != 2:
    sys.exit("package-check: tool-runtime's README has no `## Quick start` section")
block = re.search(r"^```rust\n(.*?)^```", section[1], re.S | re.M)
if not block:
    sys.exit("package-check: the Quick start has no ```rust block")
lines = []
for line in block.group(1).splitlines():
    if line == "#":
        line = ""
    elif line.startswith("# "):
        line = line[2:]
    lines.append(line)
code = "\n".join(lines) + "\n"
if "fn main" not in code:
    sys.exit("package-check: the Quick start has no `fn main`")
open(sys.argv[2], "w").write("// The Quick start of tool-runtime's README, as packaged.\n" + code)
EOF

manifest() {
  local deps_options="$1"
  cat <<EOF
[package]
name = "package-check-user"
version = "0.0.0"
edition = "2024"
publish = false

# Its own workspace: a user's crate, not a member of this one.
[workspace]

[dependencies]
tokio = { version = "1", features = ["rt", "macros"] }
EOF
  for crate in "${CRATES[@]}"; do
    [ "$crate" = tool-runtime-macros ] && continue
    echo "$crate = { version = \"$VERSION\"$deps_options }"
  done
  echo
  echo "[patch.crates-io]"
  for crate in "${CRATES[@]}"; do
    echo "$crate = { path = \"../crates/$crate-$VERSION\" }"
  done
  cat <<EOF

[profile.dev]
debug = false
EOF
}

run_user() {
  local label="$1" options="$2"
  echo "==> $label: building the packaged crates and running the Quick start"
  manifest "$options" >"$OUT/user/Cargo.toml"
  cp Cargo.lock "$OUT/user/Cargo.lock"
  local started=$SECONDS
  (cd "$OUT/user" && CARGO_TARGET_DIR=../target cargo run --quiet)
  echo "    ok ($((SECONDS - started)) s)"
}

run_user "default features" ""
run_user "default-features = false" ", default-features = false"
echo "package-check: every published crate builds from its package, with and without default features"
