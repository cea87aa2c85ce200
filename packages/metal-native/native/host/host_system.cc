// What the host layer reads about the system it runs on: cgroup memory limits, vm.max_map_count, the
// machine's name. Plain files and uname: no memory is touched here.
#include "host_system.h"

#include <sys/utsname.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace nuvec {

uint64_t ReadNumber(const std::string& path, bool* found) {
  std::ifstream file(path);
  std::string text;
  *found = false;
  if (!file || !(file >> text)) return 0;
  if (text == "max") return 0;  // cgroup v2: no limit
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return 0;
  // cgroup v1 says "no limit" with a huge page-rounded number (9223372036854771712).
  if (value >= (1ULL << 60)) return 0;
  *found = true;
  return value;
}

// The smallest memory limit among the cgroups that contain this process, or 0 for none. Looks at the
// namespace root (what a container sees) and at the paths /proc/self/cgroup names with their ancestors.
uint64_t CgroupMemoryLimit() {
  std::vector<std::string> candidates = {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    // "0::/path" (v2) or "4:memory:/path" (v1).
    size_t first = line.find(':');
    size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    bool v2 = line.compare(0, first, "0") == 0 && controllers.empty();
    bool v1 = controllers.find("memory") != std::string::npos;
    if (!v1 && !v2) continue;
    while (!path.empty() && path != "/") {
      candidates.push_back(v2 ? "/sys/fs/cgroup" + path + "/memory.max"
                              : "/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
      path = path.substr(0, path.rfind('/'));
    }
  }
  uint64_t limit = 0;
  for (const std::string& candidate : candidates) {
    bool found = false;
    uint64_t value = ReadNumber(candidate, &found);
    if (found && value > 0 && (limit == 0 || value < limit)) limit = value;
  }
  return limit;
}

std::string MachineName() {
  struct utsname names;
  if (uname(&names) != 0) return "host";
  std::string machine = names.machine;
  if (machine == "x86_64" || machine == "amd64") machine = "x64";
  if (machine == "aarch64") machine = "arm64";
  return std::string("host (") + names.sysname + " " + machine + ")";
}

}  // namespace nuvec
