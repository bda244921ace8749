# Writes codegen_hash.h: a SHA-1 over the code generator's sources, part of every compile-cache
# key, so object code cached by an older jitflow build is never reused.
string(REPLACE "|" ";" SOURCES "${SOURCES}")
set(acc "")
foreach(f ${SOURCES})
  file(SHA1 ${f} h)
  string(APPEND acc "${h}")
endforeach()
string(SHA1 digest "${acc}")
file(WRITE ${OUTPUT}.tmp "#pragma once\n#define JITFLOW_CODEGEN_HASH \"${digest}\"\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
