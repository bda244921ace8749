// One mapping per JIT-loaded object (jit_memory.h).
#include "codegen/cpu/jit_memory.h"

#include <llvm/Support/Memory.h>
#include <llvm/Support/Process.h>

#include <string>

namespace jf {
namespace {

class ContiguousMemoryManager final : public llvm::RTDyldMemoryManager {
 public:
  ~ContiguousMemoryManager() override {
    if (block_.base()) llvm::sys::Memory::releaseMappedMemory(block_);
  }

  bool needsToReserveAllocationSpace() override { return true; }

  void reserveAllocationSpace(uintptr_t code, llvm::Align code_align, uintptr_t ro, llvm::Align ro_align,
                              uintptr_t rw, llvm::Align rw_align) override {
    const uint64_t page = llvm::sys::Process::getPageSizeEstimate();
    // Each region page-aligned (they get different protections), with room for alignment.
    auto span = [&](uintptr_t size, llvm::Align a) { return llvm::alignTo(size + a.value(), page); };
    regions_[0].size = span(code, code_align);
    regions_[1].size = span(ro, ro_align);
    regions_[2].size = span(rw, rw_align);
    std::error_code ec;
    block_ = llvm::sys::Memory::allocateMappedMemory(
        regions_[0].size + regions_[1].size + regions_[2].size, nullptr,
        llvm::sys::Memory::MF_READ | llvm::sys::Memory::MF_WRITE, ec);
    if (ec) {
      block_ = llvm::sys::MemoryBlock();
      return;  // the section allocations fail, and the load reports it
    }
    auto* base = static_cast<uint8_t*>(block_.base());
    regions_[0].base = base;
    regions_[1].base = base + regions_[0].size;
    regions_[2].base = base + regions_[0].size + regions_[1].size;
  }

  uint8_t* allocateCodeSection(uintptr_t size, unsigned align, unsigned, llvm::StringRef) override {
    return carve(regions_[0], size, align);
  }
  uint8_t* allocateDataSection(uintptr_t size, unsigned align, unsigned, llvm::StringRef,
                               bool read_only) override {
    return carve(regions_[read_only ? 1 : 2], size, align);
  }

  bool finalizeMemory(std::string* err) override {
    if (!block_.base()) {
      if (err) *err = "no memory was reserved for the object";
      return true;
    }
    const unsigned flags[3] = {llvm::sys::Memory::MF_READ | llvm::sys::Memory::MF_EXEC,
                               llvm::sys::Memory::MF_READ,
                               llvm::sys::Memory::MF_READ | llvm::sys::Memory::MF_WRITE};
    for (int k = 0; k < 3; ++k) {
      if (!regions_[k].size) continue;
      llvm::sys::MemoryBlock mb(regions_[k].base, regions_[k].size);
      if (std::error_code ec = llvm::sys::Memory::protectMappedMemory(mb, flags[k])) {
        if (err) *err = ec.message();
        return true;
      }
    }
    llvm::sys::Memory::InvalidateInstructionCache(regions_[0].base, regions_[0].size);
    return false;
  }

 private:
  struct Region {
    uint8_t* base = nullptr;
    uintptr_t size = 0, used = 0;
  };

  static uint8_t* carve(Region& r, uintptr_t size, unsigned align) {
    if (!r.base) return nullptr;
    const uintptr_t a = align ? align : 16;
    uintptr_t at =
        llvm::alignTo(reinterpret_cast<uintptr_t>(r.base) + r.used, a) - reinterpret_cast<uintptr_t>(r.base);
    if (at + size > r.size) return nullptr;  // RuntimeDyld reports "Unable to allocate section memory"
    r.used = at + size;
    return r.base + at;
  }

  llvm::sys::MemoryBlock block_;
  Region regions_[3];  // code, read-only data, read-write data
};

}  // namespace

std::unique_ptr<llvm::RTDyldMemoryManager> make_contiguous_memory_manager() {
  return std::make_unique<ContiguousMemoryManager>();
}

}  // namespace jf
