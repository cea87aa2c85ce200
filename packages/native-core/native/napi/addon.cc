// The common exports and the per-environment set-up of both addons (addon.h).
#include "addon.h"

#include "stream_handles.h"

#include <memory>
#include <string>
#include <utility>

namespace nuvec {

AddonData& DataOf(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

Platform& PlatformOf(Napi::Env env, AddonState& state) {
  if (state.tornDown || !state.platform) {
    const std::string& why = state.platformFailure.message;
    throw MakeError(env, kUnavailable, why.empty() ? "the native device is not available" : why);
  }
  return *state.platform;
}

Napi::Object HandleArgument(Napi::Env env, const Napi::Value& value, const Napi::FunctionReference& constructor,
                            const char* argument, const char* message) {
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(constructor.Value())) {
    ThrowArgument(env, argument, message);
  }
  return value.As<Napi::Object>();
}

Napi::Object FactsObject(Napi::Env env, const DeviceFacts& facts) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("name", facts.name);
  object.Set("platform", facts.platform);
  object.Set("memorySize", static_cast<double>(facts.memorySize));
  object.Set("recommendedMaxWorkingSetSize", static_cast<double>(facts.recommendedMaxWorkingSetSize));
  object.Set("maxBufferLength", static_cast<double>(facts.maxBufferLength));
  object.Set("resourceLimit", static_cast<double>(facts.resourceLimit));
  object.Set("pageSize", static_cast<double>(facts.pageSize));
  object.Set("supportsResidencySets", facts.supportsResidencySets);
  return object;
}

namespace {

Napi::Value Facts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return FactsObject(env, PlatformOf(env, *DataOf(env).state).facts());
}

// The counters' names, in the order the TypeScript type lists them and countersInto writes them.
constexpr const char* kCounterNames[] = {
    "buffersMade",
    "buffersReleased",
    "bufferBytes",
    "mappingsMade",
    "mappingsReleased",
    "mappedBytes",
    "residencySetsMade",
    "commits",
    "residencyRequests",
    "wiredBytes",
    "wiringFailures",
    "quarantinedAllocations",
    "quarantinedBytes",
    "abandonedAllocations",
    "abandonedBytes",
    "buffersFreedByPlatform",
    "mappingsUnmappedByPlatform",
    "residencySetsFreedByPlatform",
};
constexpr size_t kCounterCount = sizeof(kCounterNames) / sizeof(kCounterNames[0]);

// The counters' values, in the order of kCounterNames (ended views settled first).
void CounterValues(Napi::Env env, double* values) {
  AddonState& state = *DataOf(env).state;
  Platform& platform = PlatformOf(env, state);
  WiringCounters wiring = platform.wiringCounters();
  const Counters& counters = state.counters;
  state.SettleEndedViews();
  DataOf(env).registry->Settle();  // what completed stream work held is freed first
  const FreedCounters& freed = *platform.freed;
  const AbandonedTotals abandoned = ProcessAbandoned();
  const uint64_t figures[kCounterCount] = {
      counters.buffersMade,
      counters.buffersReleased,
      counters.bufferBytes,
      counters.mappingsMade,
      counters.mappingsReleased,
      counters.mappedBytes,
      counters.residencySetsMade,
      counters.commits,
      counters.residencyRequests,
      wiring.wiredBytes,
      wiring.wiringFailures,
      counters.quarantinedAllocations,
      counters.quarantinedBytes,
      abandoned.allocations,
      abandoned.bytes,
      freed.buffers.load(),
      freed.mappings.load(),
      freed.residencySets.load(),
  };
  for (size_t index = 0; index < kCounterCount; index++) values[index] = static_cast<double>(figures[index]);
}

Napi::Value CountersOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double values[kCounterCount];
  CounterValues(env, values);
  Napi::Object object = Napi::Object::New(env);
  for (size_t index = 0; index < kCounterCount; index++) object.Set(kCounterNames[index], values[index]);
  return object;
}

// countersInto(values): the counters' values written into a Float64Array of exactly kCounterCount elements,
// in the order of kCounterNames, with no object made: setting 18 named properties from C++ costs some 5 µs
// (a string made per name), the wrapper's object literal over these values well under one.
void CountersInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // One napi_get_typedarray_info gives the kind, the length and the memory (node-addon-api's TypedArray
  // asks again for each).
  napi_value value = info[0];
  bool isTypedArray = false;
  napi_typedarray_type type = napi_int8_array;
  size_t length = 0;
  void* data = nullptr;
  if (napi_is_typedarray(env, value, &isTypedArray) != napi_ok || !isTypedArray ||
      napi_get_typedarray_info(env, value, &type, &length, &data, nullptr, nullptr) != napi_ok ||
      type != napi_float64_array || length != kCounterCount || data == nullptr) {
    ThrowArgument(env, "values", "values must be a Float64Array of the counters' length");
  }
  CounterValues(env, static_cast<double*>(data));
}

