// parityfake: an accelerator-like test device for parity, registered through
// PyTorch's PrivateUse1 mechanism (the route AWS TorchNeuron takes for
// `neuron`). Its data lives in host memory. Allocation, copies and view
// metadata have kernels of their own; every other op goes through a boxed
// fallback that runs the CPU kernel (at::native::cpu_fallback), so results
// match the CPU bit for bit, unless the op's name is in the "unsupported"
// set, in which case it raises NotImplementedError like a real backend would.
//
// With a kernel cost set (PARITY_FAKE_ASYNC_US), the device is asynchronous:
// see "queue" below.
//
// With PARITY_FAKE_PROFILE=neuron in the environment when the library loads,
// it behaves as TorchNeuron's runtime does where parity can tell (see
// "neuron profile" below): a runtime that starts at first use, reserves the
// "cores" for the process that started it, refuses a forked child of a
// started parent, runs ops it has no kernel for on the CPU silently and
// records their names, and a caching allocator.
//
// Loaded by parity/testing/fakedevice.py; the control ops live in the
// `parityfake` op namespace (torch.ops.parityfake.*).

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/library.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

namespace parityfake {
namespace {

constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
const c10::Device kDevice(kType, 0);

void check_index(c10::DeviceIndex index) {
  TORCH_CHECK(index == 0 || index == -1, "parityfake has one device (index 0), got index ", index);
}

// ----------------------------------------------------------- neuron profile
// The profile is read once, from the environment at load time (the kernels
// registered below depend on it).
bool neuron_profile() {
  static const bool on = [] {
    const char* v = std::getenv("PARITY_FAKE_PROFILE");
    return v != nullptr && std::string(v) == "neuron";
  }();
  return on;
}

// The runtime: started by the first use of the device in a process (an
// allocation, a device count, a synchronize), it takes an exclusive lock on
// the "cores" file (PARITY_FAKE_NEURON_CORES) until the process exits, so a
// second process that starts it fails, as the Neuron runtime reserves every
// NeuronCore for the first process. A child forked from a started process
// may not use it. Each start is appended to PARITY_FAKE_NEURON_INIT_LOG
// ("pid ppid"), so a test can see which processes started it.
std::mutex g_runtime_mutex;
std::atomic<pid_t> g_runtime_pid{0};
std::atomic<bool> g_bad_fork{false};
int g_cores_fd = -1;

void after_fork_in_child() {
  if (g_runtime_pid.load() != 0) {
    g_bad_fork.store(true);
  }
}

std::string cores_path() {
  const char* v = std::getenv("PARITY_FAKE_NEURON_CORES");
  if (v != nullptr && *v != '\0') {
    return v;
  }
  return "/tmp/parity-fake-neuron-cores-" + std::to_string(getuid()) + ".lock";
}

void log_start() {
  const char* path = std::getenv("PARITY_FAKE_NEURON_INIT_LOG");
  if (path == nullptr || *path == '\0') {
    return;
  }
  std::string cmdline;
  if (FILE* c = std::fopen("/proc/self/cmdline", "r")) {
    char buf[512] = {0};
    const auto n = std::fread(buf, 1, sizeof(buf) - 1, c);
    std::fclose(c);
    for (size_t i = 0; i < n; ++i) {
      cmdline += (buf[i] == '\0' || buf[i] == '\n') ? ' ' : buf[i];
    }
  }
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%d %d %s\n", static_cast<int>(getpid()), static_cast<int>(getppid()),
                 cmdline.c_str());
    std::fclose(f);
  }
}

std::string holder_of(int fd) {
  char buf[32] = {0};
  const auto n = pread(fd, buf, sizeof(buf) - 1, 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("another process");
}

// Start the runtime in this process, or fail as the Neuron runtime does.
void ensure_runtime() {
  if (!neuron_profile()) {
    return;
  }
  TORCH_CHECK(!g_bad_fork.load(),
              "Cannot re-initialize Neuron runtime in forked subprocess. To use Neuron with "
              "multiprocessing, use the 'spawn' start method");
  if (g_runtime_pid.load() == getpid()) {
    return;
  }
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  if (g_runtime_pid.load() == getpid()) {
    return;
  }
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, &after_fork_in_child);
    return true;
  }();
  (void)registered;
  const std::string path = cores_path();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  TORCH_CHECK(fd >= 0, "NRT: cannot open the NeuronCore lock ", path, ": ", std::strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = holder_of(fd);
    close(fd);
    TORCH_CHECK(false, "NRT: failed to acquire NeuronCores: they are in use by process ", holder,
                " (the runtime reserves every NeuronCore for the first process that starts it)");
  }
  const std::string me = std::to_string(getpid());
  if (ftruncate(fd, 0) == 0) {
    (void)pwrite(fd, me.data(), me.size(), 0);
  }
  g_cores_fd = fd;
  g_runtime_pid.store(getpid());
  log_start();
}

