// See wiring_residency_set.h.
#include "wiring_residency_set.h"

namespace nuvec {

WiringResidencySet::~WiringResidencySet() {
  endResidency();
  freed_->residencySets += 1;
}

void WiringResidencySet::wire(Allocation* allocation) {
  // Recorded before it is wired, so that a lock is never held unrecorded (the insert is what can throw);
  // taken out again when wiring fails or throws.
  auto [entry, inserted] = wired_.insert(allocation);
  if (!inserted) return;
  int error;
  try {
    error = wiring_->wireOne(allocation);
  } catch (...) {
    wired_.erase(entry);
    throw;
  }
  if (error == 0) return;
  wired_.erase(entry);
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
  // In place, allocating nothing: the destructor runs this, where a throw would end the process.
  for (auto entry = wired_.begin(); entry != wired_.end(); entry = wired_.erase(entry)) {
    wiring_->unwireOne(*entry);
  }
}

}  // namespace nuvec
