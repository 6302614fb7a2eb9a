// The CUDA backend's device plumbing: messages for CUDA's errors and the device's memory, error
// checks, device arrays, the context (streams, the pool, cuBLAS), the buffer a BackendTensor holds
// and what fetch() hands the host; the uploads' pinned staging and a count on its way back. Not a
// stand-alone header: cuda_backend.cu includes it inside its anonymous namespace, after kName and the
// backend_checks alias.
// "1.5 GB" (powers of 1000, as attn's other messages)
std::string bytes_text(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1000 && u < 5) b /= 1000, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return text;
}

// "12.0 GB free of 80.0 GB": the device's memory now, or what went wrong asking
std::string device_memory_text() {
  std::size_t free = 0, total = 0;
  const cudaError_t e = cudaMemGetInfo(&free, &total);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("free memory unknown: cudaMemGetInfo: ") + cudaGetErrorName(e);
  }
  return bytes_text(static_cast<double>(free)) + " free of " + bytes_text(static_cast<double>(total));
}

// "cudaErrorIllegalAddress: an illegal memory access was encountered"
std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// ATTN_CUDA_SYNC=1: wait for every primitive's work and check it there, so a fault is reported
// under the primitive that made it (slower; for finding a fault, not for timing).
bool sync_mode() {
  const char* v = std::getenv("ATTN_CUDA_SYNC");
  return v != nullptr && std::string_view(v) == "1";
}

[[noreturn]] void out_of_memory(const char* primitive, const std::string& what) {
  cudaGetLastError();  // (an allocation failure is not sticky: clear it, the device stays usable)
  throw DeviceError(std::string("--backend cuda: out of GPU memory in ") + primitive + ": " + what + " (the device has " + device_memory_text() +
                    "). Use a smaller T (attn cost shows how the size grows), or --backend cpu");
}

// A failed CUDA call. Running out of memory is the device's limit (DeviceError, exit 2); anything
// else (an illegal address, a bad launch) a bug in attn. Work runs asynchronously: without
// ATTN_CUDA_SYNC=1 a fault surfaces at a later call than the primitive that made it.
void check(cudaError_t e, const char* primitive, const char* call) {
  if (e == cudaSuccess) return;
  if (e == cudaErrorMemoryAllocation) out_of_memory(primitive, call);
  std::string message = std::string("cuda: ") + primitive + ": " + call + ": " + error_text(e);
  if (!sync_mode()) message += " (work runs asynchronously: the fault may be an earlier primitive's; ATTN_CUDA_SYNC=1 checks after each)";
  throw InternalError(message);
}

void check(cublasStatus_t s, const char* primitive, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  if (s == CUBLAS_STATUS_ALLOC_FAILED) out_of_memory(primitive, std::string(call) + ": cuBLAS could not allocate its workspace");
  throw InternalError(std::string("cublas: ") + primitive + ": " + call + " failed (status " + std::to_string(static_cast<int>(s)) + ")");
}

// Device memory for n values of T, freed with the object.
template <typename T>
struct DeviceArray {
  DeviceArray() = default;
  // `primitive` and `shape` name the allocation when the device has no room for it
  DeviceArray(std::size_t count, const char* primitive, const Shape& shape) : n(count) {
    if (n == 0) return;
    const cudaError_t e = cudaMalloc(&p, n * sizeof(T));
    if (e == cudaErrorMemoryAllocation) {
      p = nullptr;
      out_of_memory(primitive, "its result " + shape_string(shape) + " needs " + bytes_text(static_cast<double>(n * sizeof(T))));
    }
    check(e, primitive, "cudaMalloc");
  }
  ~DeviceArray() {
    if (p != nullptr) cudaFree(p);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr, o.n = 0; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  T* p = nullptr;
  std::size_t n = 0;
};

// What every tensor of a backend shares, and outlives the backend while a tensor does: the streams,
// the pool the tensors come from, pinned staging for copies to the host, and the byte counts.
struct Context {
  cudaStream_t compute = nullptr;  // every primitive, in order
  cudaStream_t copy = nullptr;     // copies to the host, after the compute stream's event
  cudaStream_t scan = nullptr;     // range scans of values no kernel noted flags for, after the same event
  cudaStream_t upload = nullptr;   // copies to the device, from pinned staging; the compute stream waits for each by an event

