#!/usr/bin/env python3
"""Counts the figures of a PyTorch memory snapshot from its own entries, independently of nuvec.

For each device trace: the allocations, the frees of blocks allocated in the trace, the frees of blocks
allocated before recording began (skipped), the blocks still live at the end, the peak of live requested
bytes, and PyTorch's reserved memory (segments) at the start, at its peak and at the end. The tests compare
nuvec's reading of the snapshot with these.

    python3 apps/examples/scripts/snapshot_figures.py SNAPSHOT.pickle[.gz]   (writes SNAPSHOT.figures.json)
"""
import gzip
import json
import pickle
import sys


def device_figures(segments, trace):
    """The figures of one device: `segments` are that device's segments at dump time, `trace` its entries."""
    live, total, peak, allocations, frees, skipped = {}, 0, 0, 0, 0, 0
    reserved = sum(segment["total_size"] for segment in segments)
    segment_net = sum(entry["size"] if entry["action"] == "segment_alloc" else -entry["size"]
                      for entry in trace if entry["action"] in ("segment_alloc", "segment_free"))
    start = reserved - segment_net
    current, peak_reserved = start, start
    for entry in trace:
        action = entry["action"]
        if action == "alloc":
            live[entry["addr"]] = entry["size"]
            total += entry["size"]
            peak = max(peak, total)
            allocations += 1
        elif action == "free_completed":
            if entry["addr"] in live:
                total -= live.pop(entry["addr"])
                frees += 1
            else:
                skipped += 1
        elif action == "segment_alloc":
            current += entry["size"]
            peak_reserved = max(peak_reserved, current)
        elif action == "segment_free":
            current -= entry["size"]
    return {
        "entries": len(trace), "allocations": allocations, "frees": frees, "skippedFrees": skipped,
        "liveAtEnd": len(live), "peakLiveBytes": peak, "reservedAtStart": start,
        "peakReserved": peak_reserved, "reservedAtEnd": reserved,
    }


def snapshot_figures(snapshot):
    """The figures of every device that has a trace, keyed by the device's index as a string."""
    figures = {}
    for device, trace in enumerate(snapshot["device_traces"]):
        if not trace:
            continue
        segments = [segment for segment in snapshot["segments"] if segment.get("device") == device]
        figures[str(device)] = device_figures(segments, trace)
    return figures


def write_figures(snapshot, path):
    """Writes the figures beside the snapshot at `path` (x.pickle or x.pickle.gz → x.figures.json)."""
    base = path[: -len(".gz")] if path.endswith(".gz") else path
    figures = snapshot_figures(snapshot)
    with open(base.rsplit(".", 1)[0] + ".figures.json", "w") as file:
        json.dump(figures, file, indent=2)
        file.write("\n")
    return figures


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: snapshot_figures.py SNAPSHOT.pickle[.gz]", file=sys.stderr)
        sys.exit(2)
    source = sys.argv[1]
    # Only for snapshots this project made: pickle runs what a file names, so never point it at a stranger's.
    with (gzip.open(source, "rb") if source.endswith(".gz") else open(source, "rb")) as file:
        print(json.dumps(write_figures(pickle.load(file), source)))
