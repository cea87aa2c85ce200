#!/usr/bin/env python3
"""Records real PyTorch memory snapshots on a CUDA device, for `replay x.pickle --compare all --html x.html`.

Each workload runs with torch.cuda.memory._record_memory_history() on and is dumped with
torch.cuda.memory._dump_snapshot():

  transformer-train.pickle   a small GPT-style transformer (random weights), forward and backward, AdamW
                             steps on batches of changing sequence length;
  inference-loop.pickle      the same model generating tokens greedily with a growing KV cache, batch after
                             batch of changing prompt length (an inference server's loop).

Usage (PyTorch with CUDA, nothing downloaded: the models are built from a configuration):

  python3 apps/examples/scripts/make-torch-snapshot.py OUT_FOLDER [--steps 4] [--tokens 48] [--max-entries 200000]

Small ones for the repository's fixtures: --steps 2 --tokens 16, then gzip -9 (the replay reads .pickle.gz).

Then: node apps/examples/dist/replay.js OUT_FOLDER/transformer-train.pickle --compare all --html train.html
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x, cache=None):
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=2)
        shape = (batch, length, self.heads, width // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            if cache.get("k") is not None:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        attention = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None or length > 1)
        x = x + self.proj(attention.transpose(1, 2).reshape(batch, length, width))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, vocabulary=32000, width=768, depth=8, heads=12, context=1024):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.position = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocabulary, bias=False)

    def forward(self, tokens, caches=None, start=0):
        positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.position(positions)
        for index, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[index])
        return self.head(self.norm(x))


def record(path, max_entries, work):
    torch.cuda.synchronize()
    # Python frames only: C++ frames make each entry several times larger and add nothing the view shows.
    torch.cuda.memory._record_memory_history(max_entries=max_entries, stacks="python")
    started = time.time()
    work()
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(path)
    torch.cuda.memory._record_memory_history(enabled=None)
    print(f"{path}: {os.path.getsize(path)} bytes in {time.time() - started:.1f} s, "
          f"peak reserved {torch.cuda.max_memory_reserved() / 2**20:.1f} MiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--max-entries", type=int, default=200_000)
    arguments = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this records CUDA memory snapshots")
    os.makedirs(arguments.out, exist_ok=True)
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = Model().to(device)
    generator = torch.Generator(device="cpu").manual_seed(0)

    def train():
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        model.train()
        for step in range(arguments.steps):
            length = [128, 256, 192, 384][step % 4]
            tokens = torch.randint(0, 32000, (8, length + 1), generator=generator).to(device)
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        del optimizer

    def infer():
        model.eval()
        with torch.no_grad():
            for batch, prompt in enumerate([32, 96, 64]):
                tokens = torch.randint(0, 32000, (4, prompt), generator=generator).to(device)
                caches = [dict() for _ in model.blocks]
                logits = model(tokens, caches)
                for step in range(arguments.tokens):
                    next_token = logits[:, -1:].argmax(dim=-1)
                    logits = model(next_token, caches, start=prompt + step)
                del caches, logits, tokens

    record(os.path.join(arguments.out, "transformer-train.pickle"), arguments.max_entries, train)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    record(os.path.join(arguments.out, "inference-loop.pickle"), arguments.max_entries, infer)


if __name__ == "__main__":
    main()
