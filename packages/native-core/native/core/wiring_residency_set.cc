// See wiring_residency_set.h.
#include "wiring_residency_set.h"

namespace nuvec {

WiringResidencySet::~WiringResidencySet() {
  endResidency();
  freed_->residencySets += 1;
}

void WiringResidencySet::wire(Allocation* allocation) {
  if (wired_.count(allocation) > 0) return;
  int error = wiring_->wireOne(allocation);
  if (error == 0) {
    wired_.insert(allocation);
    return;
  }
  wiringFailures_ += 1;
  lastWiringError_ = wiring_->wiringAdvice(allocation, error);
}

void WiringResidencySet::unwire(Allocation* allocation) {
  if (wired_.erase(allocation) == 0) return;
  wiring_->unwireOne(allocation);
}

void WiringResidencySet::onCommit(const std::vector<Allocation*>& added, const std::vector<Allocation*>& removed) {
  for (Allocation* allocation : removed) unwire(allocation);
  if (!requested_) return;
  for (Allocation* allocation : added) wire(allocation);
}

void WiringResidencySet::requestResidency() {
  requested_ = true;
  for (Allocation* allocation : committed_) wire(allocation);
}

void WiringResidencySet::endResidency() {
  requested_ = false;
  std::vector<Allocation*> wired(wired_.begin(), wired_.end());
  for (Allocation* allocation : wired) unwire(allocation);
}

}  // namespace nuvec
