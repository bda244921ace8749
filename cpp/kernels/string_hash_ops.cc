// TF's string hash buckets: StringToHashBucketFast is FarmHash's Fingerprint64 modulo the
// bucket count and StringToHashBucketStrong is keyed SipHash-2-4, both from the libraries TF
// itself uses (Debian's libfarmhash and highwayhash), so every bucket number is TF's.
#include <farmhash.h>
#include <highwayhash/sip_hash.h>

#include <string>

#include "ir/op_registry.h"

namespace jf {

namespace {
template <class Hash>
void hash_buckets(OpCall& c, Hash hash) {
  const Tensor& x = c.in[0];
  const uint64_t buckets = static_cast<uint64_t>(c.attrs.get<int64_t>("num_buckets", 1));
  c.check_num_elements(x.shape());
  c.results.resize(1);
  c.results[0] = Tensor::empty(DType::kInt64, x.shape());
  const std::string* s = x.data<std::string>();
  int64_t* r = c.results[0].data<int64_t>();
  for (int64_t i = 0, n = x.num_elements(); i < n; ++i) r[i] = static_cast<int64_t>(hash(s[i]) % buckets);
}
}  // namespace

void k_StringToHashBucketFast(OpCall& c) {
  hash_buckets(c, [](const std::string& s) { return util::Fingerprint64(s.data(), s.size()); });
}

void k_StringToHashBucketStrong(OpCall& c) {
  const std::vector<int64_t> key = c.attrs.get<std::vector<int64_t>>("key", {});
  const highwayhash::HH_U64 k[2] = {static_cast<uint64_t>(key.at(0)), static_cast<uint64_t>(key.at(1))};
  hash_buckets(c, [&k](const std::string& s) { return highwayhash::SipHash(k, s.data(), s.size()); });
}

}  // namespace jf
