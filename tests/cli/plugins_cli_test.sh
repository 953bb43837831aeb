#!/usr/bin/env bash
# The optional parts are plugins (src/tfm/core/plugin.h): `tfm` links no CUDA or MPI library, the
# plugins link theirs and export their entry point alone, and asking for a cuda device or several
# ranks without a plugin (or without a library a plugin needs, or with a plugin that refuses this
# tfm) is a clear error naming what is missing. Plugins stand in where the real ones are not
# built: small shared libraries compiled here.
# Usage: plugins_cli_test.sh TFM_BINARY BUILD_DIR CUDA_ENABLED(ON|OFF) MPI_ENABLED(ON|OFF)
set -u
tfm=$1
build=$2
cuda=$3
mpi=$4
source "$(dirname "$0")/lib.sh"

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
exported() { nm -D --defined-only "$1" | awk '{print $3}'; }

# tfm itself needs neither CUDA's libraries nor MPI's.
deps=$(needed "$tfm")
[[ -n $deps ]] && ! grep -Eq '^lib(cublas|cudart|cuda|mpi|open-rte|open-pal)' <<<"$deps" && ok ||
  bad "tfm links an optional library: $(tr '\n' ' ' <<<"$deps")"
# Each plugin that was built links its library and exports only tfm_plugin_*.
check_plugin() {
  local file=$build/$1 lib=$2
  [[ -f $file ]] || { bad "$file was not built"; return; }
  needed "$file" | grep -q "^$lib" && ok ||
    bad "$file does not link $lib: $(needed "$file" | tr '\n' ' ')"
  local other
  other=$(exported "$file" | grep -v '^tfm_plugin_')
  [[ -z $other ]] && ok || bad "$file exports more than its entry point: $(head -3 <<<"$other")"
}
[[ $cuda == ON ]] && check_plugin libtfm_cuda.so libcublasLt
[[ $mpi == ON ]] && check_plugin libtfm_mpi.so libmpi

toy_corpus 5 40
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 36 --out "$tmp/voc" >/dev/null ||
  bad "tfm vocab failed"
train=("$tfm" train --train-src "$tmp/train.de" --train-trg "$tmp/train.en" --vocab "$tmp/voc.model"
       --preset tiny --max-updates 1 --threads 1)
# refused DIR CUDA_ERROR MPI_ERROR: with the plugins looked for in DIR alone, `tfm train --device
# cuda` fails saying CUDA_ERROR, and as one of two ranks MPI_ERROR (no model directory made).
refused() {
  local n=$((++runs))
  TFM_PLUGIN_PATH=$1 expect_error "$2" "${train[@]:1}" --model "$tmp/c$n" --device cuda
  OMPI_COMM_WORLD_SIZE=2 TFM_PLUGIN_PATH=$1 expect_error "$3" "${train[@]:1}" --model "$tmp/r$n"
  [[ ! -e $tmp/r$n ]] && ok || bad "a refused rank created its model directory"
}
runs=0

# No plugin where TFM_PLUGIN_PATH points (it replaces the default places).
mkdir -p "$tmp/empty"
refused "$tmp/empty" \
  "--device cuda is not available: no CUDA backend: libtfm_cuda.so not found (looked in $tmp/empty)" \
  "started as one of 2 processes (mpirun/srun), but there is no MPI transport: libtfm_mpi.so not"

# A plugin whose own library is missing: the error names that library.
mkdir -p "$tmp/dep" "$tmp/mock" "$tmp/refuse"
echo 'int tfm_test_dep(void) { return 1; }' >"$tmp/dep.c"
cat >"$tmp/mock.c" <<'EOF'
int tfm_test_dep(void);
const char* tfm_plugin_cuda_backend(void) { return tfm_test_dep() ? "x" : 0; }
void* tfm_plugin_mpi_world(void) { return tfm_test_dep() ? (void*)0 : (void*)0; }
EOF
if gcc -shared -fPIC -o "$tmp/dep/libtfm_test_dep.so" "$tmp/dep.c" &&
   gcc -shared -fPIC -o "$tmp/mock/libtfm_cuda.so" "$tmp/mock.c" -L"$tmp/dep" -ltfm_test_dep &&
   cp "$tmp/mock/libtfm_cuda.so" "$tmp/mock/libtfm_mpi.so"; then
  rm "$tmp/dep/libtfm_test_dep.so"
  refused "$tmp/mock" \
    "no CUDA backend: $tmp/mock/libtfm_cuda.so cannot be loaded: libtfm_test_dep.so: cannot open" \
    "no MPI transport: $tmp/mock/libtfm_mpi.so cannot be loaded: libtfm_test_dep.so: cannot open"
  # A plugin that loads but refuses this tfm (another version or table): its reason is told.
  echo 'const char* tfm_plugin_cuda_backend(void* t, const char* s, const char* v) {
          return "built for tfm 9.9"; }' >"$tmp/refuse.c"
  gcc -shared -fPIC -o "$tmp/refuse/libtfm_cuda.so" "$tmp/refuse.c" &&
    TFM_PLUGIN_PATH=$tmp/refuse expect_error \
      "no CUDA backend: $tmp/refuse/libtfm_cuda.so cannot be used: built for tfm 9.9" \
      "${train[@]:1}" --model "$tmp/m5" --device cuda
else
  bad "gcc could not build the stand-in plugins"
fi

# The real CUDA plugin is found beside tfm: without a GPU the error is the CUDA runtime's reason,
# not a missing backend; with one the command trains.
if [[ $cuda == ON ]]; then
  if "${train[@]}" --model "$tmp/m6" --device cuda >/dev/null 2>"$tmp/err"; then
    ok
  else
    grep -q "device cuda is not available" "$tmp/err" && ! grep -q "no CUDA backend" "$tmp/err" &&
      ok || bad "tfm with its CUDA plugin: $(cat "$tmp/err")"
  fi
fi
finish plugins_cli
