# AddressSanitizer + UndefinedBehaviorSanitizer for the C++ test executables only. A sanitized
# library must never be loaded into the JVM (the ASan runtime has to come first in the process), so
# with AFFINITY_SANITIZE=ON the JNI-facing shared library is not built at all.
function(affinity_sanitize target)
  if(AFFINITY_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
