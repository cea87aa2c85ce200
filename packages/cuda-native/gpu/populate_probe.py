#!/usr/bin/env python3
"""Why did MAP_POPULATE of a fresh 1 GiB file not finish in 400 s on the GPU machine? Times, per directory:
writing the file (64 MiB chunks) and fsync, then mmap(MAP_PRIVATE | MAP_POPULATE, PROT_READ | PROT_WRITE) of
it while its pages are still in the page cache, then again after the page cache was dropped (a cold read
from the disk). Prints one line per step, flushed, so a step that hangs still shows the ones before it.

Usage: python3 gpu/populate_probe.py DIR [DIR ...]   (run it under `timeout`)
"""
import mmap
import os
import sys
import time

SIZE = 1 << 30
CHUNK = 64 << 20


def meminfo():
    fields = {}
    with open("/proc/meminfo") as lines:
        for line in lines:
            name, value = line.split(":", 1)
            fields[name] = int(value.split()[0]) // 1024
    return f"MemTotal {fields['MemTotal']} MiB, MemFree {fields['MemFree']} MiB, Cached {fields['Cached']} MiB, Dirty {fields['Dirty']} MiB"


def step(label, start):
    print(f"  {label}: {time.perf_counter() - start:.2f} s   ({meminfo()})", flush=True)


def populate(path, label):
    fd = os.open(path, os.O_RDONLY)
    try:
        start = time.perf_counter()
        mapping = mmap.mmap(fd, SIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_POPULATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        step(label, start)
        mapping.close()
    finally:
        os.close(fd)


for directory in sys.argv[1:]:
    path = os.path.join(directory, "nuvec-populate-probe.bin")
    print(f"{directory}: {os.statvfs(directory).f_bsize}-byte blocks; {meminfo()}", flush=True)
    chunk = os.urandom(CHUNK)
    try:
        start = time.perf_counter()
        with open(path, "wb") as out:
            for _ in range(SIZE // CHUNK):
                out.write(chunk)
            step("write 1 GiB", start)
            out.flush()
            os.fsync(out.fileno())
        step("write 1 GiB + fsync", start)
        populate(path, "mmap MAP_POPULATE, pages cached")
        try:
            with open("/proc/sys/vm/drop_caches", "w") as drop:
                drop.write("3\n")
            populate(path, "mmap MAP_POPULATE after drop_caches (read from the device)")
        except OSError as error:
            print(f"  cannot drop caches: {error}", flush=True)
    finally:
        if os.path.exists(path):
            os.unlink(path)