bool runtime_started() {
  return g_runtime_pid.load() == getpid();
}

// Op tracking, as TorchNeuron keeps it: the names of the ops that ran on the
// CPU and of those that ran on the device, each once per process, cleared by
// clear_op_tracking. PARITY_FAKE_NEURON_TRACKING=0 keeps none (a backend that
// records nothing).
std::mutex g_tracking_mutex;
std::set<std::string> g_fallback_ops;
std::set<std::string> g_executed_ops;

bool tracking_on() {
  static const bool on = [] {
    const char* v = std::getenv("PARITY_FAKE_NEURON_TRACKING");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

void track(const std::string& name, bool fell_back) {
  if (!neuron_profile() || !tracking_on()) {
    return;
  }
  std::lock_guard<std::mutex> lock(g_tracking_mutex);
  (fell_back ? g_fallback_ops : g_executed_ops).insert(name);
}

// The ops the profile registers no kernel for, from PARITY_FAKE_UNSUPPORTED at
// load time: they reach the catch-all fallback, which runs them on the CPU.
bool unregistered_at_load(const std::string& name) {
  static const std::unordered_set<std::string> names = [] {
    std::unordered_set<std::string> out;
    const char* v = std::getenv("PARITY_FAKE_UNSUPPORTED");
    std::stringstream in(v != nullptr ? v : "");
    std::string item;
    while (std::getline(in, item, ',')) {
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (item.empty()) {
        continue;
      }
      out.insert(item.find("::") == std::string::npos ? "aten::" + item : item);
    }
    return out;
  }();
  return neuron_profile() && names.count(name) != 0;
}

// -------------------------------------------------------------------- queue
// The asynchronous mode models a device whose work finishes after the op
// returns. Every kernel (an op reaching the fallback, a copy) costs
// g_cost_ns of device time: it starts when the device is free (now, if it is
// idle) and pushes the time the device is done (g_done_at) forward by that
// cost. The host still computes the result at once, so results stay the
// CPU's bit for bit; what is modelled is when the work counts as done:
// synchronize sleeps until g_done_at, a read on the host (a blocking copy
// to or from the CPU, .item(), nonzero) waits for it as on CUDA, events
// carry device times, and the memory counters follow the queue (see the
// allocator). A cost of 0, the default, is the synchronous device.
using Clock = std::chrono::steady_clock;

std::atomic<int64_t> g_cost_ns{0};
std::atomic<int64_t> g_kernel_count{0};
std::mutex g_queue_mutex;
Clock::time_point g_done_at{};  // guarded by g_queue_mutex

// Above 0 while an op runs its CPU kernel: the copies and ops it makes on
// the way are part of that one kernel, not kernels (or host reads) of their own.
thread_local int t_kernel_depth = 0;

struct KernelScope {
  KernelScope() {
    ++t_kernel_depth;
  }
  ~KernelScope() {
    --t_kernel_depth;
  }
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;
};

bool is_async() {
  return g_cost_ns.load() > 0;
}

// When the device reaches what is queued now: its done-at time, or now if idle.
Clock::time_point queue_point() {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(g_queue_mutex);
  return std::max(now, g_done_at);
}

Clock::time_point done_at() {
  std::lock_guard<std::mutex> lock(g_queue_mutex);
  return g_done_at;
}

void enqueue_kernel() {
  g_kernel_count.fetch_add(1);
  const int64_t cost = g_cost_ns.load();
  if (cost <= 0) {
    return;
  }
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(g_queue_mutex);
  g_done_at = std::max(now, g_done_at) + std::chrono::nanoseconds(cost);
}

int64_t queued_ns() {
  const auto left = done_at() - Clock::now();
  return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(left).count());
}

// ---------------------------------------------------------------- allocator
// Host memory with CUDA-like counters. There is no cache, so "reserved"
// memory is exactly the memory currently allocated (with its own peak).
// In the asynchronous mode an allocation or a free is counted when the device
// reaches it in its queue (a free waits for the work queued before it), so
// counters read before a synchronize can miss queued work; applied in queue
// order, they reach the same peak as the synchronous device.
class FakeAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    ensure_runtime();
    if (nbytes == 0) {
      return {nullptr, nullptr, &release, kDevice};
    }
    void* data = c10::alloc_cpu(nbytes);
    auto* block = new Block{data, nbytes};
    change(static_cast<int64_t>(nbytes));
    return {data, block, &release, kDevice};
  }

  // Count every allocation and free the device has reached by `until`.
  void settle(Clock::time_point until) {
    std::lock_guard<std::mutex> lock(mutex_);
    settle_locked(until);
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return nullptr;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  bool initialized() override {
    return true;
  }
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (caching_) {  // the cache goes back to the runtime: reserved down to what is in use
      const auto held = stats_.reserved_bytes[0].current;
      const auto need = round_segment(stats_.allocated_bytes[0].current);
      if (held > need) {
        stats_.reserved_bytes[0].decrease(static_cast<size_t>(held - need));
      }
    }
  }

  // A caching allocator's reserved memory (the neuron profile's documented
  // semantics): segments of 2 MiB obtained as allocations grow, kept when
  // tensors are freed, so reserved >= allocated >= active.
  void set_caching(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    caching_ = on;
  }
  void recordStream(const c10::DataPtr& /*ptr*/, c10::Stream /*stream*/) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    check_index(device);
    std::lock_guard<std::mutex> lock(mutex_);
    settle_locked(Clock::now());
    return stats_;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    check_index(device);
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* array : stat_arrays()) {
      (*array)[0].reset_accumulated();
    }
    stats_.num_device_alloc = 0;
    stats_.num_device_free = 0;
  }

  // Work still queued is counted after the reset, as on a device reset
  // without a synchronize first.
  void resetPeakStats(c10::DeviceIndex device) override {
    check_index(device);
    std::lock_guard<std::mutex> lock(mutex_);
    settle_locked(Clock::now());
    for (auto* array : stat_arrays()) {
      (*array)[0].reset_peak();
    }
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_index(device);
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return {static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * page, total_memory()};
  }

  static size_t total_memory() {
    return static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  }

 private:
  struct Block {
    void* data;
    size_t nbytes;
  };

  static void release(void* ctx);

  std::vector<c10::CachingAllocator::StatArray*> stat_arrays() {
    return {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.allocated_bytes,
            &stats_.reserved_bytes, &stats_.active_bytes, &stats_.requested_bytes};
  }

  void on_free(size_t nbytes) {
    change(-static_cast<int64_t>(nbytes));
  }

  // An allocation (nbytes > 0) or a free (< 0): counted now on the
  // synchronous device, when the device reaches it on the asynchronous one.
  void change(int64_t nbytes) {
    if (is_async()) {
      const auto when = queue_point();
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.emplace_back(when, nbytes);
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    apply(nbytes);
  }

  void settle_locked(Clock::time_point until) {
    // In queue order; an event out of order (another thread) waits its turn.
    while (!pending_.empty() && pending_.front().first <= until) {
      apply(pending_.front().second);
      pending_.pop_front();
    }
  }

  static int64_t round_segment(int64_t bytes) {
    constexpr int64_t kSegment = 2 << 20;
    return (bytes + kSegment - 1) / kSegment * kSegment;
  }

  void apply(int64_t nbytes) {
    const auto size = static_cast<size_t>(nbytes < 0 ? -nbytes : nbytes);
    for (auto* array : {&stats_.allocation, &stats_.segment, &stats_.active}) {
      nbytes > 0 ? (*array)[0].increase(1) : (*array)[0].decrease(1);
    }
    for (auto* array : {&stats_.allocated_bytes, &stats_.active_bytes, &stats_.requested_bytes}) {
      nbytes > 0 ? (*array)[0].increase(size) : (*array)[0].decrease(size);
    }
    if (!caching_) {
      nbytes > 0 ? stats_.reserved_bytes[0].increase(size)
                 : stats_.reserved_bytes[0].decrease(size);
    } else if (nbytes > 0) {
      const auto need = round_segment(stats_.allocated_bytes[0].current);
      const auto held = stats_.reserved_bytes[0].current;
      if (need > held) {
        stats_.reserved_bytes[0].increase(static_cast<size_t>(need - held));
      }
    }
    (nbytes > 0 ? stats_.num_device_alloc : stats_.num_device_free) += 1;
  }

  std::mutex mutex_;
  c10::CachingDeviceAllocator::DeviceStats stats_;
  std::deque<std::pair<Clock::time_point, int64_t>> pending_;
  bool caching_ = false;
};

