/**
 * The CachingAllocator under MLX's policy over a fresh TestSource, as the caching allocator's unit tests
 * (allocator*.test.ts) build it. Apart from them so that each of those files reads alone.
 */
import { CachingAllocator } from "../src/allocator.js";
import type { AllocatorOptions } from "../src/options.js";
import { type TestBuffer, TestSource } from "./support.js";

/** A TestSource with `facts` and a CachingAllocator under the `mlx` policy (and `options`) over it. */
export function setup(
  facts: ConstructorParameters<typeof TestSource>[0] = {},
  options: AllocatorOptions<TestBuffer> = {},
) {
  const source = new TestSource(facts);
  // MLX's decisions, named: the bounded default has its own suite (bounded.test.ts).
  const allocator = new CachingAllocator(source, { policy: "mlx", ...options });
  return { source, allocator };
}
