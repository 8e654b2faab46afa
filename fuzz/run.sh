#!/usr/bin/env bash
# Bounded fuzzing for CI: builds every cargo-fuzz target (AddressSanitizer)
# and runs each for SECONDS seconds (default 60) from the committed seed
# corpus. Exits non-zero if any target hits a crash, panic, failed invariant,
# leak, timeout or out-of-memory; the input that did it is left in
# fuzz/artifacts/<target>/. New corpus entries go to fuzz/target/ (ignored
# by git), so the committed corpus only changes on purpose.
#
# Usage: fuzz/run.sh [SECONDS]
set -euo pipefail
seconds="${1:-60}"
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "usage: fuzz/run.sh [SECONDS]" >&2; exit 2; }
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version 2>/dev/null | grep -qF "$CARGO_FUZZ_VERSION"; then
  echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

# Only the stable toolchain exists here. cargo-fuzz passes nightly flags
# (-Zsanitizer=address, sanitizer coverage); RUSTC_BOOTSTRAP=1 lets stable
# rustc accept them, and stable ships the ASan runtime.
export RUSTC_BOOTSTRAP=1

echo "== building fuzz targets"
cargo fuzz build -O

status=0
for target in $(cargo fuzz list); do
  work="fuzz/target/corpus-work/$target"
  rm -rf "$work"
  mkdir -p "$work" "fuzz/artifacts/$target"
  dict=()
  [[ -f "fuzz/$target.dict" ]] && dict=("-dict=fuzz/$target.dict")
  echo "== fuzzing $target for ${seconds}s"
  if ! cargo fuzz run -O "$target" "$work" "fuzz/corpus/$target" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}"; then
    echo "== $target FAILED; reproduce with: RUSTC_BOOTSTRAP=1 cargo fuzz run -O $target fuzz/artifacts/$target/<file>" >&2
    status=1
  fi
done
exit "$status"