  Context() {
    check(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "the backend's setup", "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking), "the backend's setup", "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&scan, cudaStreamNonBlocking), "the backend's setup", "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking), "the backend's setup", "cudaStreamCreate");
    // one pool for the run: what a freed tensor held is kept for the next, not returned to the driver
    cudaMemPool_t pool = nullptr;
    int device = 0;
    check(cudaGetDevice(&device), "the backend's setup", "cudaGetDevice");
    check(cudaDeviceGetDefaultMemPool(&pool, device), "the backend's setup", "cudaDeviceGetDefaultMemPool");
    std::uint64_t keep_all = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), "the backend's setup", "cudaMemPoolSetAttribute");
  }
  ~Context() {
    cudaStreamSynchronize(compute);
    cudaStreamSynchronize(copy);
    cudaStreamSynchronize(scan);
    cudaStreamSynchronize(upload);
    for (auto& [p, e] : in_flight_) cudaEventDestroy(e);
    for (auto& [p, n] : sizes_) cudaFreeHost(p);
    cudaStreamDestroy(upload);
    cudaStreamDestroy(scan);
    cudaStreamDestroy(copy);
    cudaStreamDestroy(compute);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Pinned host memory for n bytes: the smallest block given back earlier that is large enough (and
  // not more than twice as large, so a few bytes never take a weight's block), or a new one; null
  // when none can be had (the caller then copies without staging).
  void* take_pinned(std::size_t n) {
    {
      std::lock_guard lock(mutex_);
      reclaim();
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        const std::size_t size = sizes_[*it];
        if (size >= n && size <= 2 * n + 4096 && (best == free_.end() || size < sizes_[*best])) best = it;
      }
      if (best != free_.end()) {
        void* p = *best;
        free_.erase(best);
        return p;
      }
    }
    void* p = nullptr;
    if (cudaMallocHost(&p, n) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    std::lock_guard lock(mutex_);
    sizes_[p] = n;
    return p;
  }
  void give_pinned(void* p) {
    std::lock_guard lock(mutex_);
    free_.push_back(p);
  }
  // Gives p back once `done` has completed (a copy still reads it); the event is then destroyed.
  void give_pinned_after(void* p, cudaEvent_t done) {
    std::lock_guard lock(mutex_);
    in_flight_.emplace_back(p, done);
  }
  void count(std::int64_t up, std::int64_t down) {
    std::lock_guard lock(mutex_);
    traffic_.uploaded += up;
    traffic_.downloaded += down;
  }
  Backend::Traffic traffic() {
    std::lock_guard lock(mutex_);
    return traffic_;
  }

 private:
  std::mutex mutex_;  // the pinned blocks and the counts, from any host thread (renderers read in parallel)
  std::map<void*, std::size_t> sizes_;  // every pinned block and its size
  std::vector<void*> free_;             // the pinned blocks not in use
  std::vector<std::pair<void*, cudaEvent_t>> in_flight_;  // blocks a copy still reads, free after its event
  void reclaim();  // (under mutex_) the in-flight blocks whose copies are done, back to free_; asks, never waits

  Backend::Traffic traffic_;
};

void Context::reclaim() {
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    const cudaError_t e = cudaEventQuery(it->second);
    if (e == cudaErrorNotReady) {
      ++it;
      continue;
    }
    check(e, "upload", "cudaEventQuery");
    cudaEventDestroy(it->second);
    free_.push_back(it->first);
    it = in_flight_.erase(it);
  }
}

