// A C++ reference of the allocator policy @nuvec/allocator implements ("mlx"), to measure the TypeScript
// replay against in the same run (bench/replay-bench.mjs compiles it with the system's g++ -O2).
//
// The cache is MLX's BufferCache (mlx/backend/common/buffer_cache.h): a std::multimap from length to a
// holder that is allocated per caching, and a doubly linked LRU list of the holders (head = most recently
// cached, tail = least). The allocator is MLX's MetalAllocator::malloc/free (mlx/backend/metal/allocator.cpp)
// with nuvec's rules on top (the allocator's README): size classes of allocationSize (256 B granule up to a
// page, whole 16 KiB pages above), the hard memory limit on active + mapped (a cache hit that would pass it
// is skipped), the resource limit (clear the cache, then refuse), the GC rule on a miss, the cache-limit trim
// after every malloc, and the counters the JS replay reports. A "system buffer" is a heap object holding its
// length, as an MTL::Buffer is.
//
// Usage: mlx-policy <events.bin> <workingSet> <memorySize> <memoryLimit|-> <cacheLimit|-> [<milliseconds>
//        <measurements>]
// events.bin: little-endian int64 pairs (id, bytes), bytes = -1 for a free. Prints one JSON object: the
// figures of one replay and, when timing is asked for, ns per event of each measurement in wall-clock and in
// CPU time (each one runs whole replays back to back for at least <milliseconds> of wall-clock time, after an
// untimed warm-up of a quarter of that).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr size_t kPage = 16384;
constexpr size_t kResourceLimit = 499000;
constexpr size_t kMaxBufferLength = 9007199254740991ULL;  // Number.MAX_SAFE_INTEGER, as replayTrace

struct SystemBuffer {
  size_t length;
};

// mlx/backend/common/buffer_cache.h, with the holder deleted on reuse.
template <typename T>
class BufferCache {
 public:
  BufferCache(size_t page_size, std::function<size_t(T*)> get_size, std::function<void(T*)> free)
      : page_size_(page_size), get_size_(std::move(get_size)), free_(std::move(free)) {}
  ~BufferCache() { clear(); }

  // nuvec: `room` is what the hard memory limit still allows; a hit longer than that is skipped.
  T* reuse_from_cache(size_t size, size_t room) {
    auto it = buffer_pool_.lower_bound(size);
    if (it == buffer_pool_.end() || it->first >= std::min(2 * size, size + 2 * page_size_) || it->first > room)
      return nullptr;
    T* buf = it->second->buf;
    pool_size_ -= it->first;
    remove_from_list(it->second);
    delete it->second;
    buffer_pool_.erase(it);
    return buf;
  }

  void recycle_to_cache(T* buf) {
    BufferHolder* bh = new BufferHolder(buf);
    add_at_head(bh);
    size_t size = get_size_(buf);
    pool_size_ += size;
    buffer_pool_.emplace(size, bh);
  }

  int release_cached_buffers(size_t min_bytes_to_free) {
    if (static_cast<double>(min_bytes_to_free) >= 0.9 * static_cast<double>(pool_size_)) return clear();
    int n_release = 0;
    size_t total_bytes_freed = 0;
    while (tail_ != nullptr && total_bytes_freed < min_bytes_to_free) {
      size_t size = get_size_(tail_->buf);
      total_bytes_freed += size;
      free_(tail_->buf);
      n_release++;
      auto its = buffer_pool_.equal_range(size);
      auto it = std::find_if(its.first, its.second, [this](const auto& el) { return el.second == tail_; });
      buffer_pool_.erase(it);
      BufferHolder* released = tail_;
      remove_from_list(released);
      delete released;
    }
    pool_size_ -= total_bytes_freed;
    return n_release;
  }

  int clear() {
    int n_release = 0;
    for (auto& [size, holder] : buffer_pool_) {
      free_(holder->buf);
      n_release++;
      delete holder;
    }
    buffer_pool_.clear();
    pool_size_ = 0;
    head_ = nullptr;
    tail_ = nullptr;
    return n_release;
  }

  size_t cache_size() const { return pool_size_; }
  size_t buffers() const { return buffer_pool_.size(); }

 private:
  struct BufferHolder {
    explicit BufferHolder(T* buf_) : prev(nullptr), next(nullptr), buf(buf_) {}
    BufferHolder* prev;
    BufferHolder* next;
    T* buf;
  };

  void add_at_head(BufferHolder* to_add) {
    if (head_ == nullptr) {
      head_ = to_add;
      tail_ = to_add;
    } else {
      head_->prev = to_add;
      to_add->next = head_;
      head_ = to_add;
    }
  }

  void remove_from_list(BufferHolder* to_remove) {
    if (to_remove->prev != nullptr && to_remove->next != nullptr) {
      to_remove->prev->next = to_remove->next;
      to_remove->next->prev = to_remove->prev;
    } else if (to_remove->prev != nullptr && tail_ == to_remove) {
      tail_ = to_remove->prev;
      tail_->next = nullptr;
    } else if (head_ == to_remove && to_remove->next != nullptr) {
      head_ = to_remove->next;
      head_->prev = nullptr;
    } else if (head_ == to_remove && tail_ == to_remove) {
      head_ = nullptr;
      tail_ = nullptr;
    }
    to_remove->prev = nullptr;
    to_remove->next = nullptr;
  }