FakeAllocator g_allocator;

void FakeAllocator::release(void* ctx) {
  if (ctx == nullptr) {
    return;
  }
  auto* block = static_cast<Block*>(ctx);
  c10::free_cpu(block->data);
  g_allocator.on_free(block->nbytes);
  delete block;
}

REGISTER_ALLOCATOR(kType, &g_allocator)

// Wait until the device has done everything queued so far.
void wait_for_queue() {
  const auto until = done_at();
  std::this_thread::sleep_until(until);
  g_allocator.settle(std::max(until, Clock::now()));
}

// --------------------------------------------------------------- guard impl
std::atomic<int64_t> g_sync_count{0};

struct FakeEvent {
  Clock::time_point when;  // when the device reaches the event
};

c10::Stream default_stream() {
  return c10::Stream(c10::Stream::DEFAULT, kDevice);
}

struct FakeGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override {
    return kType;
  }
  c10::Device exchangeDevice(c10::Device d) const override {
    check_index(d.index());
    return kDevice;
  }
  c10::Device getDevice() const override {
    return kDevice;
  }
  void setDevice(c10::Device d) const override {
    check_index(d.index());
  }
  void uncheckedSetDevice(c10::Device /*d*/) const noexcept override {}
  c10::Stream getStream(c10::Device /*d*/) const override {
    return default_stream();
  }
  c10::Stream getDefaultStream(c10::Device /*d*/) const override {
    return default_stream();
  }
  c10::Stream getStreamFromGlobalPool(c10::Device /*d*/, bool /*high*/) const override {
    return default_stream();
  }
  c10::Stream getNewStream(c10::Device /*d*/, int /*priority*/) const override {
    return default_stream();
  }
  c10::Stream exchangeStream(c10::Stream /*s*/) const override {
    return default_stream();
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    try {  // counting devices starts the runtime (the worst case TorchNeuron allows)
      ensure_runtime();
    } catch (const std::exception&) {
      return 0;
    }
    return 1;
  }
  // One stream: an event completes when the device reaches it in the queue.
  void record(void** event, const c10::Stream& /*stream*/, const c10::DeviceIndex device_index,
              const c10::EventFlag /*flag*/) const override {
    check_index(device_index);
    if (*event == nullptr) {
      *event = new FakeEvent{};
    }
    static_cast<FakeEvent*>(*event)->when = queue_point();
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<FakeEvent*>(event);
  }
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* event) const override {
    return event == nullptr || Clock::now() >= static_cast<FakeEvent*>(event)->when;
  }
  void synchronizeEvent(void* event) const override {
    if (event != nullptr) {
      std::this_thread::sleep_until(static_cast<FakeEvent*>(event)->when);
    }
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(start != nullptr && end != nullptr, "both events must be recorded first");
    const auto delta = static_cast<FakeEvent*>(end)->when - static_cast<FakeEvent*>(start)->when;
    return std::chrono::duration<double, std::milli>(delta).count();
  }
  bool queryStream(const c10::Stream& /*stream*/) const override {
    return queued_ns() == 0;
  }
  void synchronizeStream(const c10::Stream& /*stream*/) const override {
    wait_for_queue();
  }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    check_index(device_index);
    ensure_runtime();
    wait_for_queue();
    g_sync_count.fetch_add(1);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, FakeGuardImpl);

