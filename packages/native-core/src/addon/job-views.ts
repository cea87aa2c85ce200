import type { AddonOwner } from "./owner.js";

// What an addon's allocations hold until the end of the current job (until its microtasks run): the last
// view each handed out, and the backends that made views. Two reasons to act at the end of a job rather
// than per view:
// - a view the caller dropped and the collector took before detachContents() cannot be told from one moved
//   away (its finalizer runs only after a turn of the event loop), so its allocation would be quarantined:
//   held to the end of the job, a view dropped inside a synchronous loop is still there to be detached. The
//   allocation holds it (and lets it go once detached, so that a view made and detached in a loop dies
//   young), where a WeakRef per view would keep every view, detached or not, in V8's kept-objects set until
//   the end of the job;
// - the addon's teardown sentinel is renewed once per job that left a view attached (secureViews), not once
//   per view, so that a worker exiting between jobs gives back the memory of every view still attached.

/** An allocation that holds its last view until the end of the job. */
export interface JobViewHolder {
  readonly owner: AddonOwner;
  /** The job ended: let the view go. */
  endOfJob(): void;
}

let holders: JobViewHolder[] = [];

function endOfJob(): void {
  const ending = holders;
  holders = [];
  const backends: AddonOwner[] = [];
  for (const holder of ending) {
    holder.endOfJob();
    if (!backends.includes(holder.owner)) backends.push(holder.owner);
  }
  for (const backend of backends) backend.secureViews();
}

/** Calls `holder.endOfJob()` at the end of the current job (once per call: the caller calls it once a job). */
export function atEndOfJob(holder: JobViewHolder): void {
  if (holders.length === 0) queueMicrotask(endOfJob);
  holders.push(holder);
}
