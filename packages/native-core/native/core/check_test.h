// The harness of the C++ unit tests of native/core (*_test.cc): CHECK counts a check and exits non-zero at the
// first failure, naming the file, line and condition; each test's main() prints "all N checks passed" at the
// end. No framework: the tests build with nothing but the compiler node-gyp uses (test/native-core.test.ts).
// Not shipped (package.json's files leave out native/core/*_test.*).
#ifndef NUVEC_CORE_CHECK_TEST_H_
#define NUVEC_CORE_CHECK_TEST_H_

#include <cstdio>
#include <cstdlib>

namespace nuvec_test {
// How many checks ran so far.
inline int checks = 0;
}  // namespace nuvec_test

#define CHECK(condition)                                                                      \
  do {                                                                                        \
    nuvec_test::checks += 1;                                                                  \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "FAILED %s:%d: %s\n", __FILE__, __LINE__, #condition);              \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

#endif  // NUVEC_CORE_CHECK_TEST_H_
