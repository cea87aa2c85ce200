// DECLARATION STUB FOR SYNTAX CHECKS ONLY: glibc has no <sys/sysctl.h>; this declares the one macOS call
// native/metal/metal_platform.mm uses, as in macOS's header.
#ifndef NUVEC_CHECK_SYS_SYSCTL_H_
#define NUVEC_CHECK_SYS_SYSCTL_H_
#include <stddef.h>
#ifdef __cplusplus
extern "C"
#endif
    int
    sysctlbyname(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen);
#endif  // NUVEC_CHECK_SYS_SYSCTL_H_
