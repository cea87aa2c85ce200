#!/usr/bin/env python3
"""The decode workload's model and its PyTorch eager loop (the side nuvec's Node.js loop, decode.mjs, is
measured against on the same GPU).

A small transformer in fp32: `layers` blocks of RMSNorm, one fused QKV projection, attention over a KV cache
that grows by one token per step (torch.cat: a new, larger allocation each step, the old one freed), an output
projection, RMSNorm and a SwiGLU MLP; a final RMSNorm and logits through an output head; greedy argmax on the
device (no host round trip inside the loop). Weights are random (a fixed seed), scaled by 1/sqrt(fan-in),
written once as a safetensors checkpoint that both sides load.

  python3 model.py write CHECKPOINT            write the checkpoint (and its config in the metadata)
  python3 model.py run CHECKPOINT --steps N --json FILE
      decode N tokens from token 1; per step: wall time (synchronized), torch.cuda's reserved memory and
      its peak, and num_device_alloc (the driver allocations: cudaMalloc, or cuMemCreate with
      PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True); the tokens, for the two sides' comparison.
"""
import json
import math
import sys
import time

import torch
from safetensors.torch import load_file, save_file

CONFIG = {"dim": 1024, "layers": 8, "heads": 16, "ffn": 2816, "vocab": 16384, "eps": 1e-5}


def write(path):
    generator = torch.Generator().manual_seed(1234)
    c = CONFIG
    d, f = c["dim"], c["ffn"]

    def weight(rows, cols):
        return (torch.randn(rows, cols, generator=generator) / math.sqrt(cols)).contiguous()

    tensors = {"emb": weight(c["vocab"], d) * math.sqrt(d) / 4, "head": weight(c["vocab"], d), "lnf": torch.ones(d)}
    for layer in range(c["layers"]):
        p = f"layers.{layer}."
        tensors[p + "ln1"] = 1 + 0.1 * torch.randn(d, generator=generator)
        tensors[p + "wqkv"] = weight(3 * d, d)
        tensors[p + "wo"] = weight(d, d)
        tensors[p + "ln2"] = 1 + 0.1 * torch.randn(d, generator=generator)
        tensors[p + "w1"] = weight(f, d)
        tensors[p + "w3"] = weight(f, d)
        tensors[p + "w2"] = weight(d, f)
    save_file(tensors, path, metadata={"config": json.dumps(c)})


def rmsnorm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean() + eps) * weight


def run(path, steps, out):
    c = CONFIG
    d, heads = c["dim"], c["heads"]
    hd = d // heads
    device = torch.device("cuda")
    torch.cuda.init()
    load_start = time.perf_counter()
    w = {name: t.to(device) for name, t in load_file(path).items()}
    torch.cuda.synchronize()
    load_ms = (time.perf_counter() - load_start) * 1000
    torch.cuda.reset_peak_memory_stats()
    layers = c["layers"]
    caches = [[torch.empty(0, d, device=device), torch.empty(0, d, device=device)] for _ in range(layers)]
    token = torch.tensor(1, device=device)
    rows = []
    tokens = []
    scale = 1 / math.sqrt(hd)

    def decode_step(token):
        x = w["emb"][token]
        for layer in range(layers):
            p = f"layers.{layer}."
            h = rmsnorm(x, w[p + "ln1"], c["eps"])
            q, k, v = (w[p + "wqkv"] @ h).split(d)
            caches[layer][0] = torch.cat([caches[layer][0], k.view(1, d)])
            caches[layer][1] = torch.cat([caches[layer][1], v.view(1, d)])
            K = caches[layer][0].view(-1, heads, hd)
            V = caches[layer][1].view(-1, heads, hd)
            s = torch.einsum("hd,thd->ht", q.view(heads, hd), K) * scale
            o = torch.einsum("ht,thd->hd", torch.softmax(s, -1), V).reshape(d)
            x = x + w[p + "wo"] @ o
            h = rmsnorm(x, w[p + "ln2"], c["eps"])
            x = x + w[p + "w2"] @ (torch.nn.functional.silu(w[p + "w1"] @ h) * (w[p + "w3"] @ h))
        logits = w["head"] @ rmsnorm(x, w["lnf"], c["eps"])
        return torch.argmax(logits)

    with torch.no_grad():
        for step in range(steps):
            before = torch.cuda.memory_stats()
            start = time.perf_counter_ns()
            token = decode_step(token)
            torch.cuda.synchronize()
            elapsed = time.perf_counter_ns() - start
            after = torch.cuda.memory_stats()
            tokens.append(int(token))
            rows.append({
                "step": step,
                "ms": elapsed / 1e6,
                "reserved": after.get("reserved_bytes.all.current", 0),
                "peakReserved": after.get("reserved_bytes.all.peak", 0),
                "driverAllocs": after.get("num_device_alloc", 0) - before.get("num_device_alloc", 0),
                "driverFrees": after.get("num_device_free", 0) - before.get("num_device_free", 0),
                "allocations": after.get("allocation.all.allocated", 0) - before.get("allocation.all.allocated", 0),
            })
    stats = torch.cuda.memory_stats()
    with torch.no_grad():
        allocator = allocator_time(lambda: decode_step(token))
    result = {
        "torch": torch.__version__,
        "alloc_conf": __import__("os").environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "gpu": torch.cuda.get_device_name(),
        "config": c,
        "loadMs": load_ms,
        "steps": rows,
        "tokens": tokens,
        "peakReserved": stats.get("reserved_bytes.all.peak", 0),
        "driverAllocs": stats.get("num_device_alloc", 0),
        "driverFrees": stats.get("num_device_free", 0),
        "allocator": allocator,
    }
    with open(out, "w") as handle:
        json.dump(result, handle)
    times = sorted(r["ms"] for r in rows[1:])
    print(f"torch {result['alloc_conf'] or 'default'}: {steps} steps, median {times[len(times) // 2]:.3f} ms/step, "
          f"peak reserved {result['peakReserved'] / 2**20:.1f} MiB, driver allocations {result['driverAllocs']} "
          f"(in the loop {sum(r['driverAllocs'] for r in rows)}), first tokens {tokens[:8]}")
    if "error" in allocator:
        print(f"torch allocator replay failed: {allocator['error']}")
    else:
        print(f"torch allocator (one step's {allocator['calls']} calls replayed {allocator['repeats']} times through "
              f"caching_allocator_alloc/delete): median {allocator['medianUs']:.1f} us/step, "
              f"{allocator['nsPerCall']:.0f} ns/call; the replay loop without the allocator {allocator['loopUs']:.1f} us/step")


