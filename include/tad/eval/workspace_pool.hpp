#pragma once
/// The workspaces a tad::program lends to the calls that do not bring one (decisions.md 52).
/// A call leases one for its duration: the program's first workspace if no other call holds
/// it (one atomic exchange), else a spare from a list under a mutex, else a new spare, which
/// joins the list when the call returns. So every const call of one program may run on any
/// number of threads at once, each on a workspace of its own, and allocates nothing once the
/// list holds as many workspaces as calls have overlapped (a steady state). The spares live as
/// long as the program.

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <utility>

namespace tad::detail {

template <class T>
class workspace_pool {
  struct spare {
    std::unique_ptr<T[]> data;
    spare* next = nullptr;
  };

 public:
  workspace_pool() = default;
  explicit workspace_pool(std::size_t size) : size_(size), first_(new T[size]()) {}
  /// A copy gets a workspace of the same size, of its own, and no spares.
  workspace_pool(const workspace_pool& o) : workspace_pool(o.size_) {}
  workspace_pool(workspace_pool&& o) noexcept
      : size_(o.size_), first_(std::move(o.first_)), spares_(std::exchange(o.spares_, nullptr)) {
    o.size_ = 0;
  }
  // Not while a call holds a lease.
  workspace_pool& operator=(const workspace_pool& o) {
    workspace_pool t(o);
    swap(t);
    return *this;
  }
  workspace_pool& operator=(workspace_pool&& o) noexcept {
    workspace_pool t(std::move(o));
    swap(t);
    return *this;
  }
  ~workspace_pool() {
    while (spares_ != nullptr) delete std::exchange(spares_, spares_->next);
  }

  /// A workspace of size() elements for one call; returned to the pool by its destructor.
  class lease {
   public:
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    lease(lease&&) = delete;  // returned by take() as a prvalue only
    lease& operator=(lease&&) = delete;
    ~lease() { pool_.give_back(spare_); }
    std::span<T> span() const noexcept { return {spare_ ? spare_->data.get() : pool_.first_.get(), pool_.size_}; }

   private:
    friend class workspace_pool;
    lease(const workspace_pool& pool, spare* s) noexcept : pool_(pool), spare_(s) {}
    const workspace_pool& pool_;
    spare* spare_;  // nullptr: the first workspace
  };

  /// Thread-safe: concurrent calls get distinct workspaces.
  [[nodiscard]] lease take() const {
    if (!busy_.exchange(true, std::memory_order_acquire)) return lease(*this, nullptr);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (spare* s = spares_) {
        spares_ = s->next;
        return lease(*this, s);
      }
    }
    // Calls overlap more than ever before: one more workspace, kept when this call returns.
    auto s = std::make_unique<spare>();
    s->data.reset(new T[size_]());
    return lease(*this, s.release());
  }

  std::size_t size() const noexcept { return size_; }

 private:
  void swap(workspace_pool& o) noexcept {
    std::swap(size_, o.size_);
    std::swap(first_, o.first_);
    std::swap(spares_, o.spares_);
  }
  void give_back(spare* s) const noexcept {
    if (s == nullptr) {
      busy_.store(false, std::memory_order_release);
    } else {
      const std::lock_guard<std::mutex> lock(mutex_);
      s->next = spares_;
      spares_ = s;
    }
  }

  std::size_t size_ = 0;
  std::unique_ptr<T[]> first_;
  mutable std::atomic<bool> busy_{false};  // a call holds first_
  mutable std::mutex mutex_;               // guards spares_
  mutable spare* spares_ = nullptr;        // workspaces no call holds, but first_
};

}  // namespace tad::detail
