#!/usr/bin/env python3
"""The same traces and the same malloc + free pairs through PyTorch's CUDA caching allocator, for the
package's bench (gpu/run.sh runs it beside bench/cuda-bench.mjs on the same GPU).

Each allocation event is `torch.empty(bytes, dtype=torch.uint8, device="cuda")`, each free drops the tensor
(`del`); ns per event over the replay loop, and `torch.cuda.max_memory_reserved()` as the peak reserved
memory. Cold: from an empty cache (`empty_cache()` and the peaks reset before the trace); warm: the same
trace again on the cache the cold pass left.

gpu/run.sh runs it twice: with PyTorch's default allocator, and with PYTORCH_CUDA_ALLOC_CONF=
expandable_segments:True (growing segments by mapping pages: cuMemCreate + cuMemMap instead of cudaMalloc).
`deviceAllocCalls` counts the driver allocations of either mode (`num_device_alloc`).

Usage: python3 gpu/torch_replay.py TRACES_DIR [--json FILE] [--quick]
"""
import gzip
import json
import os
import statistics
import sys
import time

import torch


def read_events(path):
    events = []
    with gzip.open(path, "rt") as lines:
        for line in lines:
            value = json.loads(line)
            if isinstance(value, list):
                events.append(value)
    return events


def replay(events):
    live = {}
    empty = torch.empty
    uint8 = torch.uint8
    device = torch.device("cuda")
    start = time.perf_counter_ns()
    for event in events:
        if event[0] == "a":
            live[event[1]] = empty(event[2], dtype=uint8, device=device)
        elif event[0] == "f":
            del live[event[1]]
    torch.cuda.synchronize()
    elapsed = time.perf_counter_ns() - start
    live.clear()
    return elapsed / len(events)


def malloc_free(quick):
    rows = []
    device = torch.device("cuda")
    for size in (256, 64 * 1024, 16 * 1024**2, 256 * 1024**2):
        del_after = torch.empty(size, dtype=torch.uint8, device=device)
        del del_after
        pairs = 20_000 if quick else 100_000
        runs = []
        for _ in range(5):
            start = time.perf_counter_ns()
            for _ in range(pairs):
                tensor = torch.empty(size, dtype=torch.uint8, device=device)
                del tensor
            runs.append((time.perf_counter_ns() - start) / pairs)
        rows.append({"bytes": size, "cachedTorchNs": statistics.median(runs)})
    return rows


def main():
    directory = sys.argv[1]
    json_path = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    quick = "--quick" in sys.argv
    torch.cuda.init()
    torch.empty(1, device="cuda")  # the context, outside every measurement
    results = {
        "torch": torch.__version__,
        "allocConf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "gpu": torch.cuda.get_device_name(0),
        "mallocFree": malloc_free(quick),
        "traces": [],
    }
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".ndjson.gz"):
            continue
        events = read_events(os.path.join(directory, name))
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        cold = replay(events)
        stats = torch.cuda.memory_stats()
        peak_reserved = torch.cuda.max_memory_reserved()
        warm = replay(events)
        warm_stats = torch.cuda.memory_stats()
        results["traces"].append(
            {
                "trace": name.replace(".ndjson.gz", ""),
                "events": len(events),
                "coldNsPerEvent": cold,
                "warmNsPerEvent": warm,
                "peakReserved": peak_reserved,
                "peakAllocated": torch.cuda.max_memory_allocated(),
                "cudaMallocCalls": stats.get("segment.all.allocated", None),
                # Every driver allocation: cudaMalloc, and with expandable segments each cuMemCreate+cuMemMap.
                "deviceAllocCalls": stats.get("num_device_alloc", None),
                "deviceFreeCalls": stats.get("num_device_free", None),
                "warmDeviceAllocCalls": (
                    warm_stats.get("num_device_alloc", 0) - stats.get("num_device_alloc", 0)
                    if "num_device_alloc" in stats
                    else None
                ),
                "allocRetries": stats.get("num_alloc_retries", None),
            }
        )
        torch.cuda.empty_cache()
    print(f"PyTorch {results['torch']} on {results['gpu']} PYTORCH_CUDA_ALLOC_CONF={results['allocConf']!r}")
    print("malloc + free per pair (torch.empty + del, cached):")
    for row in results["mallocFree"]:
        print(f"  {row['bytes']:>10} B  {row['cachedTorchNs']:8.0f} ns")
    print("traces through PyTorch's caching allocator:")
    for row in results["traces"]:
        print(
            f"  {row['trace']:<16} cold {row['coldNsPerEvent']:7.0f} ns/event  warm {row['warmNsPerEvent']:7.0f}"
            f" ns/event  peak reserved {row['peakReserved'] / 2**20:9.1f} MiB  cudaMalloc {row['cudaMallocCalls']}"
            f"  device allocs {row['deviceAllocCalls']}"
        )
    if json_path:
        with open(json_path, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
