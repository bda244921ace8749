// The compile cache: keys from the kernel IR, target and versions; an on-disk store of
// object code with atomic writes and verified reads (a bad entry is recompiled, never trusted).
#pragma once
#include <cstdint>
#include <string>

namespace jf {

// Hex digest of fingerprint + target + LLVM and jitflow versions.
std::string compile_cache_key(const std::string& fingerprint, const std::string& target);
// The cache directory: $JITFLOW_CACHE_DIR, else $XDG_CACHE_HOME/jitflow, else ~/.cache/jitflow.
// JITFLOW_CACHE_DIR=off disables the disk cache.
std::string disk_cache_dir();
// An entry's payload. False for a miss and for anything that is not a sound entry: a
// symbolic link, a directory, a FIFO, a file over kMaxCacheEntryBytes, a short read, a bad
// header or checksum; those are reported once (disk_cache_reject) and then recompiled. False
// too when the directory is not private to this user (others could plant object code that
// would run in this process): the cache is then memory-only, with one warning.
bool disk_cache_load(const std::string& key, std::string* payload);
// Writes a new entry and renames it over the old one (atomic, never following a link); a
// directory in its place is removed when empty, else renamed to <entry>.aside.<pid>.<n>.
void disk_cache_store(const std::string& key, const std::string& payload);
// The directory disk_cache_store would write to now ("" when none), and a store into such a
// directory: a background compile captures the directory with its request, so it stores where
// the settings at the request said (they may have changed since).
std::string disk_cache_store_dir();
void disk_cache_store_in(const std::string& dir, const std::string& key, const std::string& payload);
// A loaded entry the caller could not use (object code that does not load): reported once.
// The caller recompiles; its store replaces the entry.
void disk_cache_reject(const std::string& key, const std::string& why);
constexpr int64_t kMaxCacheEntryBytes = int64_t{64} << 20;

// Where the cache's warnings go (the runtime installs its RuntimeWarning hook; stderr before).
using CacheWarnFn = void (*)(const std::string& message);
void set_cache_warn_fn(CacheWarnFn fn);

}  // namespace jf
