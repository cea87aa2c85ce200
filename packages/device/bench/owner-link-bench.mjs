#!/usr/bin/env node
// How to tie a handed-out ArrayBuffer to its DeviceBuffer (so the buffer stays alive while a view is
// reachable): a WeakMap entry per view (the obvious way), or a private field stamped on
// the ArrayBuffer (a base class whose constructor returns the given object: src/device-buffer.ts's
// `OwnedView`, what it does now). Both keep the owner alive exactly as long as the ArrayBuffer; this prints
// what each costs per new view.
//   node bench/owner-link-bench.mjs
class Stamp {
  constructor(target) {
    // biome-ignore lint/correctness/noConstructorReturn: the return override installs the private field on target
    return target;
  }
}
class OwnedView extends Stamp {
  #owner;
  constructor(view, owner) {
    super(view);
    this.#owner = owner;
  }
  static ownerOf(view) {
    return #owner in view ? view.#owner : undefined;
  }
}

const COUNT = 100_000;
const owner = {};
const fresh = () => Array.from({ length: COUNT }, () => new ArrayBuffer(8));
const weakMap = new WeakMap();
console.log(`node ${process.version}; ns per new view, ${COUNT} views a round`);
for (let round = 1; round <= 3; round++) {
  let views = fresh();
  let start = performance.now();
  for (let index = 0; index < COUNT; index++) weakMap.set(views[index], owner);
  const weakMapNs = ((performance.now() - start) * 1e6) / COUNT;
  views = fresh();
  start = performance.now();
  for (let index = 0; index < COUNT; index++) new OwnedView(views[index], owner);
  const stampNs = ((performance.now() - start) * 1e6) / COUNT;
  if (OwnedView.ownerOf(views[0]) !== owner) throw new Error("the stamp did not link the owner");
  console.log(
    `round ${round}: WeakMap.set ${weakMapNs.toFixed(0)} ns, private-field stamp ${stampNs.toFixed(0)} ns`,
  );
}
