// One per-run state object parked between runs (the executor's arena, a compiled cluster's
// run state): a run takes it with one atomic exchange, or makes a fresh one when another
// thread holds it, and parks it again, cleared of values, when the run ends.
#pragma once
#include <atomic>

namespace jf {

template <class T>
class Parked {
 public:
  Parked() = default;
  Parked(const Parked&) = delete;
  Parked& operator=(const Parked&) = delete;
  ~Parked() { delete idle_.load(); }

  class Lease {
   public:
    Lease(std::atomic<T*>& slot, T* st) : slot_(slot), st_(st) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // T::clear() drops the run's values, so a parked state holds only what it keeps for reuse.
    ~Lease() {
      st_->clear();
      delete slot_.exchange(st_);
    }
    T& operator*() const { return *st_; }
    T* operator->() const { return st_; }

   private:
    std::atomic<T*>& slot_;
    T* st_;
  };

  // make() builds a fresh state when none is parked.
  template <class Make>
  Lease take(Make make) const {
    T* st = idle_.exchange(nullptr);
    return Lease(idle_, st ? st : make());
  }

 private:
  mutable std::atomic<T*> idle_{nullptr};
};

}  // namespace jf
