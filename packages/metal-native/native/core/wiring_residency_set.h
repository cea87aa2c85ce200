// A residency set for layers that wire each committed allocation themselves (the host with mlock, CUDA with
// cuMemHostRegister), rather than handing the whole set to the system as Metal does. What is common lives
// here: which allocations this set has wired, the standing request, retries at each request, the failure
// count and the advice for the last failure. A layer says how to wire and unwire one allocation.
#ifndef NUVEC_WIRING_RESIDENCY_SET_H_
#define NUVEC_WIRING_RESIDENCY_SET_H_

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "platform.h"

namespace nuvec {

class WiringResidencySet : public ResidencySet {
 public:
  // Requesting residency wires every committed allocation, also retrying what failed before (a limit may
  // have been raised since); while it stands, each commit wires what it adds.
  void requestResidency() override;
  // Unwires everything this set wired. A layer's destructor calls it (a base destructor cannot reach the
  // layer's unwire any more).
  void endResidency() override;
  uint64_t wiringFailures() const override { return wiringFailures_; }
  std::string lastWiringError() const override { return lastWiringError_; }

 protected:
  void onCommit(const std::vector<Allocation*>& added, const std::vector<Allocation*>& removed) override;

  // Wires one allocation: 0 on success, else the layer's error code (errno, CUresult) for advice().
  virtual int wireOne(Allocation* allocation) = 0;
  virtual void unwireOne(Allocation* allocation) = 0;
  // What to tell the user about a failed wireOne.
  virtual std::string advice(Allocation* allocation, int error) = 0;

 private:
  void wire(Allocation* allocation);
  void unwire(Allocation* allocation);

  // Committed allocations this set has wired (a failed one is left out, retried at the next request).
  std::unordered_set<Allocation*> wired_;
  bool requested_ = false;
  uint64_t wiringFailures_ = 0;
  std::string lastWiringError_;
};

}  // namespace nuvec

#endif  // NUVEC_WIRING_RESIDENCY_SET_H_
