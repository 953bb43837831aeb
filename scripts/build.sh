#!/usr/bin/env bash
# Configures and builds tfm. Usage: scripts/build.sh [Release|Debug|RelWithDebInfo] [cmake args...]
# The build directory is build/ (override with BUILD_DIR); TARGET=tfm builds only the command.
set -euo pipefail
cd "$(dirname "$0")/.."
type=${1:-Release}
shift || true
build_dir=${BUILD_DIR:-build}
# ccache (CMakeLists.txt uses it when installed): paths under the parent directory hashed as
# relative ones, so checkouts side by side share the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="$type" "$@"
cmake --build "$build_dir" -j"$(nproc)" ${TARGET:+--target "$TARGET"}
