// Memory for one JIT-loaded object: all its sections in one mapping, so the rip-relative
// references between its code and its constants always stay in range.
#pragma once
#include <llvm/ExecutionEngine/RTDyldMemoryManager.h>

#include <memory>

namespace jf {

// RuntimeDyld reserves the object's total size first (needsToReserveAllocationSpace); the
// sections are then carved from one mapping of code, read-only and read-write pages, which
// finalizeMemory protects. LLVM 16's SectionMemoryManager maps each section on its own: in a
// crowded address space (TensorFlow or JAX loaded) code and constants landed over 2 GiB
// apart and the code read its constants from unmapped memory. The mapping goes with the
// manager, which the JIT drops with the object.
std::unique_ptr<llvm::RTDyldMemoryManager> make_contiguous_memory_manager();

}  // namespace jf
