// libaffinity_native.so is affinity_core linked whole; this translation unit only anchors the
// shared library target. The exported API is the facade in native/include/affinity/.
#include "affinity/executor.h"
