// The compile cache: keys from the kernel IR, target and versions; an on-disk store of
// object code with atomic writes and verified reads (a bad entry is recompiled, never trusted).
#pragma once
#include <string>

namespace jf {

// Hex digest of fingerprint + target + LLVM and jitflow versions.
std::string compile_cache_key(const std::string& fingerprint, const std::string& target);
// The cache directory: $JITFLOW_CACHE_DIR, else $XDG_CACHE_HOME/jitflow, else ~/.cache/jitflow.
// JITFLOW_CACHE_DIR=off disables the disk cache.
std::string disk_cache_dir();
bool disk_cache_load(const std::string& key, std::string* payload);
void disk_cache_store(const std::string& key, const std::string& payload);

}  // namespace jf
