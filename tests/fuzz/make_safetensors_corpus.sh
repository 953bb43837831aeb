#!/usr/bin/env bash
# Writes the seed corpus of fuzz_safetensors (tests/fuzz/corpus/safetensors/): a few valid files
# in the layouts writers produce and a few near misses. Small on purpose: mutations of small
# inputs reach the checks faster. Rerun after changing it and commit the output.
set -euo pipefail
out="$(dirname "$0")/corpus/safetensors"
mkdir -p "$out"
rm -f "$out"/*

# emit FILE HEADER DATA: 8-byte little-endian header length, header, data (printf escapes).
emit() {
  local n=${#2}
  printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x\\x00\\x00\\x00\\x00' \
    $((n & 255)) $(((n >> 8) & 255)) $(((n >> 16) & 255)) $(((n >> 24) & 255)))" >"$out/$1"
  printf '%s' "$2" >>"$out/$1"
  printf "$3" >>"$out/$1"
}

# The reference writer's layout: __metadata__ first, padded with spaces to 8 bytes.
emit valid_reference '{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I64","shape":[1],"data_offsets":[8,16]}}    ' \
  '\x00\x00\x80\x3f\x00\x00\x00\xc0\x07\x00\x00\x00\x00\x00\x00\x00'
emit valid_empty '{}      ' ''
# 0-d, zero-size and misaligned tensors of several dtypes.
emit valid_mixed '{"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},"z":{"dtype":"BF16","shape":[0,3],"data_offsets":[8,8]},"u":{"dtype":"U8","shape":[3],"data_offsets":[8,11]},"h":{"dtype":"F16","shape":[1],"data_offsets":[11,13]},"i":{"dtype":"I8","shape":[1,1],"data_offsets":[13,14]}}' \
  '\x00\x00\x00\x00\x00\x00\x04\x40\x01\x02\x03\x00\x3c\xff'
emit valid_i32_meta '{"__metadata__":{"config":"{\"d\": 1}","":""},"ids":{"dtype":"I32","shape":[2,1],"data_offsets":[0,8]}}' \
  '\x01\x00\x00\x00\xff\xff\xff\xff'
emit broken_overlap '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}' \
  '\x00\x00\x00\x00\x00\x00\x00\x00'
emit broken_duplicate '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}' \
  '\x01\x02'
emit broken_unsupported '{"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}' '\x00\x01'
# Regressions: inputs that once failed.
# An empty tensor name: read, but refused by the writer (found by fuzz_driver, seed 2).
emit regression_empty_name '{"":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}' \
  '\x07\x00\x00\x00\x00\x00\x00\x00'
ls -l "$out"
