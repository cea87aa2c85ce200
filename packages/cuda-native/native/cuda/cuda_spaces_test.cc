// Unit test of the CUDA layer's address spaces (cuda_spaces.h) without a GPU: a fake driver (a DriverApi of
// functions that keep books of reserved ranges, physical allocations and mappings, and refuse on demand)
// checks each call's order and what it leaves behind: a refusal at any step leaves no physical allocation
// and nothing recorded; an unmap refused at the context keeps its range on the books; a space's release
// gives every mapping back. Compiled and run by test/native-units.test.ts. Prints one line per check group.
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "core/check_test.h"
#include "cuda_spaces.h"

namespace {

using namespace nuvec;
using namespace nuvec::cuda;

// The fake driver's books and the refusals in force.
struct FakeDriver {
  std::set<CUmemGenericAllocationHandle> handles;    // physical allocations not released
  std::map<CUdeviceptr, size_t> mappings;            // mapped device addresses
  std::map<CUdeviceptr, size_t> reserved;            // reserved ranges
  CUmemGenericAllocationHandle nextHandle = 1;
  CUdeviceptr nextBase = 0x100000000ull;
  CUcontext current = nullptr;
  int synchronizes = 0;
  CUresult failSetCurrent = CUDA_SUCCESS;
  CUresult failReserve = CUDA_SUCCESS;
  CUresult failCreate = CUDA_SUCCESS;
  CUresult failMap = CUDA_SUCCESS;
  CUresult failAccess = CUDA_SUCCESS;
  CUresult failUnmap = CUDA_SUCCESS;
  int lastLocationId = -1;
};
FakeDriver fake;
CUcontext const kContext = reinterpret_cast<CUcontext>(0x1234);

CUresult CtxGetCurrent(CUcontext* context) {
  *context = fake.current;
  return CUDA_SUCCESS;
}
CUresult CtxSetCurrent(CUcontext context) {
  if (fake.failSetCurrent != CUDA_SUCCESS) return fake.failSetCurrent;
  fake.current = context;
  return CUDA_SUCCESS;
}
CUresult CtxSynchronize() {
  fake.synchronizes += 1;
  return CUDA_SUCCESS;
}
CUresult AddressReserve(CUdeviceptr* pointer, size_t bytes, size_t, CUdeviceptr, unsigned long long) {
  if (fake.failReserve != CUDA_SUCCESS) return fake.failReserve;
  *pointer = fake.nextBase;
  fake.reserved[fake.nextBase] = bytes;
  fake.nextBase += 0x100000000ull;
  return CUDA_SUCCESS;
}
CUresult AddressFree(CUdeviceptr pointer, size_t bytes) {
  auto found = fake.reserved.find(pointer);
  if (found == fake.reserved.end() || found->second != bytes) return CUDA_ERROR_INVALID_VALUE;
  fake.reserved.erase(found);
  return CUDA_SUCCESS;
}
CUresult MemCreate(CUmemGenericAllocationHandle* handle, size_t, const CUmemAllocationProp* prop,
                   unsigned long long) {
  if (fake.failCreate != CUDA_SUCCESS) return fake.failCreate;
  fake.lastLocationId = prop->location.id;
  *handle = fake.nextHandle++;
  fake.handles.insert(*handle);
  return CUDA_SUCCESS;
}
CUresult MemRelease(CUmemGenericAllocationHandle handle) {
  return fake.handles.erase(handle) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult MemMap(CUdeviceptr pointer, size_t bytes, size_t, CUmemGenericAllocationHandle, unsigned long long) {
  if (fake.failMap != CUDA_SUCCESS) return fake.failMap;
  fake.mappings[pointer] = bytes;
  return CUDA_SUCCESS;
}
CUresult MemUnmap(CUdeviceptr pointer, size_t bytes) {
  if (fake.failUnmap != CUDA_SUCCESS) return fake.failUnmap;
  auto found = fake.mappings.find(pointer);
  if (found == fake.mappings.end() || found->second != bytes) return CUDA_ERROR_INVALID_VALUE;
  fake.mappings.erase(found);
  return CUDA_SUCCESS;
}
CUresult MemSetAccess(CUdeviceptr, size_t, const CUmemAccessDesc* descriptors, size_t count) {
  if (fake.failAccess != CUDA_SUCCESS) return fake.failAccess;
  return count == 1 && descriptors->flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? CUDA_SUCCESS
                                                                               : CUDA_ERROR_INVALID_VALUE;
}
CUresult Granularity(size_t* granularity, const CUmemAllocationProp*, int) {
  *granularity = 2 * 1024 * 1024;
  return CUDA_SUCCESS;
}
CUresult ErrorName(CUresult, const char** name) {
  *name = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult ErrorString(CUresult, const char** text) {
  *text = "refused by the fake driver";
  return CUDA_SUCCESS;
}

DriverApi MakeApi() {
  DriverApi api{};
  api.cuCtxGetCurrent = CtxGetCurrent;
  api.cuCtxSetCurrent = CtxSetCurrent;
  api.cuCtxSynchronize = CtxSynchronize;
  api.cuMemAddressReserve = AddressReserve;
  api.cuMemAddressFree = AddressFree;
  api.cuMemCreate = MemCreate;
  api.cuMemRelease = MemRelease;
  api.cuMemMap = MemMap;
  api.cuMemUnmap = MemUnmap;
  api.cuMemSetAccess = MemSetAccess;
  api.cuMemGetAllocationGranularity = Granularity;
  api.cuGetErrorName = ErrorName;
  api.cuGetErrorString = ErrorString;
  return api;
}

constexpr size_t kGranule = 2 * 1024 * 1024;

void Granularities(const DriverApi& api) {
  CHECK(DeviceGranularity(api, 3) == kGranule);
  DriverApi none = api;
  none.cuMemGetAllocationGranularity = nullptr;
  CHECK(DeviceGranularity(none, 3) == 0);
  CUmemAllocationProp prop = DeviceMemoryProperties(3);
  CHECK(prop.type == CU_MEM_ALLOCATION_TYPE_PINNED && prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE);
  CHECK(prop.location.id == 3 && prop.requestedHandleTypes == CU_MEM_HANDLE_TYPE_NONE);
  std::printf("ok granularity\n");
}

void Reserving(const CudaDriverContext& driver) {
  CUdeviceptr base = 0;
  Failure failure;
  CHECK(!ReserveSpace(driver, 0, kGranule, &base, &failure) && failure.kind == Failure::Kind::kArgument);
  failure = Failure();
  CHECK(!ReserveSpace(driver, kGranule, kGranule + 512, &base, &failure));
  CHECK(failure.kind == Failure::Kind::kArgument && fake.reserved.empty());
  failure = Failure();
  fake.current = nullptr;
  fake.failSetCurrent = CUDA_ERROR_INVALID_VALUE;
  CHECK(!ReserveSpace(driver, kGranule, kGranule, &base, &failure));
  CHECK(failure.kind == Failure::Kind::kSystem && failure.errname == "CUDA_ERROR_FAKE" && fake.reserved.empty());
  fake.failSetCurrent = CUDA_SUCCESS;
  failure = Failure();
  fake.failReserve = CUDA_ERROR_OUT_OF_MEMORY;
  CHECK(!ReserveSpace(driver, kGranule, kGranule, &base, &failure));
  CHECK(failure.kind == Failure::Kind::kAllocation && fake.reserved.empty());
  fake.failReserve = CUDA_SUCCESS;
  failure = Failure();
  CHECK(ReserveSpace(driver, kGranule, 4 * kGranule, &base, &failure) && !failure.failed());
  CHECK(base != 0 && fake.reserved.at(base) == 4 * kGranule && fake.current == kContext);
  CudaSpaceMappings none;
  CHECK(FreeSpace(driver, base, 4 * kGranule, &none) && fake.reserved.empty());
  std::printf("ok reserving\n");
}

void Ranges() {
  Failure failure;
  CHECK(!CheckMapRange(false, 4 * kGranule, kGranule, 0, kGranule, &failure));
  CHECK(failure.kind == Failure::Kind::kArgument);
  for (auto [offset, length] : {std::pair<size_t, size_t>{512, kGranule}, {0, kGranule + 512}, {0, 5 * kGranule},
                                {0, 0}, {4 * kGranule, kGranule}, {5 * kGranule, kGranule}}) {
    failure = Failure();
    CHECK(!CheckMapRange(true, 4 * kGranule, kGranule, offset, length, &failure));
    CHECK(failure.kind == Failure::Kind::kArgument);
  }
  failure = Failure();
  CHECK(CheckMapRange(true, 4 * kGranule, kGranule, 3 * kGranule, kGranule, &failure) && !failure.failed());
  CHECK(CheckMapRange(true, 4 * kGranule, kGranule, 0, 4 * kGranule, &failure) && !failure.failed());
  std::printf("ok ranges\n");
}

void Mapping(const CudaDriverContext& driver) {
  CUdeviceptr base = 0;
  Failure failure;
  CHECK(ReserveSpace(driver, kGranule, 8 * kGranule, &base, &failure));
  CudaSpaceMappings mapped;
  CHECK(MapSpaceRange(driver, base, &mapped, kGranule, 2 * kGranule, &failure) && !failure.failed());
  CHECK(mapped.size() == 1 && mapped.at(kGranule).size == 2 * kGranule && fake.handles.size() == 1);
  CHECK(fake.mappings.at(base + kGranule) == 2 * kGranule && fake.lastLocationId == driver.device);
  // Overlaps on either side, and the same range again: refused, nothing made.
  for (auto [offset, length] : {std::pair<size_t, size_t>{0, 2 * kGranule}, {2 * kGranule, kGranule},
                                {kGranule, 2 * kGranule}, {0, 8 * kGranule}}) {
    failure = Failure();
    CHECK(!MapSpaceRange(driver, base, &mapped, offset, length, &failure));
    CHECK(failure.kind == Failure::Kind::kArgument && mapped.size() == 1 && fake.handles.size() == 1);
  }
  // A refusal at each driver step leaves no physical allocation and nothing on the books.
  for (CUresult* step : {&fake.failCreate, &fake.failMap, &fake.failAccess}) {
    *step = CUDA_ERROR_OUT_OF_MEMORY;
    failure = Failure();
    CHECK(!MapSpaceRange(driver, base, &mapped, 4 * kGranule, kGranule, &failure) && failure.failed());
    CHECK(mapped.size() == 1 && fake.handles.size() == 1 && fake.mappings.size() == 1);
    *step = CUDA_SUCCESS;
  }
  CHECK(fake.failCreate == CUDA_SUCCESS);
  failure = Failure();
  fake.failCreate = CUDA_ERROR_OUT_OF_MEMORY;
  MapSpaceRange(driver, base, &mapped, 4 * kGranule, kGranule, &failure);
  CHECK(failure.kind == Failure::Kind::kAllocation);
  fake.failCreate = CUDA_SUCCESS;
  // Adjacent mappings back a span across them; a gap does not.
  failure = Failure();
  CHECK(MapSpaceRange(driver, base, &mapped, 3 * kGranule, kGranule, &failure));
  CHECK(SpaceSpanBacked(mapped, kGranule, 3 * kGranule) && SpaceSpanBacked(mapped, 2 * kGranule + 7, kGranule));
  CHECK(SpaceSpanBacked(mapped, 4 * kGranule, 0) && !SpaceSpanBacked(mapped, 4 * kGranule, 1));
  CHECK(!SpaceSpanBacked(mapped, 0, 1) && !SpaceSpanBacked(mapped, kGranule, 4 * kGranule));
  CHECK(!SpanRefused(5, 6, &failure) && failure.kind == Failure::Kind::kArgument);
  FreeSpace(driver, base, 8 * kGranule, &mapped);
  CHECK(mapped.empty() && fake.handles.empty() && fake.mappings.empty() && fake.reserved.empty());
  std::printf("ok mapping\n");
}

void Unmapping(const CudaDriverContext& driver) {
  CUdeviceptr base = 0;
  Failure failure;
  CHECK(ReserveSpace(driver, kGranule, 4 * kGranule, &base, &failure));
  CudaSpaceMappings mapped;
  CHECK(MapSpaceRange(driver, base, &mapped, 0, 2 * kGranule, &failure));
  // Anything but exactly one earlier mapping: refused, still mapped.
  for (auto [offset, length] :
       {std::pair<size_t, size_t>{0, kGranule}, {kGranule, kGranule}, {2 * kGranule, kGranule}}) {
    failure = Failure();
    CHECK(!UnmapSpaceRange(driver, base, &mapped, offset, length, &failure));
    CHECK(failure.kind == Failure::Kind::kArgument && mapped.size() == 1 && fake.handles.size() == 1);
  }
  // The context refused: the range stays on the books, mapped, for another try.
  fake.current = nullptr;
  fake.failSetCurrent = CUDA_ERROR_INVALID_VALUE;
  failure = Failure();
  CHECK(!UnmapSpaceRange(driver, base, &mapped, 0, 2 * kGranule, &failure));
  CHECK(failure.kind == Failure::Kind::kSystem && mapped.size() == 1 && fake.mappings.size() == 1);
  fake.failSetCurrent = CUDA_SUCCESS;
  int synchronizes = fake.synchronizes;
  failure = Failure();
  CHECK(UnmapSpaceRange(driver, base, &mapped, 0, 2 * kGranule, &failure) && !failure.failed());
  CHECK(mapped.empty() && fake.handles.empty() && fake.mappings.empty() && fake.synchronizes == synchronizes + 1);
  // A refused unmap is reported; the handle is released all the same (the books no longer hold it).
  CHECK(MapSpaceRange(driver, base, &mapped, kGranule, kGranule, &failure));
  fake.failUnmap = CUDA_ERROR_INVALID_VALUE;
  failure = Failure();
  CHECK(!UnmapSpaceRange(driver, base, &mapped, kGranule, kGranule, &failure));
  CHECK(failure.kind == Failure::Kind::kSystem && mapped.empty() && fake.handles.empty());
  fake.failUnmap = CUDA_SUCCESS;
  fake.mappings.clear();
  // Released with memory still mapped: every mapping given back, after the work naming it ran.
  CHECK(MapSpaceRange(driver, base, &mapped, 0, kGranule, &failure));
  CHECK(MapSpaceRange(driver, base, &mapped, 2 * kGranule, 2 * kGranule, &failure));
  synchronizes = fake.synchronizes;
  CHECK(FreeSpace(driver, base, 4 * kGranule, &mapped));
  CHECK(mapped.empty() && fake.handles.empty() && fake.mappings.empty() && fake.reserved.empty());
  CHECK(fake.synchronizes == synchronizes + 1);
  CHECK(!FreeSpace(driver, base, 4 * kGranule, &mapped));  // a range the driver no longer has
  std::printf("ok unmapping\n");
}

}  // namespace

int main() {
  DriverApi api = MakeApi();
  CudaDriverContext driver{&api, 3, kContext};
  Granularities(api);
  Reserving(driver);
  Ranges();
  Mapping(driver);
  Unmapping(driver);
  std::printf("all %d checks passed\n", nuvec_test::checks);
  return 0;
}
