#!/usr/bin/env python3
"""Checks that CUDA objects carry device code for the wanted architectures.

Usage: check_fatbin.py OBJECTS ARCH... (e.g. "a.cu.o;b.cu.o" 80 90: the CUDA plugin's objects,
separated by ';' as CMake's $<TARGET_OBJECTS> gives them, or a static library holding them)

Without cuobjdump (not in every toolkit install): extracts a library's objects with `ar`, their
.nv_fatbin sections with `objcopy`, and walks the fatbinary container (header magic 0xBA55ED50;
each entry: kind 1 = PTX, 2 = ELF/SASS, then the sm number). Fails unless every object that has
device code has SASS for every ARCH.
"""
import glob
import os
import struct
import subprocess
import sys
import tempfile


def fatbin_entries(data):
    entries = set()
    off = 0
    while off + 16 <= len(data):
        magic, _version, header_size, body_size = struct.unpack_from("<IHHQ", data, off)
        if magic != 0xBA55ED50:
            break
        p, end = off + header_size, off + header_size + body_size
        while p < end:
            kind, _, entry_header_size, size = struct.unpack_from("<HHIQ", data, p)
            arch = struct.unpack_from("<I", data, p + 28)[0]
            entries.add(({1: "PTX", 2: "SASS"}.get(kind, str(kind)), arch))
            p += entry_header_size + size
        off = end
    return entries


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    library, wanted = sys.argv[1], [int(a) for a in sys.argv[2:]]
    with tempfile.TemporaryDirectory() as tmp:
        if library.endswith(".a"):
            subprocess.run(["ar", "x", os.path.abspath(library)], cwd=tmp, check=True)
            objects = sorted(glob.glob(os.path.join(tmp, "*.o")))
        else:
            objects = [o for o in library.split(";") if o]
        checked, bad = 0, []
        for obj in objects:
            section = os.path.join(tmp, os.path.basename(obj) + ".fatbin")
            subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", obj, section],
                           check=True)
            data = open(section, "rb").read()
            if not data:
                continue
            entries = fatbin_entries(data)
            checked += 1
            missing = [a for a in wanted if ("SASS", a) not in entries]
            name = os.path.basename(obj)
            print(f"{name}: {sorted(f'{k} sm_{a}' for k, a in entries)}")
            if missing:
                bad.append(f"{name} lacks SASS for sm_{', sm_'.join(map(str, missing))}")
    if checked == 0:
        sys.exit(f"{library}: no object with device code")
    if bad:
        sys.exit("\n".join(bad))
    print(f"ok: {checked} objects with SASS for sm_{', sm_'.join(map(str, wanted))}")


if __name__ == "__main__":
    main()
