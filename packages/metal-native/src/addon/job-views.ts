import type { AddonBackend } from "./backend.js";

// The views an addon handed out in the current job, held until its microtasks run, and the backends that
// made them. Two reasons to act at the end of a job rather than per view:
// - a view the caller dropped and the collector took before detachContents() cannot be told from one moved
//   away (its finalizer runs only after a turn of the event loop), so its allocation would be quarantined:
//   held to the end of the job, a view dropped inside a synchronous loop is still there to be detached. One
//   array and one microtask per job, where a WeakRef per view would fill V8's kept-objects set (a hash set)
//   for the same effect;
// - the addon's teardown sentinel is renewed once per job that left a view attached (secureViews), not once
//   per view, so that a worker exiting between jobs gives back the memory of every view still attached.
let keptThisJob: ArrayBuffer[] = [];
let backendsThisJob: AddonBackend[] = [];

function endOfJob(): void {
  keptThisJob = [];
  const backends = backendsThisJob;
  backendsThisJob = [];
  for (const backend of backends) backend.secureViews();
}

/** Holds `view`, which `backend` handed out, until the end of the current job (see above). */
export function keepUntilJobEnd(view: ArrayBuffer, backend: AddonBackend): void {
  const count = keptThisJob.length;
  if (count === 0) queueMicrotask(endOfJob);
  else if (keptThisJob[count - 1] === view) return; // the same view asked for again
  keptThisJob.push(view);
  if (!backendsThisJob.includes(backend)) backendsThisJob.push(backend);
}
