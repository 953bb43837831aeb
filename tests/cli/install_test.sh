#!/usr/bin/env bash
# The installed package: `cmake --install` into a temporary prefix puts the public headers alone
# under include/tfm/, and examples/translate configures and builds against it with
# find_package(tfm), and again with pkg-config's tfm.pc; both binaries translate a tiny model
# exactly as `tfm translate` does. examples/train builds too and trains the weights `tfm train`
# trains. Neither those programs nor `pkg-config --cflags tfm` need CUDA's or MPI's libraries or
# headers: the plugins that were built are installed beside libtfm and opened only when asked for.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
source "$(dirname "$0")/lib.sh"
prefix="$tmp/prefix"
tfm="$build/tfm"

if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  bad "cmake --install failed: $(tail -5 "$tmp/install.log")"
  finish install
  exit
fi
[[ -f "$prefix/include/tfm/translator.h" && -f "$prefix/lib/cmake/tfm/tfmConfig.cmake" &&
   -f "$prefix/lib/pkgconfig/tfm.pc" && -x "$prefix/bin/tfm" ]] && ok ||
  bad "install tree lacks files: $(cd "$prefix" && find . -maxdepth 3 | sort | tr '\n' ' ')"
extra=$(cd "$prefix/include/tfm" && find . -mindepth 1 ! -name '*.h' -o -type d | head -3)
[[ -z $extra ]] && ok || bad "include/tfm holds more than the public headers: $extra"
ls "$prefix"/lib/libtfm.* >/dev/null 2>&1 && ok || bad "no libtfm in $prefix/lib"
for plugin in "$build"/libtfm_cuda.so "$build"/libtfm_mpi.so; do
  [[ ! -f $plugin ]] || [[ -f $prefix/lib/$(basename "$plugin") ]] && ok ||
    bad "$(basename "$plugin") was built but not installed in $prefix/lib"
done
cflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags tfm)
! grep -Eqi 'mpi|cuda' <<<"$cflags" && ok || bad "pkg-config --cflags tfm: $cflags"

# find_package(tfm) → tfm::tfm.
if cmake -S "$src/examples/translate" -B "$tmp/ex" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCMAKE_BUILD_TYPE=Release >"$tmp/ex.log" 2>&1 &&
   cmake --build "$tmp/ex" -j 2 >>"$tmp/ex.log" 2>&1; then
  ok
else
  bad "examples/translate does not build against the install: $(tail -15 "$tmp/ex.log")"
fi
# pkg-config → the same program by hand.
if PKG_CONFIG_PATH="$prefix/lib/pkgconfig" g++ -std=c++20 -O1 -o "$tmp/ex_pc" \
     "$src/examples/translate/main.cpp" \
     $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags tfm) \
     $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --libs --static tfm) \
     >"$tmp/pc.log" 2>&1; then
  ok
else
  bad "examples/translate does not build with pkg-config tfm: $(tail -15 "$tmp/pc.log")"
fi

# A tiny model with a vocabulary (a toy word-for-word corpus), then the same translations.
toy_corpus 7 100
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null 2>&1 &&
  "$tfm" train --model "$tmp/m" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
    --vocab "$tmp/voc.model" --preset tiny --batch-tokens 200 --max-updates 20 --save-every 0 \
    --valid-every 0 --keep-last 0 --threads 1 --seed 3 >/dev/null 2>"$tmp/err" ||
  bad "making the tiny model failed: $(cat "$tmp/err")"
{ head -n 5 "$tmp/train.de"; echo; sed -n 6,9p "$tmp/train.de"; } >"$tmp/in"
"$tfm" translate --model "$tmp/m" --beam-size 2 --precision auto <"$tmp/in" >"$tmp/want" \
  2>"$tmp/err" || bad "tfm translate failed: $(cat "$tmp/err")"
[[ $(wc -l <"$tmp/want") -eq 10 && -n $(head -c 1 "$tmp/want") ]] && ok ||
  bad "tfm translate gave $(wc -l <"$tmp/want") lines"
# The installed tfm finds the installed CUDA plugin (bin/ → lib/): without a GPU it says why there
# is no device, not that the backend is missing.
if [[ -f $build/libtfm_cuda.so ]]; then
  if ! "$prefix/bin/tfm" translate --model "$tmp/m" --device cuda <"$tmp/in" >/dev/null 2>"$tmp/err"
  then
    ! grep -q "no CUDA backend" "$tmp/err" && ok || bad "installed tfm: $(cat "$tmp/err")"
  fi
fi
optional='^lib(cublas|cudart|cuda|mpi|open-rte|open-pal)'
for exe in "$tmp/ex/translate" "$tmp/ex_pc"; do
  [[ -x $exe ]] || continue
  deps=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  ! grep -Eq "$optional" <<<"$deps" && ok || bad "$exe links $(grep -E "$optional" <<<"$deps")"
  # Its RUNPATH names the install's lib/, where its (static) libtfm looks for the plugins.
  if ls "$prefix"/lib/libtfm_*.so >/dev/null 2>&1; then
    runpath=$(readelf -d "$exe" | sed -n 's/.*R[UN]*PATH.*\[\(.*\)\]/\1/p' | tr ':' '\n')
    while read -r d; do [[ -n $d ]] && realpath -m "$d"; done <<<"$runpath" |
      grep -qxF "$(realpath "$prefix/lib")" && ok || bad "$exe has no RUNPATH to $prefix/lib: $runpath"
  fi
  if "$exe" "$tmp/m" 2 <"$tmp/in" >"$tmp/got" 2>"$tmp/err"; then
    cmp -s "$tmp/want" "$tmp/got" && ok || bad "$exe differs from tfm translate: $(diff "$tmp/want" "$tmp/got" | head -4)"
  else
    bad "$exe failed: $(cat "$tmp/err")"
  fi
done
# examples/train (tfm::Trainer) trains the same model as `tfm train` with the same options.
if cmake -S "$src/examples/train" -B "$tmp/ext" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCMAKE_BUILD_TYPE=Release >"$tmp/ext.log" 2>&1 &&
   cmake --build "$tmp/ext" -j 2 >>"$tmp/ext.log" 2>&1; then
  "$tfm" train --model "$tmp/t_cli" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
    --vocab "$tmp/voc.model" --preset tiny --max-updates 6 >/dev/null 2>"$tmp/err" ||
    bad "tfm train failed: $(cat "$tmp/err")"
  "$tmp/ext/train" "$tmp/t_api" "$tmp/train.de" "$tmp/train.en" "$tmp/voc.model" tiny 6 \
    >"$tmp/out" 2>"$tmp/err" || bad "examples/train failed: $(cat "$tmp/err")"
  grep -q "^6 updates (max updates)" "$tmp/out" && ok || bad "examples/train said: $(cat "$tmp/out")"
  cmp -s "$tmp/t_cli/model.safetensors" "$tmp/t_api/model.safetensors" && ok ||
    bad "examples/train's weights differ from tfm train's"
else
  bad "examples/train does not build against the install: $(tail -15 "$tmp/ext.log")"
fi
# Errors reach the embedding program as tfm::Error with a message (no source location).
if "$tmp/ex/translate" "$tmp/nonexistent" </dev/null >/dev/null 2>"$tmp/err"; then
  bad "the example succeeded on a missing model"
else
  grep -q 'does not exist' "$tmp/err" && ! grep -q ' at .*\.cpp:' "$tmp/err" && ok ||
    bad "error message: $(cat "$tmp/err")"
fi
finish install
