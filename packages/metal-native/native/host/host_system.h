// What the host layer reads about the system (host_system.cc).
#ifndef NUVEC_HOST_SYSTEM_H_
#define NUVEC_HOST_SYSTEM_H_

#include <cstdint>
#include <string>

#include <memory>

namespace nuvec {

// A number from a one-line file (/proc, /sys); *found false (and 0) when missing, unreadable or "no limit".
uint64_t ReadNumber(const std::string& path, bool* found);
// The smallest memory limit among the cgroups that contain this process, or 0 for none.
uint64_t CgroupMemoryLimit();
// "host (Linux x64)": the system's name and the machine, as Node names architectures.
std::string MachineName();

class StreamPlatform;
// The host's streams and modules (host_streams.cc): worker-thread streams, host kernels loaded with dlopen.
std::unique_ptr<StreamPlatform> CreateHostStreamPlatform();

}  // namespace nuvec

#endif  // NUVEC_HOST_SYSTEM_H_