// -------------------------------------------------------------------- hooks
struct FakeHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    try {
      ensure_runtime();
    } catch (const std::exception&) {
      return false;
    }
    return true;
  }
  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override {
    return !neuron_profile() || runtime_started();
  }
  void init() const override {
    ensure_runtime();
  }
  c10::DeviceIndex deviceCount() const override {
    return isAvailable() ? 1 : 0;
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    check_index(device);
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return 0;
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    check_index(device);
    return 0;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    check_index(device);
    return 0;
  }
  c10::Device getDeviceFromPtr(void* /*data*/) const override {
    return kDevice;
  }
  bool isPinnedPtr(const void* /*data*/) const override {
    return false;
  }
  c10::Allocator* getPinnedMemoryAllocator() const override {
    return c10::GetCPUAllocator();  // host memory is all the device needs
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), newsize);
  }
};

const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new FakeHooks());
  return true;
}();

// ------------------------------------------------------------------ kernels
constexpr c10::DispatchKeySet kKeys(c10::DispatchKey::PrivateUse1);

// A CPU tensor sharing `t`'s memory (the device memory is host memory).
at::Tensor host_alias(const at::Tensor& t) {
  if (t.device().is_cpu()) {
    return t;
  }
  TORCH_CHECK(t.device().type() == kType, "parityfake cannot copy from/to ", t.device());
  if (t.numel() == 0) {
    return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kCPU));
  }
  auto alias = at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
  alias._set_conj(t.is_conj());
  alias._set_neg(t.is_neg());
  return alias;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> /*layout*/,
                               std::optional<c10::Device> device,
                               std::optional<bool> /*pin_memory*/,
                               std::optional<c10::MemoryFormat> memory_format) {
  if (device.has_value()) {
    check_index(device->index());
  }
  return at::detail::empty_generic(size, &g_allocator, kKeys, c10::dtype_or_default(dtype),
                                   memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> /*layout*/,
                         std::optional<c10::Device> device, std::optional<bool> /*pin_memory*/) {
  if (device.has_value()) {
    check_index(device->index());
  }
  return at::detail::empty_strided_generic(size, stride, &g_allocator, kKeys,
                                           c10::dtype_or_default(dtype));
}

// copy_ between parityfake and the CPU (or within parityfake); the CPU copy
// does the broadcasting, dtype conversion and striding.
// A copy is one kernel; unless non_blocking, a copy to or from the host also
// waits for the device, as a blocking copy on CUDA does.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0) {
    return dst;
  }
  if (t_kernel_depth == 0) {
    enqueue_kernel();
    if (!non_blocking && (self.is_cpu() || dst.is_cpu())) {
      wait_for_queue();
    }
  }
  KernelScope scope;
  host_alias(dst).copy_(host_alias(self));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  // The CPU kernel only does metadata and a host realloc through the
  // storage's own allocator, which is ours.
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), memory_format);
}