def allocator_time(step, repeats=200):
    """PyTorch's allocator time for one decode step, measured the only way it can be from outside: the
    allocator's own trace of one more step (torch.cuda.memory._record_memory_history: every alloc and
    free_requested with its size and address), replayed `repeats` times in the same order through
    torch.cuda.caching_allocator_alloc / caching_allocator_delete (the caching allocator, no tensor, no
    kernel), timed per replay with perf_counter_ns. Each call crosses from Python into C++, which the loop's own
    calls (from ATen) do not: the same replay loop with the allocator calls left out is timed too ("loopUs")."""
    try:
        torch.cuda.synchronize()
        torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=100000)
        step()
        torch.cuda.synchronize()
        snapshot = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        events = [(e["action"], e["addr"], e["size"]) for trace in snapshot["device_traces"] for e in trace
                  if e["action"] in ("alloc", "free_requested")]
        # Every alloc of the step, and the frees of what it allocated; the KV caches' new tensors outlive the
        # step (the step frees the old ones, allocated before it): a replay frees those at its end, so it makes
        # as many frees as allocs and leaves nothing behind.
        # An address freed before the step allocates it again is an old tensor's: that free is left out.
        ops, allocated = [], set()
        for action, addr, size in events:
            if action == "alloc":
                allocated.add(addr)
                ops.append((True, addr, size))
            elif addr in allocated:
                allocated.discard(addr)
                ops.append((False, addr, size))
        device = torch.cuda.current_device()
        stream = torch.cuda.current_stream().cuda_stream
        alloc, delete = torch.cuda.caching_allocator_alloc, torch.cuda.caching_allocator_delete

        def replay(live):
            for is_alloc, addr, size in ops:
                if is_alloc:
                    live[addr] = alloc(size, device, stream)
                else:
                    delete(live.pop(addr))
            for pointer in live.values():
                delete(pointer)

        def loop(live):
            for is_alloc, addr, size in ops:
                if is_alloc:
                    live[addr] = size
                else:
                    live.pop(addr)
            for size in live.values():
                pass

        def timed(body):
            body({})
            samples = []
            for _ in range(repeats):
                live = {}
                start = time.perf_counter_ns()
                body(live)
                samples.append(time.perf_counter_ns() - start)
            samples.sort()
            return samples[len(samples) // 2] / 1e3

        median = timed(replay)
        calls = 2 * sum(1 for is_alloc, _, _ in ops if is_alloc)
        return {"calls": calls, "repeats": repeats, "medianUs": median, "loopUs": timed(loop),
                "nsPerCall": median * 1e3 / max(1, calls), "traceEvents": len(events)}
    except Exception as error:  # the figure is extra: the run's own figures stand without it
        return {"error": f"{type(error).__name__}: {error}"}


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        args = sys.argv[3:]
        steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 128
        out = args[args.index("--json") + 1] if "--json" in args else "/dev/null"
        run(sys.argv[2], steps, out)
