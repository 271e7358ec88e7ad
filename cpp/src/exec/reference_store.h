#pragma once
// Each task's reference files (inputs, expected outputs), computed once per engine and shared by
// the task's candidates. GPU-size tasks write gigabytes each, so the store keeps a byte budget:
// past it, the least recently used references that nothing is reading are deleted, and computed
// again should a candidate of their task come back.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
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
  // reference is kept (its error) without files, so it is not retried per candidate.
  Lease get(const std::string& key, const Compute& compute, bool* computed = nullptr);

  std::uintmax_t bytes() const;  // on disk now, over the references the store holds
  std::uintmax_t budget() const { return budget_; }

 private:
  struct Entry {
    std::shared_future<Reference> result;
    std::uintmax_t bytes = 0;
    int readers = 0;         // leases out
    std::uint64_t used = 0;  // the store's clock at its last lease, for least-recently-used
    bool ready = false;
  };

  void release(const std::shared_ptr<Entry>& entry);
  void trim();  // deletes idle references, oldest first, until the rest fit the budget

  const std::filesystem::path root_;
  const std::uintmax_t budget_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  std::uint64_t clock_ = 0;
  std::uint64_t next_dir_ = 0;  // a recomputed reference never reuses a directory being deleted
};

// Half the space free on the file system that holds `dir`: the default budget.
std::uintmax_t default_reference_budget(const std::filesystem::path& dir);

}  // namespace tritium::exec
