// A residency set for layers that wire each committed allocation themselves (the host with mlock, CUDA with
// cuMemHostRegister), rather than handing the whole set to the system as Metal does. What is common lives
// here: which allocations this set has wired, the standing request, retries at each request, the failure
// count and the advice for the last failure. How to wire one allocation is the layer's Wiring.
#ifndef NUVEC_WIRING_RESIDENCY_SET_H_
#define NUVEC_WIRING_RESIDENCY_SET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "platform.h"

namespace nuvec {

// How a layer wires one allocation (its platform implements it; wiring may nest across sets there).
class Wiring {
 public:
  virtual ~Wiring() = default;
  // 0 on success, else the layer's error code (errno, CUresult), given back to wiringAdvice.
  virtual int wireOne(Allocation* allocation) = 0;
  virtual void unwireOne(Allocation* allocation) = 0;
  // What to tell the user about a failed wireOne (also the platform's lastWiringError from then on).
  virtual std::string wiringAdvice(Allocation* allocation, int error) = 0;
};

class WiringResidencySet final : public ResidencySet {
 public:
  // wiring: the platform, which outlives its sets; freed: counts this set's end.
  WiringResidencySet(Wiring* wiring, std::shared_ptr<FreedCounters> freed)
      : wiring_(wiring), freed_(std::move(freed)) {}
  ~WiringResidencySet() override;

  // Requesting residency wires every committed allocation, also retrying what failed before (a limit may
  // have been raised since); while it stands, each commit wires what it adds.
  void requestResidency() override;
  // Unwires everything this set wired.
  void endResidency() override;
  uint64_t wiringFailures() const override { return wiringFailures_; }
  std::string lastWiringError() const override { return lastWiringError_; }

 protected:
  void onCommit(const std::vector<Allocation*>& added, const std::vector<Allocation*>& removed) override;

 private:
  void wire(Allocation* allocation);
  void unwire(Allocation* allocation);

  Wiring* wiring_;
  std::shared_ptr<FreedCounters> freed_;
  // Committed allocations this set has wired (a failed one is left out, retried at the next request).
  std::unordered_set<Allocation*> wired_;
  bool requested_ = false;
  uint64_t wiringFailures_ = 0;
  std::string lastWiringError_;
};

}  // namespace nuvec

#endif  // NUVEC_WIRING_RESIDENCY_SET_H_
