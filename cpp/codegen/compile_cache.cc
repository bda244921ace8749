// On-disk compile cache entries: "JFC1" magic, key, payload size, payload, SHA-1 of payload.
// Whatever the cache directory holds, a call gives the right answer: entries are opened
// without following links, checked for kind and size before they are read, verified, and
// otherwise ignored (one warning each) and replaced (a directory in an entry's place is moved
// aside).
#include "codegen/compile_cache.h"

#include <fcntl.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/SHA1.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

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

namespace {

std::atomic<CacheWarnFn> g_warn{nullptr};
std::mutex g_mu;  // guards the two tables below

// Each message once per process (a bad entry is met again on every compile of its cluster).
void warn_once(const std::string& message) {
  {
    static auto* said = new std::set<std::string>();
    std::lock_guard<std::mutex> lock(g_mu);
    if (!said->insert(message).second) return;
  }
  if (CacheWarnFn fn = g_warn.load()) {
    fn(message);
  } else {
    std::fprintf(stderr, "jitflow: %s\n", message.c_str());
  }
}

// Creates the directory (private, 0700) and decides once whether it may be trusted: ours and
// not writable by group or others. Returns the directory, or "" for memory-only.
std::string trusted_dir() {
  std::string dir = disk_cache_dir();
  if (dir.empty()) return dir;
  static auto* verdict = new std::map<std::string, bool>();
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = verdict->find(dir);
    if (it != verdict->end()) return it->second ? dir : "";
  }
  for (size_t s = dir.find('/', 1);; s = dir.find('/', s + 1)) {  // mkdir -p, the leaf 0700
    std::string part = dir.substr(0, s);
    ::mkdir(part.c_str(), s == std::string::npos ? 0700 : 0755);
    if (s == std::string::npos) break;
  }
  struct stat st;
  std::string why;
  if (::stat(dir.c_str(), &st) != 0)
    why = "cannot be created (" + std::string(std::strerror(errno)) + ")";
  else if (!S_ISDIR(st.st_mode))
    why = "is not a directory";
  else if (st.st_uid != ::geteuid())
    why = "belongs to another user";
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    why = "is writable by other users";
  bool ok = why.empty();
  {
    std::lock_guard<std::mutex> lock(g_mu);
    (*verdict)[dir] = ok;
  }
  if (!ok)
    warn_once("the compile cache directory '" + dir + "' " + why +
              ": object code loaded from it would run in this process, so compiled code is cached in "
              "memory only. Point JITFLOW_CACHE_DIR at a private directory (mode 0700) to keep it.");
  return ok ? dir : "";
}

std::string entry_path(const std::string& dir, const std::string& key) { return dir + "/" + key + ".o.jfc"; }

void reject(const std::string& path, const std::string& why) {
  warn_once("ignored the compile cache entry '" + path + "' (" + why + "): compiling again and replacing it");
}

// The `size` bytes of the file behind fd; false on a short or failed read.
bool read_all(int fd, int64_t size, std::string* out) {
  out->resize(static_cast<size_t>(size));
  int64_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, &(*out)[got], static_cast<size_t>(size - got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += n;
  }
  return true;
}

}  // namespace

void set_cache_warn_fn(CacheWarnFn fn) { g_warn.store(fn); }

bool disk_cache_load(const std::string& key, std::string* payload) {
  std::string dir = trusted_dir();
  if (dir.empty()) return false;
  const std::string path = entry_path(dir, key);
  // No links followed, and no blocking on a FIFO: the entry is looked at before it is read.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) reject(path, errno == ELOOP ? "a symbolic link" : std::strerror(errno));
    return false;
  }
  struct stat st;
  std::string s, why;
  if (::fstat(fd, &st) != 0)
    why = std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    why = S_ISDIR(st.st_mode) ? "a directory" : "not a regular file";
  else if (st.st_size > kMaxCacheEntryBytes)
    why = "over the size bound of " + std::to_string(kMaxCacheEntryBytes >> 20) + " MiB";
  else if (!read_all(fd, st.st_size, &s))
    why = "a short read";
  ::close(fd);
  if (why.empty()) {
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
    if (ok) return true;
    why = "corrupt or truncated";
  }
  reject(path, why);
  payload->clear();
  return false;
}

void disk_cache_reject(const std::string& key, const std::string& why) {
  std::string dir = trusted_dir();
  if (!dir.empty()) reject(entry_path(dir, key), why);
}

std::string disk_cache_store_dir() { return trusted_dir(); }

void disk_cache_store(const std::string& key, const std::string& payload) {
  disk_cache_store_in(trusted_dir(), key, payload);
}

void disk_cache_store_in(const std::string& dir, const std::string& key, const std::string& payload) {
  if (dir.empty()) return;
  static std::atomic<uint64_t> serial{0};
  const std::string path = entry_path(dir, key);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  uint64_t n = payload.size();
  std::string h = sha1_hex(payload);
  std::string data(kMagic, 4);
  data += key;
  data.append(reinterpret_cast<const char*>(&n), 8);
  data += payload;
  data += h;
  bool ok = true;
  for (size_t done = 0; ok && done < data.size();) {
    ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) done += static_cast<size_t>(w);
  }
  ok = (::close(fd) == 0) && ok;
  // rename() replaces a file, a link or a FIFO atomically (never writing through a link).
  if (ok && ::rename(tmp.c_str(), path.c_str()) == 0) return;
  // It cannot replace a directory: one in the entry's place was warned about and recompiled
  // on every run. An empty one is removed, any other moved aside (its contents kept, under a
  // name the cache never reads), and the entry takes its place, so the next run loads it.
  struct stat st;
  if (ok && ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    const std::string aside = path + ".aside." + std::to_string(::getpid()) + "." + std::to_string(serial++);
    if ((::rmdir(path.c_str()) == 0 || ::rename(path.c_str(), aside.c_str()) == 0) &&
        ::rename(tmp.c_str(), path.c_str()) == 0)
      return;
  }
  ::unlink(tmp.c_str());
}

}  // namespace jf
