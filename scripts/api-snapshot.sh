#!/usr/bin/env bash
# The public API of each published crate, as committed under api/<crate>.txt, against the code.
#
#   scripts/api-snapshot.sh          check: exit 1 with the differences if the API changed
#   scripts/api-snapshot.sh update   rewrite api/*.txt from the code (commit them with the change)
#   scripts/api-snapshot.sh toolchain   install the pinned nightly if missing and print its name
#                                       (CI's docs.rs-like build uses the same one)
#
# rustdoc writes each crate's documentation as JSON (with every feature, as docs.rs builds it);
# scripts/api-list.py reduces it to one line per public item with its signature. A change to the
# public surface, wanted or not, then shows in review as a change to api/*.txt.
#
# rustdoc's JSON output is unstable: its format changes between nightlies, so the toolchain is
# pinned (API_TOOLCHAIN, default below) to keep the lists comparable; moving it may reword lines
# without any change to the API (run `update` and check that the diff is only that).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE="${1:-check}"
TOOLCHAIN="${API_TOOLCHAIN:-nightly-2026-05-20}"
CRATES=(tool-wire tool-runtime-macros tool-runtime tool-providers tool-server tool-mcp)

case "$MODE" in
  check | update | toolchain) ;;
  *) sed -n '2,15p' "$0" >&2; exit 2 ;;
esac

if ! cargo "+$TOOLCHAIN" --version >/dev/null 2>&1; then
  rustup toolchain install "$TOOLCHAIN" --profile minimal >&2
fi
if [ "$MODE" = toolchain ]; then
  echo "$TOOLCHAIN"
  exit 0
fi

pkg_args=()
for crate in "${CRATES[@]}"; do pkg_args+=(-p "$crate"); done
RUSTDOCFLAGS="--cfg docsrs -Z unstable-options --output-format json" \
  cargo "+$TOOLCHAIN" doc --quiet --all-features --no-deps "${pkg_args[@]}"

OUT=target/api
mkdir -p "$OUT" api
changed=()
for crate in "${CRATES[@]}"; do
  python3 scripts/api-list.py "target/doc/${crate//-/_}.json" >"$OUT/$crate.txt"
  if [ "$MODE" = update ]; then
    cp "$OUT/$crate.txt" "api/$crate.txt"
    printf '  %-22s %5s items\n' "$crate" "$(wc -l <"api/$crate.txt")"
  elif ! diff -u "api/$crate.txt" "$OUT/$crate.txt"; then
    changed+=("$crate")
  fi
done

if [ "${#changed[@]}" -gt 0 ]; then
  cat >&2 <<EOF
api-snapshot: the public API of ${changed[*]} differs from api/ (diff above: - committed, + code).
If the change is intended, refresh the lists with \`scripts/api-snapshot.sh update\`, commit
api/*.txt with the change, and note it in CHANGELOG.md; otherwise restore what was removed.
EOF
  exit 1
fi
[ "$MODE" = check ] && echo "api-snapshot: the public API of every published crate matches api/"
exit 0