at::Tensor& set_storage_(at::Tensor& self, c10::Storage source, c10::SymInt storage_offset,
                         c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), storage_offset.expect_int(),
                                      C10_AS_INTARRAYREF_SLOW(size),
                                      C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor& set_empty_(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, &g_allocator, true);
  return at::native::set_storage_cpu_(self, std::move(storage), 0, {0}, {});
}

// scaled_dot_product_attention asks a per-device stub which implementation
// to use; give the CPU's answer, so the same CPU kernels run (via the
// fallback) and results match the CPU.
// A tensor without data (a fake tensor under torch.compile's tracing) is
// stood in for by an empty CPU tensor of its shape: the choice reads no values.
at::Tensor choice_input(const at::Tensor& t) {
  try {
    return host_alias(t);
  } catch (const std::exception&) {
    return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kCPU));
  }
}

int64_t sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                   const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                   std::optional<double> scale, bool enable_gqa) {
  std::optional<at::Tensor> mask;
  if (attn_mask.has_value() && attn_mask->defined()) {
    mask = choice_input(*attn_mask);
  }
  return at::_fused_sdp_choice(choice_input(query), choice_input(key), choice_input(value), mask,
                               dropout_p, is_causal, scale, enable_gqa);
}

// ---------------------------------------------------------- unsupported ops
std::mutex g_unsupported_mutex;
std::unordered_set<std::string> g_unsupported;
std::atomic<bool> g_any_unsupported{false};

// Ops whose result the host reads (a scalar, a data-dependent shape): they
// wait for the device, as on CUDA.
bool reads_on_host(const std::string& name) {
  static const std::unordered_set<std::string> names = {
      "aten::_local_scalar_dense", "aten::equal",   "aten::is_nonzero",
      "aten::nonzero",             "aten::masked_select", "aten::_unique",
      "aten::_unique2",            "aten::unique_dim",    "aten::unique_consecutive",
      "aten::unique_dim_consecutive"};
  return names.count(name) != 0;
}

bool is_unsupported(const std::string& name) {
  if (!g_any_unsupported.load()) {
    return false;
  }
  std::lock_guard<std::mutex> lock(g_unsupported_mutex);
  return g_unsupported.count(name) != 0;
}

