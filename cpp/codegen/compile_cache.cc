// On-disk compile cache entries: "JFC1" magic, key, payload size, payload, SHA-1 of payload.
#include "codegen/compile_cache.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/SHA1.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen_hash.h"  // generated: a hash of the code generator's sources

namespace jf {

static constexpr char kJitflowVersion[] = "0.1.0";
static constexpr char kMagic[4] = {'J', 'F', 'C', '1'};

static std::string sha1_hex(const std::string& s) {
  llvm::SHA1 h;
  h.update(llvm::StringRef(s));
  auto d = h.final();
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t c : d) out += hex[c >> 4], out += hex[c & 15];
  return out;
}

std::string compile_cache_key(const std::string& fingerprint, const std::string& target) {
  return sha1_hex(fingerprint + "\n" + target + "\nllvm " + LLVM_VERSION_STRING + "\njitflow " +
                  kJitflowVersion + "\ncodegen " + JITFLOW_CODEGEN_HASH);
}

std::string disk_cache_dir() {
  if (const char* d = std::getenv("JITFLOW_CACHE_DIR")) return std::string(d) == "off" ? "" : d;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::string(x) + "/jitflow";
  if (const char* h = std::getenv("HOME")) return std::string(h) + "/.cache/jitflow";
  return "";
}

static std::string entry_path(const std::string& key) { return disk_cache_dir() + "/" + key + ".o.jfc"; }

bool disk_cache_load(const std::string& key, std::string* payload) {
  std::string dir = disk_cache_dir();
  if (dir.empty()) return false;
  std::ifstream f(entry_path(key), std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  bool ok = s.size() >= 4 + key.size() + 8 + 40 && std::memcmp(s.data(), kMagic, 4) == 0 &&
            s.compare(4, key.size(), key) == 0;
  uint64_t n = 0;
  if (ok) {
    std::memcpy(&n, s.data() + 4 + key.size(), 8);
    ok = s.size() == 4 + key.size() + 8 + n + 40;
  }
  if (ok) {
    *payload = s.substr(4 + key.size() + 8, n);
    ok = sha1_hex(*payload) == s.substr(s.size() - 40);
  }
  if (!ok) {  // corrupt or truncated: drop it and compile again
    std::error_code ec;
    std::filesystem::remove(entry_path(key), ec);
    payload->clear();
  }
  return ok;
}

void disk_cache_store(const std::string& key, const std::string& payload) {
  std::string dir = disk_cache_dir();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string tmp = entry_path(key) + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return;
    uint64_t n = payload.size();
    f.write(kMagic, 4);
    f.write(key.data(), key.size());
    f.write(reinterpret_cast<const char*>(&n), 8);
    f.write(payload.data(), payload.size());
    std::string h = sha1_hex(payload);
    f.write(h.data(), h.size());
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, entry_path(key), ec);  // atomic on POSIX
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace jf
