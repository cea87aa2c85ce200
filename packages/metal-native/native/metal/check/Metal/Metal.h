// DECLARATION STUB FOR SYNTAX CHECKS ONLY — not Apple's Metal, and never used to build anything.
//
// The part of Metal that native/metal/metal_platform.mm calls, declared by hand from Apple's documentation so
// that `clang -fsyntax-only` on Linux can check the file (test/metal-syntax.test.ts). A passing check proves
// the .mm is well-formed against these declarations — selectors, types, blocks, ARC — not that it runs, and
// not that these declarations match the SDK in every detail. The real build on macOS uses the SDK.
#ifndef NUVEC_CHECK_METAL_H_
#define NUVEC_CHECK_METAL_H_

#import <Foundation/Foundation.h>

typedef NSUInteger MTLResourceOptions;
// Values as in MTLResource.h: storage mode in bits 4–7, hazard tracking in bits 8–9.
static const MTLResourceOptions MTLResourceStorageModeShared = 0UL << 4;
static const MTLResourceOptions MTLResourceHazardTrackingModeUntracked = 1UL << 8;

typedef NSInteger MTLGPUFamily;
static const MTLGPUFamily MTLGPUFamilyMetal3 = 5001;

@protocol MTLAllocation <NSObject>
@property(readonly) NSUInteger allocatedSize;
@end

@protocol MTLResource <MTLAllocation>
@end

@protocol MTLBuffer <MTLResource>
- (void*)contents;
@property(readonly) NSUInteger length;
@property(readonly) uint64_t gpuAddress API_AVAILABLE(macos(13.0));
@end

API_AVAILABLE(macos(15.0))
@interface MTLResidencySetDescriptor : NSObject
@property(copy, atomic) NSString* label;
@property(atomic) NSUInteger initialCapacity;
@end

API_AVAILABLE(macos(15.0))
@protocol MTLResidencySet <NSObject>
- (void)addAllocation:(id<MTLAllocation>)allocation;
- (void)removeAllocation:(id<MTLAllocation>)allocation;
- (void)removeAllAllocations;
- (void)commit;
- (void)requestResidency;
- (void)endResidency;
@property(readonly) uint64_t allocatedSize;
@property(readonly) NSUInteger allocationCount;
@end

// What the example kernel (apps/examples/kernel/metal/kernel_metal.mm) uses to run a compute kernel.
typedef struct {
  NSUInteger width, height, depth;
} MTLSize;
static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth) {
  MTLSize size = {width, height, depth};
  return size;
}

typedef NSUInteger MTLCommandBufferStatus;
static const MTLCommandBufferStatus MTLCommandBufferStatusCompleted = 4;
static const MTLCommandBufferStatus MTLCommandBufferStatusError = 5;

@protocol MTLDevice;

@interface MTLCompileOptions : NSObject
@end

@protocol MTLFunction <NSObject>
@end

@protocol MTLLibrary <NSObject>
- (id<MTLFunction>)newFunctionWithName:(NSString*)functionName;
@end

@protocol MTLComputePipelineState <NSObject>
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@end

@protocol MTLComputeCommandEncoder <NSObject>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setBytes:(const void*)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreads:(MTLSize)threadsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)endEncoding;
@end

@protocol MTLCommandBuffer;
typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer> buffer);

@protocol MTLCommandBuffer <NSObject>
- (id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (void)commit;
- (void)waitUntilCompleted;
@property(readonly) MTLCommandBufferStatus status;
@property(readonly) NSError* error;
@end

@protocol MTLCommandQueue <NSObject>
@property(readonly) id<MTLDevice> device;
- (id<MTLCommandBuffer>)commandBuffer;
- (void)addResidencySet:(id<MTLResidencySet>)residencySet API_AVAILABLE(macos(15.0));
- (void)removeResidencySet:(id<MTLResidencySet>)residencySet API_AVAILABLE(macos(15.0));
@end

@protocol MTLDevice <NSObject>
@property(readonly) NSString* name;
@property(readonly) uint64_t registryID;
@property(readonly) uint64_t recommendedMaxWorkingSetSize;
@property(readonly) NSUInteger maxBufferLength;
- (BOOL)supportsFamily:(MTLGPUFamily)gpuFamily;
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void*)pointer
                                   length:(NSUInteger)length
                                  options:(MTLResourceOptions)options
                              deallocator:(void (^)(void* pointer, NSUInteger length))deallocator;
- (id<MTLLibrary>)newLibraryWithSource:(NSString*)source
                               options:(MTLCompileOptions*)options
                                 error:(NSError**)error;
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                                             error:(NSError**)error;
- (id<MTLResidencySet>)newResidencySetWithDescriptor:(MTLResidencySetDescriptor*)descriptor
                                               error:(NSError**)error API_AVAILABLE(macos(15.0));
@end

#ifdef __cplusplus
extern "C"
#endif
    id<MTLDevice>
    MTLCreateSystemDefaultDevice(void);

#endif  // NUVEC_CHECK_METAL_H_
