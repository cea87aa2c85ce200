// DECLARATION STUB FOR SYNTAX CHECKS ONLY — not Apple's Foundation, and never used to build anything.
//
// Just enough of Foundation's declarations for `clang -fsyntax-only -x objective-c++` on Linux to check
// native/metal/*.mm (test/metal-syntax.test.ts). Signatures are copied from Apple's documentation by hand: a
// passing check proves the .mm is well-formed against these declarations, no more. The real build on macOS
// uses the SDK's headers.
#ifndef NUVEC_CHECK_FOUNDATION_H_
#define NUVEC_CHECK_FOUNDATION_H_

#include <stddef.h>
#include <stdint.h>

// objc.h defines nil as a null pointer (nullptr in C++).
#define nil nullptr

typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
typedef long NSInteger;
typedef unsigned long NSUInteger;

// The SDK spells availability with these macros; here they expand to nothing (the gate is not checked).
#define API_AVAILABLE(...)
#define NS_ASSUME_NONNULL_BEGIN
#define NS_ASSUME_NONNULL_END

@protocol NSObject
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject>
+ (instancetype)alloc;
+ (instancetype)new;
- (instancetype)init;
@end

@interface NSString : NSObject
+ (instancetype)stringWithUTF8String:(const char*)nullTerminatedCString;
@property(readonly) const char* UTF8String;
@end

typedef NSString* NSErrorDomain;
extern NSErrorDomain const NSPOSIXErrorDomain;

@interface NSError : NSObject
@property(readonly, copy) NSErrorDomain domain;
@property(readonly) NSInteger code;
@property(readonly, copy) NSString* localizedDescription;
@end

@interface NSString (Comparison)
- (BOOL)isEqualToString:(NSString*)aString;
@end

// The toll-free bridge out of ARC: a +1 reference the caller owns (the example kernel's command queue).
typedef const void* CFTypeRef;
#ifdef __cplusplus
extern "C"
#endif
    CFTypeRef
    CFBridgingRetain(id X);

#endif  // NUVEC_CHECK_FOUNDATION_H_
