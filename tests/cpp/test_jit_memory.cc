// The JIT's per-object memory: one mapping for all sections, so code reaches its constants
// with rip-relative references (within 2 GiB) wherever the process's address space is full.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "codegen/cpu/jit_memory.h"

namespace jf {
namespace {

TEST(JitMemory, AllSectionsOfAnObjectLieInOneSmallSpan) {
  auto mm = make_contiguous_memory_manager();
  ASSERT_TRUE(mm->needsToReserveAllocationSpace());
  mm->reserveAllocationSpace(5000, llvm::Align(16), 300, llvm::Align(32), 100, llvm::Align(8));
  uint8_t* code = mm->allocateCodeSection(4000, 16, 1, ".text");
  uint8_t* code2 = mm->allocateCodeSection(1000, 16, 2, ".text.b");
  uint8_t* ro = mm->allocateDataSection(300, 32, 3, ".rodata", true);
  uint8_t* rw = mm->allocateDataSection(100, 8, 4, ".data", false);
  ASSERT_TRUE(code && code2 && ro && rw);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(code) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ro) % 32, 0u);
  uint8_t* lo = code;
  uint8_t* hi = rw + 100;
  EXPECT_LT(static_cast<uint64_t>(hi - lo), uint64_t{1} << 20);  // one mapping, not far-flung ones
  EXPECT_TRUE(code2 >= code + 4000 && ro >= code2 + 1000 && rw >= ro + 300);  // no overlap
  std::memset(rw, 7, 100);
  std::memset(ro, 1, 300);
  code[0] = 0xC3;  // ret
  std::string err;
  EXPECT_FALSE(mm->finalizeMemory(&err)) << err;
  EXPECT_EQ(rw[99], 7);  // still writable
  EXPECT_EQ(ro[0], 1);
  using Fn = void (*)();
  reinterpret_cast<Fn>(code)();  // executable
}

TEST(JitMemory, AnAllocationBeyondTheReservationFailsCleanly) {
  auto mm = make_contiguous_memory_manager();
  mm->reserveAllocationSpace(64, llvm::Align(16), 0, llvm::Align(1), 0, llvm::Align(1));
  EXPECT_NE(mm->allocateCodeSection(64, 16, 1, ".text"), nullptr);
  EXPECT_EQ(mm->allocateCodeSection(1 << 20, 16, 2, ".text.big"), nullptr);
  EXPECT_EQ(mm->allocateDataSection(1 << 20, 8, 3, ".data", false), nullptr);
}

TEST(JitMemory, WithoutAReservationNothingIsAllocated) {
  auto mm = make_contiguous_memory_manager();
  EXPECT_EQ(mm->allocateCodeSection(16, 16, 1, ".text"), nullptr);
  std::string err;
  EXPECT_TRUE(mm->finalizeMemory(&err));
  EXPECT_FALSE(err.empty());
}

}  // namespace
}  // namespace jf
