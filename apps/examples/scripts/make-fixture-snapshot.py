#!/usr/bin/env python3
"""Writes a small memory snapshot in the schema of torch.cuda.memory._dump_snapshot, without PyTorch.

The workload is a toy transformer's training steps on one device (weights, activations kept for the backward
pass, gradients, optimizer state) and a short inference loop on a second device, allocated through a
simplified caching allocator that asks for 2 MiB or larger segments, so the trace has what a real one has:
alloc / free_requested / free_completed entries with stack frames, segment_alloc and segment_free, frees of
blocks allocated before recording began, an oom and a snapshot entry, and the segments at dump time.
Beside the pickle it writes the figures the tests check, computed here independently of nuvec:

    python3 apps/examples/scripts/make-fixture-snapshot.py apps/examples/traces/toy-train.pickle

A real snapshot comes from apps/examples/scripts/make-torch-snapshot.py on a CUDA machine.
"""
import json
import pickle
import random
import sys

from snapshot_figures import write_figures

MiB = 1024 * 1024
SEGMENT = 2 * MiB


def frames(*names):
    return [{"filename": f"/work/model/{name.split('.')[0]}.py", "line": 10 + 7 * index, "name": name}
            for index, name in enumerate(names)]


class ToyAllocator:
    """Blocks rounded to 512 bytes, carved from segments of at least 2 MiB; an exact-fit free list."""

    def __init__(self, device, start_address):
        self.device = device
        self.trace = []
        self.next_address = start_address
        self.free_blocks = {}  # size -> [addresses]
        self.segments = {}  # address -> size
        self.room = 0  # bytes left in the newest segment
        self.cursor = 0
        self.live = {}  # address -> size
        self.time = 1_000_000

    def entry(self, action, addr, size, stack):
        self.time += 3
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": 0,
                           "time_us": self.time, "frames": stack})

    def alloc(self, requested, stack):
        size = max(512, (requested + 511) // 512 * 512)
        reusable = self.free_blocks.get(size)
        if reusable:
            address = reusable.pop()
        else:
            if size > self.room:
                segment = max(SEGMENT, (size + SEGMENT - 1) // SEGMENT * SEGMENT)
                address = self.next_address
                self.next_address += segment + SEGMENT
                self.segments[address] = segment
                self.entry("segment_alloc", address, segment, stack)
                self.cursor = address
                self.room = segment
            address = self.cursor
            self.cursor += size
            self.room -= size
        self.live[address] = size
        self.entry("alloc", address, size, stack)
        return address

    def free(self, address, stack):
        size = self.live.pop(address)
        self.entry("free_requested", address, size, stack)
        self.entry("free_completed", address, size, stack)
        self.free_blocks.setdefault(size, []).append(address)

    def empty_cache(self):
        """Releases the segments that hold no live block (as torch.cuda.empty_cache does)."""
        for address, size in list(self.segments.items()):
            if not any(address <= block < address + size for block in self.live):
                del self.segments[address]
                self.entry("segment_free", address, size, [])
                for blocks in self.free_blocks.values():
                    blocks[:] = [block for block in blocks if not address <= block < address + size]
                if address <= self.cursor < address + size:
                    self.room = 0


def train(allocator, rng, steps):
    hidden, layers, batch = 256, 4, 8
    weights = [allocator.alloc(hidden * hidden * 4 * 4, frames("Linear.__init__", "Block.__init__", "main"))
               for _ in range(layers)]
    optimizer_state = []
    for step in range(steps):
        sequence = rng.choice([64, 96, 128])
        kept = []
        for layer in range(layers):
            stack = frames("linear", "Block.forward", "Model.forward", "train_step")
            kept.append(allocator.alloc(batch * sequence * hidden * 4 * 4, stack))
            scratch = allocator.alloc(batch * sequence * sequence * 4, frames("softmax", "Attention.forward", "Block.forward"))
            allocator.free(scratch, [])
        loss = allocator.alloc(4, frames("cross_entropy", "train_step"))
        grads = []
        for layer in reversed(range(layers)):
            grads.append(allocator.alloc(hidden * hidden * 4 * 4, frames("LinearBackward0", "backward", "train_step")))
            allocator.free(kept.pop(), [])
        allocator.free(loss, [])
        if step == 0:
            optimizer_state = [allocator.alloc(hidden * hidden * 4 * 4 * 2, frames("Adam._init_group", "Adam.step"))
                               for _ in range(layers)]
        for gradient in grads:
            allocator.free(gradient, [])
        if step == steps // 2:
            allocator.empty_cache()
    return weights + optimizer_state


def infer(allocator, rng, tokens):
    cache = []
    for token in range(tokens):
        cache.append(allocator.alloc(64 * 1024 * (1 + token // 8), frames("KVCache.update", "generate")))
        logits = allocator.alloc(50257 * 2, frames("lm_head", "generate"))
        allocator.free(logits, [])
    for block in cache:
        allocator.free(block, [])


def main():
    if len(sys.argv) != 2:
        print("usage: make-fixture-snapshot.py OUT.pickle", file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    rng = random.Random(27)
    train_device = ToyAllocator(0, 0x7F0000000000)
    # Blocks allocated before recording began: in the segments, freed in the trace without an alloc.
    before = [0x7E0000000000 + index * SEGMENT for index in range(3)]
    for address in before:
        train_device.segments[address] = SEGMENT
    train_device.trace.append({"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 0, "frames": []})
    train_device.free_before = before
    for address in before[:2]:
        train_device.entry("free_completed", address, SEGMENT, [])
    held = train(train_device, rng, 6)
    train_device.trace.append({"action": "oom", "device_free": 123 * MiB, "addr": 0, "size": 0, "stream": 0,
                               "time_us": 9, "frames": []})
    infer_device = ToyAllocator(1, 0x7A0000000000)
    infer(infer_device, rng, 24)

    def segments(allocator):
        return [{"device": allocator.device, "address": address, "total_size": size, "allocated_size": 0,
                 "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
                 "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": []}
                for address, size in allocator.segments.items()]

    snapshot = {
        "segments": segments(train_device) + segments(infer_device),
        "device_traces": [train_device.trace, infer_device.trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1},
    }
    with open(out, "wb") as file:
        pickle.dump(snapshot, file, protocol=4)

    # The figures the tests check, counted from the snapshot itself.
    figures = write_figures(snapshot, out)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
