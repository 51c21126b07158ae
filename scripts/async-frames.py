#!/usr/bin/env python3
"""The largest async frames of a Swift binary or object file.

Each async function has an "async function pointer" record (a symbol ending in `Tu`) whose second 32-bit word is
the size of the frame the runtime allocates for it on every call, in the task's allocator. A task keeps the frames
of the whole chain of calls it is suspended in: a payment waiting on its processor keeps every frame from the HTTP
route down to the HTTP client, for as long as the processor takes (docs/PERFORMANCE.md, "Memory of a waiting
payment"). A frame holds room for every value any path of the function (and of what was inlined into it) keeps
across a suspension, so one rarely taken path can make every call of it large.

Usage: scripts/async-frames.py BINARY_OR_OBJECT [COUNT] [PATTERN]   (default 40 largest; PATTERN filters names)
Needs readelf and nm (binutils) and `swift demangle`.
"""
import re
import struct
import subprocess
import sys


def sections(path):
    """Section index -> (address, file offset, size)."""
    table = {}
    for line in subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout.splitlines():
        match = re.match(r"\s*\[\s*(\d+)\]\s+\S+\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if match:
            table[int(match.group(1))] = tuple(int(match.group(i), 16) for i in (2, 3, 4))
    return table


def frames(path):
    """(frame size, mangled name) of every async function pointer defined in the file."""
    table = sections(path)
    data = open(path, "rb").read()
    relocatable = all(address == 0 for address, _, _ in table.values())
    rows = []
    symbols = subprocess.run(["readelf", "-sW", path], capture_output=True, text=True, check=True).stdout
    for line in symbols.splitlines():
        parts = line.split()
        if len(parts) < 8 or not parts[7].endswith("Tu") or not parts[6].isdigit():
            continue
        value, index = int(parts[1], 16), int(parts[6])
        if index not in table:
            continue
        address, offset, size = table[index]
        position = offset + (value if relocatable else value - address)
        rows.append((struct.unpack_from("<I", data, position + 4)[0], parts[7]))
    return sorted(rows, reverse=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    pattern = re.compile(sys.argv[3]) if len(sys.argv) > 3 else None
    rows = frames(sys.argv[1])
    names = subprocess.run(
        ["swift", "demangle", "--simplified", "--compact"], input="\n".join(name for _, name in rows),
        capture_output=True, text=True, check=True).stdout.splitlines()
    shown = 0
    for (size, _), name in zip(rows, names):
        name = name.removeprefix("async function pointer to ")
        if pattern and not pattern.search(name):
            continue
        print(f"{size:8d}  {name}")
        shown += 1
        if shown == count:
            break


if __name__ == "__main__":
    main()
