// The CPU backend's eager matrix product (included by cpu_backend.cpp inside its anonymous namespace,
// after cpu_buffers.hpp): A (N, m, k) by a shared B (k, n), held, generated in order, or read by
// columns, or by one B per batch, (N, k, n). Every element is one fma chain over k in order
// (gemm.hpp), however the work is cut and whichever thread takes it.
Tensor multiply_eager(const BackendTensor& a, const BackendTensor& b) {
  const auto n_batch = a.shape[0], m = a.shape[1], k = a.shape[2];
  const bool shared_b = b.shape.size() == 2;
  const auto n = b.shape.back();
  Tensor out = Tensor::uninitialized({n_batch, m, n});
  const Scalar* pa = host(a).data();
  // a generated weight (seeded) is read in order, a block of rows at a time, never held
  const Tensor::OpenAt* generated = shared_b && deferral() ? host(b).reader() : nullptr;
  const Scalar* pb = generated != nullptr ? nullptr : host(b).data();
  Scalar* po = out.mutable_data();
  constexpr std::int64_t kStreamRows = 16;  // rows of a generated B per block
  thread_local std::vector<Scalar> stream;
  const Tensor::Columns* columns = generated != nullptr ? host(b).column_reader() : nullptr;
  if (columns != nullptr && n_batch * m > kFewRows) {
    // a weight stored as its transpose: fixed chunks of kColumnChunk columns in parallel, each read
    // along its stored rows (whole pages), packed, and multiplied by every row of A; each chain runs
    // over all of k in order, so the bits are the k-blocked path's
    const std::int64_t rows = n_batch * m, chunks = (n + kColumnChunk - 1) / kColumnChunk;
#pragma omp parallel for schedule(dynamic, 1) if (parallel(2.0 * rows * k * n))
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t j0 = c * kColumnChunk, w = std::min(kColumnChunk, n - j0);
      thread_local std::vector<Scalar> bt;
      thread_local gemm::PackedB packed;
      bt.resize(static_cast<std::size_t>(w * k));
      (*columns)(j0, j0 + w, bt.data());
      gemm::pack_b_into(packed, bt.data(), k, true, k, w);
      gemm::multiply(pa, k, rows, packed, po + j0, n, -1, 0, -1, /*a_in_place=*/true);  // B narrow: A read where it is
    }
  } else if (n_batch * m <= kFewRows) {  // a few rows: B read where it is, on this thread
    if (generated != nullptr) {
      const Tensor::Reader read = (*generated)(0);
      for (std::int64_t kk = 0; kk < k; kk += kStreamRows) {  // each chain continued block by block
        const std::int64_t count = std::min(kStreamRows, k - kk);
        stream.resize(static_cast<std::size_t>(count * n));
        read(stream.data(), count * n);
        gemm::multiply_unpacked(pa + kk, k, n_batch * m, stream.data(), n, count, n, po, n, kk > 0);
      }
    } else if (shared_b) {
      gemm::multiply_unpacked(pa, k, n_batch * m, pb, n, k, n, po, n);  // B read once for all rows
    } else {
      for (std::int64_t i = 0; i < n_batch; ++i) gemm::multiply_unpacked(pa + i * m * k, k, m, pb + i * k * n, n, k, n, po + i * m * n, n);
    }
  } else if (shared_b) {
    // (N·m, k) · (k, n), a block of B's rows at a time: the block packed (into one buffer, reused),
    // then fixed blocks of kRowChunk rows in parallel, each chain continued from the block before
    const std::int64_t kb = gemm::k_block(), rows = n_batch * m;
    const std::int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
    gemm::PackedB packed = gemm::unpacked_b(std::min(k, kb), n);
    // a generated B is read by two readers, one per half of each block, skipping the other half
    constexpr std::int64_t kParts = 2;
    std::vector<Tensor::Reader> readers;
    if (generated != nullptr)
      for (std::int64_t part = 0; part < kParts; ++part) readers.push_back((*generated)(std::min(k, kb) * part / kParts * n));
#pragma omp parallel if (parallel(2.0 * rows * k * n))
    for (std::int64_t p0 = 0; p0 < k; p0 += kb) {
      const std::int64_t kc = std::min(kb, k - p0);
#pragma omp single
      packed.k = kc;  // (the last block may be shorter)
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t part = 0; part < kParts; ++part) {
        const std::int64_t r0 = kc * part / kParts, r1 = kc * (part + 1) / kParts;  // rows of this block
        for (std::int64_t kk = r0; kk < r1; kk += kStreamRows) {
          const std::int64_t count = std::min(kStreamRows, r1 - kk);
          if (generated != nullptr) {
            stream.resize(static_cast<std::size_t>(count * n));
            readers[static_cast<std::size_t>(part)](stream.data(), count * n);
            gemm::pack_b_rows(stream.data(), n, packed, kk, count);
          } else {
            gemm::pack_b_rows(pb + (p0 + kk) * n, n, packed, kk, count);
          }
        }
        // on to this part's rows of the next block
        if (generated != nullptr && p0 + kb < k) {
          const std::int64_t next0 = std::min(kb, k - p0 - kb) * part / kParts;
          readers[static_cast<std::size_t>(part)](nullptr, (kc - r1 + next0) * n);
        }
      }
      // (dynamic: a thread that starts late, or is descheduled on a busy VM, takes fewer chunks)
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t r0 = c * kRowChunk, nr = std::min(kRowChunk, rows - r0);
        gemm::multiply(pa + r0 * k + p0, k, nr, packed, po + r0 * n, n, -1, 0, -1, false, p0 > 0);
      }
    }
  } else {
#pragma omp parallel for schedule(dynamic, 1) if (parallel(2.0 * n_batch * m * k * n))
    for (std::int64_t i = 0; i < n_batch; ++i) {
      const gemm::PackedB packed = gemm::pack_b(pb + i * k * n, n, false, k, n);
      gemm::multiply(pa + i * m * k, k, m, packed, po + i * m * n, n);
    }
  }
  return out;
}
