#pragma once
// The engine's use of its work directory's disk. GPU-size tasks write gigabytes per reference
// (inputs, expected outputs of every trial) and as much again per candidate job (its outputs, its
// inputs after the call), so neither may grow without bound:
// - ReferenceStore: each task's reference files, computed once per engine and shared by the task's
//   candidates; past a byte budget, the least recently used that nothing reads are deleted (and
//   computed again should a candidate of their task come back);
// - DiskGate: a job (or a reference being computed) starts only when the free space covers what
//   the jobs in flight may still write and its own estimate; alone, it always starts.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "judge.h"

namespace tritium::exec {

class ReferenceStore {
 public:
  // Writes the task's reference into the (fresh, existing) directory it is given.
  using Compute = std::function<Reference(const std::filesystem::path& dir)>;
  // The reference's files stay on disk while a lease (or a copy of it) lives.
  using Lease = std::shared_ptr<const Reference>;

  ReferenceStore(std::filesystem::path root, std::uintmax_t budget_bytes);

  // The reference for `key`, computed by `compute` when the store lacks it (concurrent callers wait
  // for the first one's result). `computed` tells whether this call computed it. A failed
  // reference is kept (its error) without files, so it is not retried per candidate; a transient
  // failure only reaches the callers waiting on it, and the next call computes it again.
  Lease get(const std::string& key, const Compute& compute, bool* computed = nullptr);

  std::uintmax_t bytes() const;  // on disk now, over the references the store holds
  std::uintmax_t budget() const { return budget_; }
  std::uintmax_t largest() const;  // the largest reference computed so far: an estimate of the next
  void shed();                     // deletes every reference nothing is reading

 private:
  struct Entry {
    std::shared_future<Reference> result;
    std::uintmax_t bytes = 0;
    int readers = 0;         // leases out
    std::uint64_t used = 0;  // the store's clock at its last lease, for least-recently-used
    bool ready = false;
  };

  void release(const std::shared_ptr<Entry>& entry);
  void trim(std::uintmax_t budget);   // deletes idle references, oldest first, until the rest fit
  std::uintmax_t held_bytes() const;  // bytes(), under the lock already held

  const std::filesystem::path root_;
  const std::uintmax_t budget_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  std::uint64_t clock_ = 0;
  std::uint64_t next_dir_ = 0;  // a recomputed reference never reuses a directory being deleted
  std::uintmax_t largest_ = 0;
};

class DiskGate {
 public:
  using FreeBytes = std::function<std::uintmax_t()>;
  // `make_room` is asked to free what it can (idle references) before a job waits.
  DiskGate(FreeBytes free_bytes, std::function<void()> make_room, std::uintmax_t margin_bytes);

  // Holds its place in the gate from admission until destroyed.
  class Pass {
   public:
    Pass(DiskGate& gate, std::uintmax_t bytes) : gate_(gate), bytes_(bytes) {}
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    ~Pass() { gate_.leave(bytes_); }

   private:
    DiskGate& gate_;
    std::uintmax_t bytes_;
  };

  // Waits until `bytes` fit beside the jobs in flight (at once when none is) and every request
  // that came before has entered, then admits. First come, first served: a large request is not
  // passed over by smaller ones for good (on the H200 a 6.4 GB elementwise job waited 151 s while
  // later, smaller jobs and timings went in ahead of it).
  std::unique_ptr<Pass> enter(std::uintmax_t bytes);
  std::uintmax_t waits() const { return waits_; }  // admissions that had to wait, for tests

 private:
  void leave(std::uintmax_t bytes);

  FreeBytes free_bytes_;
  std::function<void()> make_room_;
  const std::uintmax_t margin_;
  std::mutex mutex_;
  std::condition_variable left_;
  std::uintmax_t reserved_ = 0;
  int in_flight_ = 0;
  std::uint64_t next_ticket_ = 0;
  std::set<std::uint64_t> waiting_;  // tickets of the requests not admitted yet, oldest first
  std::atomic<std::uintmax_t> waits_{0};
};

// The space free on the file system that holds `dir`.
std::uintmax_t free_bytes(const std::filesystem::path& dir);

// Half the space free on the file system that holds `dir`: the default budget.
std::uintmax_t default_reference_budget(const std::filesystem::path& dir);

}  // namespace tritium::exec