  std::multimap<size_t, BufferHolder*> buffer_pool_;
  BufferHolder* head_ = nullptr;
  BufferHolder* tail_ = nullptr;
  size_t pool_size_ = 0;
  size_t page_size_;
  std::function<size_t(T*)> get_size_;
  std::function<void(T*)> free_;
};

struct Figures {
  size_t active = 0, peak = 0, cache = 0, systemAllocations = 0, systemReleases = 0, cacheHits = 0,
         cacheMisses = 0, peakReserved = 0, peakLive = 0, liveBuffers = 0, cachedBuffers = 0;
};

// MetalAllocator::malloc/free with nuvec's rules (see the top of this file). No mapped files in a trace of
// allocations and frees: `mapped` stays 0 but is kept in every sum, as in the TypeScript.
class Allocator {
 public:
  Allocator(size_t working_set, size_t memory_size)
      : cache_(
            kPage, [](SystemBuffer* buf) { return buf->length; },
            [this](SystemBuffer* buf) {
              system_releases_++;
              delete buf;
            }) {
    working_set_gc_limit_ = static_cast<size_t>(std::floor(0.95 * static_cast<double>(working_set)));
    size_t default_memory_limit = static_cast<size_t>(
        std::floor(std::min(1.5 * static_cast<double>(working_set), 0.95 * static_cast<double>(memory_size))));
    memory_limit_ = default_memory_limit;
    gc_limit_ = std::min(working_set_gc_limit_, memory_limit_);
    cache_limit_ = default_memory_limit;
  }

  void set_memory_limit(size_t bytes) {
    memory_limit_ = bytes;
    gc_limit_ = std::min(bytes, working_set_gc_limit_);
  }

  void set_cache_limit(size_t bytes) {
    cache_limit_ = bytes;
    if (cache_.cache_size() > bytes) cache_.release_cached_buffers(cache_.cache_size() - bytes);
  }

  // Returns nullptr for a 0-byte request; exits on a refusal (the JS replay throws at the first one).
  SystemBuffer* malloc(size_t bytes, size_t& size_class) {
    size_class = 0;
    if (bytes == 0) return nullptr;
    size_class = bytes > kPage ? (bytes + kPage - 1) / kPage * kPage : (bytes + 255) / 256 * 256;
    if (size_class > kMaxBufferLength) refuse("buffer too large");
    size_t used = active_ + mapped_;
    if (used + size_class > memory_limit_) refuse("out of memory");
    SystemBuffer* buf = cache_.reuse_from_cache(size_class, memory_limit_ - used);
    if (buf != nullptr) {
      cache_hits_++;
    } else {
      size_t required = active_ + mapped_ + cache_.cache_size() + size_class;
      if (required >= gc_limit_) cache_.release_cached_buffers(required - gc_limit_);
      if (live_buffers_ + cache_.buffers() >= kResourceLimit) {
        cache_.clear();
        if (live_buffers_ >= kResourceLimit) refuse("resource limit");
      }
      buf = new SystemBuffer{size_class};
      system_allocations_++;
      cache_misses_++;
    }
    live_buffers_++;
    active_ += buf->length;
    peak_ = std::max(peak_, active_);
    live_ += size_class;
    peak_live_ = std::max(peak_live_, live_);
    if (cache_.cache_size() > cache_limit_) cache_.release_cached_buffers(cache_.cache_size() - cache_limit_);
    peak_reserved_ = std::max(peak_reserved_, active_ + cache_.cache_size());
    return buf;
  }

  void free(SystemBuffer* buf, size_t size_class) {
    if (buf == nullptr) return;
    live_buffers_--;
    active_ -= buf->length;
    live_ -= size_class;
    if (cache_.cache_size() < cache_limit_) {
      cache_.recycle_to_cache(buf);
    } else {
      system_releases_++;
      delete buf;
    }
  }

  Figures figures() const {
    Figures f;
    f.active = active_;
    f.peak = peak_;
    f.cache = cache_.cache_size();
    f.systemAllocations = system_allocations_;
    f.systemReleases = system_releases_;
    f.cacheHits = cache_hits_;
    f.cacheMisses = cache_misses_;
    f.peakReserved = peak_reserved_;
    f.peakLive = peak_live_;
    f.liveBuffers = live_buffers_;
    f.cachedBuffers = cache_.buffers();
    return f;
  }

 private:
  [[noreturn]] static void refuse(const char* why) {
    std::fprintf(stderr, "mlx-policy: request refused (%s); the bench's traces never are\n", why);
    std::exit(3);
  }

  size_t system_releases_ = 0;  // before cache_: its release callback counts here
  BufferCache<SystemBuffer> cache_;
  size_t working_set_gc_limit_ = 0, memory_limit_ = 0, gc_limit_ = 0, cache_limit_ = 0;
  size_t active_ = 0, mapped_ = 0, live_ = 0, peak_ = 0, peak_live_ = 0, peak_reserved_ = 0;
  size_t system_allocations_ = 0, cache_hits_ = 0, cache_misses_ = 0, live_buffers_ = 0;
};

