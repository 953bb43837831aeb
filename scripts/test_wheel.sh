#!/usr/bin/env bash
# The wheel is self-contained (docs/release.md, "The wheel"). Builds it (scripts/build_wheel.sh),
# installs it into a fresh virtual environment inside a bare Debian 12 root — debootstrap's
# minbase with python3 and python3-venv alone, entered with chroot, where none of the build's
# libraries is installed (checked: `ldconfig -p` there lists no oneDNN, SentencePiece, libyaml,
# OpenMP, Brotli or MPI) — and there makes a vocabulary, trains, translates and scores a tiny
# model with the wheel's `tfm` command and Python API (scripts/test_wheel_inside.py). Each result
# must equal, byte for byte, what this tree's C++ `tfm` makes of the same input; asking the wheel
# for a GPU or for several ranks must say what is missing.
#
# Usage: scripts/test_wheel.sh [BUILD_DIR]   (BUILD_DIR holds the C++ tfm; default build/)
# Needs root or sudo (chroot), the build tools and the root that `scripts/setup.sh --python
# --wheel-root` installs (TFM_WHEEL_ROOT, default ~/.cache/tfm/debian-bookworm-python3); each run
# works in a scratch directory inside the root and removes it. No network.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-${BUILD_DIR:-$src/build}}" && pwd)
host_tfm=$build/tfm
start=$SECONDS
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo)
else
  echo "test_wheel: SKIPPED: chroot needs root or sudo"
  exit 0
fi
for tool in unshare chroot; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin:/sbin
  command -v "$tool" >/dev/null || { echo "test_wheel: no $tool (scripts/setup.sh)" >&2; exit 1; }
done

# The CLI tests' helpers: $tmp, ok/bad/finish, toy_corpus.
source "$src/tests/cli/lib.sh"
root=${TFM_WHEEL_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/tfm/debian-bookworm-python3}
work=
cleanup() {
  if [[ -n $work ]]; then "${sudo[@]}" rm -rf "$root$work"; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

wheel=$("$src/scripts/build_wheel.sh" 2>"$tmp/build_wheel.log" | tail -1) ||
  { cat "$tmp/build_wheel.log"; exit 1; }
echo "test_wheel: $(basename "$wheel") ($(du -h "$wheel" | cut -f1)), built in" \
  "$((SECONDS - start)) s"

[[ -x $root/usr/bin/python3 ]] ||
  { echo "test_wheel: no Debian root at $root (scripts/setup.sh --wheel-root)" >&2; exit 1; }

# The tiny corpus and the C++ tfm's results (the reference).
mkdir -p "$tmp/host" "$tmp/in"
toy_corpus 7 120
mv "$tmp/train.de" "$tmp/train.en" "$tmp/in/"
{ head -n 6 "$tmp/in/train.de"; echo; sed -n 7,12p "$tmp/in/train.de"; } >"$tmp/in/in.de"
options=(preset=tiny batch_tokens=200 max_updates=20 save_every=0 valid_every=0 keep_last=0
         threads=1 seed=3)
flags=()
for o in "${options[@]}"; do
  name=${o%%=*}
  flags+=("--${name//_/-}" "${o#*=}")
done
h=$tmp/host
cp "$tmp"/in/* "$h/"
{
  "$host_tfm" vocab --input "$h/train.de" "$h/train.en" --size 36 --out "$h/voc" &&
    "$host_tfm" train --model "$h/m" --train-src "$h/train.de" --train-trg "$h/train.en" \
      --vocab "$h/voc.model" "${flags[@]}" &&
    "$host_tfm" translate --model "$h/m" --beam-size 2 --precision auto <"$h/in.de" >"$h/hyp" &&
    head -n 12 "$h/train.de" >"$h/score.de" && head -n 12 "$h/train.en" >"$h/score.en" &&
    "$host_tfm" score --model "$h/m" --src "$h/score.de" --trg "$h/score.en" --precision auto \
      >"$h/score"
} >"$tmp/host.log" 2>&1 || { cat "$tmp/host.log"; exit 1; }

# Inside the root: its own mount namespace (the mounts vanish with it), a clean environment.
work=/tmp/tfm-wheel-test.$$
w=$root$work
"${sudo[@]}" mkdir -p "$w"
"${sudo[@]}" cp "$wheel" "$src/scripts/test_wheel_inside.py" "$tmp"/in/* "$w/"
"${sudo[@]}" unshare --mount --propagation private /bin/bash -euo pipefail -c '
  root=$1 work=$2
  shift 2
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    /bin/bash -euo pipefail -c "
      cd $work
      ldconfig -p >ldconfig.txt
      python3 -m venv venv
      venv/bin/pip install -q --no-index --disable-pip-version-check ./tfm-*.whl
      PATH=$work/venv/bin:\$PATH venv/bin/python test_wheel_inside.py $work \$*
    " inside "$@"' root "$root" "$work" "${options[@]}" >"$tmp/inside.log" 2>&1 ||
  bad "inside the root: $(tail -20 "$tmp/inside.log")"

# The root really lacks the build's libraries.
libs=$(grep -Eo 'lib(dnnl|sentencepiece|yaml-0|gomp|brotlidec|mpi|cublas)[^ ]*' "$w/ldconfig.txt" |
         sort -u | tr '\n' ' ' || true)
[[ -s $w/ldconfig.txt && -z $libs ]] && ok || bad "the root has the build's libraries: $libs"
# The same bytes from the wheel (command and Python API) as from the C++ tfm.
same() { cmp -s "$1" "$2" && ok || bad "$3: $(diff "$1" "$2" | head -4)"; }
same "$h/voc.model" "$w/voc.model" "the wheel's tfm vocab differs from the C++ tfm's"
same "$h/m/model.safetensors" "$w/m/model.safetensors" "tfm.train's weights differ from tfm train's"
same "$h/hyp" "$w/py.hyp" "Translator.translate_batch differs from tfm translate"
same "$h/hyp" "$w/cli.hyp" "the wheel's tfm translate differs from the C++ tfm's"
same "$h/score" "$w/py.score" "Translator.score_batch differs from tfm score"
same "$h/score" "$w/cli.score" "the wheel's tfm score differs from the C++ tfm's"
[[ $(grep -c . "$h/hyp") -ge 10 ]] && ok || bad "the reference has $(grep -c . "$h/hyp") lines"
# What the wheel lacks is named.
grep -qF "no CUDA backend: libtfm_cuda.so not found" "$w/cuda.err" && ok ||
  bad "Translator(device='cuda'): $(cat "$w/cuda.err")"
grep -qF "libmpi.so.40: cannot open shared object file" "$w/mpi.err" &&
  grep -q "^exit 1: tfm: error: started as one of 2 processes" "$w/mpi.err" && ok ||
  bad "tfm train as one of 2 ranks: $(cat "$w/mpi.err")"
# One version: CMake's project(), the package's, the wheel's command, the C++ command.
version=$(sed -n 's/^project([^)]*VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
read -r py_version py_commit <"$w/version"
[[ $py_version == "$version" ]] && ok || bad "tfm.__version__ $py_version, CMake's $version"
[[ $(sed -n 2p "$w/version") == "tfm $version (commit $py_commit)" ]] && ok ||
  bad "the wheel's tfm --version: $(sed -n 2p "$w/version") (package: $py_version $py_commit)"
[[ $("$host_tfm" --version | head -1) == "tfm $version "* ]] && ok ||
  bad "the C++ tfm --version: $("$host_tfm" --version | head -1)"

echo "test_wheel: $((SECONDS - start)) s in all"
finish test_wheel
