#include "disk_budget.h"

#include <fmt/format.h>

#include <vector>

namespace fs = std::filesystem;

namespace tritium::exec {
namespace {

std::uintmax_t disk_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

}  // namespace

ReferenceStore::ReferenceStore(fs::path root, std::uintmax_t budget_bytes)
    : root_(std::move(root)), budget_(budget_bytes) {}

ReferenceStore::Lease ReferenceStore::get(const std::string& key, const Compute& compute, bool* computed) {
  std::shared_ptr<Entry> entry;
  std::promise<Reference> promise;
  fs::path dir;
  {
    std::lock_guard lock(mutex_);
    auto& slot = entries_[key];
    if (!slot) {
      slot = std::make_shared<Entry>();
      slot->result = promise.get_future().share();
      dir = root_ / fmt::format("{}-{}", key, next_dir_++);
    }
    entry = slot;
    ++entry->readers;
    entry->used = ++clock_;
  }
  if (computed) *computed = !dir.empty();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    Reference ref;
    try {
      ref = compute(dir);
    } catch (const std::exception& e) {  // its waiters must not hang on a promise never kept
      ref.error = fmt::format("the reference could not be computed: {}", e.what());
    }
    ref.dir = dir;
    if (!ref.ok) fs::remove_all(dir, ec);  // its error is what is kept
    {
      std::lock_guard lock(mutex_);
      entry->bytes = ref.bytes = ref.ok ? disk_bytes(dir) : 0;
      entry->ready = true;
      largest_ = std::max(largest_, entry->bytes);
      if (auto it = entries_.find(key); ref.transient && it != entries_.end() && it->second == entry)
        entries_.erase(it);  // a full disk must not fail the task for good
    }
    promise.set_value(std::move(ref));
  }
  const Reference* ref = &entry->result.get();
  return Lease(ref, [this, entry](const Reference*) { release(entry); });
}

std::uintmax_t ReferenceStore::bytes() const {
  std::lock_guard lock(mutex_);
  return held_bytes();
}

std::uintmax_t ReferenceStore::held_bytes() const {
  std::uintmax_t total = 0;
  for (const auto& [key, entry] : entries_) total += entry->bytes;
  return total;
}

void ReferenceStore::release(const std::shared_ptr<Entry>& entry) {
  {
    std::lock_guard lock(mutex_);
    --entry->readers;
  }
  trim(budget_);
}

std::uintmax_t ReferenceStore::largest() const {
  std::lock_guard lock(mutex_);
  return largest_;
}

void ReferenceStore::shed() { trim(0); }

void ReferenceStore::trim(std::uintmax_t budget) {
  std::vector<fs::path> doomed;
  {
    std::lock_guard lock(mutex_);
    std::uintmax_t total = held_bytes();
    while (total > budget) {
      auto oldest = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        const Entry& e = *it->second;
        if (e.ready && e.readers == 0 && e.bytes > 0 && (oldest == entries_.end() || e.used < oldest->second->used))
          oldest = it;
      }
      if (oldest == entries_.end()) break;  // the rest are being read: they stay, over the budget
      total -= oldest->second->bytes;
      doomed.push_back(oldest->second->result.get().dir);
      entries_.erase(oldest);
    }
  }
  std::error_code ec;
  for (const auto& dir : doomed) fs::remove_all(dir, ec);  // out of the lock: gigabytes take a while
}

std::uintmax_t default_reference_budget(const fs::path& dir) { return free_bytes(dir) / 2; }

std::uintmax_t free_bytes(const fs::path& dir) {
  std::error_code ec;
  const fs::space_info space = fs::space(dir, ec);
  return ec ? std::uintmax_t{8} << 30 : space.available;  // unknown: assume room, as before
}

DiskGate::DiskGate(FreeBytes free_bytes, std::function<void()> make_room, std::uintmax_t margin_bytes)
    : free_bytes_(std::move(free_bytes)), make_room_(std::move(make_room)), margin_(margin_bytes) {}

// What jobs in flight have already written is both in the free space and in `reserved_`: counting it
// twice errs on the side of room.
std::unique_ptr<DiskGate::Pass> DiskGate::enter(std::uintmax_t bytes) {
  std::unique_lock lock(mutex_);
  const std::uint64_t ticket = next_ticket_++;
  waiting_.insert(ticket);
  const auto fits = [&] {
    return *waiting_.begin() == ticket && (in_flight_ == 0 || free_bytes_() >= reserved_ + bytes + margin_);
  };
  bool waited = false;
  while (!fits()) {
    if (*waiting_.begin() == ticket) {  // only the first in line frees room for itself
      lock.unlock();
      make_room_();
      lock.lock();
      if (fits()) break;
    }
    waited = true;
    left_.wait_for(lock, std::chrono::seconds(1));  // the free space also moves outside the engine
  }
  if (waited) ++waits_;
  waiting_.erase(ticket);
  reserved_ += bytes;
  ++in_flight_;
  lock.unlock();
  left_.notify_all();  // the next in line may fit too
  return std::make_unique<Pass>(*this, bytes);
}

void DiskGate::leave(std::uintmax_t bytes) {
  {
    std::lock_guard lock(mutex_);
    reserved_ -= bytes;
    --in_flight_;
  }
  left_.notify_all();
}

}  // namespace tritium::exec