struct Event {
  int64_t id;
  int64_t bytes;  // -1: free
};

struct Config {
  size_t working_set, memory_size;
  bool has_memory_limit, has_cache_limit;
  size_t memory_limit, cache_limit;
};

struct LiveEntry {
  SystemBuffer* buf;
  size_t size_class;
};

// One whole replay, as replayTrace: a fresh allocator, the limits set right after opening, every event.
Figures replay(const std::vector<Event>& events, size_t ids, const Config& config) {
  Allocator allocator(config.working_set, config.memory_size);
  if (config.has_memory_limit) allocator.set_memory_limit(config.memory_limit);
  if (config.has_cache_limit) allocator.set_cache_limit(config.cache_limit);
  std::vector<LiveEntry> live(ids, LiveEntry{nullptr, 0});
  for (const Event& event : events) {
    LiveEntry& entry = live[static_cast<size_t>(event.id)];
    if (event.bytes >= 0) {
      entry.buf = allocator.malloc(static_cast<size_t>(event.bytes), entry.size_class);
    } else {
      allocator.free(entry.buf, entry.size_class);
      entry.buf = nullptr;
    }
  }
  Figures figures = allocator.figures();
  for (LiveEntry& entry : live) delete entry.buf;  // what is live at the end (the allocator owns the cache)
  return figures;
}

size_t parse_size(const char* text) { return static_cast<size_t>(std::strtoull(text, nullptr, 10)); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 8) {
    std::fprintf(stderr,
                 "usage: mlx-policy EVENTS.bin WORKING_SET MEMORY_SIZE MEMORY_LIMIT|- CACHE_LIMIT|- "
                 "[MILLISECONDS MEASUREMENTS]\n");
    return 2;
  }
  FILE* file = std::fopen(argv[1], "rb");
  if (file == nullptr) {
    std::perror(argv[1]);
    return 2;
  }
  std::vector<Event> events;
  Event event;
  while (std::fread(&event, sizeof event, 1, file) == 1) events.push_back(event);
  std::fclose(file);
  size_t ids = 0;
  for (const Event& e : events) {
    if (e.id < 0) {
      std::fprintf(stderr, "mlx-policy: negative id\n");
      return 2;
    }
    ids = std::max(ids, static_cast<size_t>(e.id) + 1);
  }
  Config config{};
  config.working_set = parse_size(argv[2]);
  config.memory_size = parse_size(argv[3]);
  config.has_memory_limit = std::string(argv[4]) != "-";
  if (config.has_memory_limit) config.memory_limit = parse_size(argv[4]);
  config.has_cache_limit = std::string(argv[5]) != "-";
  if (config.has_cache_limit) config.cache_limit = parse_size(argv[5]);

  Figures f = replay(events, ids, config);
  std::printf(
      "{\"events\":%zu,\"active\":%zu,\"peak\":%zu,\"cache\":%zu,\"systemAllocations\":%zu,"
      "\"systemReleases\":%zu,\"cacheHits\":%zu,\"cacheMisses\":%zu,\"peakReserved\":%zu,\"peakLive\":%zu,"
      "\"liveBuffers\":%zu,\"cachedBuffers\":%zu",
      events.size(), f.active, f.peak, f.cache, f.systemAllocations, f.systemReleases, f.cacheHits,
      f.cacheMisses, f.peakReserved, f.peakLive, f.liveBuffers, f.cachedBuffers);
  if (argc == 8 && !events.empty()) {
    double milliseconds = std::atof(argv[6]);
    int measurements = std::atoi(argv[7]);
    using Clock = std::chrono::steady_clock;
    volatile size_t sink = 0;
    std::vector<double> wall, cpu;
    // Measurement -1 is the warm-up (caches, the allocator's free lists; a quarter as long), not reported.
    for (int measurement = -1; measurement < measurements; measurement++) {
      double minimum = measurement < 0 ? milliseconds / 4 : milliseconds;
      Clock::time_point start = Clock::now();
      std::clock_t cpu_start = std::clock();
      double elapsed = 0;
      size_t replayed = 0;
      do {
        sink = sink + replay(events, ids, config).cacheHits;
        replayed += events.size();
        elapsed = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      } while (elapsed < minimum);
      double cpu_elapsed = 1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
      if (measurement >= 0) {
        wall.push_back(elapsed * 1e6 / static_cast<double>(replayed));
        cpu.push_back(cpu_elapsed * 1e6 / static_cast<double>(replayed));
      }
    }
    // Wall-clock time, and the process's CPU time (which leaves out the time other processes of a shared
    // machine had the core).
    for (int list = 0; list < 2; list++) {
      std::printf(list == 0 ? ",\"nsPerEvent\":[" : ",\"cpuNsPerEvent\":[");
      const std::vector<double>& values = list == 0 ? wall : cpu;
      for (size_t index = 0; index < values.size(); index++) std::printf("%s%.2f", index == 0 ? "" : ",", values[index]);
      std::printf("]");
    }
  }
  std::printf("}\n");
  return 0;
}