Napi::Value LastWiringError(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string advice = PlatformOf(env, *DataOf(env).state).lastWiringError();
  return advice.empty() ? env.Undefined() : Napi::String::New(env, advice);
}

// attachResidencySet(set, commandQueue?): a Metal queue as a BigInt, or none for the platform's own.
void AttachResidencySet(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData& data = DataOf(env);
  Platform& platform = PlatformOf(env, *data.state);
  Napi::Object handle = HandleArgument(env, info[0], data.residencySetConstructor, "set",
                                       "set must be a residency set of this backend");
  ResidencySet* set = ResidencySetHandle::Unwrap(handle)->Live(env);
  uint64_t commandQueue = PointerArgument(env, info[1], "commandQueue", true);
  Failure failure;
  platform.attachResidencySet(set, commandQueue, &failure);
  if (failure.failed()) ThrowArgument(env, "commandQueue", failure.message);
}

// viewBookkeeping(): what the addon keeps for views, to show that it does not grow with the number of views
// made: view records in the state, views listed for detaching (and the allocations listing them).
Napi::Value ViewBookkeeping(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData& data = DataOf(env);
  data.state->SettleEndedViews();
  size_t listed = data.views->handleListed;
  for (const auto& entry : data.views->byAllocation) listed += entry.second.size();
  Napi::Object object = Napi::Object::New(env);
  object.Set("records", static_cast<double>(data.state->ViewRecordCount()));
  object.Set("listed", static_cast<double>(listed));
  object.Set("listingAllocations", static_cast<double>(data.views->byAllocation.size()));
  return object;
}

// Nothing: what a call across N-API costs, for the benchmark.
Napi::Value Noop(const Napi::CallbackInfo& info) { return info.Env().Undefined(); }

// What the teardown reaches: weakly, as the instance data may go first.
struct Teardown {
  napi_env env;
  std::weak_ptr<AddonState> state;
  std::weak_ptr<ViewRegistry> views;
  uint64_t sentinel = 0;  // the sentinel's generation (0: the cleanup hook's)
};

// Records every view still attached in this environment as dying with it (the state counts it as
// detached by us); the views are forgotten. What stays handed out can only be a view moved away, which the
// state's TearDown abandons.
void SecureAttachedViews(const Teardown& teardown) {
  std::shared_ptr<AddonState> state = teardown.state.lock();
  std::shared_ptr<ViewRegistry> views = teardown.views.lock();
  if (!state || !views) return;
  Napi::HandleScope scope(teardown.env);
  // Backing stores need no securing: their deleters tell which views live on (AddonState::TearDown).
  if (!views->backingStores) {
    for (auto& [id, list] : views->byAllocation) {
      for (auto& view : list) {
        if (view.ref->Attached(teardown.env) != nullptr) state->ViewDetachedByUs(id, view.viewId);
      }
    }
  }
  views->byAllocation.clear();
}

// The environment's cleanup hook: runs before N-API's own teardown of this environment (hooks run in
// reverse order of registration), so a worker's or the process's memory, mappings and locks go back to the
// system at exit, whatever JS dropped.
void RunTeardown(void* argument) {
  std::unique_ptr<Teardown> teardown(static_cast<Teardown*>(argument));
  SecureAttachedViews(*teardown);  // in case no sentinel ran first
  if (std::shared_ptr<AddonState> state = teardown->state.lock()) state->TearDown();
}

// The sentinel's one byte: never read or written.
char sentinelByte = 0;

}  // namespace

bool EnvironmentStopping(napi_env env) {
  // Node refuses calls that may run JavaScript once the environment is being torn down (FreeEnvironment
  // sets can_call_into_js to false before any cleanup runs): coercing a boolean is such a call, and harmless.
  napi_value value = nullptr;
  napi_value result = nullptr;
  if (napi_get_boolean(env, true, &value) != napi_ok) return true;
  return napi_coerce_to_bool(env, value, &result) != napi_ok;
}

