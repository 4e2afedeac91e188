#pragma once
/// The workspaces a tad::program lends to the calls that do not bring one (decisions.md 52).
/// A call leases one for its duration: the program's first workspace if the calling thread
/// owns it and no call of that thread holds it, else a spare from a list under a mutex, else a
/// new spare, which joins the list when the call returns. The first thread to call owns the
/// first workspace (one compare-exchange, once); its later calls take it with a plain load and
/// a flag only that thread touches, no locked instruction (decisions.md 57: the exchange per
/// call cost 5-10 % of a 4 x 4 product's call). So every const call of one program may run on
/// any number of threads at once, each on a workspace of its own, and allocates nothing once
/// the list holds as many workspaces as other threads' calls have overlapped (a steady state).
/// The spares live as long as the program.

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
    const void* me = thread_tag();
    const void* owner = owner_.load(std::memory_order_relaxed);
    if (owner == nullptr && owner_.compare_exchange_strong(owner, me, std::memory_order_relaxed)) owner = me;
    // (busy_ is the owner's alone: relaxed, a plain load and store. A call of the owner made
    // while another of its calls holds the first, from a rule, takes a spare.)
    if (owner == me && !busy_.load(std::memory_order_relaxed)) {
      busy_.store(true, std::memory_order_relaxed);
      return lease(*this, nullptr);
    }
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
  /// An address unique to the calling thread while it runs.
  static const void* thread_tag() noexcept {
    static thread_local const char tag = 0;
    return &tag;
  }
  void give_back(spare* s) const noexcept {
    if (s == nullptr) {
      busy_.store(false, std::memory_order_relaxed);
    } else {
      const std::lock_guard<std::mutex> lock(mutex_);
      s->next = spares_;
      spares_ = s;
    }
  }

  std::size_t size_ = 0;
  std::unique_ptr<T[]> first_;
  mutable std::atomic<const void*> owner_{nullptr};  // the thread that uses first_ (thread_tag)
  mutable std::atomic<bool> busy_{false};             // a call of the owner holds first_
  mutable std::mutex mutex_;               // guards spares_
  mutable spare* spares_ = nullptr;        // workspaces no call holds, but first_
};

}  // namespace tad::detail