void run_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack, bool fell_back) {
  const std::string& name = op.schema().operator_name().name;
  ensure_runtime();
  if (t_kernel_depth == 0) {
    track(name, fell_back);
    enqueue_kernel();
    if (reads_on_host(name)) {
      wait_for_queue();
    }
  }
  KernelScope scope;
  // error_on_views: a view op that reached the fallback would silently
  // return a copy instead of an alias; fail loudly instead.
  at::native::cpu_fallback(op, stack, /*error_on_views=*/true);
}

// An op's kernel on the device: the CPU's. An unsupported op raises, except
// in the neuron profile, where it runs on the CPU silently (recorded by name).
void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string& name = op.schema().operator_name().name;
  const bool refused = is_unsupported(name);
  TORCH_CHECK_NOT_IMPLEMENTED(!refused || neuron_profile(), name, " is not supported on ",
                              c10::get_privateuse1_backend());
  run_kernel(op, stack, refused);
}

// The catch-all for ops with no kernel of the device's own: in the neuron
// profile every such op is a CPU fallback, as TorchNeuron's catch-all is.
void catch_all(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (!neuron_profile()) {
    fallback(op, stack);
    return;
  }
  run_kernel(op, stack, true);
}

// ------------------------------------------------------------- control ops
void set_unsupported(std::vector<std::string> names) {
  std::lock_guard<std::mutex> lock(g_unsupported_mutex);
  g_unsupported = std::unordered_set<std::string>(names.begin(), names.end());
  g_any_unsupported.store(!g_unsupported.empty());
}

std::vector<std::string> get_unsupported() {
  std::lock_guard<std::mutex> lock(g_unsupported_mutex);
  return {g_unsupported.begin(), g_unsupported.end()};
}

void synchronize() {
  ensure_runtime();
  wait_for_queue();
  g_sync_count.fetch_add(1);
}

// The device time of one kernel; 0 makes the device synchronous. Waits for
// the work queued under the old cost first.
void set_kernel_cost_ns(int64_t cost_ns) {
  TORCH_CHECK(cost_ns >= 0, "a kernel's cost must be >= 0 ns, got ", cost_ns);
  wait_for_queue();
  g_cost_ns.store(cost_ns);
}

int64_t kernel_cost_ns() {
  return g_cost_ns.load();
}

int64_t kernel_count() {
  return g_kernel_count.load();
}

int64_t sync_count() {
  return g_sync_count.load();
}

// [allocated, max_allocated, reserved, max_reserved, allocations, total_memory]
std::vector<int64_t> memory_stats() {
  const auto stats = g_allocator.getDeviceStats(0);
  return {stats.allocated_bytes[0].current, stats.allocated_bytes[0].peak,
          stats.reserved_bytes[0].current,  stats.reserved_bytes[0].peak,
          stats.allocation[0].current,      static_cast<int64_t>(FakeAllocator::total_memory())};
}

void reset_peak_memory_stats() {
  g_allocator.resetPeakStats(0);
}

void empty_cache() {
  g_allocator.emptyCache(c10::MempoolId_t{0, 0});
}

void set_caching(bool on) {
  g_allocator.set_caching(on);
}

bool profile_is_neuron() {
  return neuron_profile();
}

void start_runtime() {
  ensure_runtime();
}

bool runtime_is_started() {
  return runtime_started();
}

std::vector<std::string> fallback_ops() {
  std::lock_guard<std::mutex> lock(g_tracking_mutex);
  return {g_fallback_ops.begin(), g_fallback_ops.end()};
}

std::vector<std::string> executed_ops() {
  std::lock_guard<std::mutex> lock(g_tracking_mutex);
  return {g_executed_ops.begin(), g_executed_ops.end()};
}

void clear_op_tracking() {
  std::lock_guard<std::mutex> lock(g_tracking_mutex);
  g_fallback_ops.clear();
  g_executed_ops.clear();
}

bool returns_a_view(const c10::FunctionSchema& schema) {
  for (const auto& ret : schema.returns()) {
    if (ret.alias_info() != nullptr && !ret.alias_info()->isWrite()) {
      return true;
    }
  }
  return false;
}

