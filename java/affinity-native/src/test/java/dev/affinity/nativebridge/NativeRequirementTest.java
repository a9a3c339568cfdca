package dev.affinity.nativebridge;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class NativeRequirementTest {
  @Test
  void theRealLibraryIsHereInThisBuild() {
    assertTrue(NativeRequirement.system().isAvailable());
    assertDoesNotThrow(() -> NativeRequirement.system().require("the test"));
  }

  @Test
  void anAbsentJniLibraryIsNamedWithThePlatformAndTheWayOut() {
    NativeRequirement absent = NativeRequirement.probing(
        () -> new UnsatisfiedLinkError("no jniAffinityNative in java.library.path: /usr/java/packages/lib:/usr/lib"));
    assertFalse(absent.isAvailable());
    NativeUnavailableException e = assertThrows(NativeUnavailableException.class, () -> absent.require("the sim executor"));
    assertEquals("the sim executor: needs Affinity's native library, which is not available: libjniAffinityNative.so for "
        + org.bytedeco.javacpp.Loader.getPlatform() + " is not on the classpath (not in the affinity-native jar: a"
        + " router-only build, -Daffinity.native.skip=true, or another platform's); serve remote workers (urls) or use a"
        + " build with the native layer", e.getMessage());
    assertTrue(e.getCause() instanceof UnsatisfiedLinkError);
  }

  @Test
  void otherCausesKeepTheirFirstLine() {
    NativeUnavailableException e = assertThrows(NativeUnavailableException.class, () -> NativeRequirement.probing(
        () -> new UnsatisfiedLinkError("libaffinity_native.so: cannot open shared object file\nmore")).require("x"));
    assertEquals("x: needs Affinity's native library, which is not available: UnsatisfiedLinkError:"
        + " libaffinity_native.so: cannot open shared object file", e.getMessage());
    NativeUnavailableException off = assertThrows(NativeUnavailableException.class, () -> NativeRequirement.probing(
        () -> new UnsupportedOperationException("native library disabled by -Daffinity.native.disable=true")).require("x"));
    assertEquals("x: needs Affinity's native library, which is not available: native library disabled by"
        + " -Daffinity.native.disable=true", off.getMessage());
  }
}
