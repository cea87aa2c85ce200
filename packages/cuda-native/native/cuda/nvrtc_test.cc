// NVRTC's loader when NUVEC_NVRTC_LIBRARY names a file that does not load (test/native-units.test.ts runs
// it, once per case, since the loader looks once per process): CompileCuda refuses with kind kNone and a
// message naming that file, why it did not load, and no other place (the variable is the only one looked in).
// Usage: NUVEC_NVRTC_LIBRARY=FILE NVRTC_TEST_EXPECTED=TEXT nvrtc_test (TEXT: a fragment the message must
// hold, e.g. the dlopen error).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nvrtc.h"

int main() {
  const char* named = std::getenv(nuvec::cuda::kNvrtcLibraryVariable);
  const char* expected = std::getenv("NVRTC_TEST_EXPECTED");
  if (named == nullptr || expected == nullptr) {
    std::printf("usage: NUVEC_NVRTC_LIBRARY=FILE NVRTC_TEST_EXPECTED=TEXT nvrtc_test\n");
    return 2;
  }
  int checks = 0;
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    checks += 1;
    if (!ok) {
      failures += 1;
      std::printf("FAIL %s\n", what.c_str());
    }
  };
  std::string why;
  check(!nuvec::cuda::NvrtcAvailable(&why), "NVRTC is not available");
  nuvec::Failure failure;
  std::string image;
  bool cubin = true;
  bool compiled = nuvec::cuda::CompileCuda("extern \"C\" __global__ void k() {}", {}, 9, 0, &image, &cubin, &failure);
  check(!compiled && failure.kind == nuvec::Failure::Kind::kNone && image.empty(), "CompileCuda refuses, kind kNone");
  check(failure.message == why, "the same message as NvrtcAvailable's");
  check(failure.message.find(std::string("\n  ") + named + ": ") != std::string::npos, "the message names the file: " + failure.message);
  check(failure.message.find(expected) != std::string::npos, std::string("the message says why: ") + expected);
  check(failure.message.find("libnvrtc.so.12") == std::string::npos && failure.message.find("/usr/local/cuda") == std::string::npos,
        "no other place is looked in");
  check(failure.message.find("NUVEC_NVRTC_LIBRARY") != std::string::npos, "the message names the variable");
  if (failures == 0) {
    std::printf("ok nvrtc not loadable\nall %d checks passed\n", checks);
    return 0;
  }
  std::printf("%d of %d checks failed\n", failures, checks);
  return 1;
}