// Ops with a CPU kernel of their own reach a backend without one through a
// generic kernel: structured ops through CompositeExplicitAutogradNonFunctional
// (which calls `.out`; some CPU `.out` kernels then warn about resizing, e.g.
// mse_loss), others through a CompositeExplicitAutograd reference version
// (native_layer_norm's differs numerically from the CPU kernel). Route them all
// to the fallback, so the CPU runs the very kernel it runs for CPU tensors.
// convolution picks its implementation by device and would pick
// convolution_overrideable (unimplemented) here, so route it too.
void route_cpu_kernels_to_fallback(torch::Library& m) {
  auto& dispatcher = c10::Dispatcher::singleton();
  const auto to_fallback = [&m](const c10::OperatorName& name) {
    std::string full = name.name.substr(std::string("aten::").size());
    if (!name.overload_name.empty()) {
      full += "." + name.overload_name;
    }
    m.impl(full.c_str(), torch::CppFunction::makeFromBoxedFunction<&fallback>());
  };
  for (const auto& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) {
      continue;
    }
    const auto op = dispatcher.findOp(name);
    if (!op || op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) ||
        returns_a_view(op->schema())) {
      continue;
    }
    const bool generic =
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
    const bool by_device = name.name == "aten::convolution" ||
                           name.name == "aten::_convolution" ||
                           name.name == "aten::convolution_backward";
    const bool cpu = op->hasKernelForDispatchKey(c10::DispatchKey::CPU);
    if (unregistered_at_load(name.name)) {
      continue;  // the neuron profile has no kernel for it: the catch-all runs it
    }
    // the neuron profile implements every op the CPU does (but those above), so
    // that only an op it has no kernel for reaches the catch-all
    if ((generic && cpu) || by_device || (neuron_profile() && cpu)) {
      to_fallback(name);
    }
  }
}

}  // namespace
}  // namespace parityfake

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace parityfake;
  m.impl("empty.memory_format", &empty_memory_format);
  m.impl("empty_strided", &empty_strided);
  m.impl("_copy_from", &copy_from);
  m.impl("_copy_from_and_resize", &copy_from_and_resize);
  m.impl("resize_", &resize_);
  m.impl("set_.source_Storage_storage_offset", &set_storage_);
  m.impl("set_", &set_empty_);
  // View ops: metadata only, device-agnostic implementations.
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  route_cpu_kernels_to_fallback(m);
}

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &parityfake::sdp_choice)
}  // namespace at::native

// Autocast on parityfake follows the CUDA policy.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  using namespace at;  // the op lists name Tensor, Scalar, ... unqualified
#define PARITYFAKE_LOW(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define PARITYFAKE_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define PARITYFAKE_FP32_OPT(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define PARITYFAKE_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(PARITYFAKE_LOW)
  AT_FORALL_FP32(PARITYFAKE_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(PARITYFAKE_FP32_OPT)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(PARITYFAKE_PROMOTE)
#undef PARITYFAKE_LOW
#undef PARITYFAKE_FP32
#undef PARITYFAKE_FP32_OPT
#undef PARITYFAKE_PROMOTE
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&parityfake::catch_all>());
}

TORCH_LIBRARY(parityfake, m) {
  using namespace parityfake;
  m.def("set_unsupported(str[] names) -> ()", &set_unsupported);
  m.def("get_unsupported() -> str[]", &get_unsupported);
  m.def("synchronize() -> ()", &synchronize);
  m.def("sync_count() -> int", &sync_count);
  m.def("set_kernel_cost_ns(int cost_ns) -> ()", &set_kernel_cost_ns);
  m.def("kernel_cost_ns() -> int", &kernel_cost_ns);
  m.def("kernel_count() -> int", &kernel_count);
  m.def("queued_ns() -> int", &queued_ns);
  m.def("memory_stats() -> int[]", &memory_stats);
  m.def("reset_peak_memory_stats() -> ()", &reset_peak_memory_stats);
  m.def("empty_cache() -> ()", &empty_cache);
  m.def("set_caching(bool on) -> ()", &set_caching);
  m.def("profile_is_neuron() -> bool", &profile_is_neuron);
  m.def("start_runtime() -> ()", &start_runtime);
  m.def("runtime_is_started() -> bool", &runtime_is_started);
  m.def("fallback_ops() -> str[]", &fallback_ops);
  m.def("executed_ops() -> str[]", &executed_ops);
  m.def("clear_op_tracking() -> ()", &clear_op_tracking);
}
