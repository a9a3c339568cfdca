package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.util.ResourceLeakDetector;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class LeakDetectionTest {
  @Test
  void offWhenTheJvmChoseNoLevel() {
    assertEquals(Optional.of(ResourceLeakDetector.Level.DISABLED), LeakDetection.override(null, null));
  }

  @Test
  void aLevelGivenToTheJvmIsKept() {
    assertEquals(Optional.empty(), LeakDetection.override("simple", null));
    assertEquals(Optional.empty(), LeakDetection.override("paranoid", null));
    assertEquals(Optional.empty(), LeakDetection.override(null, "true"));
  }

  @Test
  void theSuiteRunsWithParanoidTrackingWhichTheCommandLeavesAlone() {
    // surefire sets io.netty.leakDetection.level=paranoid (pom.xml); the command line must not turn it off
    assumeTrue("paranoid".equals(System.getProperty(LeakDetection.LEVEL_PROPERTY)), "run by the build (surefire)");
    LeakDetection.configure();
    assertEquals(ResourceLeakDetector.Level.PARANOID, ResourceLeakDetector.getLevel());
  }
}