// Host to device through pinned staging: the values copied into `staged` 2 MB at a time, each
// piece's copy to the device queued on the upload stream as soon as it is staged (the copy engine
// moves one piece while the host stages the next). From 8 MB on, up to four host threads stage
// contiguous shares side by side (one thread's memcpy is slower than the bus).
void stage_upload(Context& ctx, char* staged, const char* src, char* dst, std::size_t bytes) {
  constexpr std::size_t kPiece = std::size_t{2} << 20;
  auto part = [&](std::size_t from, std::size_t to) {
    for (std::size_t off = from; off < to; off += kPiece) {
      const std::size_t len = std::min(kPiece, to - off);
      std::memcpy(staged + off, src + off, len);
      check(cudaMemcpyAsync(dst + off, staged + off, len, cudaMemcpyHostToDevice, ctx.upload), "upload", "cudaMemcpyAsync");
    }
  };
  const unsigned threads = bytes >= (std::size_t{8} << 20) ? std::clamp(std::thread::hardware_concurrency() / 2, 1u, 4u) : 1u;
  if (threads == 1) return part(0, bytes);
  const std::size_t share = (bytes / threads + kPiece - 1) / kPiece * kPiece;
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> helpers;
  auto run = [&](unsigned k) {
    try {
      part(std::min(bytes, k * share), std::min(bytes, (k + 1) * share));
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  for (unsigned k = 1; k < threads; ++k) helpers.emplace_back(run, k);
  run(0);
  for (auto& h : helpers) h.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// A count on its way to the host: pinned, copied in the compute stream's order; get() waits for it
// (the caller has queued more work by then, so the device does not idle meanwhile).
struct PendingCount {
  std::shared_ptr<Context> ctx;
  unsigned long long* host = nullptr;  // pinned: [count, first]
  cudaEvent_t copied = nullptr;
  ~PendingCount() {
    if (copied != nullptr) cudaEventSynchronize(copied), cudaEventDestroy(copied);
    if (host != nullptr) ctx->give_pinned(host);
  }
  Backend::EmptyRows get() const {
    check(cudaEventSynchronize(copied), "empty_rows", "waiting for the count");
    return {static_cast<std::int64_t>(host[0]), host[0] == 0 ? -1 : static_cast<std::int64_t>(host[1])};
  }
};

// A tensor's device memory, from the pool, given back in stream order when the last view goes.
struct CudaBuffer final : BackendBuffer {
  // (allocated in `on`'s order: the compute stream's, or the upload stream's for an upload, which
  // the compute stream then waits for before any use or the free)
  CudaBuffer(std::shared_ptr<Context> c, std::size_t count, const char* primitive, const Shape& shape, cudaStream_t on = nullptr)
      : ctx(std::move(c)), n(count) {
    if (n == 0) return;
    const cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&p), n * sizeof(Scalar), on != nullptr ? on : ctx->compute);
    if (e == cudaErrorMemoryAllocation) {
      p = nullptr;
      out_of_memory(primitive, "its result " + shape_string(shape) + " needs " + bytes_text(static_cast<double>(n * sizeof(Scalar))));
    }
    check(e, primitive, "cudaMallocAsync");
  }
  ~CudaBuffer() override {
    // after every queued reader on the compute stream; copies to the host wait for theirs (Fetched)
    if (p != nullptr) cudaFreeAsync(p, ctx->compute);
    if (flags != nullptr) cudaFreeAsync(flags, ctx->compute);
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  std::shared_ptr<Context> ctx;
  Scalar* p = nullptr;
  std::size_t n = 0;
  // Set by the kernel that wrote the values, where it notes them (elementwise steps): flags[0] when
  // some value is NaN or +inf, flags[1] when some is -inf. Null: unknown, a scan finds out.
  unsigned* flags = nullptr;
};

Scalar* dev(const BackendTensor& t) {
  const auto* b = dynamic_cast<const CudaBuffer*>(t.buffer.get());
  if (b == nullptr) throw InternalError("cuda backend given a tensor from another backend");
  return b->p;
}

// A fetched tensor's way to the host: the device buffer (kept alive), the event after which its
// values are final, and, when copied at once, the pinned block and the event of that copy.
struct Fetched {
  std::shared_ptr<const BackendBuffer> keep;  // the device memory, alive while the host may read it
  std::shared_ptr<Context> ctx;
  const Scalar* p = nullptr;
  std::int64_t n = 0;
  cudaEvent_t ready = nullptr;   // recorded on the compute stream after the producer
  cudaEvent_t copied = nullptr;  // recorded on the copy stream after the pinned copy (staged only)
  Scalar* pinned = nullptr;      // staged copy, or null
  std::once_flag waited_once;
  unsigned* range = nullptr;     // pinned: the range flags (NaN or +inf; -inf), copied at fetch time
  cudaEvent_t ranged = nullptr;  // recorded after that copy

  ~Fetched() {
    if (copied != nullptr) cudaEventSynchronize(copied);  // the copy stream may still read p and write pinned
    if (ranged != nullptr) cudaEventSynchronize(ranged);
    if (pinned != nullptr) ctx->give_pinned(pinned);
    if (range != nullptr) ctx->give_pinned(range);
    if (copied != nullptr) cudaEventDestroy(copied);
    if (ranged != nullptr) cudaEventDestroy(ranged);
    if (ready != nullptr) cudaEventDestroy(ready);
  }
  // Whether some value is out of range (-inf allowed where asked), from the flags: no scan, no copy
  // of the values; true where the flags could not be had (the caller then searches).
  bool maybe_out_of_range(bool minus_inf_allowed) {
    if (range == nullptr) return true;
    check(cudaEventSynchronize(ranged), "fetch", "waiting for the range flags");
    return range[0] != 0 || (!minus_inf_allowed && range[1] != 0);
  }
  void wait_staged() {
    std::call_once(waited_once, [this] { check(cudaEventSynchronize(copied), "fetch", "waiting for the copy to the host"); });
  }
  // n values from flat index `first` into out, from the staged copy or straight from the device
  void read(std::int64_t first, std::int64_t count, Scalar* out) {
    if (count == 0) return;
    if (pinned != nullptr) {
      wait_staged();
      std::memcpy(out, pinned + first, static_cast<std::size_t>(count) * sizeof(Scalar));
      return;
    }
    check(cudaStreamWaitEvent(ctx->copy, ready, 0), "fetch", "cudaStreamWaitEvent");
    check(cudaMemcpyAsync(out, p + first, static_cast<std::size_t>(count) * sizeof(Scalar), cudaMemcpyDeviceToHost, ctx->copy), "fetch",
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(ctx->copy), "fetch", "cudaStreamSynchronize");
    ctx->count(0, count * static_cast<std::int64_t>(sizeof(Scalar)));
  }
};
