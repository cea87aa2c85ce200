// Run by hostile-globals.test.ts, one scenario per process: a global the Device relies on deleted before it
// loads, or patched after; a Proxy as the backend. Prints one JSON line: what happened, and the figures that
// show whether a deferred free settled. Waits with timers only (a patched Promise must not stop the child).
const scenario = process.argv[2];

function errorOf(error) {
  return {
    name: error?.constructor?.name,
    code: error?.code,
    argument: error?.argument,
    message: String(error?.message),
  };
}

function report(value) {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

if (scenario === "no-finalization-registry") delete globalThis.FinalizationRegistry;
if (scenario === "no-weakref") delete globalThis.WeakRef;

const { Device } = await import("@nuvec/device");
const { MockBackend } = await import("@nuvec/metal-native/mock");

/** Opens, mallocs, frees one buffer now and one after `after`; reports after two timer turns. */
function deferredFree(device, makeAfter) {
  const now = device.malloc(4096);
  now.free();
  const later = device.malloc(1 << 20);
  let settle;
  const after = makeAfter((resolve) => {
    settle = resolve;
  });
  let freeError;
  try {
    later.free({ after });
  } catch (error) {
    freeError = errorOf(error);
  }
  const pendingBefore = device.counters().pendingFrees;
  settle?.();
  return { freeError, pendingBefore };
}

const outcome = { scenario };

/** After `milliseconds` (a timer), reports the outcome with what the device holds, then closes it. */
function reportAfter(device, milliseconds, more = () => ({})) {
  setTimeout(() => {
    outcome.pendingAfter = device.counters().pendingFrees;
    Object.assign(outcome, more(), { active: device.memoryStats().active });
    device.close();
    report(outcome);
  }, milliseconds);
}

/** A Proxy forwarding to `mock` (methods bound to it: its state is private) save where `trap` answers `{ value }`. */
function forwarding(mock, trap) {
  return new Proxy(mock, {
    get(target, key) {
      const answer = trap(key);
      if (answer !== undefined) return answer.value;
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const promiseAfter = (executor) => new Promise(executor);
try {
  if (scenario === "no-finalization-registry") {
    try {
      // Opened with the safety net (the default), a buffer kept past the turn is registered then.
      Device.open({ backend: new MockBackend() }).malloc(4096);
      outcome.openWithSafetyNet = "opened";
    } catch (error) {
      outcome.openWithSafetyNet = errorOf(error);
    }
    const device = Device.open({ backend: new MockBackend(), safetyNet: false });
    Object.assign(outcome, deferredFree(device, promiseAfter));
    device.malloc(8192); // kept past the turn: no registry is made for it
    reportAfter(device, 20);
  } else if (scenario === "no-weakref") {
    const device = Device.open({ backend: new MockBackend() });
    Object.assign(outcome, deferredFree(device, promiseAfter));
    (() => device.malloc(4096))(); // dropped: the safety net reclaims it
    setTimeout(() => {
      globalThis.gc?.();
      reportAfter(device, 50, () => ({ leakedBuffers: device.counters().leakedBuffers }));
    }, 20);
  } else if (scenario === "promise-patched") {
    const device = Device.open({ backend: new MockBackend() });
    const OriginalPromise = Promise;
    const makeAfter = (executor) => new OriginalPromise(executor);
    // Patched after the library loaded: Promise.resolve throws, then() never calls back.
    Promise.resolve = () => {
      throw new Error("Promise.resolve is patched");
    };
    // biome-ignore lint/suspicious/noThenProperty: the hostile patch this scenario is about
    Promise.prototype.then = function patchedThen() {
      return this;
    };
    Object.assign(outcome, deferredFree(device, makeAfter));
    reportAfter(device, 20);
  } else if (scenario === "proxy-backend") {
    const mock = new MockBackend();
    let reads = 0;
    let hostile = false;
    // A forwarding Proxy that turns hostile after open.
    const proxy = forwarding(mock, (key) => {
      reads += 1;
      if (hostile && key === "newBuffer") return { value: "not a function any more" };
      if (hostile && key === "counters") throw new Error("the trap throws now");
      return undefined;
    });
    const device = Device.open({ backend: proxy });
    outcome.readsAtOpen = reads;
    hostile = true;
    const buffer = device.malloc(1 << 20);
    buffer.contents()[0] = 1; // host-visibility as read at open, not through the trap again
    outcome.counters = device.counters().backend.buffersMade;
    buffer.free();
    outcome.readsAfterOpen = reads - outcome.readsAtOpen;
    outcome.nativeBackendIsTheProxy = device.native.backend === proxy;
    device.close();
    const refusals = {};
    const cases = {
      "throwing trap": forwarding(mock, (key) => {
        if (key === "counters") throw new Error("trap");
      }),
      "missing method": forwarding(mock, (key) => (key === "mapFile" ? { value: undefined } : undefined)),
      "a string size": forwarding(mock, (key) => (key === "pageSize" ? { value: "16384" } : undefined)),
      "not an object": 42,
    };
    for (const [name, backend] of Object.entries(cases)) {
      const made = mock.counters().residencySetsMade;
      try {
        Device.open({ backend });
        refusals[name] = "opened";
      } catch (error) {
        refusals[name] = { ...errorOf(error), residencySetsMade: mock.counters().residencySetsMade - made };
      }
    }
    outcome.refusals = refusals;
    report(outcome);
  } else {
    throw new Error(`unknown scenario ${scenario}`);
  }
} catch (error) {
  outcome.uncaught = errorOf(error);
  report(outcome);
}