void RenewTeardownSentinel(Napi::Env env) {
  AddonData& data = DataOf(env);
  // The generation moves only once the new sentinel exists: a worker being terminated refuses new buffers,
  // and the sentinel held must then stay the one that acts.
  uint64_t generation = data.views->sentinel + 1;
  auto* teardown = new Teardown{env, data.state, data.views, generation};
  napi_value sentinel = nullptr;
  napi_status status = napi_create_external_arraybuffer(
      env, &sentinelByte, 1,
      [](napi_env, void*, void* hint) {
        // Replaced sentinels are collected normally: nothing to do. The newest is held, so only the
        // environment's teardown finalizes it.
        std::unique_ptr<Teardown> teardown(static_cast<Teardown*>(hint));
        std::shared_ptr<ViewRegistry> views = teardown->views.lock();
        if (views && views->sentinel == teardown->sentinel) SecureAttachedViews(*teardown);
      },
      teardown, &sentinel);
  if (status != napi_ok) {
    delete teardown;
    return;  // the view just made stays in doubt: abandoned at teardown if still attached, never freed early
  }
  data.views->sentinel = generation;
  data.views->coveredUpTo = data.state->LastViewId();
  data.views->uncoveredAttached = 0;
  data.teardownSentinel = Napi::Reference<Napi::ArrayBuffer>::New(Napi::ArrayBuffer(env, sentinel), 1);
}

void SecureNewViews(Napi::Env env) {
  if (DataOf(env).views->uncoveredAttached > 0) RenewTeardownSentinel(env);
}

namespace {
// secureViews(): the end of a job that made views (a microtask of the TypeScript layer).
void SecureViews(const Napi::CallbackInfo& info) { SecureNewViews(info.Env()); }
}  // namespace

void InitCommon(Napi::Env env, Napi::Object exports, AddonData* data) {
  // Views: V8's backing stores where this build may use them on this Node, else Node-API's (views.h).
  const char* refused = BackingStoreViewsRefused(env);
  if (refused == nullptr) {
    data->views->backingStores = true;
    data->state->viewLedger = std::make_shared<ViewLedger>();
  }
  Napi::Function buffer = BufferHandle::Define(env, data->features);
  Napi::Function mappedFile = MappedFileHandle::Define(env, data->features);
  Napi::Function residencySet = ResidencySetHandle::Define(env);
  data->bufferConstructor = Napi::Persistent(buffer);
  data->mappedFileConstructor = Napi::Persistent(mappedFile);
  data->residencySetConstructor = Napi::Persistent(residencySet);
  env.SetInstanceData<AddonData>(data);
  // Tell V8 about memory it cannot see, so that dropped handles are collected (and freed) in time. The
  // state calls this only while the environment lives (never during its teardown).
  napi_env rawEnv = env;
  if (data->features.accountsExternalMemory) {
    data->state->accountExternalMemory = [rawEnv](int64_t bytes) {
      int64_t ignored = 0;
      napi_adjust_external_memory(rawEnv, bytes, &ignored);
    };
  }
  // Streams' completions first: a thread-safe function's own cleanup runs after the hooks registered after
  // it, so it still takes the calls of streams that the teardown stops.
  InitStreams(env, exports, data);
  napi_add_env_cleanup_hook(env, RunTeardown, new Teardown{env, data->state, data->views, 0});
  exports.Set("NativeBufferHandle", buffer);
  exports.Set("NativeMappedFileHandle", mappedFile);
  exports.Set("NativeResidencySetHandle", residencySet);
  exports.Set("facts", Napi::Function::New<Facts>(env, "facts"));
  exports.Set("counters", Napi::Function::New<CountersOf>(env, "counters"));
  exports.Set("countersInto", Napi::Function::New<CountersInto>(env, "countersInto"));
  exports.Set("lastWiringError", Napi::Function::New<LastWiringError>(env, "lastWiringError"));
  exports.Set("attachResidencySet", Napi::Function::New<AttachResidencySet>(env, "attachResidencySet"));
  exports.Set("secureViews", Napi::Function::New<SecureViews>(env, "secureViews"));
  exports.Set("contentsOf", Napi::Function::New<ContentsOfSlot>(env, "contentsOf"));
  exports.Set("detachContentsOf", Napi::Function::New<DetachContentsOfSlot>(env, "detachContentsOf"));
  exports.Set("readOf", Napi::Function::New<ReadOfSlot>(env, "readOf"));
  exports.Set("writeOf", Napi::Function::New<WriteOfSlot>(env, "writeOf"));
  exports.Set("noop", Napi::Function::New<Noop>(env, "noop"));
  exports.Set("viewBookkeeping", Napi::Function::New<ViewBookkeeping>(env, "viewBookkeeping"));
  // How views are made here, and why not the faster way when they are not (tests, benchmarks).
  exports.Set("viewMechanism", Napi::String::New(env, refused == nullptr ? "backing-store" : "node-api"));
  if (refused != nullptr) exports.Set("viewMechanismReason", Napi::String::New(env, refused));
  exports.Set("viewMechanismBuiltFor", Napi::Number::New(env, BackingStoreViewsBuiltFor()));
}

}  // namespace nuvec
