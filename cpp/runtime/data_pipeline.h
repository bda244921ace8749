// The threads behind jf.data's prefetch and parallel map: worker threads pull items from an
// upstream source one at a time (in input order, each numbered as it is pulled), transform
// them concurrently, and hand them to one consumer through a bounded buffer, in input order
// or as they finish. At most `capacity` items are pulled and not yet consumed, which bounds
// the memory a pipeline holds.
//
// Knows nothing of Python: the binding (python/bind_data.cc) supplies the pull and map
// functions, taking the GIL only inside them and releasing it while a traced function runs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace jf::data {

template <class T>
class Pipeline {
 public:
  // pull(&item) fills the next input and returns true, or returns false at the end; it is
  // never called by two threads at once. map(item) is the work (null: items pass through).
  using Pull = std::function<bool(T*)>;
  using Map = std::function<T(T)>;

  Pipeline(int workers, size_t capacity, bool ordered, Pull pull, Map map)
      : capacity_(capacity < 1 ? 1 : capacity),
        ordered_(ordered),
        pull_(std::move(pull)),
        map_(std::move(map)) {
    const int n = workers < 1 ? 1 : workers;
    threads_.reserve(n);
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline() { stop(); }

  // The next result (in input order when ordered); false once every item was delivered, or
  // after stop().
  bool next(T* out) {
    std::unique_lock<std::mutex> l(mu_);
    ready_.wait(l, [&] { return cancelled_ || has_next() || finished(); });
    if (cancelled_ || !has_next()) return false;
    auto it = ordered_ ? done_.find(consumed_) : done_.begin();
    *out = std::move(it->second);
    done_.erase(it);
    ++consumed_;
    // Workers waiting on a full buffer are woken once it is half drained, not at every
    // item: a woken worker can take the consumer's core (the scheduler favours the thread it
    // just woke), and on a loaded machine that cost milliseconds per item.
    if (pulled_ - consumed_ <= capacity_ / 2) space_.notify_all();
    return true;
  }

  // True when next() would not wait: a result is there, or the pipeline has ended.
  bool ready() const {
    std::lock_guard<std::mutex> l(mu_);
    return cancelled_ || has_next() || finished();
  }

  // Ends the pipeline: wakes and joins the workers (a worker inside pull or map finishes that
  // call first). Items not consumed stay in drain()'s reach.
  void stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      cancelled_ = true;
    }
    space_.notify_all();
    ready_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

  // The results not consumed (after stop()), for their owner to release.
  std::vector<T> drain() {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<T> out;
    for (auto& kv : done_) out.push_back(std::move(kv.second));
    done_.clear();
    return out;
  }

  // Items pulled and not yet consumed (in flight or waiting); never above the capacity.
  size_t outstanding() const {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<size_t>(pulled_ - consumed_);
  }
  size_t max_outstanding() const {
    std::lock_guard<std::mutex> l(mu_);
    return max_outstanding_;
  }

 private:
  bool has_next() const { return ordered_ ? done_.count(consumed_) > 0 : !done_.empty(); }
  bool finished() const { return end_ && consumed_ == pulled_; }

  void work() {
    for (;;) {
      T item{};
      uint64_t seq = 0;
      {
        // One puller at a time, so numbers follow the input order.
        std::lock_guard<std::mutex> pl(pull_mu_);
        {
          std::unique_lock<std::mutex> l(mu_);
          space_.wait(l, [&] { return cancelled_ || end_ || pulled_ - consumed_ < capacity_; });
          if (cancelled_ || end_) return;
        }
        const bool more = pull_(&item);
        std::lock_guard<std::mutex> l(mu_);
        if (!more) {
          end_ = true;
          ready_.notify_all();
          space_.notify_all();
          return;
        }
        seq = pulled_++;
        if (pulled_ - consumed_ > max_outstanding_)
          max_outstanding_ = static_cast<size_t>(pulled_ - consumed_);
      }
      T out = map_ ? map_(std::move(item)) : std::move(item);
      {
        std::lock_guard<std::mutex> l(mu_);
        done_.emplace(seq, std::move(out));
      }
      ready_.notify_all();
    }
  }

  const uint64_t capacity_;
  const bool ordered_;
  Pull pull_;
  Map map_;
  mutable std::mutex mu_;
  std::mutex pull_mu_;
  std::condition_variable space_, ready_;
  std::map<uint64_t, T> done_;
  uint64_t pulled_ = 0, consumed_ = 0;
  size_t max_outstanding_ = 0;
  bool end_ = false, cancelled_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace jf::data
